"""The launcher -> rank handoff's directories (hosttune/launch/handoff.py): where it goes, that nothing is made in a
directory before it passed the trust rule, and that a predictable name never goes into a directory others can write.
Issue 22: item 5 (the handoff half) and the low "handoff base checked only after private_dir(create=True)"; issue 11,
item 3: as root, the handoff is never put where another user can reach it, nor taken from there.
"""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

import _exechelp
import pytest
from _exechelp import _torchrun_job, hosttune, shim_with_handoff

from hosttune.launch import handoff
from hosttune.launch.job import prepare
from hosttune.policy import dirs, names

fake_torchrun = _exechelp.fake_torchrun  # the fixture, used here by its name

REPO = Path(__file__).resolve().parents[1]
ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="root's runtime directory")


def content(threads: str = "4", available: int = 1000, temp: int = 40, mounts: int = 1) -> Dict[str, Any]:
    """A handoff's shape, with the plan's variables and the facts' snapshots as parameters."""
    return {
        "version": handoff.VERSION, "marker": f"{os.getpid()}-{os.urandom(4).hex()}", "kind": "plain",
        "plans": {"1": [{"local_rank": 0, "env": {"OMP_NUM_THREADS": threads}}]},
        "facts": {"memory": {"total_mb": 4096, "available_mb": available},
                  "gpus": [{"index": 0, "pci_bus_id": "0000:3b:00.0", "temperature_c": temp,
                            "clock_event_reasons": 1, "ecc_uncorrected_volatile": 0}],
                  "storage": [{"mount": f"/mnt/{i}"} for i in range(mounts)]},
    }


def listing(d: Path) -> list:
    return sorted(os.listdir(d))


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory like /tmp: root's, world-writable with the sticky bit, where the other user can reach it."""
    d = Path(tempfile.mkdtemp(prefix="hosttune-shared-", dir="/tmp"))
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(d)], check=False)


# ---- where it goes ------------------------------------------------------------------------------------------------


@ROOT
def test_root_handoffs_go_to_the_runtime_directory_of_policy_dirs(tmp_path: Path) -> None:
    run = Path(dirs.runtime_dir())
    assert tmp_path in run.parents and not run.exists()  # the test's own (tests/conftest.py), made on first use
    supervised = Path(handoff.write(content()))
    plain = Path(handoff.write_shared(content()))
    try:
        assert supervised.parent.parent == run and plain.parent.parent == run
        assert supervised.parent.name.startswith(handoff.PREFIX)
        assert plain.parent.name.startswith(f"{handoff.SHARED_PREFIX}0-")
        for d in (run, supervised.parent, plain.parent):
            st = d.stat()
            assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o700), d
        back = handoff.read({names.HANDOFF: str(plain)})
        assert back is not None and back["plans"] == content()["plans"]
    finally:
        handoff.remove(str(supervised))


def test_a_plain_jobs_handoff_is_reused_whatever_the_moments_snapshot() -> None:
    """The content-addressed directory ignores what no plan reads (memory available now, a GPU's temperature,
    another program's mounts): one directory per distinct plan, written once."""
    first = handoff.write_shared(content())
    st = os.stat(first)
    again = handoff.write_shared(content(available=12, temp=77, mounts=3))
    assert again == first
    assert (os.stat(again).st_ino, os.stat(again).st_mtime_ns) == (st.st_ino, st.st_mtime_ns)  # not rewritten
    other = handoff.write_shared(content(threads="2"))
    assert other != first
    assert json.loads(Path(other).read_text())["plans"]["1"][0]["env"]["OMP_NUM_THREADS"] == "2"
    assert "marker" not in json.loads(Path(first).read_text())  # per launch: not part of a shared file


# ---- nothing made in a directory that has not passed the rule ---------------------------------------------------


def test_as_root_nothing_is_made_in_another_users_runtime_dir(other_user: Any) -> None:
    """After `su`, XDG_RUNTIME_DIR is still the user's: root neither writes there nor leaves an empty directory."""
    xdg = other_user.home / "run"
    assert other_user.run(["mkdir", "-m", "700", str(xdg)]).returncode == 0
    env = dict(os.environ, XDG_RUNTIME_DIR=str(xdg))
    plain = handoff.write_shared(content(), env)
    supervised = handoff.write(content(), env)
    try:
        assert listing(xdg) == []
        assert not plain.startswith(str(xdg) + "/") and not supervised.startswith(str(xdg) + "/")
    finally:
        handoff.remove(supervised)


