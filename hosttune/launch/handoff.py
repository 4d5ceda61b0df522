"""The launcher -> rank handoff: what the launcher tells every rank (its shim, or the per-rank hook inside a Python
rank), written once into a directory only the launching user can write, and read back checked. Writer and reader
both live here.

`hosttune exec` resolves the ranks' plans once and hands them to every process of the job. torchrun closes
inherited descriptors before it starts a worker, so the plans travel as a file whose path is in $HOSTTUNE_HANDOFF.
Whoever can write that file decides what runs inside every rank (LD_PRELOAD, env), as root too, so both ends live
here:

- `payload` / `write`: the plans of the world sizes the launcher foresaw (`{size: [RankPlan.to_dict() or None per
  local rank]}`), facts (`Facts.to_dict()`), profile (`Profile.to_dict()`), the job's kind, the environment the
  job's top process got (`top_env`) and the caller's own values of those variables (`touched`), and the flags.
  Written to a fresh `mkdtemp` directory (owner = euid, mode 0700; its name carries the launcher's pid and start
  time, and random letters) under the first base that passes the trust rule, checked before anything is made in
  it: $XDG_RUNTIME_DIR (after `su` it is still the user's, and refused), then root's runtime directory
  (`policy.dirs.runtime_dir()`, /run/hosttune unless $HOSTTUNE_RUNTIME_DIR moves it) as root, then the temp
  directory (a shared one such as /tmp only with the sticky bit: nobody else can remove or rename our entry); the
  file is written there atomically with mode 0600.
- `read` / `check` (the rank side, launch/rank.py): the directory must still be owned by the reader's euid with
  mode 0700 and sit under trusted directories, the file must be a regular file (never a link) owned by the euid, not
  group/other-writable, and smaller than `LIMIT`. Anything else is `Untrusted`, and the rank is refused (rank.py's
  failure rule, the same in the shim and the hook).
- Lifetime: a supervised job (torchrun, another launcher, --verify) gets a fresh directory that its launcher
  removes when the job ends (`write`; a launcher that was killed leaves it to the next `write`, which removes every
  such directory of this user whose launcher process, pid + start time in its name, is gone). A plain or srun job
  is exec'd, so nobody is left to remove anything: its handoff is content-addressed instead (`write_shared`:
  `hosttune-plans-<euid>-<hash of the content>/`), written once and reused by every later job with the same
  plans, so a plain job writes nothing when the plans are known (exec's start-up cache can replay it) and the
  directories never outnumber the distinct plans. Such a predictable name goes only into a directory that is the
  caller's alone ($XDG_RUNTIME_DIR, root's runtime directory, else the user's cache directory,
  `policy.dirs.user_cache_dir()`), never into a shared one like /tmp, where another user could take the name
  first. They live until the base is cleaned (/run and $XDG_RUNTIME_DIR at reboot or logout; a user's cache
  directory keeps them, one per distinct plan).

The protocol only: where the file lives, writing it, checking it, reading it. What a rank does with what it read
is launch/rank.py's. Imports no planner, profile, YAML or detector (the rank-side contract in .importlinter).
"""

import json
import os
import stat
from typing import Any, Dict, Iterator, List, Mapping, Optional

from hosttune import fsio, trust
from hosttune.policy import dirs, names

ENV = names.HANDOFF  # path of the handoff file
NAME = "handoff.json"
SPAWN_NOTE = "spawn-warned-"  # + launch id: made by the job's first multiprocessing child that warns (hook.py)
PREFIX = "hosttune-launch-"
SHARED_PREFIX = "hosttune-plans-"
LIMIT = 64 << 20  # facts + 1024 ranks' plans stay far below this; a bigger file is not ours
VERSION = 1

