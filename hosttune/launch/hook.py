"""The per-rank hook: every Python process of a job applies its own plan at interpreter start, before user code can
import torch, whatever launcher started it.

How it gets there: `hosttune exec` puts HOOK_DIR (hosttune/launch/rankhook/, holding only `sitecustomize.py`) first
on the job's PYTHONPATH, next to $HOSTTUNE_HANDOFF. Python's `site` imports `sitecustomize` from the first path
entry that has one, so every interpreter of the job (ranks, their launchers, helpers) runs `run()` below once, at
start. As root the directory is added only when it passes `trust.check_path` like any PYTHONPATH entry; otherwise
the job runs as before (top process planned, ranks not).

What a process does, by what it finds (`role`):
- rank: a launcher's local-rank variables are set (rankvars.py: LOCAL_RANK/LOCAL_WORLD_SIZE, Open MPI, MPICH/Intel
  MPI, PMIx, PMI, Slurm). It takes its plan for that world size from the handoff (precomputed by the launcher;
  a size the launcher did not foresee is planned by the launcher's planner in a child process, rank.replan),
  sets the plan's variables in os.environ, binds its CPUs (sched_setaffinity) and memory
  (set_mempolicy). A variable a launcher between hosttune and the rank changed (its value is neither what hosttune
  gave the job's top process nor the caller's own) is that launcher's choice and is kept: accelerate's
  --num_cpu_threads_per_process, `mpirun -x OMP_NUM_THREADS=...`.
- spawn: a multiprocessing child (spawn, forkserver) without rank variables, e.g. torch.multiprocessing.spawn.
  It gets OMP_NUM_THREADS/MKL_NUM_THREADS = an even share of the job's threads (the plan's threads for the job
  divided by the number of such children: the count the parent's hook recorded for torch.multiprocessing.spawn,
  or the siblings it can see, whichever is larger). torch.multiprocessing.spawn's processes are ranks, so the job
  also gets ONE warning line with the fix (start it under torchrun); a spawn Pool's or DataLoader's workers only
  get the share.
- top: the job's own program in a plain or srun job (the launcher already bound it before exec). If it later makes
  itself local rank 0 and starts its other ranks with LOCAL_RANK (Lightning's `Trainer(strategy="ddp")` run as
  `python train.py`), it rebinds itself to rank 0's plan when it starts the first of them (all its threads, and
  torch.set_num_threads when torch is loaded). It also counts torch.multiprocessing.spawn's processes.
- none: anything else (no handoff, or a helper Python with no rank). Nothing is changed.

With a hang watch ($HOSTTUNE_HANG_DIR, `exec --hang-timeout`), every role but none also arms faulthandler on a
real-time signal (arm_stacks): hang.py takes the job's stacks with it when the job stops making progress.

Every role then leaves as it found things: HOOK_DIR is removed from sys.path, this module's `sitecustomize` is
dropped from sys.modules and the next `sitecustomize` on the path is imported (a user's own, or the distro's);
`usercustomize` runs after it as Python would run it. The hosttune modules the hook loaded are dropped from
sys.modules too, so the program's own `import hosttune` finds its own (not in an armed top process, whose
watchers run later). PYTHONPATH keeps HOOK_DIR in os.environ,
on purpose: a nested launcher (a shell script that starts mpirun, a rank that starts its own workers) hands it on,
and their Python children find their plans.

What a bad plan does is rank.py's one failure rule, the same as in the shim: tampering or a trust failure (a
handoff another user could have written, a missing or malformed one, as root a plan variable naming another
user's file) refuses the process: one line on stderr, and sitecustomize ends it with status 2 before user code
runs. A plan that merely does not fit (CPUs not allowed here, memory not bindable, a re-plan that failed) is ONE
line and the process runs on as its launcher started it.

Cost, per Python process of the job: a process without $HOSTTUNE_HANDOFF imports nothing (the hook only tidies
sys.path and chains). A rank imports hosttune.launch.{hook, rank, rankvars, handoff, binding, procfs},
hosttune.{rankplan, fsio, trust, cpulist, errors, policy.names} and the stdlib they need (dataclasses for
RankPlan); never plan/, profile, facts, YAML, click or the detector (.importlinter's rank-side contract). Where
the time went before the rank module and RankPlan (`python3 -X importtime`, Debian's /usr/bin/python3, best of 25
on this 2-vCPU machine at load ~8): 28 ms in all: typing (with re/enum/collections, needed by every
hosttune module) 7-8, tempfile (fsio's module-level import) 6, pathlib (trust's, with urllib.parse) 4.5,
importlib.util/contextlib 4, json 1.7, the hosttune modules and the work itself (handoff checked and read,
variables, sched_setaffinity) about 3.

Where /proc shows it: affinity (Cpus_allowed_list) and memory policy (numa_maps) are the kernel's, so /proc shows
what the hook set. The variables are set with putenv inside the running interpreter: what the rank's libraries
read (OpenMP, MKL, torch) and what its children inherit, but /proc/PID/environ keeps the block the rank was
started with. `hosttune exec --verify` therefore checks a hook-planned rank's affinity and memory policy, and its
variables only where the launcher handed them already.
"""

