"""When a job hangs: which rank, and where (`hosttune exec --hang-timeout DURATION`, the profile's `hang_timeout`).

The progress marker is the job's output: with the watch on, the job's stdout and stderr are pipes that hosttune
copies to its own (PYTHONUNBUFFERED=1 unless the caller set it, so a rank's print() reaches the pipe when it is
made), and every byte is progress. That covers the engine (a `step N/M loss` line per log interval when not on a
terminal) and any script that prints its steps; a job that is silent for longer than the timeout on purpose needs
a longer one. A process the hook arms (below) is progress too. The clock starts at the first progress: a launcher
still starting (torchrun importing torch, its rendezvous, which has its own timeout) is not taken for a hang.

When no output came for the timeout:
1. Stacks. Every Python process of the job that the per-rank hook armed (hook.arm_stacks: faulthandler on a
   real-time signal, all threads, into its own file `stacks-rank<R>-pid<P>.txt` in the hang directory) and that
   still carries this launch's marker gets the signal; hosttune waits until each file has stopped growing. A
   process that never armed (a binary, a rank started through the shim) is never signalled: the signal's default
   action would kill it.
2. NCCL's flight recorder, on GPU jobs: TORCH_NCCL_DEBUG_INFO_TEMP_FILE / TORCH_FR_DUMP_TEMP_FILE point into the
   hang directory and TORCH_NCCL_DEBUG_INFO_PIPE_FILE names a pipe per rank there (each unless the caller set it);
   a write to a rank's pipe makes ProcessGroupNCCL dump its ring buffer (TORCH_NCCL_TRACE_BUFFER_SIZE > 0, which
   the `debug` profile sets, with TORCH_NCCL_DUMP_ON_TIMEOUT=1 for NCCL's own timeout).
3. One line naming the ranks whose innermost frame (past the standard library) differs from the others' ("rank 1
   is in late_rank (job.py:12); rank 0 is in all_reduce (distributed_c10d.py:2950)"), said on stderr and written
   to summary.txt in the directory.
4. The job is stopped like a forwarded SIGTERM (SIGKILL after the grace), and hosttune exits with EXIT_HUNG.

The hang directory is `hosttune-hang-<launch id>/` in the directory hosttune exec was started in, made private
(0700) at the start of the job; a job that ends without a hang leaves nothing there and the directory is removed
(unless NCCL wrote a dump into it of its own accord: then it is kept and said). hosttune holds it open and reaches
its entries through that descriptor (/proc/self/fd/N/NAME), so a directory the job's user renames or swaps for a
link afterwards (as root, in a directory another user owns) changes nothing hosttune reads, writes or removes; the
ranks arm only in a directory that is their user's private one, opened without following a link.
"""

import os
import re
import stat
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, MutableMapping, Optional, Sequence, Tuple

from hosttune import fsio
from hosttune.errors import UserError
from hosttune.launch import hook
from hosttune.launch.procfs import alive, marked_processes

EXIT_HUNG = 124  # as timeout(1): the job was stopped because it made no progress; 128+N stays "died of signal N"
DIR_PREFIX = "hosttune-hang-"
NCCL_TRACE = "nccl-trace-rank-"  # + the rank: ProcessGroupNCCL's flight recorder dump
NCCL_PIPE = "nccl-pipe-"  # + the rank: a FIFO ProcessGroupNCCL reads; a write asks for the dump
STACKS_MAX = 4 << 20  # a rank's stacks file read back (bounded): thousands of threads fit
_STACKS_NAME = re.compile(r"^" + re.escape(hook.STACKS_PREFIX) + r"(rank(\d+)|proc)-pid(\d+)\.txt$")
_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)")
_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.+)$')
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_STDLIB = re.compile(r"/lib/python3\.\d+/|^<frozen ")