def payload(launch: Any, marker: str) -> Dict[str, Any]:
    """What every rank of this launch needs (`launch` is job.Launch). The plans for the known local world sizes are
    resolved here already, so a rank only reads JSON and binds (no facts/profile/YAML imports); a different world
    size (elastic) is planned again by the launcher's planner (`planner`: its interpreter and its hosttune; see
    rank.replan) from the facts and profile carried along."""
    from hosttune.launch.rank import planner

    prof = launch.profile
    plans: Dict[str, List[Optional[Dict[str, Any]]]] = {}
    for plan in [*launch.ranks, *getattr(launch, "more_plans", ())]:
        # srun: only this task's own rank is known, so a size's list can have holes (None: plan it in the rank)
        row = plans.setdefault(str(plan.local_world_size), [None] * plan.local_world_size)
        row[plan.local_rank] = plan.to_dict()
    return {
        "version": VERSION,
        "marker": marker,
        "kind": launch.kind,
        "plans": plans,
        "tools": {"libnuma": launch.facts.tools.libnuma, "numactl": launch.facts.tools.numactl},
        "facts": launch.facts.to_dict(),
        "profile": prof.to_dict() if hasattr(prof, "to_dict") else None,
        "top_env": dict(launch.env),
        "touched": launch.touched,
        "no_bind": launch.no_bind,
        # a rank that plans again (a world size not foreseen) follows the same rules as the launcher did
        "override": bool(getattr(launch, "override", False)),
        "bound_by": getattr(launch, "bound_by", None),
        "planner": planner(),
    }


def _base_problem(base: str) -> Optional[str]:
    """Why a private directory made directly under `base` would not pass the trust rule (None: it would). Asked
    before anything is created in `base`, so nothing of ours is ever left in another user's directory. A shared
    temp directory (world-writable with the sticky bit, a trusted owner: /tmp) qualifies: nobody else can remove
    or rename an entry of ours there; the directories above it pass the rule as for any directory (`trust.problem`
    of a directory accepts a sticky world-writable parent)."""
    real, why = trust.problem(base, kind="dir")
    if why is None:
        return None
    try:
        st = os.lstat(real)
    except OSError:
        return why
    if not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX and st.st_uid in trust.trusted_owners()):
        return why
    if not why.startswith(f"{real} is writable by") or real == "/":
        return why  # the sticky bit excuses the directory's own mode, nothing else
    return _base_problem(os.path.dirname(real))  # the same question one level up (a sticky directory in /tmp)


def _shared_base(base: str) -> bool:
    """Others may create names in `base` (a sticky temp directory): no predictable name of ours goes there."""
    try:
        st = os.stat(base)
    except OSError:
        return True
    return not trust.written_by_me_alone(st)


def _runtime_base(environ: Mapping[str, str]) -> Optional[str]:
    """Root's runtime directory (made here, private, when its parent passes the trust rule), or None."""
    run = dirs.runtime_dir(environ)
    parent = os.path.dirname(run)
    if _base_problem(parent) is not None:
        return None  # /run missing, or $HOSTTUNE_RUNTIME_DIR under a directory others can change
    if _shared_base(parent) and not os.path.lexists(run):
        return None  # its name is predictable: never made in a directory others can create names in
    try:
        d = trust.private_dir(run, create=True)
    except trust.Untrusted:
        return None  # someone else made it first: not ours to use
    return d if _base_problem(d) is None else None


def _bases(environ: Mapping[str, str], *, shared: bool = True) -> Iterator[str]:
    """Where a handoff directory may go, in order; each passes `_base_problem` when yielded. `shared=False`: only
    directories that are the caller's alone (for `write_shared`'s predictable names)."""
    import tempfile

    def usable(base: str) -> bool:
        return os.path.isabs(base) and _base_problem(base) is None and (shared or not _shared_base(base))

    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and usable(xdg):
        yield xdg
    if os.geteuid() == 0:
        run = _runtime_base(environ)
        if run is not None:
            yield run
    if shared:
        for tmp in (tempfile.gettempdir(), "/tmp"):  # gettempdir honours $TMPDIR, which `su` keeps
            if usable(tmp):
                yield tmp
        return
    cache = dirs.user_cache_dir(environ)
    if cache is None:
        return
    parent = os.path.dirname(cache)  # ~/.cache or $XDG_CACHE_HOME
    try:
        if os.path.isdir(parent):
            if _base_problem(parent) is not None:
                return  # e.g. root with a user's HOME after `su`: nothing made there
        elif _base_problem(os.path.dirname(parent)) is None:
            os.mkdir(parent, 0o700)
        else:
            return
        trust.private_dir(cache, create=True)
    except (OSError, trust.Untrusted):
        return
    if usable(cache):
        yield cache