def test_as_root_a_runtime_dir_under_another_users_directory_is_not_made(other_user: Any, tmp_path: Path) -> None:
    """$HOSTTUNE_RUNTIME_DIR survives `sudo -E`: one inside another user's directory is neither made nor used;
    the plain job's handoff goes to root's own cache directory instead."""
    env = dict(os.environ, **{names.RUNTIME_DIR: str(other_user.home / "run")})
    plain = Path(handoff.write_shared(content(), env))
    supervised = Path(handoff.write(content(), env))
    try:
        assert listing(other_user.home) == []
        assert plain.parent.parent == Path(dirs.user_cache_dir(env) or "") and tmp_path in plain.parents
        assert other_user.home not in supervised.parents
    finally:
        handoff.remove(str(supervised))


# ---- no predictable name in a shared directory ------------------------------------------------------------------


def test_as_root_the_runtime_dir_is_not_made_in_a_shared_directory(shared_tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("root's runtime directory")
    env = dict(os.environ, **{names.RUNTIME_DIR: str(shared_tmp / "hosttune-run")})
    plain = Path(handoff.write_shared(content(), env))
    supervised = Path(handoff.write(content(), env))
    try:
        assert plain.parent.parent == Path(dirs.user_cache_dir(env) or "")
        # the supervised job's directory may be in a shared temp directory: its name is mkdtemp's, unpredictable
        assert [n for n in listing(shared_tmp) if not n.startswith(handoff.PREFIX)] == []
    finally:
        handoff.remove(str(supervised))


def test_as_root_a_squatted_runtime_dir_is_not_used(other_user: Any, shared_tmp: Path) -> None:
    squat = shared_tmp / "hosttune-run"
    assert other_user.run(["mkdir", "-m", "700", str(squat)]).returncode == 0
    env = dict(os.environ, **{names.RUNTIME_DIR: str(squat)})
    plain = Path(handoff.write_shared(content(), env))
    supervised = Path(handoff.write(content(), env))
    try:
        assert squat not in plain.parents and squat not in supervised.parents
        assert os.stat(squat).st_uid == other_user.uid
    finally:
        handoff.remove(str(supervised))


def test_a_users_plain_job_handoff_never_goes_into_a_shared_temp_directory(other_user: Any, shared_tmp: Path) -> None:
    """A user without XDG_RUNTIME_DIR (ssh without pam_systemd, CI): the content-addressed name is predictable, so
    it goes to the user's own cache directory, not to $TMPDIR where another user could take the name first."""
    py = "/usr/bin/python3"  # the other user cannot enter a pyenv or venv under /root
    if not os.path.exists(py):
        pytest.skip(f"needs {py}")
    src = other_user.home / "src"
    shutil.copytree(REPO / "hosttune", src / "hosttune", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import json, sys\nfrom hosttune.launch import handoff\nc = json.loads(sys.argv[1])\n"
            "print(handoff.write_shared(c)); print(handoff.write(c))\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(other_user.home), "PYTHONPATH": str(src), "TMPDIR": str(shared_tmp),
           "PYTHONDONTWRITEBYTECODE": "1"}
    r = other_user.run([py, "-c", code, json.dumps(content())], env=env)
    assert r.returncode == 0, r.stderr
    plain, supervised = (Path(p) for p in r.stdout.split())
    assert plain.parent.parent == other_user.home / ".cache" / "hosttune"
    assert plain.parent.name.startswith(f"{handoff.SHARED_PREFIX}{other_user.uid}-")
    assert supervised.parent.parent == shared_tmp  # mkdtemp's random name in the sticky directory: fine
    st = supervised.parent.stat()
    assert (st.st_uid, st.st_mode & 0o7777) == (other_user.uid, 0o700)
    assert [n for n in listing(shared_tmp) if not n.startswith(handoff.PREFIX)] == []


# ---- as root, the handoff another user could have written (issue 11, item 3) ---------------------------------------


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
        r = shim_with_handoff(use, ran)
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
        r = shim_with_handoff(path, tmp_path / "ran")
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "ran").exists()
    finally:
        handoff.remove(path)
