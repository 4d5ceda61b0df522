"""`hosttune exec`'s start-up cache (hosttune/execcache.py): a repeated plain job is replayed exactly, any changed
input is a miss, and an entry anyone else could have written is never used. Real processes throughout; whether a run
was replayed is read from the interpreter's own import log (PYTHONPROFILEIMPORTTIME): a replay never imports the
planner. Speed itself is measured in bench/bench_launch.py, not here.

Nothing here depends on time: every run is started through LAUNCHER (below), a `hosttune` that sets the cache's racy
window from $TEST_RACY_NS (0 unless a test says otherwise: the files a test has just written may be recorded at once,
so no test sleeps for them to age), and can give the cache a boot id and a cgroup quota file the test may change.
Every directory is the test's own (tests/conftest.py: $HOSTTUNE_RUNTIME_DIR, $XDG_CACHE_HOME under tmp_path), or
the module's own for the one entry several key tests share (the `shared` fixture, the same scrub).
"""

import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Sequence

import pytest
from conftest import scrub_env

from hosttune import execcache
from hosttune.launch.procfs import parse_numa_maps_policy
from hosttune.policy import dirs, names

REPO = Path(__file__).resolve().parents[1]
JOB = ["sh", "-c", 'env | LC_ALL=C sort; grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status']
SYSTEM_PY = "/usr/bin/python3"
BOOT_ID = "/proc/sys/kernel/random/boot_id"

# `hosttune` as installed (its name is what makes cli.py take the exec fast path), with three test inputs: the racy
# window, a boot id file in place of the kernel's, and a cgroup quota file of the test's own, read (as the detector
# reads cpu.max) within the recorded full path and kept by its bytes, exactly as /sys/fs/cgroup's files are.
LAUNCHER = f"""\
import os
from hosttune import execcache
execcache.RACY_NS = int(os.environ.get("TEST_RACY_NS", "0"))
if os.environ.get("TEST_BOOT_ID"):
    files = list(execcache._HOST_FILES)
    files[files.index({BOOT_ID!r})] = os.environ["TEST_BOOT_ID"]
    execcache._HOST_FILES = tuple(files)
quota = os.environ.get("TEST_QUOTA")
if quota:
    where = os.path.dirname(quota) + "/"
    execcache._CONTENT_ROOTS = (*execcache._CONTENT_ROOTS, where)
    execcache._VOLATILE_ROOTS = (*execcache._VOLATILE_ROOTS, where)  # no stat of it, as for /sys
import hosttune.cli  # exec's start-up cache: replayed right here, or the full path is recorded from now on
if quota:
    with open(quota) as fh:
        fh.read()
hosttune.cli.main()
"""


