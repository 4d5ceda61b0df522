"""Issue 11, the launcher's side: what another user on the box can do to `hosttune exec` run as root, and what it
must not achieve. The other user is played by `other_user` (uid nobody via setpriv).

A fake `torchrun` (a small Python script) stands in for the real one where only the launcher -> shim path matters:
it records the handoff it was given and starts one rank exactly as torchrun's --no-python mode does.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from hosttune.launch import handoff
from hosttune.launch.job import prepare
from hosttune.launch.torchrun import MAX_NPROC_PER_NODE, shim_argv
from hosttune.rankplan import TORCHRUN_PYTHON

PY = sys.executable

FAKE_TORCHRUN = """#!{py} -I
import json, os, subprocess, sys
args = sys.argv[1:]
rank = args[args.index("--no-python") + 1:]
info = {{"handoff": os.environ.get("HOSTTUNE_HANDOFF")}}
if info["handoff"]:
    d, f = os.stat(os.path.dirname(info["handoff"])), os.lstat(info["handoff"])
    info.update(dir_uid=d.st_uid, dir_mode=d.st_mode & 0o7777, file_uid=f.st_uid, file_mode=f.st_mode & 0o7777)
with open(os.path.join(os.environ["FAKE_OUT"], "torchrun.json"), "w") as fh:
    json.dump(info, fh)
