"""Running a job and seeing it end: exec (plain/srun) or supervision (torchrun, launchers, --verify), signal
forwarding, the sweep of every process carrying the launch's marker, and the exit status.

Plain and srun jobs are bound in this process and then exec'd (exit status and signals are the job's own); their
handoff (for the Python ranks and multiprocessing children they may start, see hook.py) is content-addressed and
reused by later jobs (handoff.write_shared). torchrun jobs, other launchers' jobs and `--verify` runs are supervised
instead: the child gets its own process group, SIGINT/SIGTERM/SIGHUP are forwarded to it, every process carrying
this launch's marker is swept when it ends, and hosttune exits with the job's status (128+N when the job died of
signal N, or when it failed after hosttune forwarded signal N). A forked guardian (guardian.py) stops the job if
hosttune itself is killed, and catches processes that left the job's process group and dropped the marker (hosttune
is their subreaper).

With a hang timeout (`exec --hang-timeout`, the profile's `hang_timeout`; hang.py) every job is supervised, plain
ones too, and its output runs through hosttune: no output for that long and the ranks' stacks are saved, the odd
rank named in one line, and the job stopped like a forwarded SIGTERM; hosttune then exits with hang.EXIT_HUNG (124).
"""

import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

from hosttune import jobrecord, programs, term
from hosttune.errors import UserError
from hosttune.launch import handoff, hang, hook
from hosttune.launch.binding import bind_self
from hosttune.launch.job import Launch
from hosttune.launch.procfs import alive, marked_processes
from hosttune.launch.verify import RankCheck, verify_pass, verify_report
from hosttune.policy import dirs, names
from hosttune.sigexec import default_handlers_for_exec

if TYPE_CHECKING:
    import subprocess

DEFAULT_GRACE_S = 40.0  # torchrun waits 30 s for its workers after SIGTERM before SIGKILL; give it that and more
MAX_GRACE_S = 86400.0  # a day: longer is a typo, and inf/nan would never send the SIGKILL
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _which_or_fail(cmd: str, environ: Mapping[str, str]) -> str:
    """The job's program, resolved by the program gateway (hosttune/programs.py): a bare name on PATH (as root, on
    its directories only root can write: a PATH kept by `sudo -E` must not pick another user's `torchrun`), a
    path made absolute. A path typed on root's own command line is run as named (sudo's semantics)."""
    if os.sep in cmd and not os.path.lexists(cmd):
        raise UserError(f"exec: {cmd}: no such file")
    return programs.resolve(cmd, "exec:", path=environ.get("PATH", os.defpath), check=False)


def _grace() -> float:
    raw = os.environ.get(names.STOP_GRACE)
    if not raw:
        return DEFAULT_GRACE_S
    try:
        grace = float(raw)
    except ValueError:
        grace = -1.0
    if not 0 <= grace <= MAX_GRACE_S:  # nan fails both comparisons; inf would never send the SIGKILL
        raise UserError(f"{names.STOP_GRACE}={term.printable(raw[:40])} is not a number of seconds "
                        f"from 0 to {MAX_GRACE_S:.0f}")
    return grace


def _say(msg: str) -> None:
    sys.stderr.write(f"hosttune: {msg}\n")
    sys.stderr.flush()