def launcher(folder: Path) -> Path:
    """LAUNCHER written as `folder`/hosttune."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hosttune"
    path.write_text(LAUNCHER)
    return path


# The PATH every run here searches: the system's own directories. The cache keys a program's lookup by each PATH
# directory it searched, so a host PATH directory that anything else on the machine changes meanwhile (pyenv's shims,
# rehashed by any `pip install`, e.g. another checkout's `make setup`) would make a fresh entry stale (seen in a quiet
# `make test`, session 8: "exec cache: stale: /root/.pyenv/shims"). sh, env, sort, grep and true live here.
SYSTEM_PATH = "/usr/bin:/bin"


def _env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ, PATH=SYSTEM_PATH, PYTHONPATH=str(REPO), PYTHONPROFILEIMPORTTIME="1")
    env[names.EXEC_CACHE] = "explain"  # its lines say why a run was (not) replayed; said() leaves them out
    # A run that compiles a module writes its .pyc (a rename: such a run is not recorded). Other processes of the
    # suite import the same modules at any moment, and each edit of a source makes its .pyc stale again.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def run(*args: str, env: Dict[str, str], cwd: Path, prefix: Sequence[str] = (), py: str = sys.executable,
        runner: Any = None, via: Optional[Path] = None) -> "subprocess.CompletedProcess[str]":
    """`hosttune exec ARGS` through LAUNCHER (in `via`, else beside the working directory `cwd`)."""
    entry = via if via is not None else cwd.parent / "launcher" / "hosttune"
    if not entry.exists():
        launcher(entry.parent)
    argv = [*prefix, py, str(entry), "exec", *args]
    if runner is not None:
        return runner(argv, env=env, cwd=str(cwd))  # type: ignore[no-any-return]
    return subprocess.run(argv, env=env, cwd=str(cwd), capture_output=True, text=True, timeout=120)


def replayed(r: "subprocess.CompletedProcess[str]") -> bool:
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "hosttune.execcache" in imported or os.environ.get(names.EXEC_CACHE) == "0", r.stderr[-3000:]
    return "hosttune.plan" not in imported


def said(r: "subprocess.CompletedProcess[str]") -> List[str]:
    return [line for line in r.stderr.splitlines() if not line.startswith(("import time:", "hosttune: exec cache:"))]


def why(r: "subprocess.CompletedProcess[str]") -> List[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("hosttune: exec cache:")]


def job_view(r: "subprocess.CompletedProcess[str]") -> List[str]:
    """What the job saw, its launch marker aside (fresh on every run)."""
    return [line for line in r.stdout.splitlines() if not line.startswith(names.LAUNCH_ID + "=")]


def warm(*args: str, **kw: Any) -> List["subprocess.CompletedProcess[str]"]:
    """Runs until one is replayed, the last of them: the first writes the job's shared handoff (a run that writes
    is not recorded), the second records, the third is replayed. A fourth is allowed for a plan whose first run
    made a directory the second then found (never a matter of time: the racy window is 0 here)."""
    runs = [run(*args, **kw)]
    while not replayed(runs[-1]) and len(runs) < 4:
        runs.append(run(*args, **kw))
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    assert not replayed(runs[0]) and replayed(runs[-1]), "\n".join(line for r in runs for line in why(r) + said(r))
    return runs


def hit(*args: str, **kw: Any) -> "subprocess.CompletedProcess[str]":
    """One call that must be replayed (its entry is fresh), exit 0."""
    r = run(*args, **kw)
    assert r.returncode == 0 and replayed(r), "\n".join(why(r) + said(r))
    return r


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


def test_a_repeated_plain_job_is_replayed_exactly(work: Path, tmp_path: Path) -> None:
    env = _env()
    *_, first, second = warm("--", *JOB, env=env, cwd=work)
    third = run("--", *JOB, env=env, cwd=work)
    assert third.returncode == 0 and replayed(third)
    assert job_view(second) == job_view(first) == job_view(third)
    assert said(second) == said(first) == said(third)
    markers = {line for r in (first, second, third) for line in r.stdout.splitlines()
               if line.startswith(names.LAUNCH_ID + "=")}
    assert len(markers) == 3  # each run its own marker (the sweep and --verify tell jobs apart by it)
    assert any(line.startswith("OMP_NUM_THREADS=") for line in job_view(second))
    cache = Path(execcache.cache_dir(env) or "")
    assert tmp_path in cache.parents  # the test's own, never the host's /run/hosttune or ~/.cache
    if os.geteuid() == 0:
        assert cache == Path(dirs.runtime_dir(env), "cache")
        for d in (cache, cache.parent):
            st = d.stat()
            assert st.st_uid == 0 and st.st_mode & 0o777 == 0o700, d
    entries = [p for p in cache.iterdir() if len(p.name) == 32]
    assert entries and all(p.stat().st_mode & 0o777 == 0o600 for p in entries)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_replayed_srun_task_is_bound_like_the_first(work: Path) -> None:
    env = _env(SLURM_LOCALID="1", SLURM_NTASKS_PER_NODE="2")
    *_, first, second = warm("--", *JOB, env=env, cwd=work)
    cpus = [line for line in job_view(first) if line.startswith("Cpus_allowed_list:")]
    allowed = sorted(os.sched_getaffinity(0))
    assert cpus and cpus[0].split()[-1] != f"{allowed[0]}-{allowed[-1]}"  # the task got its slice, not everything
    assert job_view(second) == job_view(first)


# ---- the key: each input alone ---------------------------------------------------------------------------------
# Each test starts from an entry that is replayed right then (fresh: it would hit again), changes exactly one input
# and expects the full path. A key that lost that input would replay the old job instead.
# One entry serves every test whose change leaves it fresh (issue 21: one warm-up of three `hosttune exec` runs, not
# one per test): another argv, option, environment, CPU set or boot id is another key, whose entry is written beside
# it (the boot id's bytes are put back afterwards). An edited profile or cgroup quota is the same key with a changed
# recorded input: the changed run records over the entry, so each of those tests warms an entry of its own.

INPUTS = ["argv", "option", "environment", "cpus", "profile", "boot-id", "cgroup-quota"]
PAST = 1_000_000_000  # 2001: a profile written long ago, so an edit changes its times on any filesystem
BOOT = "2f1d6c3e-9a41-4b8e-8f0c-5d2a7e9b1c40\n"
QUOTA = "max 100000\n"
PROFILE = "base: throughput\nenv:\n  HT_MARK: one\n"


def keyed_inputs(base: Path) -> SimpleNamespace:
    """Under `base`: a boot id file, a cgroup quota file, an old profile and a working directory; the environment
    that hands the first two to LAUNCHER and the exec arguments with the profile."""
    boot = base / "host" / "boot_id"
    boot.parent.mkdir()
    boot.write_text(BOOT)
    quota = base / "cgroup" / "cpu.max"
    quota.parent.mkdir()
    quota.write_text(QUOTA)
    prof = base / "p.yaml"
    prof.write_text(PROFILE)
    os.utime(prof, (PAST, PAST))
    work = base / "work"
    work.mkdir()
    return SimpleNamespace(boot=boot, quota=quota, prof=prof, work=work, args=["--profile", str(prof), "--", *JOB],
                           env=_env(TEST_BOOT_ID=str(boot), TEST_QUOTA=str(quota)))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """keyed_inputs() with an entry warmed for them, in hosttune directories of the module's own (tests/conftest.py's
    scrub, as each test's): the tests that use it leave the entry fresh (see above)."""
    base = tmp_path_factory.mktemp("shared-entry")
    with pytest.MonkeyPatch.context() as mp:
        scrub_env(mp, base)
        inputs = keyed_inputs(base)
    hits = warm(*inputs.args, env=inputs.env, cwd=inputs.work)[-1]
    assert "HT_MARK=one" in job_view(hits)
    return inputs


