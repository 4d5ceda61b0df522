"""One trial: the user's command under one candidate profile, as a child `hosttune exec --profile FILE -- COMMAND`
(started through `programs.popen`), for a bounded window, its metric read from its output.

The child runs in its own session so a window that ends, an error or Ctrl-C stops the whole job (SIGTERM to its
process group, SIGKILL after a grace); its output (stdout and stderr together) is read line by line with the time
each line came. A job that ends by itself within the window is scored if it exited 0; one the window ended is
scored from what it printed so far (that is the point of a window). A non-zero exit, no metric, or only warm-up
metric lines drop the trial, with the reason and the job's last line. Nothing the job writes is touched, except
that a trial of the bundled engine runs in a scratch run directory of its own (rundirs.py: removed after the trial
unless it was dropped; its nested `hosttune exec` gets the candidate too, through HOSTTUNE_PROFILE). How busy the host
was during the trial (contention.Meter, read before and after it) goes with its score.
"""

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from hosttune import programs
from hosttune.autotune import contention, metric, rundirs
from hosttune.autotune.search import Trial
from hosttune.errors import UserError
from hosttune.policy import names
from hosttune.term import printable

GRACE_S = 5.0
MAX_LINE = 4096
MAX_KEPT = 100_000  # metric lines kept per trial
TAIL = 20  # last lines kept per trial, for the reason a trial was dropped


def hosttune_argv() -> List[str]:
    """How to start this hosttune again: this interpreter and this package, through the gateway's bootstrap (not
    `-m hosttune`, which would import a `hosttune/` left in the working directory; -I as root)."""
    return programs.own_argv("hosttune.cli")


@dataclass
class _Output:
    spec: metric.MetricSpec
    start: float
    matched: List[Tuple[float, str]] = field(default_factory=list)
    tail: List[str] = field(default_factory=list)

    def feed(self, raw: bytes) -> None:
        line = raw[:MAX_LINE].decode("utf-8", "replace").rstrip("\r\n")
        if self.spec.pattern.search(line) and len(self.matched) < MAX_KEPT:
            self.matched.append((time.monotonic() - self.start, line))
        self.tail.append(line)
        del self.tail[:-TAIL]


def _pump(stream: "IO[bytes]", out: _Output) -> None:
    for raw in iter(stream.readline, b""):
        out.feed(raw)


class ExecRunner:
    """`run(name)`: one trial of the profile file `profiles[name]`."""

    def __init__(self, command: Sequence[str], profiles: Mapping[str, Path], spec: metric.MetricSpec,
                 window_s: float, environ: Optional[Mapping[str, str]] = None,
                 meter: Optional[contention.Meter] = None, runs: Optional[rundirs.RunDirs] = None):
        self.command, self.profiles, self.spec, self.window_s = list(command), dict(profiles), spec, window_s
        self.environ = dict(os.environ if environ is None else environ)
        self.meter = meter if meter is not None else contention.Meter()
        self.runs = runs  # the engine's scratch run directories (None: the command is not the bundled engine's)

    def run(self, name: str) -> Trial:
        token = self.meter.start()
        with _term_stops_the_trial():
            trial = self._run(name) if self.runs is None else self._in_run_dir(name, self.runs)
        return dataclasses.replace(trial, busy=self.meter.stop(token))

    def _in_run_dir(self, name: str, runs: rundirs.RunDirs) -> Trial:
        """The trial with a fresh scratch run directory: removed after it, kept (and named) when it was dropped."""
        path = runs.new(name)
        keep = False
        try:
            env = {**self.environ, names.PROFILE: str(self.profiles[name])}  # `hosttune train`'s own exec
            trial = self._run(name, rundirs.with_run_dir(self.command, path), env)
            if trial.score is None:
                keep = True
                trial = dataclasses.replace(trial, why=f"{trial.why}; its run directory is kept: {path}")
            return trial
        finally:
            runs.done(path, keep)

    def _run(self, name: str, command: Optional[Sequence[str]] = None,
             environ: Optional[Mapping[str, str]] = None) -> Trial:
        argv = [*hosttune_argv(), "exec", "--profile", str(self.profiles[name]), "--",
                *(self.command if command is None else command)]
        start = time.monotonic()
        proc = programs.popen(argv, "autotune trial", env=dict(self.environ if environ is None else environ),
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        out = _Output(self.spec, start)
        reader = threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True)
        reader.start()
        stopped = False
        try:
            try:
                rc = proc.wait(timeout=self.window_s)
            except subprocess.TimeoutExpired:  # the window is over
                stopped = True
                rc = _stop(proc)
        finally:
            if proc.poll() is None:
                _stop(proc)
            reader.join(timeout=GRACE_S)
            if proc.stdout is not None:
                proc.stdout.close()
        seconds = time.monotonic() - start
        return _judge(name, self.spec, out, rc, stopped, seconds, self.window_s)


@contextlib.contextmanager
def _term_stops_the_trial() -> Iterator[None]:
    """SIGTERM to autotune while a trial runs exits through the trial's cleanup (its job runs in a session of its
    own: without this, a plain termination would leave the job running on)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _judge(name: str, spec: metric.MetricSpec, out: _Output, rc: int, stopped: bool, seconds: float,
           window_s: float) -> Trial:
    last = printable(out.tail[-1])[:160] if out.tail else "(no output)"
    if not stopped and rc != 0:
        return Trial(name, None, seconds, f"exit status {rc}; last line: {last}")
    value, why = metric.read(spec, out.matched)
    if value is None:
        within = f" within the {window_s:g} s window" if stopped else ""
        return Trial(name, None, seconds, f"{why}{within}; last line: {last}", cut=stopped)
    return Trial(name, metric.score(spec, value), seconds, cut=stopped)


def _stop(proc: "subprocess.Popen[bytes]") -> int:
    """SIGTERM to the trial's process group, SIGKILL after the grace; its exit status."""
    pid = proc.pid
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, GRACE_S)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            return int(proc.wait(timeout=wait))
        except subprocess.TimeoutExpired:
            continue
    return -9


def dry_plan(command: Sequence[str], profile: Path, environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """`hosttune exec --dry-run --json --profile FILE -- COMMAND` of the default profile: rank 0's plan as exec
    makes it (threads, CPUs), without running the job."""
    argv = [*hosttune_argv(), "exec", "--dry-run", "--json", "--profile", str(profile), "--", *command]
    env = dict(os.environ if environ is None else environ)
    res = programs.run(argv, "autotune plan", env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if res.returncode != 0:
        err = res.stderr.decode("utf-8", "replace").strip().splitlines()
        last = err[-1].replace("hosttune: error: ", "", 1) if err else f"exec --dry-run failed (exit {res.returncode})"
        raise UserError(printable(last))
    try:
        data = json.loads(res.stdout.decode("utf-8", "replace"))
    except ValueError:
        raise UserError("exec --dry-run --json printed no JSON") from None
    return data if isinstance(data, dict) else {}