import errno
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, MutableMapping, Optional, Set, Tuple

from hosttune.policy import names

HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rankhook")
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
_SPAWN_CODE = ("from multiprocessing.spawn import spawn_main", "from multiprocessing.forkserver import main")
# multiprocessing's resource tracker (`python -c "from multiprocessing.resource_tracker import main;main(FD)"`), which
# a rank's first spawn or forkserver child starts: it inherits the rank's variables but is none of the rank's work.
_TRACKER_CODE = "from multiprocessing.resource_tracker import main"
_REBIND_LOOKS = 8  # _bind: looks at the thread list, each after rebinding what the one before found
_KINDS_WITH_TOP = ("plain", "srun", "rank")  # the launcher exec's into the user's program (not torchrun/launcher)


# ---- launcher side --------------------------------------------------------------------------------------------


_REFUSED: Set[str] = set()  # what job_env said already in this process (prepare and run both ask)


def job_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """The variables that install the hook in every Python of the job: PYTHONPATH with HOOK_DIR first. Empty when
    HOOK_DIR cannot be used (as root: not root's alone), so the job runs as it would without the hook; then ONE
    line on stderr names the file and the fix (once per process, however often the launcher asks)."""
    from hosttune import trust

    try:
        hook_dir = HOOK_DIR
        if trust.is_root():  # like any PYTHONPATH entry: the directory and the one file in it are root's alone
            hook_dir = trust.check_path(HOOK_DIR, "the per-rank hook directory", kind="dir")
            trust.check_path(os.path.join(hook_dir, "sitecustomize.py"), "the per-rank hook")
    except trust.Untrusted as exc:
        msg = str(exc)
        if msg not in _REFUSED:
            _REFUSED.add(msg)
            _say(f"{msg}; the job runs without the per-rank hook")
        return {}
    old = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != hook_dir]
    return {"PYTHONPATH": os.pathsep.join([hook_dir, *old])}


# ---- rank side ------------------------------------------------------------------------------------------------