def run(launch: Launch, *, verify: bool = False, hang_timeout: Optional[float] = None) -> int:
    """Run the job; returns the exit status hosttune should end with (plain jobs without --verify or a hang timeout
    do not return)."""
    environ = dict(os.environ)
    marker = f"{os.getpid()}-{os.urandom(4).hex()}"
    watch: Optional[hang.Watch] = None
    if launch.kind in ("torchrun", "launcher"):
        t = launch.torchrun
        _which_or_fail(launch.argv[0], environ)
        if t is not None and t.mode in ("python", "run_path") and not os.path.exists(t.script):
            raise UserError(f"exec: {t.script}: no such file (torchrun's training script)")
        if t is not None and t.mode == "no_python":
            _which_or_fail(t.script, environ)
        try:
            path = handoff.write(handoff.payload(launch, marker), environ)
        except OSError as exc:
            raise UserError(f"exec: {exc}") from None
        env = dict(environ)
        env.update(launch.env)
        if launch.kind == "launcher" or launch.hook:
            env.update(hook.job_env(environ))  # every Python rank applies its own plan at start
        else:
            for key in ("PET_MODULE", "PET_RUN_PATH", "PET_NO_PYTHON"):
                env.pop(key, None)  # consumed while parsing; the rewritten argv says --no-python itself
        env[names.HANDOFF] = path
        env[names.LAUNCH_ID] = marker
        record = jobrecord.begin(dirs.runtime_dir(env), _visible(launch, env), env)  # the monitor's job label
        try:
            if hang_timeout is not None:
                watch = hang.Watch.start(hang_timeout, marker, env)
            return _supervise(launch, launch.argv, env, marker, verify, cleanup=[path], watch=watch)
        finally:
            handoff.remove(path)
            jobrecord.remove(record)
    # plain / srun: bind this process, then exec (or spawn and watch with --verify)
    plan = launch.ranks[0]
    exe = _which_or_fail(launch.argv[0], environ)
    env = dict(environ)
    env.update(plan.env)
    env[names.LAUNCH_ID] = marker
    env[names.LOCAL_RANK] = str(plan.local_rank)
    env[names.LOCAL_WORLD_SIZE] = str(plan.local_world_size)
    _hook_handoff(launch, marker, environ, env)
    argv = list(launch.argv)
    if not launch.no_bind:
        binding = bind_self(plan, launch.facts.tools.libnuma, launch.facts.tools.numactl)
        for note in binding.notes:
            _say(note)
        if binding.prefix:
            argv = [*binding.prefix, "--", *argv]
            exe = binding.prefix[0]
    record = jobrecord.begin(dirs.runtime_dir(env), env.get("CUDA_VISIBLE_DEVICES"), env)  # the monitor's job label
    try:
        return _run_plain(launch, argv, exe, env, marker, verify, hang_timeout, record)
    finally:
        jobrecord.remove(record)


def _run_plain(launch: Launch, argv: List[str], exe: str, env: Dict[str, str], marker: str, verify: bool,
               hang_timeout: Optional[float], record: Optional[str]) -> int:
    """Exec the bound plain/srun job (no return), or supervise it (--verify, a hang timeout)."""
    watch: Optional[hang.Watch] = None
    if hang_timeout is not None:
        watch = hang.Watch.start(hang_timeout, marker, env)
    elif not verify:
        sys.stdout.flush()
        jobrecord.watch(record)  # removes the record when the exec'd job (this pid) ends
        default_handlers_for_exec()  # a Ctrl-C caught just now is acted on, not lost in the exec
        try:
            programs.execve(argv, env, "exec:", exe=exe)
        except OSError as exc:
            raise UserError(f"exec: {argv[0]}: {exc.strerror}") from None
    return _supervise(launch, argv, env, marker, verify, watch=watch)


def _visible(launch: Launch, env: Mapping[str, str]) -> Optional[str]:
    """The GPUs a supervised job's ranks are given: each rank's planned CUDA_VISIBLE_DEVICES, else the job's."""
    return jobrecord.visible(p.env.get("CUDA_VISIBLE_DEVICES", env.get("CUDA_VISIBLE_DEVICES")) for p in launch.ranks)


def _hook_handoff(launch: Launch, marker: str, environ: Mapping[str, str], env: Dict[str, str]) -> Optional[str]:
    """A plain/srun job's handoff and hook (its Python children with rank variables find their plans); None, and
    the job runs as before, when the hook directory is not usable or no private directory could be made."""
    extra = hook.job_env(environ)
    if not extra:
        return None
    try:
        path = handoff.write_shared(handoff.payload(launch, marker), environ)
    except OSError:
        return None
    env.update(extra)
    env[names.HANDOFF] = path
    return path