@pytest.mark.parametrize("what", INPUTS)
def test_one_changed_input_is_a_miss(what: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if what == "cpus" and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    if what in ("profile", "cgroup-quota"):
        k = keyed_inputs(tmp_path)
        fresh = warm(*k.args, env=k.env, cwd=k.work)[-1]
    else:
        k = request.getfixturevalue("shared")
        fresh = hit(*k.args, env=k.env, cwd=k.work)  # replayed right before the change
    assert "HT_MARK=one" in job_view(fresh)

    args: List[str] = k.args
    env: Dict[str, str] = k.env
    prefix: List[str] = []
    if what == "argv":
        args = ["--profile", str(k.prof), "--", "sh", "-c", JOB[2] + "; echo argv-changed"]
    elif what == "option":
        args = ["--profile", str(k.prof), "--no-bind", "--", *JOB]
    elif what == "environment":
        env = dict(env, OMP_NUM_THREADS="1")
    elif what == "cpus":
        prefix = ["taskset", "-c", str(max(os.sched_getaffinity(0)))]
    elif what == "profile":
        k.prof.write_text("base: throughput\nenv:\n  HT_MARK: two\n")  # same size, same inode: times tell
    elif what == "boot-id":
        k.boot.write_text("7c0e9b2a-41d3-4f6a-9e8b-0a1c2d3e4f50\n")  # a reboot; same length
    else:
        k.quota.write_text("50000 100000\n")  # half a CPU from now on: only its bytes tell (no stat, as /sys)
    try:
        changed = run(*args, env=env, cwd=k.work, prefix=prefix)
    finally:
        k.boot.write_text(BOOT)  # the shared key's bytes again
    assert changed.returncode == 0, changed.stderr[-2000:]
    assert not replayed(changed), why(changed)
    view = job_view(changed)
    if what == "argv":
        assert view[-1] == "argv-changed"
    elif what == "environment":
        assert "OMP_NUM_THREADS=1" in view  # the caller's own value wins over the plan's
    elif what == "cpus":
        assert f"Cpus_allowed_list:\t{prefix[-1]}" in view
    elif what == "profile":
        assert "HT_MARK=two" in view and "HT_MARK=one" not in view
    if what == "boot-id":
        hit(*k.args, env=k.env, cwd=k.work)  # the bytes put back: the shared entry is fresh again


def test_an_unrelated_variable_is_a_miss_and_the_unchanged_call_still_hits(shared: SimpleNamespace) -> None:
    """The whole environment is in the key (the job inherits all of it), and a miss leaves the other entry fresh."""
    k = shared
    hit(*k.args, env=k.env, cwd=k.work)
    other = run(*k.args, env=dict(k.env, HT_UNRELATED="1"), cwd=k.work)
    assert other.returncode == 0 and not replayed(other) and "HT_UNRELATED=1" in job_view(other), why(other)
    again = run(*k.args, env=k.env, cwd=k.work)
    assert again.returncode == 0 and replayed(again) and "HT_UNRELATED=1" not in job_view(again), why(again)


def test_a_gone_program_is_a_miss(shared: SimpleNamespace) -> None:
    k = shared
    hit(*k.args, env=k.env, cwd=k.work)
    gone = run("--profile", str(k.prof), "--", "sh", "-c", "exit 7", env=k.env, cwd=k.work)
    assert gone.returncode == 7 and not replayed(gone)


def test_an_input_inside_the_racy_window_is_not_recorded(work: Path) -> None:
    """A file changed within the window could change again unseen (same size and times): such a run is not
    recorded. A window of ~30 years makes every input young: never recorded, never replayed; the same calls with
    no window are recorded at once."""
    young = _env(TEST_RACY_NS=str(10**18))
    runs = [run("--", "true", env=young, cwd=work) for _ in range(3)]
    assert all(r.returncode == 0 and not replayed(r) for r in runs)
    assert any("not recorded yet" in line for line in why(runs[-1])), why(runs[-1])
    warm("--", "true", env=_env(), cwd=work)


def test_a_new_program_on_path_is_a_miss(work: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = _env(PATH=f"{bindir}:{SYSTEM_PATH}")
    run("--", "mytool", env=env, cwd=work)  # not found yet: exit 2, nothing recorded
    tool = tmp_path / "mytool-1.0"
    tool.write_text("#!/bin/sh\necho first\n")
    tool.chmod(0o755)
    (bindir / "mytool").symlink_to(tool)  # as update-alternatives installs programs
    runs = warm("--", "mytool", env=env, cwd=work)
    assert [r.stdout.strip() for r in runs] == ["first"] * len(runs)
    tool.write_text("#!/bin/sh\necho second\n")  # the link's target changed, the link did not: planned again
    changed = run("--", "mytool", env=env, cwd=work)
    assert not replayed(changed) and changed.stdout.strip() == "second"


def test_the_switch_turns_it_off(work: Path) -> None:
    env = _env(**{names.EXEC_CACHE: "0"})
    runs = [run("--", "true", env=env, cwd=work) for _ in range(2)]
    assert all(r.returncode == 0 and not replayed(r) for r in runs)


def test_only_plain_exec_forms_are_served() -> None:
    assert execcache.parse_args(["--", "python", "-u", "x.py"]) == (None, False, ["python", "-u", "x.py"])
    assert execcache.parse_args(["python", "x.py"]) == (None, False, ["python", "x.py"])
    assert execcache.parse_args(["--profile", "p", "--no-bind", "--", "x"]) == ("p", True, ["x"])
    assert execcache.parse_args(["--profile=p", "x"]) == ("p", False, ["x"])
    for args in (["--dry-run", "--", "x"], ["--verify", "x"], ["--json", "--", "x"], ["--root", "/r", "--", "x"],
                 ["--override", "--", "x"], ["--bogus", "x"], ["-h"], ["--"], [], ["--profile"]):
        assert execcache.parse_args(args) is None, args
    assert execcache.LAUNCH_ID == names.LAUNCH_ID and execcache.ENV_SWITCH == names.EXEC_CACHE


def _entry(**over: Any) -> tuple:
    base: Dict[str, Any] = dict(magic=execcache.VERSION, dig=b"d" * 32, stats=(("/", True, None),), contents=(),
                                exe="/bin/true", argv=("true",), env_set=(("A", "1"),), env_del=(), cpus=None,
                                mempol=None, err="", marker=True)
    base.update(over)
    return tuple(base.values())


def test_load_trusts_only_the_callers_private_file(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_bytes(marshal.dumps(_entry()))
    good.chmod(0o600)
    assert execcache.load(str(good)) == _entry()

    wide = tmp_path / "wide"
    shutil.copy(good, wide)
    wide.chmod(0o620)  # group-writable: someone else could have written it
    assert execcache.load(str(wide)) is None

    link = tmp_path / "link"
    link.symlink_to(good)
    assert execcache.load(str(link)) is None

    hard = tmp_path / "hard"
    os.link(good, hard)  # a second name: could be someone's link to our file, or ours to theirs
    assert execcache.load(str(hard)) is None
    os.unlink(hard)

    for blob in (b"", b"garbage", marshal.dumps(compile("1", "x", "eval")), marshal.dumps(_entry(argv=())),
                 marshal.dumps(_entry(magic="hosttune-exec-cache/0")), marshal.dumps(_entry(cpus=("0",))),
                 marshal.dumps(_entry()[:-1])):
        bad = tmp_path / "bad"
        bad.write_bytes(blob)
        bad.chmod(0o600)
        assert execcache.load(str(bad)) is None, blob[:40]

    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        shutil.copy(good, theirs)
        os.chown(theirs, 65534, 65534)
        assert execcache.load(str(theirs)) is None


def test_the_memory_policy_is_replayed_exactly() -> None:
    """What the replay sets is what the kernel reports back, in get_mempolicy and in numa_maps."""
    code = (
        "import sys; from hosttune import execcache as c\n"
        "before = c.get_mempolicy()\n"
        "ok = c._set_mempolicy((1, 0))\n"  # MPOL_PREFERRED, node 0 (exists on every Linux host)
        "after = c.get_mempolicy()\n"
        "first = open('/proc/self/numa_maps').readline()\n"
        "print(repr((before, ok, after, first)))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=_env(PYTHONPROFILEIMPORTTIME=""), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    before, ok, after, first = eval(r.stdout)  # noqa: S307 - our own repr of plain values
    assert before == (0,) and ok and after == (1, 0)
    assert parse_numa_maps_policy(first) == ("preferred", (0,))


def _as_nobody(py: str) -> Optional[str]:
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists(py):
        return "needs root, setpriv and " + py
    probe = subprocess.run([py, "-c", "import click, yaml"], capture_output=True)
    return None if probe.returncode == 0 else f"{py} lacks click/yaml (Makefile TEST_APT installs them)"


def test_a_users_cache_that_others_could_write_is_ignored(other_user: Any, tmp_path: Path) -> None:
    why = _as_nobody(SYSTEM_PY)
    if why:
        pytest.skip(why)
    home = other_user.home
    work = home / "work"
    other_user.run(["mkdir", "-p", str(work)])
    # the other user's own copy of hosttune: the checkout may sit in a directory they cannot enter (mktemp -d: 0700)
    src = home / "src"
    shutil.copytree(REPO / "hosttune", src / "hosttune", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "profiles", src / "hosttune" / "profiles")  # where an installed package has them
    via = launcher(src / "bin")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(src), "PYTHONPROFILEIMPORTTIME": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "HOSTTUNE_ETC_DIR": str(tmp_path / "no-etc"), names.EXEC_CACHE: "explain",
           "TEST_RACY_NS": "0"}

    def as_user(argv: List[str], env: Dict[str, str], cwd: str) -> "subprocess.CompletedProcess[str]":
        return other_user.run(argv, env=env, cwd=cwd)  # type: ignore[no-any-return]

    warm("--", "true", env=env, cwd=work, py=SYSTEM_PY, runner=as_user, via=via)
    folder = home / ".cache" / "hosttune"
    (entry,) = [p for p in folder.iterdir() if len(p.name) == 32]  # beside it: the plain job's handoff
    assert entry.stat().st_uid == other_user.uid and entry.stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700

    os.chmod(entry, 0o622)  # writable by others now: never trusted again (warm: the first run is not replayed)
    warm("--", "true", env=env, cwd=work, py=SYSTEM_PY, runner=as_user, via=via)
    assert entry.stat().st_mode & 0o777 == 0o600  # what is replayed now is a private one the full path wrote

    os.chmod(folder, 0o777)  # a folder others can write into: neither read nor written
    for _ in range(2):
        assert not replayed(run("--", "true", env=env, cwd=work, py=SYSTEM_PY, runner=as_user, via=via))


def test_what_the_recorder_keys_and_what_it_refuses() -> None:
    """/sys/fs/cgroup by content, other paths by stat, the rest of /proc and /sys by the digest's own list; a read of
    the host's current load means the plan changes by the second: never recorded."""
    rec = execcache.Recorder(["--", "true"], "/nonexistent/entry", b"d" * 32)
    rec.saw("/sys/fs/cgroup/cpu.max")
    rec.saw("/etc/hosts")
    rec.saw("/proc/meminfo")
    rec.saw(b"/usr/lib/x86_64-linux-gnu")
    rec.saw("/etc", listed=True)
    assert rec.contents == {"/sys/fs/cgroup/cpu.max"} and rec.listed == {"/etc"}
    assert rec.paths == {"/etc/hosts", "/usr/lib/x86_64-linux-gnu", "/etc"} and rec.spoiled is None
    rec.saw("x", dir_fd=3)
    assert rec.spoiled is not None and "descriptor" in rec.spoiled
    for path in ("/proc/loadavg", "/proc/stat", "/proc/pressure/cpu"):
        rec = execcache.Recorder(["--", "true"], "/nonexistent/entry", b"d" * 32)
        rec.saw(path)
        assert rec.spoiled is not None and "load" in rec.spoiled, path


def test_the_recorders_stat_is_a_plain_callable_like_the_builtin(tmp_path: Path) -> None:
    """Python 3.9's pathlib keeps `stat = os.stat` as a class attribute (_NormalAccessor): imported while the
    recorder is installed, it took the wrapper, which bound like a method (every Path.stat a TypeError: exec
    failed on each cache miss under 3.9). Whatever the interpreter, a class attribute must call through."""
    rec = execcache.Recorder(["--", "true"], "/nonexistent/entry", b"d" * 32)

    class Accessor:
        stat = rec._wrap(os.stat)
        lstat = rec._wrap(os.lstat)

    f = tmp_path / "f"
    f.write_text("x")
    assert Accessor().stat(str(f)).st_size == 1 and Accessor().lstat(f).st_size == 1
    assert rec.paths == {str(f)}
    rec.active = False
    assert Accessor().stat(str(tmp_path)).st_ino == tmp_path.stat().st_ino and rec.paths == {str(f)}
