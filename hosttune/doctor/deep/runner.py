"""Run one measurement process under a deadline: its own session, output to unnamed files read back bounded,
progress on a TTY, the whole process tree killed when it runs out of time, and the name of what it was measuring
when it hung (the probe prints a "start" line before each measurement and a "result"/"error" line after it).

torchrun starts every worker in a session of its own (torch.distributed.elastic's subprocess handler), so killing
our child's process group is not enough: the tree is listed (psutil) before anything is killed, then each process
in it gets SIGKILL, so no rank outlives a timeout.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from hosttune import programs
from hosttune.term import printable, redraw

OUTPUT_LIMIT = 4 << 20  # the probe prints a few KiB; a runaway child's output is cut here
STDERR_TAIL = 2000


@dataclass(frozen=True)
class JobResult:
    """What one measurement process left: its events, how it ended, and what it hung in."""

    name: str
    events: Tuple[Dict[str, Any], ...] = ()
    returncode: Optional[int] = None
    timed_out: bool = False
    timeout_s: float = 0.0
    elapsed_s: float = 0.0
    stderr_tail: str = ""
    start_error: Optional[str] = None  # could not start at all (no interpreter, budget spent)
    budget_cut: bool = False  # its timeout was what was left of doctor --deep's time budget, not its own limit

    @property
    def hung_on(self) -> Optional[str]:
        """The measurement that started and never finished, when the process was killed."""
        return hung_on(self.events) if self.timed_out else None

    def results(self, prefix: str) -> List[Dict[str, Any]]:
        return [e for e in self.events if e.get("event") == "result" and _under(e.get("what", ""), prefix)]

    def errors(self, prefix: str) -> List[Dict[str, Any]]:
        return [e for e in self.events if e.get("event") == "error" and _under(e.get("what", ""), prefix)]

    def result(self, prefix: str) -> Optional[Dict[str, Any]]:
        found = self.results(prefix)
        return found[0] if found else None

    def failure(self) -> str:
        """Why the process gave no (more) results: a start error, the timeout, or its exit and stderr's last line."""
        if self.start_error:
            return self.start_error
        if self.timed_out:
            where = f" while measuring {self.hung_on}" if self.hung_on else ""
            if self.budget_cut:
                return f"stopped{where}: the time budget ran out ({self.timeout_s:.0f} s were left)"
            return f"timed out after {self.timeout_s:g} s{where} (process tree killed)"
        last = [ln for ln in self.stderr_tail.splitlines() if ln.strip()]
        tail = f": {last[-1].strip()[:300]}" if last else ""
        return f"exit status {self.returncode}{tail}"


def _under(what: str, prefix: str) -> bool:
    return what == prefix or what.startswith(prefix + " ")


def parse_events(text: str) -> Tuple[Dict[str, Any], ...]:
    """The probe's JSON lines; anything else (a library's warning on stdout) is ignored."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("event"), str) and isinstance(rec.get("what"), str):
            out.append(rec)
    return tuple(out)


def hung_on(events: Sequence[Dict[str, Any]]) -> Optional[str]:
    """The last measurement that has a start line and no result/error line."""
    open_: List[str] = []
    for e in events:
        if e["event"] == "start":
            open_.append(e["what"])
        elif e["event"] in ("result", "error") and e["what"] in open_:
            open_.remove(e["what"])
    return open_[-1] if open_ else None


def current(events: Sequence[Dict[str, Any]]) -> Optional[str]:
    return hung_on(events)


class Progress:
    """One status line on stderr, redrawn in place, only when stderr is a terminal (never in pipes or logs)."""

    def __init__(self, enabled: Optional[bool] = None, stream: Optional[TextIO] = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = redraw(self.stream) if enabled is None else enabled  # not on TERM=dumb: ESC [ K shows
        self._shown = False

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        self.stream.write("\r\033[K" + printable(text)[:160])
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False


def _read_back(fh: IO[bytes], limit: int) -> str:
    fh.seek(0)
    return fh.read(limit).decode("utf-8", "replace")


def kill_tree(pid: int) -> None:
    """SIGKILL `pid`, its process group, and every descendant (listed first: torchrun's workers sit in sessions of
    their own and would be reparented, out of reach, once their parent is gone)."""
    victims: List[int] = []
    try:
        import psutil

        victims = [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except Exception:  # noqa: BLE001 - psutil missing or the process already gone: the group kill still runs
        pass
    for target in [pid] + victims:
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)  # our child leads its own session: its group is its own
    except OSError:
        pass


def run_job(name: str, argv: Sequence[str], *, env: Dict[str, str], timeout: float,
            progress: Optional[Progress] = None,
            tick: Optional[Callable[[Optional[str], Sequence[Dict[str, Any]]], None]] = None,
            tick_s: float = 0.25, measure_limit: Optional[Callable[[str], float]] = None) -> JobResult:
    """Run `argv` (a probe) for at most `timeout` seconds, and each of its measurements for at most
    `measure_limit(name)` seconds from its start line; `tick(current measurement, events so far)` is called every
    `tick_s` while it runs (NVML sampling during the GPU measurements)."""
    start = time.monotonic()
    doing: Tuple[Optional[str], float] = (None, start)  # the open measurement and since when
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            # the gateway: argv[0] resolved (and, as root, trust-checked: Untrusted is a one-line error) before it runs
            proc = programs.popen(argv, "cannot run", env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                  cwd="/", start_new_session=True)
        except programs.NotFound as exc:
            return JobResult(name=name, start_error=str(exc))
        except OSError as exc:
            return JobResult(name=name, start_error=f"cannot run {argv[0]}: {exc.strerror or exc}")
        timed_out = False
        limit = timeout
        try:
            while True:
                left = timeout - (time.monotonic() - start)
                if left <= 0:
                    timed_out = True
                    break
                if doing[0] is not None and measure_limit is not None and \
                        time.monotonic() - doing[1] > measure_limit(doing[0]):
                    timed_out, limit = True, measure_limit(doing[0])
                    break
                try:
                    proc.wait(timeout=min(tick_s, left))
                    break
                except subprocess.TimeoutExpired:
                    pass
                if tick is not None or measure_limit is not None or (progress is not None and progress.enabled):
                    events = parse_events(_read_back(out, OUTPUT_LIMIT))
                    now = current(events)
                    if now != doing[0]:
                        doing = (now, time.monotonic())
                    if tick is not None:
                        tick(now, events)
                    if progress is not None:
                        what = now or ("finishing" if events else "starting")
                        progress.show(f"doctor --deep: {name}: {what} ({time.monotonic() - start:.0f} s)")
        finally:
            if proc.returncode is None:  # not reaped yet, so its pid is still ours to kill (timeout, ^C)
                kill_tree(proc.pid)
            proc.wait()
            if progress is not None:
                progress.clear()
        text = _read_back(out, OUTPUT_LIMIT)
        err.seek(0, os.SEEK_END)
        size = err.tell()
        err.seek(max(0, size - STDERR_TAIL))
        tail = err.read(STDERR_TAIL).decode("utf-8", "replace")
    return JobResult(name=name, events=parse_events(text), returncode=proc.returncode, timed_out=timed_out,
                     timeout_s=limit, elapsed_s=time.monotonic() - start, stderr_tail=tail)