class Progress:
    """The job's progress marker: when it last moved (output, or a new process armed). The clock starts at the
    first move: a launcher still starting (torchrun importing torch, seconds on a busy host) is not a hang. One
    float, written by the output copies and read by the supervisor: no lock needed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.last: Optional[float] = None

    def moved(self) -> None:
        self.last = self.clock()

    def idle_s(self) -> float:
        """Seconds since the marker last moved; 0 before it first moved."""
        return 0.0 if self.last is None else self.clock() - self.last


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    func: str

    def where(self) -> str:
        return f"{self.func} ({os.path.basename(self.path)}:{self.line})"


def parse_stacks(text: str) -> List[List[Frame]]:
    """faulthandler's dump -> the stack of each thread (innermost first), the current (signalled) thread first.
    Of several dumps in one text (a thread id seen again starts the next), the last."""
    dumps: List[Dict[str, Tuple[bool, List[Frame]]]] = []
    frames: Optional[List[Frame]] = None
    for line in text.splitlines():
        head = _THREAD.match(line)
        if head:
            if not dumps or head.group(2) in dumps[-1]:
                dumps.append({})
            frames = []
            dumps[-1][head.group(2)] = (head.group(1) == "Current thread", frames)
            continue
        frame = _FRAME.match(line)
        if frame and frames is not None:
            frames.append(Frame(frame.group(1), int(frame.group(2)), frame.group(3).strip()))
    if not dumps:
        return []
    threads = list(dumps[-1].values())
    return [f for cur, f in threads if cur] + [f for cur, f in threads if not cur]


def where(stacks: Sequence[Sequence[Frame]]) -> Optional[Frame]:
    """Where a process is: the innermost frame of its first thread with Python frames (the signalled thread, which
    Linux picks as the main thread), past the standard library (`threading.wait` says less than its caller)."""
    for frames in stacks:
        if frames:
            return next((f for f in frames if not _STDLIB.search(f.path) or "-packages/" in f.path), frames[0])
    return None


def _ranks_text(labels: Sequence[str]) -> str:
    nums = [lab[4:] if lab.startswith("rank") else lab for lab in labels]
    return ("rank " if len(nums) == 1 else "ranks ") + ",".join(nums)


def _order(label: str) -> Tuple[int, str]:
    digits = label[4:].split("/", 1)[0] if label.startswith("rank") else ""
    return (int(digits) if digits.isdigit() else 1 << 30, label)


def _in_collective(at: str, frames: Mapping[str, Frame]) -> bool:
    return "/torch/distributed/" in frames[at].path.replace(os.sep, "/")


def summarize(places: Mapping[str, Optional[Frame]]) -> str:
    """One line: the ranks grouped by where they are, the odd ones first: ranks outside torch.distributed (the ones
    the others wait for) before ranks waiting in a collective, then the smaller groups; ranks that gave no stacks
    are named last."""
    groups: Dict[str, List[str]] = {}
    frames: Dict[str, Frame] = {}
    silent: List[str] = []
    for label in sorted(places, key=_order):
        frame = places[label]
        if frame is None:
            silent.append(label)
        else:
            groups.setdefault(frame.where(), []).append(label)
            frames[frame.where()] = frame
    parts: List[str] = []
    if len(groups) == 1:
        (at, labels), = groups.items()
        parts.append(f"all {len(labels)} ranks are in {at}" if len(labels) > 1 else f"{_ranks_text(labels)} is in {at}")
    else:
        for at, labels in sorted(groups.items(),
                                 key=lambda kv: (_in_collective(kv[0], frames), len(kv[1]), _order(kv[1][0]))):
            parts.append(f"{_ranks_text(labels)} {'is' if len(labels) == 1 else 'are'} in {at}")
    if silent:
        parts.append(f"{_ranks_text(silent)} gave no stacks (not a Python process hosttune's hook armed, or its "
                     f"program replaced the handler)")
    return "; ".join(parts) if parts else "no process of the job could give its stacks"


class Watch:
    """One job's hang watch: its directory, its progress, the copy of its output, and the collection."""

    def __init__(self, timeout_s: float, directory: str, dir_fd: Optional[int] = None) -> None:
        self.timeout_s = timeout_s
        self.dir = directory
        self._fd = dir_fd if dir_fd is not None else os.open(directory, _DIR_FLAGS)
        self.progress = Progress()
        self.hung = False
        self._seen_armed = 0
        self._copiers: List[threading.Thread] = []

    @classmethod
    def start(cls, timeout_s: float, marker: str, env: MutableMapping[str, str]) -> "Watch":
        """Make the job's hang directory (private, in the current directory) and put its variables in `env`."""
        tag = "".join(c for c in marker if c.isalnum() or c == "-")
        d = os.path.join(os.getcwd(), DIR_PREFIX + tag)
        try:
            os.mkdir(d, 0o700)  # fails on anything already there (a planted link included)
            fd = os.open(d, _DIR_FLAGS)
        except OSError as exc:
            raise UserError(f"exec: --hang-timeout: cannot make {d}: {exc.strerror or exc}") from None
        env[hook.HANG_DIR] = d
        env.setdefault("PYTHONUNBUFFERED", "1")
        for key, name in (("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", NCCL_TRACE), ("TORCH_FR_DUMP_TEMP_FILE", NCCL_TRACE),
                          ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", NCCL_PIPE)):
            env.setdefault(key, os.path.join(d, name))
        return cls(timeout_s, d, fd)

    def at(self, name: str) -> str:
        """The path of `name` in the directory hosttune made (through its descriptor: never a swapped one)."""
        return f"/proc/self/fd/{self._fd}/{name}"

    def attach(self, stdout: Optional[int], stderr: Optional[int]) -> None:
        """Copy the job's output pipes to ours; every chunk moves the progress marker."""
        for src, dst in ((stdout, 1), (stderr, 2)):
            if src is not None:
                t = threading.Thread(target=self._copy, args=(src, dst), name=f"hosttune-copy-{dst}", daemon=True)
                t.start()
                self._copiers.append(t)

    def _copy(self, src: int, dst: int) -> None:
        while True:
            try:
                data = os.read(src, 1 << 16)
            except OSError:
                break
            if not data:
                break
            self.progress.moved()
            while data:
                try:
                    data = data[os.write(dst, data):]
                except OSError:
                    break  # our own output is gone (a closed pipe): keep draining the job's
        try:
            os.close(src)
        except OSError:
            pass

    def stalled(self) -> bool:
        """No progress for the timeout (and not collected yet). A process newly armed is progress too."""
        armed = len(self._names(hook.STACKS_PREFIX))
        if armed != self._seen_armed:
            self._seen_armed = armed
            self.progress.moved()
        return not self.hung and self.progress.idle_s() >= self.timeout_s

    def collect(self, marker: str) -> List[str]:
        """Every armed rank's stacks and the flight recorder into the directory; the lines to say."""
        self.hung = True
        armed = self._armed(marker)
        sizes = {path: _size(path) for path in armed.values()}
        for pid in armed:
            try:
                os.kill(pid, hook.stacks_signal())
            except ProcessLookupError:
                pass
        poked = self._poke_nccl()
        _settle(list(armed.values()), sizes, deadline=time.monotonic() + 20)
        if poked:
            _wait_for(lambda: len(self._names(NCCL_TRACE)) >= poked, time.monotonic() + 30)
        places = {label: where(parse_stacks(_read(path))) for label, path in self._labels(armed).items()}
        line = summarize(places)
        nccl = len(self._names(NCCL_TRACE))
        text = (f"no output from the job for {self.timeout_s:g} s (hosttune exec --hang-timeout)\n{line}\n"
                f"stacks: {', '.join(sorted(os.path.basename(p) for p in armed.values())) or 'none'}\n"
                f"NCCL flight recorder dumps: {nccl}\n")
        try:
            fsio.atomic_write(self.at("summary.txt"), text, 0o600)
        except OSError:
            pass
        shown = os.path.relpath(self.dir) if not os.path.relpath(self.dir).startswith("..") else self.dir
        out = [f"no output from the job for {self.timeout_s:g} s: every rank's Python stacks are in {shown}/"
               + (f" (and {nccl} NCCL flight recorder dumps)" if nccl else ""),
               f"hang: {line}"]
        return out

    def _armed(self, marker: str) -> Dict[int, str]:
        """pid -> stacks file, of the processes that armed and still carry this launch's marker (a pid reused by
        another program since is never signalled: it does not carry the marker)."""
        ours = set(marked_processes(marker))
        out: Dict[int, str] = {}
        for name in self._names(hook.STACKS_PREFIX):
            m = _STACKS_NAME.match(name)
            if m and int(m.group(3)) in ours and alive(int(m.group(3))):
                out[int(m.group(3))] = self.at(name)
        return out

    @staticmethod
    def _labels(armed: Mapping[int, str]) -> Dict[str, str]:
        """label (rank0, or rank0/pid123 when two live processes say the same rank) -> stacks file."""
        by: Dict[str, List[Tuple[int, str]]] = {}
        for pid, path in sorted(armed.items()):
            m = _STACKS_NAME.match(os.path.basename(path))
            label = m.group(1) if m else "proc"
            by.setdefault(label, []).append((pid, path))
        out: Dict[str, str] = {}
        for label, items in by.items():
            for pid, path in items:
                out[label if len(items) == 1 else f"{label}/pid{pid}"] = path
        return out

    def _names(self, prefix: str) -> List[str]:
        try:
            return sorted(n for n in os.listdir(self._fd) if n.startswith(prefix))
        except OSError:
            return []

    def _poke_nccl(self) -> int:
        """Write to every rank's flight recorder pipe that has a reader (ProcessGroupNCCL's); how many."""
        poked = 0
        for name in self._names(NCCL_PIPE):
            try:
                if not stat.S_ISFIFO(os.lstat(name, dir_fd=self._fd).st_mode):
                    continue
                fd = os.open(name, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self._fd)
            except OSError:
                continue  # no reader (ENXIO): that rank's process group is gone
            try:
                os.write(fd, b"1\n")
                poked += 1
            except OSError:
                pass
            finally:
                os.close(fd)
        return poked

    def finish(self, join_s: float = 5.0) -> None:
        """After the job: let the output copies drain; without a hang, leave nothing behind but what NCCL wrote."""
        for t in self._copiers:
            t.join(join_s)
        if not self.hung:
            self._remove()
        os.close(self._fd)

    def _remove(self) -> None:
        for name in self._names(""):
            try:
                st = os.lstat(name, dir_fd=self._fd)
                if (name.startswith(hook.STACKS_PREFIX) and stat.S_ISREG(st.st_mode)) or (
                        name.startswith(NCCL_PIPE) and stat.S_ISFIFO(st.st_mode)):
                    os.unlink(name, dir_fd=self._fd)
            except OSError:
                pass
        if self._names(""):
            sys.stderr.write(f"hosttune: the job left files in {self.dir} (NCCL flight recorder dumps?)\n")
            return
        try:
            os.rmdir(self.dir)  # rmdir never follows a link: a swapped name is left alone
        except OSError:
            pass


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return -1


def _read(path: str) -> str:
    try:
        return fsio.read_bounded(path, STACKS_MAX, nofollow=True).decode("utf-8", "replace")
    except (OSError, fsio.TooLarge):
        return ""


def _wait_for(done: Callable[[], bool], deadline: float) -> bool:
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _settle(paths: Sequence[str], before: Mapping[str, int], deadline: float) -> None:
    """Until every file grew past its size `before` and kept its size for a moment (faulthandler writes a dump in
    one go from its signal handler), or the deadline: a process whose handler was replaced never writes."""
    last: Dict[str, int] = {}
    stable: Dict[str, int] = {}

    def done() -> bool:
        for p in paths:
            now = _size(p)
            stable[p] = stable.get(p, 0) + 1 if now == last.get(p) and now > before.get(p, -1) else 0
            last[p] = now
        return all(stable[p] >= 3 for p in paths)

    _wait_for(done, deadline)


__all__ = ["EXIT_HUNG", "Progress", "Frame", "Watch", "parse_stacks", "where", "summarize"]