def _say(msg: str) -> None:
    try:
        sys.stderr.write(f"hosttune: {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # no stderr (daemon, closed descriptor): nothing to say it on


def _launcher_pid(environ: Mapping[str, str]) -> Optional[int]:
    head = environ.get(names.LAUNCH_ID, "").split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _cmdline() -> List[str]:
    try:
        with open("/proc/self/cmdline", "rb") as fh:
            raw = fh.read(1 << 20)
    except OSError:
        return list(sys.argv)
    return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0")[:-1]]


def is_spawn_child(argv: List[str], cmdline: Optional[Callable[[], List[str]]] = None) -> bool:
    """A multiprocessing spawn or forkserver child: `python -c "from multiprocessing.spawn import spawn_main; ..."
    --multiprocessing-fork` (sys.argv is ['-c', '--multiprocessing-fork']) or the forkserver's `-c` line."""
    if "--multiprocessing-fork" in argv:
        return True
    if not argv or argv[0] != "-c":
        return False
    full = (cmdline or _cmdline)()
    return any(code in arg for arg in full for code in _SPAWN_CODE)


def role(environ: Mapping[str, str], data_kind: Callable[[], Optional[str]], argv: List[str]) -> str:
    """rank | spawn | top | top-applied | none (see the module's docstring). `data_kind` reads the handoff's kind
    (only asked when the answer depends on it)."""
    from hosttune.launch import rankvars

    launcher = _launcher_pid(environ)
    me = os.getpid()
    if launcher == me:
        return "top"  # the launcher exec'd into this process after binding it: already applied
    if rankvars.has_rank(environ):
        return "rank"
    if is_spawn_child(argv):
        return "spawn"
    if launcher is not None and os.getppid() == launcher and data_kind() in _KINDS_WITH_TOP:
        return "top"  # the job's program behind a wrapper the launcher exec'd (`hosttune exec -- bash run.sh`)
    return "none"


def rank_env(plan_env: Mapping[str, str], data: Mapping[str, Any], environ: Mapping[str, str]) -> Dict[str, str]:
    """The plan's variables this rank sets: all of them, except one a launcher between hosttune and the rank
    changed (neither hosttune's value for the top process nor the caller's own): that launcher's choice stays."""
    top = data.get("top_env") or {}
    user = data.get("touched") or {}
    out: Dict[str, str] = {}
    for key, value in plan_env.items():
        cur = environ.get(key)
        if key in top and cur is not None and cur not in (top[key], user.get(key)) and cur != value:
            continue
        out[key] = str(value)
    return out


def _set_env(env: Mapping[str, str], target: MutableMapping[str, str]) -> None:
    for key, value in env.items():
        if target.get(key) != value:
            target[key] = value


def _allowed(environ: Mapping[str, str]) -> Set[int]:
    """The CPUs this rank may be bound inside: its own mask, or the job's CPUs its parent had before that parent
    made itself rank 0 and rebound (its children inherit the narrowed mask at fork: see _TopWatch)."""
    mine = os.sched_getaffinity(0)
    raw = environ.get(names.JOB_CPUS)
    if raw:
        from hosttune.cpulist import parse_cpulist

        job = set(parse_cpulist(raw))
        if mine <= job:
            return job
    return mine


def _bind(plan: Any, libnuma: Optional[str], environ: Mapping[str, str]) -> List[str]:
    """Bind every thread of this process to the plan's CPUs, and the calling thread's memory. Notes back."""
    from hosttune.cpulist import format_cpulist
    from hosttune.launch.binding import effective_cpus, effective_mems, set_mempolicy

    notes: List[str] = []
    if plan.cpus:
        cpus = effective_cpus(plan.cpus, _allowed(environ))
        if set(cpus) != set(plan.cpus):
            notes.append(f"plan CPUs {format_cpulist(plan.cpus)} narrowed to the allowed {format_cpulist(cpus)}")
        # a thread may start one while we go (jemalloc's background threads do, from a thread of their own): one
        # made by a thread not yet rebound keeps the old CPUs, so look again until a look finds no new thread
        done: Set[int] = set()
        for _ in range(_REBIND_LOOKS):
            try:
                tids = [int(t) for t in os.listdir("/proc/self/task")]
            except OSError:
                tids = [0]
            new = [tid for tid in tids if tid not in done]
            if not new:
                break
            for tid in new:
                done.add(tid)
                try:
                    os.sched_setaffinity(tid, cpus)
                except OSError as exc:
                    if tid == 0 or tid == os.getpid():
                        raise
                    if exc.errno != errno.ESRCH:  # a thread that ended meanwhile has nothing to rebind
                        notes.append(f"thread {tid} not rebound ({exc.strerror})")
    policy, nodes = effective_mems(plan)
    if policy != "none":
        why = set_mempolicy(policy, nodes, libnuma)
        if why is not None:
            notes.append(f"memory not bound ({why}; numactl cannot be applied inside a running interpreter)")
    return notes


def apply_rank(data: Mapping[str, Any], local: int, world: int, environ: MutableMapping[str, str]
               ) -> Tuple[Any, List[str]]:
    """Apply rank `local` of `world`'s plan to this process: variables, CPUs (of every thread it has: even at
    interpreter start a preloaded allocator may have started one, jemalloc's background_thread), memory (the
    calling thread's policy: set_mempolicy is per thread). (plan, notes); (None, [why]) when no plan fits (rank.py's
    failure rule: the rank runs as started). trust.Untrusted propagates: the caller refuses the rank."""
    from hosttune.launch import rank

    setup = rank.setup(data, local, world, environ)
    if setup.plan is None:
        return None, [f"{setup.warning or 'plan not applied'}; it runs as its launcher started it"]
    env = rank.checked_env(rank_env(setup.plan.env, data, environ), data, environ)
    _set_env(env, environ)
    environ[names.LOCAL_RANK] = str(local)
    environ[names.LOCAL_WORLD_SIZE] = str(world)
    if setup.no_bind:
        return setup.plan, []
    try:
        return setup.plan, _bind(setup.plan, setup.libnuma, environ)
    except OSError as exc:  # the plan's CPUs do not fit this process at all
        return setup.plan, [f"CPUs {list(setup.plan.cpus)} not bound ({exc.strerror or exc}); it runs as its "
                            f"launcher started it"]


def spawn_share(data: Mapping[str, Any], environ: Mapping[str, str]) -> Tuple[int, int, int]:
    """(threads for this multiprocessing child, children counted, the job's threads)."""
    from hosttune.launch.procfs import children

    job_threads = 0
    top = data.get("top_env") or {}
    raw = top.get("OMP_NUM_THREADS") or environ.get("OMP_NUM_THREADS") or ""
    if raw.isdigit() and len(raw) <= 6:  # a longer digit string is no thread count (and int() of 5000 digits raises)
        job_threads = int(raw)
    if job_threads < 1:
        job_threads = len(os.sched_getaffinity(0))
    counted = 0
    hint = environ.get(names.SPAWN_PROCS, "").split(":", 1)[0]  # N (torch.multiprocessing.spawn) or N:pool
    if hint.isdigit() and len(hint) <= 6:
        counted = int(hint)
    siblings = 0
    for pid in children(os.getppid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                raw_cmd = fh.read(1 << 16)
        except OSError:
            continue
        if b"--multiprocessing-fork" in raw_cmd or any(c.encode() in raw_cmd for c in _SPAWN_CODE):
            siblings += 1
    n = max(1, counted, siblings)
    return max(1, job_threads // n), n, job_threads


def _first_to_say(handoff_path: str, launch_id: str) -> bool:
    """True for the first process of this launch to ask: a note (O_EXCL) in the handoff's private directory, which
    a plain job's later launches share. Notes of launches whose launcher pid is gone are removed on the way."""
    from hosttune.launch.handoff import SPAWN_NOTE
    from hosttune.launch.procfs import alive

    d = os.path.dirname(handoff_path)
    tag = "".join(c for c in launch_id if c.isalnum() or c == "-") or "none"
    try:
        fd = os.open(os.path.join(d, SPAWN_NOTE + tag), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
    except OSError:
        return False  # said already in this job (or the directory is gone)
    os.close(fd)
    try:
        for name in os.listdir(d):
            pid = name[len(SPAWN_NOTE):].split("-", 1)[0]
            if name.startswith(SPAWN_NOTE) and pid.isdigit() and not alive(int(pid)):
                os.unlink(os.path.join(d, name))
    except OSError:
        pass
    return True


def apply_spawn(data: Mapping[str, Any], handoff_path: str, environ: MutableMapping[str, str]) -> None:
    """A multiprocessing child without rank variables: an even share of the job's threads. The warning is said
    (once per job) for torch.multiprocessing.spawn's processes, which are ranks; a Pool's or a spawn DataLoader's
    workers are not ranks and only get the share."""
    share, n, job_threads = spawn_share(data, environ)
    env = rank_env({k: str(share) for k in THREAD_VARS}, data, environ)
    _set_env(env, environ)
    ranks = environ.get(names.SPAWN_PROCS, "").isdigit()  # torch.multiprocessing.spawn's, not a Pool's
    if not ranks or not _first_to_say(handoff_path, environ.get(names.LAUNCH_ID, "")):
        return
    threads = env.get("OMP_NUM_THREADS") or environ.get("OMP_NUM_THREADS", "?")
    _say(f"torch.multiprocessing.spawn started {n} ranks without rank variables, so hosttune cannot bind them per "
         f"rank; each gets OMP_NUM_THREADS={threads} (an even share of the job's {job_threads}). Fix: start the "
         f"job under torchrun (hosttune exec -- torchrun --nproc-per-node={n} SCRIPT) and read LOCAL_RANK instead "
         f"of spawning")


# ---- the top process: Lightning-style ranks started after the fact, torch.multiprocessing.spawn counted --------


class _TopWatch:
    """Armed in the job's top process. An audit hook (subprocess.Popen) sees the program start a child with
    LOCAL_RANK after having made itself LOCAL_RANK=0: it is rank 0 of LOCAL_WORLD_SIZE (or WORLD_SIZE) now, and
    rebinds. An import watcher wraps torch.multiprocessing.spawn.start_processes to tell its children their count
    ($HOSTTUNE_SPAWN_PROCS while they start)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.done = False
        self.busy = False
        from hosttune.cpulist import format_cpulist
        from hosttune.launch import rankvars
        from hosttune.trust import Untrusted

        self.untrusted = Untrusted
        self.rankvars = rankvars  # held, as the modules below: the hook's modules stay loaded in a top process
        self.format_cpulist = format_cpulist
        self.apply_rank = apply_rank

    def audit(self, event: str, args: Tuple[Any, ...]) -> None:
        if event != "subprocess.Popen" or self.done or self.busy:
            return
        env = args[3] if len(args) > 3 else None
        if not env or "LOCAL_RANK" not in env or "LOCAL_RANK" not in os.environ:
            return
        self.busy = True
        try:
            self.done = True
            place = self.rankvars.place(os.environ)
            if place is None or place.local_world_size < 2:
                return
            # The child forks after this event, with the mask this process is about to narrow: tell it (and the
            # ranks started after it, whose environment is copied from ours) which CPUs the job had.
            job_cpus = self.format_cpulist(sorted(os.sched_getaffinity(0)))
            os.environ[names.JOB_CPUS] = job_cpus
            if isinstance(env, dict):
                env[names.JOB_CPUS] = job_cpus
            plan, notes = self.apply_rank(self.data, place.local_rank, place.local_world_size, os.environ)
            torch = sys.modules.get("torch")
            threads = getattr(plan, "threads", None)
            if torch is not None and threads and "OMP_NUM_THREADS" in plan.env:
                try:
                    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", threads)))
                except Exception as exc:  # noqa: BLE001 - a torch that refuses must not stop the job
                    notes.append(f"torch.set_num_threads failed ({exc})")
            if notes:
                _say(f"rank {place.local_rank}/{place.local_world_size} (rebound when it started its ranks): "
                     + "; ".join(notes))
        except self.untrusted as exc:  # rank.py's failure rule: a rank on a tampered plan does not go on
            _say(f"this process became local rank 0 of its own ranks: refused ({exc}); not continued")
            sys.stderr.flush()
            os._exit(2)
        except Exception as exc:  # noqa: BLE001 - never break the job
            _say(f"this process became local rank 0 of its own ranks but was not rebound ({exc}); it keeps the "
                 f"whole job's CPUs")
        finally:
            self.busy = False


class _SpawnCounter:
    """A meta path finder that, when the program imports them, wraps torch.multiprocessing.spawn.start_processes
    (its processes are ranks: $HOSTTUNE_SPAWN_PROCS=N while they start) and multiprocessing.pool.Pool.__init__ (a
    spawn/forkserver Pool's workers: N:pool), so each child knows how many share the job's threads."""

    WATCHED = ("torch.multiprocessing.spawn", "multiprocessing.pool")

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.WATCHED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _WrappingLoader(spec.loader)  # type: ignore[assignment]
                return spec
            if spec is not None:
                return spec
        return None


def _with_count(count: str, call: Callable[[], Any]) -> Any:
    old = os.environ.get(names.SPAWN_PROCS)
    os.environ[names.SPAWN_PROCS] = count
    try:
        return call()
    finally:
        if old is None:
            os.environ.pop(names.SPAWN_PROCS, None)
        else:
            os.environ[names.SPAWN_PROCS] = old


class _WrappingLoader:
    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        start = getattr(module, "start_processes", None)
        if start is not None and not getattr(start, "_hosttune", False):
            def start_processes(fn: Any, args: Any = (), nprocs: int = 1, *a: Any, **kw: Any) -> Any:
                return _with_count(str(nprocs), lambda: start(fn, args, nprocs, *a, **kw))

            start_processes._hosttune = True  # type: ignore[attr-defined]
            start_processes.__wrapped__ = start  # type: ignore[attr-defined]
            module.start_processes = start_processes
        pool = getattr(module, "Pool", None)
        init = getattr(pool, "__init__", None)
        if pool is not None and init is not None and not getattr(init, "_hosttune", False):
            def __init__(self: Any, processes: Any = None, *a: Any, **kw: Any) -> None:
                ctx = kw.get("context") or (a[3] if len(a) > 3 else None)
                try:
                    method = (ctx or module.get_context()).get_start_method()
                except Exception:  # noqa: BLE001 - a context we cannot ask: count siblings instead
                    method = "fork"
                if method not in ("spawn", "forkserver"):
                    init(self, processes, *a, **kw)  # forked workers run no hook: nothing to tell them
                    return
                n = processes if isinstance(processes, int) and processes > 0 else (os.cpu_count() or 1)
                _with_count(f"{n}:pool", lambda: init(self, processes, *a, **kw))

            __init__._hosttune = True  # type: ignore[attr-defined]
            pool.__init__ = __init__

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def arm_top(data: Mapping[str, Any]) -> None:
    watch = _TopWatch(data)
    sys.addaudithook(watch.audit)
    sys.meta_path.insert(0, _SpawnCounter())


# ---- the hang watch's stacks (hosttune exec --hang-timeout; the launcher side is hang.py) ---------------------

HANG_DIR = names.HANG_DIR  # the job's hang directory (launch/hang.py makes it, private to the job's user)
STACKS_PREFIX = "stacks-"  # stacks-rank<R>-pid<P>.txt (or stacks-proc-pid<P>.txt without a rank variable)


def stacks_signal() -> int:
    """The signal on which an armed process writes its Python stacks: a real-time one, which programs and
    launchers leave alone (SIGUSR1/2 are Lightning's, Slurm's and torchelastic's), and which hang.py sends only to
    the processes that armed it (an unarmed one would die of it)."""
    import signal

    return int(signal.SIGRTMIN) + 6


def _is_resource_tracker(argv: List[str]) -> bool:
    return bool(argv) and argv[0] == "-c" and any(_TRACKER_CODE in arg for arg in _cmdline())


def arm_stacks(environ: Mapping[str, str], argv: List[str]) -> Optional[str]:
    """With $HOSTTUNE_HANG_DIR set, register faulthandler on `stacks_signal()` writing every thread's Python stack
    to this process's own file there (created here, O_EXCL and no-follow, in the directory hosttune made for the
    job, which must be this user's private directory and not a link: a variable pointing elsewhere arms nothing).
    A disposition that is already there (a C library's handler) is chained; a handler the program sets later
    for the same signal replaces ours, and hang.py then says that process gave no stacks. The file's path, or None
    (no hang watch, a multiprocessing worker of a rank or its resource tracker, or the file could not be made: the
    job runs unwatched)."""
    d = environ.get(HANG_DIR)
    if not d or not os.path.isabs(d) or is_spawn_child(argv) or _is_resource_tracker(argv):
        return None
    import faulthandler
    import signal

    rank = environ.get("RANK") or environ.get("LOCAL_RANK") or environ.get(names.LOCAL_RANK) or ""
    label = f"rank{rank}" if rank.isdigit() and len(rank) <= 7 else "proc"
    from hosttune.trust import private_to_me

    name = f"{STACKS_PREFIX}{label}-pid{os.getpid()}.txt"
    sig = stacks_signal()
    try:
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not private_to_me(os.fstat(dfd)):
            return None
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    os.write(fd, f"# {label} pid {os.getpid()}: Python stacks, every thread, on signal {sig} (faulthandler)\n"
                 .encode())
    chain = signal.getsignal(sig) not in (signal.SIG_DFL, signal.SIG_IGN)  # None: a handler set outside Python
    faulthandler.register(sig, file=fd, all_threads=True, chain=chain)  # keeps fd: it stays open for the dump
    return os.path.join(d, name)


# ---- entry point ----------------------------------------------------------------------------------------------


def run(environ: Optional[MutableMapping[str, str]] = None, argv: Optional[List[str]] = None) -> str:
    """What sitecustomize calls: find this process's role and apply it. Returns the role: "refused" when
    rank.py's failure rule refuses this process (tampering, a trust failure; said in one line, and sitecustomize
    ends the process with status 2), "failed" when a plan did not fit (one warning line, the process runs)."""
    env: MutableMapping[str, str] = os.environ if environ is None else environ
    path = env.get(names.HANDOFF)
    if not path:
        return "none"
    from hosttune import trust
    from hosttune.errors import UserError
    from hosttune.launch import rank

    argv = list(sys.argv if argv is None else argv)
    cache: Dict[str, Any] = {}

    def data() -> Mapping[str, Any]:
        if "d" not in cache:
            from hosttune.launch import handoff

            cache["d"] = handoff.read(env) or {}
        return cache["d"]  # type: ignore[no-any-return]

    what = "this process"
    try:
        who = role(env, lambda: data().get("kind"), argv)
        if who != "none" and env.get(HANG_DIR):
            try:
                arm_stacks(env, argv)
            except (OSError, ValueError, RuntimeError) as exc:
                _say(f"{what}: the hang watch cannot take this process's stacks ({exc})")
        if who == "rank":
            from hosttune.launch import rankvars

            place = rankvars.place(env)
            assert place is not None
            what = f"rank {place.local_rank}/{place.local_world_size} ({place.source})"
            _plan, notes = apply_rank(data(), place.local_rank, place.local_world_size, env)
            if notes:
                _say(f"{what}: " + "; ".join(notes))
        elif who == "spawn":
            what = "multiprocessing child"
            apply_spawn(data(), path, env)
        elif who == "top" and data().get("kind") in _KINDS_WITH_TOP:
            arm_top(data())
            return "top-armed"
        return who
    except trust.Untrusted as exc:  # tampering or a trust failure: the rank is refused (sitecustomize exits 2)
        _say(rank.refused_line(what, exc))
        return "refused"
    except (UserError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        _say(rank.warned_line(what, f"plan not applied ({exc})"))
        return "failed"


__all__ = ["HOOK_DIR", "HANG_DIR", "STACKS_PREFIX", "job_env", "run", "role", "rank_env", "apply_rank", "spawn_share",
           "is_spawn_child", "arm_stacks", "stacks_signal"]