def _owner_tag() -> str:
    """`<pid>.<start time>`: names this launcher's process for good (an exec'd plain job keeps both)."""
    from hosttune.launch.procfs import start_time

    return f"{os.getpid()}.{start_time(os.getpid()) or 0}"


def _sweep_stale(base: str) -> None:
    """Remove this user's handoff directories under `base` whose launcher process is gone (plain jobs are exec'd
    and cannot remove their own). A directory is only touched when it is this euid's and private."""
    from hosttune.launch.procfs import start_time

    try:
        names_ = [n for n in os.listdir(base) if n.startswith(PREFIX)]
    except OSError:
        return
    for name in names_:
        tag = name[len(PREFIX):].split("-", 1)[0]
        pid_s, _, start_s = tag.partition(".")
        if not (pid_s.isdigit() and start_s.isdigit()):
            continue  # an older launcher's directory: its own launcher removes it
        if start_time(int(pid_s)) == int(start_s):
            continue  # its job is still running
        d = os.path.join(base, name)
        try:
            st = os.lstat(d)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700:
            remove(os.path.join(d, NAME))


def _private_under(base: str) -> Optional[str]:
    """A new 0700 directory under `base` that passes the trust rule (with every directory above it), or None."""
    import tempfile

    if _base_problem(base) is not None:
        return None  # checked (again) right before anything is made in it
    try:
        d = tempfile.mkdtemp(prefix=f"{PREFIX}{_owner_tag()}-", dir=base)
    except OSError:
        return None
    _, why = trust.problem(d, kind="dir")
    if why is None:
        try:
            return trust.private_dir(d, create=False)
        except trust.Untrusted:
            pass
    try:
        os.rmdir(d)
    except OSError:
        pass
    return None


def write(content: Mapping[str, Any], environ: Optional[Mapping[str, str]] = None) -> str:
    """Write the handoff; returns the file's path (for $HOSTTUNE_HANDOFF). OSError when no base is usable."""
    env = os.environ if environ is None else environ
    blob = json.dumps(content).encode()
    for base in _bases(env):
        d = _private_under(base)
        if d is None:
            continue
        _sweep_stale(base)
        path = os.path.join(d, NAME)
        try:
            fsio.atomic_write(path, blob, 0o600, durable=False)  # a tmpfs file read within seconds: no fsync
        except OSError:
            remove(path)
            continue
        return path
    raise OSError("no private directory for the launcher's handoff could be made (tried $XDG_RUNTIME_DIR, "
                  "the runtime directory as root, the temp directory)")


# Facts that are a snapshot of the moment, which no plan reads (planner, shim, hook): left in, they would give every
# launch a directory of its own (a GPU's temperature, another program's tmpfs mounted a second ago).
_SNAPSHOT_GPU_FIELDS = ("temperature_c", "clock_event_reasons", "ecc_uncorrected_volatile")


def _without_snapshots(facts: Any) -> Any:
    if not isinstance(facts, dict):
        return facts
    out = dict(facts, storage=[])
    if isinstance(facts.get("memory"), dict):
        out["memory"] = dict(facts["memory"], available_mb=None)
    if isinstance(facts.get("gpus"), list):
        out["gpus"] = [dict(g, **{k: None for k in _SNAPSHOT_GPU_FIELDS}) if isinstance(g, dict) else g
                       for g in facts["gpus"]]
    return out