env = dict(os.environ, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", RANK="0", WORLD_SIZE="1")
sys.exit(subprocess.call(rank, env=env))
"""


@pytest.fixture
def fake_torchrun(tmp_path: Path) -> Dict[str, str]:
    """The environment for a job through the fake torchrun: it is first on PATH, and writes into $FAKE_OUT."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tr = bin_dir / "torchrun"
    tr.write_text(FAKE_TORCHRUN.format(py=PY))
    tr.chmod(0o755)
    out = tmp_path / "fake-out"
    out.mkdir()
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', os.defpath)}"
    env["FAKE_OUT"] = str(out)
    return env


def hosttune(*args: str, env: Dict[str, str], cwd: Any = None,
             timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    # -I: the launcher itself must not pick anything up from a hostile working directory either
    return subprocess.run([PY, "-I", "-m", "hosttune", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def _torchrun_job(*rank: str) -> List[str]:
    return ["exec", "--", "torchrun", "--nproc_per_node=1", "--no-python", *rank]


# ---- item 3: the handoff -------------------------------------------------------------------------------------


def test_handoff_never_goes_into_another_users_runtime_dir(other_user: Any, fake_torchrun: Dict[str, str],
                                                           tmp_path: Path) -> None:
    xdg = other_user.home / "run"
    assert other_user.run(["mkdir", "-m", "700", str(xdg)]).returncode == 0
    env = dict(fake_torchrun, XDG_RUNTIME_DIR=str(xdg))
    ran = tmp_path / "ran"
    r = hosttune(*_torchrun_job("touch", str(ran)), env=env)
    assert r.returncode == 0, r.stderr
    assert ran.exists()
    info = json.loads((Path(env["FAKE_OUT"]) / "torchrun.json").read_text())
    path = info["handoff"]
    assert not path.startswith(str(xdg) + "/") and os.listdir(xdg) == []
    assert (info["dir_uid"], info["dir_mode"], info["file_uid"], info["file_mode"]) == (0, 0o700, 0, 0o600)
    assert not os.path.exists(os.path.dirname(path))  # removed with the job


def _genuine_handoff(env: Optional[Dict[str, str]] = None) -> str:
    job = prepare(["torchrun", "--nproc_per_node=1", "t.py"], environ=env)
    return handoff.write(handoff.payload(job, "m"))


def _shim(path: str, ran: Path, cwd: Any = None) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, HOSTTUNE_HANDOFF=path, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    return subprocess.run([*shim_argv(PY), "touch", str(ran)], env=env, capture_output=True, text=True,
                          timeout=60, cwd=cwd)


@pytest.mark.parametrize("attack", ["other-users-file", "file-chowned", "dir-mode-755", "dir-owned-by-other",
                                    "symlink"])
def test_shim_refuses_a_handoff_another_user_could_have_written(other_user: Any, tmp_path: Path, attack: str) -> None:
    path = _genuine_handoff()
    d = os.path.dirname(path)
    ran = tmp_path / "ran"
    try:
        if attack == "other-users-file":
            # what the old launcher made possible: the file in a directory of theirs, their plan inside
            content = Path(path).read_text()
            planted = other_user.write("x/handoff.json", content, 0o644)
            use = str(planted)
        elif attack == "file-chowned":
            os.chown(path, other_user.uid, other_user.gid)
            use = path
        elif attack == "dir-mode-755":
            os.chmod(d, 0o755)
            use = path
        elif attack == "dir-owned-by-other":
            os.chown(d, other_user.uid, other_user.gid)
            use = path
        else:
            real = tmp_path / "elsewhere.json"
            real.write_text(Path(path).read_text())
            os.unlink(path)
            os.symlink(real, path)
            use = path
        r = _shim(use, ran)
        assert r.returncode == 2, r.stderr
        assert "refusing" in r.stderr and "rank not started" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert not ran.exists()
    finally:
        os.chown(d, 0, 0)
        handoff.remove(path)


def test_shim_accepts_its_own_handoff(tmp_path: Path) -> None:
    path = _genuine_handoff()
    try:
        r = _shim(path, tmp_path / "ran")
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "ran").exists()
    finally:
        handoff.remove(path)


@pytest.mark.parametrize("key", ["PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD"])
def test_shim_as_root_refuses_a_plan_env_pointing_at_another_users_files(other_user: Any, tmp_path: Path,
                                                                         key: str) -> None:
    lib = other_user.write("lib/evil.py", "raise SystemExit('ran as root')\n")
    value = str(lib.parent) if key == "PYTHONPATH" else str(lib)
    job = prepare(["torchrun", "--nproc_per_node=1", "t.py"])
    payload = handoff.payload(job, "m")
    for plans in payload["plans"].values():
        plans[0]["env"][key] = value
    path = handoff.write(payload)
    ran = tmp_path / "ran"
    try:
        r = _shim(path, ran)
        assert r.returncode == 2, r.stderr
        assert key in r.stderr and "refusing" in r.stderr and not ran.exists()
    finally:
        handoff.remove(path)


# ---- item 1 (launcher side): the shim is isolated from the caller's directory -----------------------------------

PLANTED = ["hosttune.py", "json.py", "os.py", "tempfile.py", "importlib.py", "stat.py", "signal.py"]


def _plant(other_user: Any, tmp_path: Path) -> Path:
    pwned = tmp_path / "pwned"
    pwned.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(pwned, 0o777)  # so the planted code could leave its mark whoever imports it
    for name in PLANTED:
        other_user.write(name, f"open({str(pwned / name)!r}, 'w').close()\n")
    return pwned


def test_shim_does_not_import_modules_planted_in_the_working_directory(other_user: Any, fake_torchrun: Dict[str, str],
                                                                       tmp_path: Path) -> None:
    pwned = _plant(other_user, tmp_path)
    cwd_file = tmp_path / "cwd"
    r = hosttune(*_torchrun_job("sh", "-c", f"pwd > {cwd_file}"), env=fake_torchrun, cwd=str(other_user.home))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(pwned)) == []
    assert cwd_file.read_text().strip() == str(other_user.home)  # the job itself still runs where it was started


def test_shim_as_root_ignores_a_pythonpath_left_behind_by_su(other_user: Any, fake_torchrun: Dict[str, str],
                                                             tmp_path: Path) -> None:
    pwned = _plant(other_user, tmp_path)
    env = dict(fake_torchrun, PYTHONPATH=str(other_user.home))
    r = hosttune(*_torchrun_job("true"), env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(pwned)) == []


# ---- item 13: the job dies with its launcher -------------------------------------------------------------------


def _tagged(tag: str) -> List[int]:
    """Living processes whose environment carries TEST_TAG=tag."""
    needle = f"TEST_TAG={tag}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in env.split(b"\0") and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def _by_cmdline(argv: List[str]) -> List[int]:
    want = "\0".join(argv).encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if Path(f"/proc/{name}/cmdline").read_bytes() == want:
                    state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                    if state not in (b"Z", b"X"):
                        found.append(int(name))
            except OSError:
                continue
    return found


def _wait_for(predicate: Any, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return bool(predicate())


def _guardian_of(launcher: int) -> int:
    """The launcher's guardian: its child forked without an exec (the same command line)."""
    cmdline = Path(f"/proc/{launcher}/cmdline").read_bytes()
    for child in Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split():
        try:
            if Path(f"/proc/{child}/cmdline").read_bytes() == cmdline:
                return int(child)
        except OSError:
            continue
    raise AssertionError(f"no guardian among the children of {launcher}")


def _sleeps(pid: int) -> int:
    """How many times `pid` has gone to sleep (each tick of the guardian's select loop is one)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/status has no voluntary_ctxt_switches")


def _wait_for_a_deep_look(guardian_pid: int) -> None:
    """Wait until the guardian has run a look at the launcher's whole tree that began after now: it starts one on
    the first tick at least DEEP_POLL_S after the last, so once DEEP_POLL_S has passed, a whole tick that starts
    after that (seen as two more sleeps of the guardian's own, one more allowed for a sleep inside a look) is such a
    look or comes after one. The guardian's own progress is waited for, however slow the machine."""
    from hosttune.launch import guardian

    since = time.monotonic()
    while time.monotonic() - since < guardian.DEEP_POLL_S:
        time.sleep(0.1)
    base = _sleeps(guardian_pid)
    assert _wait_for(lambda: _sleeps(guardian_pid) >= base + 3, 120), "the guardian stopped ticking"


def _kill_all(pids: List[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_sigkill_of_the_launcher_stops_a_supervised_job(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    n = str(3000 + int(uuid.uuid4().int % 1000)) + ".75"  # a child that leaves the session and drops every variable
    env = dict(os.environ, TEST_TAG=tag, HOSTTUNE_STOP_GRACE="3")
    proc = subprocess.Popen([PY, "-m", "hosttune", "exec", "--verify", "--", "sh", "-c",
                             f"setsid env -i sleep {n} & sleep 300 & sleep 301"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: len(_tagged(tag)) >= 4 and _by_cmdline(["sleep", n]), 60)  # hosttune, guardian, sh..
        _wait_for_a_deep_look(_guardian_of(proc.pid))  # the guardian has looked at the whole tree since `sleep n` ran
        proc.kill()
        proc.wait()
        assert _wait_for(lambda: not _tagged(tag) and not _by_cmdline(["sleep", n]), 60), \
            [Path(f"/proc/{p}/cmdline").read_bytes() for p in _tagged(tag)]
        err = proc.stderr.read().decode() if proc.stderr else ""
        assert "ended without stopping its job" in err
    finally:
        _kill_all(_tagged(tag) + _by_cmdline(["sleep", n]))
        if proc.stderr:
            proc.stderr.close()


def test_a_ranks_setsid_child_without_the_marker_is_stopped(fake_torchrun: Dict[str, str]) -> None:
    n = str(3000 + int(uuid.uuid4().int % 1000)) + ".25"
    r = hosttune(*_torchrun_job("sh", "-c", f"setsid env -i sleep {n} & exit 0"), env=fake_torchrun)
    try:
        assert r.returncode == 0, r.stderr
        assert _wait_for(lambda: not _by_cmdline(["sleep", n]), 60)
    finally:
        _kill_all(_by_cmdline(["sleep", n]))


# ---- low items -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--bogus"], ["--bogus", "--", "true"], ["--profile", "x", "--bogus=1", "true"]])
def test_unknown_exec_option_is_one_line_exit_2(args: List[str]) -> None:
    r = hosttune("exec", *args, env=dict(os.environ))
    assert r.returncode == 2, r.stderr
    assert "no such option: --bogus" in r.stderr and "command not found" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_double_dash_still_runs_a_command_named_like_an_option() -> None:
    r = hosttune("exec", "--", "--bogus", env=dict(os.environ))
    assert r.returncode == 2 and "--bogus: command not found" in r.stderr


# Runs `python -m hosttune ARGS` as -m does (runpy, so hosttune sees itself started as the program) with an audit
# hook that reports every new import after hosttune's first own submodule on fd T_MARK ("N name") and, at import
# number T_AT, blocks reading fd T_GATE: a phase of hosttune's start-up the test can hold the process in.
GATED_MAIN = """import os, runpy, sys
mark, gate, at = int(os.environ.pop("T_MARK")), int(os.environ.pop("T_GATE")), int(os.environ.pop("T_AT"))
os.set_inheritable(mark, False)
os.set_inheritable(gate, False)  # closed when hosttune execs the job: the marker pipe's end of file is that phase
seen = [-1]

def hook(event, args):
    if event != "import":
        return
    name = str(args[0])
    if seen[0] < 0:
        if not name.startswith("hosttune.") or name in ("hosttune.__main__", "hosttune.cli"):
            return
        seen[0] = 0
    n = seen[0]
    seen[0] += 1
    os.write(mark, ("%d %s\\n" % (n, name)).encode())
    if n == at:
        os.read(gate, 1)

sys.addaudithook(hook)
runpy.run_module("hosttune", run_name="__main__", alter_sys=True)
"""


def _start_gated(main: Path, at: int, argv: List[str]) -> "Tuple[subprocess.Popen[str], Any, int]":
    """Start the gated hosttune; returns (process, the marker pipe's reader, the gate's write end)."""
    mark_r, mark_w = os.pipe()
    gate_r, gate_w = os.pipe()
    env = dict(os.environ, T_MARK=str(mark_w), T_GATE=str(gate_r), T_AT=str(at), HOSTTUNE_EXEC_CACHE="0")
    try:
        p = subprocess.Popen([PY, str(main), *argv], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, pass_fds=(mark_w, gate_r),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    finally:
        os.close(mark_w)
        os.close(gate_r)
    return p, os.fdopen(mark_r, "r"), gate_w


def _job_started(pid: int, argv: List[str]) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == "\0".join(argv).encode() + b"\0"
    except OSError:
        return False


def test_ctrl_c_while_exec_starts_is_130_without_traceback(tmp_path: Path) -> None:
    # Ctrl-C in each phase of `hosttune exec`'s start-up, reached by waiting for it (never by a time): the process is
    # held at its Nth import after hosttune's first own module (every one after its SIGINT handler is in place),
    # for N spread from the first to the last import before the job starts, and signalled there. hosttune keeps an
    # ignored SIGINT ignored (nohup, `cmd &` in a script), so the child starts with the default action whatever the
    # test runner was started with. A signal before any hosttune code (site, runpy) is Python's to report: not here.
    main = tmp_path / "gated_main.py"
    main.write_text(GATED_MAIN)
    job = ["sleep", "300"]
    argv = ["exec", "--", *job]

    # The last phase first, which also counts the imports: the job itself is running (hosttune exec'd it).
    p, marks, gate = _start_gated(main, -1, argv)
    try:
        imports = marks.read().splitlines()  # end of file: the exec closed the marker pipe
        assert _wait_for(lambda: _job_started(p.pid, job), 60), imports[-5:]
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
        marks.close()
        os.close(gate)
    assert p.returncode in (130, -signal.SIGINT), (p.returncode, err)  # -2: the exec'd job got it
    assert "Traceback" not in err and "Aborted" not in err, err
    assert len(imports) > 4, imports

    n = len(imports)
    for at in sorted({0, n // 4, n // 2, 3 * n // 4, n - 1}):
        p, marks, gate = _start_gated(main, at, argv)
        try:
            reached = marks.readline()
            while reached and not reached.startswith(f"{at} "):
                reached = marks.readline()  # the phase: held at import number `at` until the gate opens
            assert reached.startswith(f"{at} "), (at, reached, imports[at])
            p.send_signal(signal.SIGINT)
            os.close(gate)
            gate = -1
            _, err = p.communicate(timeout=60)
        finally:
            p.kill()
            marks.close()
            if gate >= 0:
                os.close(gate)
        assert p.returncode == 130, (reached, p.returncode, err)
        assert "Traceback" not in err and "Aborted" not in err, (reached, err)


def test_nproc_per_node_is_capped_with_one_line() -> None:
    r = hosttune("exec", "--dry-run", "--", "torchrun", "--nproc_per_node=4000", "t.py", env=dict(os.environ))
    assert r.returncode == 2, r.stderr
    assert "4000" in r.stderr and str(MAX_NPROC_PER_NODE) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    job = prepare(["torchrun", f"--nproc_per_node={MAX_NPROC_PER_NODE}", "t.py"])
    assert len(job.ranks) == MAX_NPROC_PER_NODE


def test_shim_never_hands_the_rank_to_a_shell_as_its_python(tmp_path: Path) -> None:
    # {torchrun-python} means "the interpreter torchrun runs on", read from the shim's parent. A shell parent (a
    # wrapper that did not exec, or a user pasting the dry-run argv) must not run the script with bash.
    script = tmp_path / "t.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    shim = shlex.join(shim_argv(PY))
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_EXEC"}
    env.update(LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    r = subprocess.run(["bash", "-c", f"{shim} '{TORCHRUN_PYTHON}' -u {script}; exit $?"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 127, r.stderr
    assert "PYTHON_EXEC" in r.stderr and not (tmp_path / "ran").exists()
    r = subprocess.run(["bash", "-c", f"{shim} '{TORCHRUN_PYTHON}' -u {script}; exit $?"],
                       env=dict(env, PYTHON_EXEC=PY), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ran").exists()