def _supervise(launch: Launch, argv: List[str], env: Dict[str, str], marker: str, verify: bool,
               cleanup: Sequence[str] = (), watch: "Optional[hang.Watch]" = None) -> int:
    """Spawn the job in its own process group, forward signals, optionally verify ranks, sweep, map the status.

    A guardian (guardian.py) stops the job if this process dies without doing so itself (SIGKILL, OOM killer)."""
    import subprocess

    from hosttune.launch import guardian

    grace = _grace()
    guardian.become_subreaper()  # a rank's setsid'd child stays in our tree, where the guardian sees it
    guard = guardian.Guardian.start(marker, grace, cleanup)
    fwd = _Forwarder()
    fwd.watch = watch
    checks: Dict[int, RankCheck] = {}
    pipes: Dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} if watch is not None else {}
    try:
        try:
            # no threads here (the output copies start after), so preexec_fn is safe; the top process also gets
            # SIGTERM if we die
            fwd.child = programs.popen(argv, "exec:", env=env, check_trust=False,
                                       preexec_fn=guardian.pdeathsig_preexec(), **pipes)
        except OSError as exc:
            guard.finish()
            if watch is not None:
                watch.finish()
            raise UserError(f"exec: {argv[0]}: {exc.strerror}") from None
        guard.watch(fwd.child.pid)
        if watch is not None:
            watch.attach(_fd(fwd.child.stdout), _fd(fwd.child.stderr))
        if fwd.received:  # a signal that came before the child existed
            os.killpg(fwd.child.pid, fwd.received[-1])
        _wait(launch, fwd, guard.pid, grace, verify, checks, marker)
        rc = fwd.child.returncode
    finally:
        fwd.restore()
        _kill_unfinished(fwd.child)
        _sweep(marker)
        guard.finish()  # stragglers that dropped the marker (setsid + env -i) are stopped by the guardian
        if watch is not None:
            watch.finish()
    if verify:
        verify_report(launch, checks)
    if watch is not None and watch.hung:
        return hang.EXIT_HUNG
    return _status(rc, fwd.received)


def _fd(stream: Any) -> Optional[int]:
    """The descriptor of one of the job's output pipes, taken from its file object (the copy reads and closes it)."""
    if stream is None:
        return None
    fd = os.dup(stream.fileno())
    stream.close()
    return fd


class _Forwarder:
    """SIGINT/SIGTERM/SIGHUP, from now until `restore`, go to the job's process group; `received` lists them."""

    def __init__(self) -> None:
        self.received: List[int] = []
        self.child: Optional[subprocess.Popen[bytes]] = None
        self.watch: Optional[hang.Watch] = None
        self._old: Dict[int, Any] = {sig: signal.signal(sig, self._forward) for sig in FORWARDED}

    def _forward(self, signum: int, frame: Any) -> None:
        self.received.append(signum)
        if self.child is not None and self.child.returncode is None:
            _killpg(self.child.pid, signum)

    def restore(self) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)


def _wait(launch: Launch, fwd: _Forwarder, guard_pid: int, grace: float, verify: bool,
          checks: Dict[int, RankCheck], marker: str) -> None:
    """Until the job ends: reap orphans (we are their subreaper), SIGKILL the job `grace` seconds after the first
    forwarded signal, and with --verify check its ranks as they appear; with a hang watch, a job that made no
    progress for its timeout has its stacks collected and is stopped as by a forwarded SIGTERM."""
    import subprocess

    from hosttune.launch import guardian

    child = fwd.child
    assert child is not None
    started = time.monotonic()
    deadline: Optional[float] = None
    while True:
        now = time.monotonic()
        interval = 0.02 if now - started < 3 else 0.25
        try:
            child.wait(timeout=interval if verify or fwd.received else 0.5)
            return
        except subprocess.TimeoutExpired:
            pass
        if fwd.watch is not None and fwd.watch.stalled():
            for line in fwd.watch.collect(marker):
                _say(line)
            _say(f"stopping the job (SIGTERM, SIGKILL after {grace:g} s); exit status {hang.EXIT_HUNG}")
            fwd._forward(signal.SIGTERM, None)
        if fwd.received and deadline is None:
            deadline = time.monotonic() + grace
        guardian.reap_orphans_except(child.pid, guard_pid)
        if deadline is not None and time.monotonic() > deadline:
            _say(f"job still running {grace:.0f} s after signal {fwd.received[0]}; killing it")
            _killpg(child.pid, signal.SIGKILL)
            deadline = float("inf")
        if verify:
            verify_pass(launch, child.pid, checks, marker)


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _kill_unfinished(child: "Optional[subprocess.Popen[bytes]]") -> None:
    """A job still running when supervision ends (an exception, a KeyboardInterrupt) is killed and reaped."""
    if child is not None and child.returncode is None:
        _killpg(child.pid, signal.SIGKILL)
        child.wait()


def _status(rc: int, received: Sequence[int]) -> int:
    """The job's status the shell's way: 128+N when it died of signal N or failed after we forwarded signal N."""
    if rc < 0:
        return 128 - rc
    if rc != 0 and received:
        return 128 + received[0]
    return rc


def _sweep(marker: str, wait_s: float = 2.0) -> List[int]:
    """SIGTERM, then SIGKILL, every process still carrying the marker: no rank outlives the launcher."""
    left = marked_processes(marker)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            left = [p for p in left if alive(p)]
            if not left:
                break
            time.sleep(0.02)
    return left