def write_shared(content: Mapping[str, Any], environ: Optional[Mapping[str, str]] = None) -> str:
    """A plain/srun job's handoff: `content` (without the per-launch marker) at a path named by its hash, reused
    when a file that passes `check` is already there. OSError when no base is usable."""
    import hashlib

    env = os.environ if environ is None else environ
    content = {k: v for k, v in content.items() if k != "marker"}
    content["facts"] = _without_snapshots(content.get("facts"))
    blob = json.dumps(content, sort_keys=True).encode()
    tag = hashlib.blake2b(blob, digest_size=12).hexdigest()
    for base in _bases(env, shared=False):  # a predictable name: never in a directory others can write
        d = os.path.join(base, f"{SHARED_PREFIX}{os.geteuid()}-{tag}")
        path = os.path.join(d, NAME)
        try:
            check(path)
            if os.lstat(path).st_size == len(blob):
                return path
        except (trust.Untrusted, OSError):
            pass
        made = not os.path.lexists(d)
        try:
            trust.private_dir(d, create=True)  # Untrusted: someone else made that name first
            _, why = trust.problem(d, kind="dir")
            if why is not None:
                raise trust.Untrusted(why)
            fsio.atomic_write(path, blob, 0o600, durable=False)
        except (trust.Untrusted, OSError):
            if made:
                try:
                    os.rmdir(d)  # nothing of ours left behind where it could not be used
                except OSError:
                    pass
            continue
        return path
    raise OSError("no private directory for the launcher's handoff could be made (tried $XDG_RUNTIME_DIR, "
                  "the runtime directory as root, the user's cache directory)")


def remove(path: str) -> None:
    """Remove the file, the job's spawn notes and their private directory (never anything else)."""
    d = os.path.dirname(path)
    try:
        notes = [os.path.join(d, n) for n in os.listdir(d) if n.startswith(SPAWN_NOTE)]
    except OSError:
        notes = []
    for name in (path, *notes):
        try:
            os.unlink(name)
        except OSError:
            pass
    if os.path.basename(os.path.dirname(path)).startswith(PREFIX):
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass


def check(path: str) -> None:
    """Untrusted unless `path` is a handoff only this euid could have written (see the module's docstring)."""
    if not os.path.isabs(path) or os.path.basename(path) != NAME:
        raise trust.Untrusted(f"refusing the launcher's handoff {path!r}: not a hosttune handoff path")
    d = os.path.dirname(path)
    try:
        trust.private_dir(d, create=False)  # owner = euid, mode 0700, not a link
    except trust.Untrusted as exc:
        raise trust.Untrusted(f"the launcher's handoff {path}: {exc}") from None
    _, why = trust.problem(d, kind="dir")
    if why is not None:
        raise trust.Untrusted(f"refusing the launcher's handoff {path}: its directory {why}")
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise trust.Untrusted(f"the launcher's handoff {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise trust.Untrusted(f"refusing the launcher's handoff {path}: not a regular file (a link?)")
    if not trust.written_by_me_alone(st):
        raise trust.Untrusted(f"refusing the launcher's handoff {path}: owned by uid {st.st_uid} with mode "
                              f"{stat.S_IMODE(st.st_mode):o}; expected uid {os.geteuid()}, not group/other-writable")


def read(environ: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    """The handoff named by $HOSTTUNE_HANDOFF, checked; None when there is none. Untrusted/UserError otherwise."""
    path = environ.get(ENV)
    if not path:
        return None
    check(path)
    try:
        # The directory is private to this euid, so nobody else can swap the file between the check and the read;
        # no-follow and the size bound hold even so.
        blob = fsio.read_bounded(path, LIMIT, nofollow=True)
        data = json.loads(blob.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise trust.Untrusted(f"cannot read the launcher's handoff {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise trust.Untrusted(f"{path}: not a hosttune handoff file of version 1")
    return data
