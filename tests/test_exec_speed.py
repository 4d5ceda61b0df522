"""`hosttune exec`'s start-up cache (hosttune/execcache.py): a repeated plain job is replayed exactly, any changed
input is a miss, and an entry anyone else could have written is never used. Real processes throughout; whether a run
was replayed is read from the interpreter's own import log (PYTHONPROFILEIMPORTTIME): a replay never imports the
planner. Speed itself is measured in bench/bench_launch.py, not here.
"""

import marshal
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from hosttune import execcache
from hosttune.launch.procfs import parse_numa_maps_policy
from hosttune.policy import names

REPO = Path(__file__).resolve().parents[1]
JOB = ["sh", "-c", 'env | LC_ALL=C sort; grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status']
SYSTEM_PY = "/usr/bin/python3"


def _env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONPROFILEIMPORTTIME="1")
    env[names.EXEC_CACHE] = "explain"  # its lines say why a run was (not) replayed; said() leaves them out
    env.update(extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(*args: str, env: Dict[str, str], cwd: Path, prefix: List[str] = (), py: str = sys.executable,
        runner: Any = None) -> "subprocess.CompletedProcess[str]":
    argv = [*prefix, py, "-m", "hosttune", "exec", *args]
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
    """Runs until one is replayed, the last of them (at most 6 on a busy machine: the first may write the job's
    shared handoff, which is not recorded; the next records once the inputs are older than the racy window)."""
    runs = [run(*args, **kw)]
    while not replayed(runs[-1]) and len(runs) < 6:
        if any("not recorded yet" in line for line in why(runs[-1])):
            settle()  # the run wrote the job's shared handoff just now: recorded once it is older than the window
        runs.append(run(*args, **kw))
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    assert not replayed(runs[0]) and replayed(runs[-1]), [why(r) + said(r) for r in runs]
    return runs


def settle() -> None:
    # Entries are not written while an input is younger than the racy window (a same-size rewrite within the
    # filesystem's timestamp granularity would go unseen): let the test's fresh files age past it.
    time.sleep(execcache.RACY_NS / 1e9 + 0.2)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


def test_a_repeated_plain_job_is_replayed_exactly(work: Path) -> None:
    env = _env()
    settle()
    *_, first, second = warm("--", *JOB, env=env, cwd=work)
    third = run("--", *JOB, env=env, cwd=work)
    assert third.returncode == 0 and replayed(third)
    assert job_view(second) == job_view(first) == job_view(third)
    assert said(second) == said(first) == said(third)
    markers = {line for r in (first, second, third) for line in r.stdout.splitlines()
               if line.startswith(names.LAUNCH_ID + "=")}
    assert len(markers) == 3  # each run its own marker (the sweep and --verify tell jobs apart by it)
    assert any(line.startswith("OMP_NUM_THREADS=") for line in job_view(second))
    if os.geteuid() == 0:
        st = os.stat("/run/hosttune/cache")
        assert st.st_uid == 0 and st.st_mode & 0o777 == 0o700
        assert all(os.stat(p).st_mode & 0o777 == 0o600 for p in Path("/run/hosttune/cache").iterdir())


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_replayed_srun_task_is_bound_like_the_first(work: Path) -> None:
    env = _env(SLURM_LOCALID="1", SLURM_NTASKS_PER_NODE="2")
    settle()
    *_, first, second = warm("--", *JOB, env=env, cwd=work)
    cpus = [line for line in job_view(first) if line.startswith("Cpus_allowed_list:")]
    allowed = sorted(os.sched_getaffinity(0))
    assert cpus and cpus[0].split()[-1] != f"{allowed[0]}-{allowed[-1]}"  # the task got its slice, not everything
    assert job_view(second) == job_view(first)


def test_every_changed_input_is_a_miss(work: Path, tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text("base: throughput\nenv:\n  HT_MARK: one\n")
    env = _env()
    settle()
    hit = warm("--profile", str(prof), "--", *JOB, env=env, cwd=work)[-1]
    assert "HT_MARK=one" in job_view(hit)

    prof.write_text("base: throughput\nenv:\n  HT_MARK: two\n")  # same size, same inode: times tell
    edited = run("--profile", str(prof), "--", *JOB, env=env, cwd=work)
    assert not replayed(edited) and "HT_MARK=two" in job_view(edited)

    other_env = run("--profile", str(prof), "--", *JOB, env=dict(env, OMP_NUM_THREADS="1"), cwd=work)
    assert not replayed(other_env) and "OMP_NUM_THREADS=1" in job_view(other_env)

    cpu = max(os.sched_getaffinity(0))
    narrowed = run("--profile", str(prof), "--", *JOB, env=env, cwd=work, prefix=["taskset", "-c", str(cpu)])
    assert not replayed(narrowed) and f"Cpus_allowed_list:\t{cpu}" in narrowed.stdout

    args = run("--profile", str(prof), "--no-bind", "--", *JOB, env=env, cwd=work)
    assert not replayed(args)

    gone = run("--profile", str(prof), "--", "sh", "-c", "exit 7", env=env, cwd=work)
    assert gone.returncode == 7 and not replayed(gone)


def test_a_new_program_on_path_is_a_miss(work: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = _env(PATH=f"{bindir}:{os.environ['PATH']}")
    settle()
    run("--", "mytool", env=env, cwd=work)  # not found yet: exit 2, nothing recorded
    tool = tmp_path / "mytool-1.0"
    tool.write_text("#!/bin/sh\necho first\n")
    tool.chmod(0o755)
    (bindir / "mytool").symlink_to(tool)  # as update-alternatives installs programs
    settle()
    runs = warm("--", "mytool", env=env, cwd=work)
    assert [r.stdout.strip() for r in runs] == ["first"] * len(runs)
    tool.write_text("#!/bin/sh\necho second\n")  # the link's target changed, the link did not: planned again
    changed = run("--", "mytool", env=env, cwd=work)
    assert not replayed(changed) and changed.stdout.strip() == "second"


def test_the_switch_turns_it_off(work: Path) -> None:
    env = _env(**{names.EXEC_CACHE: "0"})
    settle()
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
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(src), "PYTHONPROFILEIMPORTTIME": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "HOSTTUNE_ETC_DIR": str(tmp_path / "no-etc"), names.EXEC_CACHE: "explain"}

    def as_user(argv: List[str], env: Dict[str, str], cwd: str) -> "subprocess.CompletedProcess[str]":
        return other_user.run(argv, env=env, cwd=cwd)  # type: ignore[no-any-return]

    settle()
    warm("--", "true", env=env, cwd=work, py=SYSTEM_PY, runner=as_user)
    folder = home / ".cache" / "hosttune"
    (entry,) = list(folder.iterdir())
    assert entry.stat().st_uid == other_user.uid and entry.stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700

    os.chmod(entry, 0o622)  # writable by others now: never trusted again (warm: the first run is not replayed)
    warm("--", "true", env=env, cwd=work, py=SYSTEM_PY, runner=as_user)
    assert entry.stat().st_mode & 0o777 == 0o600  # what is replayed now is a private one the full path wrote

    os.chmod(folder, 0o777)  # a folder others can write into: neither read nor written
    settle()
    for _ in range(2):
        assert not replayed(run("--", "true", env=env, cwd=work, py=SYSTEM_PY, runner=as_user))


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
