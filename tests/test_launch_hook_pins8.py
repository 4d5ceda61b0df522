"""Pins for hosttune.launch.hook.job_env (issue 21, round-8 practice, HLAU8): the variables that install the per-rank
hook, whole: PYTHONPATH with the hook directory first and every other entry kept once, in order (empty entries and
the hook's own dropped); as root, a hook directory or a sitecustomize.py in it that is not root's alone means no hook
at all ({}), with ONE exact line on stderr per process however often it is asked. The hook directory is a copy in a
private temporary directory (HOOK_DIR pointed at it), so the host's own install is never touched."""

import os
import shutil
from pathlib import Path

import pytest

from hosttune.launch import hook

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the trust rule applies as root")


@pytest.fixture
def hook_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    os.chmod(tmp_path, 0o755)
    d = tmp_path / "rankhook"
    d.mkdir(mode=0o755)
    shutil.copy(os.path.join(hook.HOOK_DIR, "sitecustomize.py"), d / "sitecustomize.py")
    os.chmod(d / "sitecustomize.py", 0o644)
    monkeypatch.setattr(hook, "HOOK_DIR", str(d))
    monkeypatch.setattr(hook, "_REFUSED", set())
    return d


def test_the_hook_goes_first_and_every_other_entry_stays_once(hook_dir: Path,
                                                              capfd: pytest.CaptureFixture) -> None:
    d = str(hook_dir)
    got = hook.job_env({"PYTHONPATH": os.pathsep.join(["/a", "", d, "/b", d])})
    assert got == {"PYTHONPATH": os.pathsep.join([d, "/a", "/b"])}
    assert hook.job_env({}) == {"PYTHONPATH": d}
    assert capfd.readouterr().err == ""


@as_root
@pytest.mark.parametrize("what", ["file", "dir"])
def test_a_hook_others_can_write_is_no_hook_and_one_line(hook_dir: Path, what: str,
                                                         capfd: pytest.CaptureFixture) -> None:
    target = hook_dir / "sitecustomize.py" if what == "file" else hook_dir
    os.chmod(target, 0o664 if what == "file" else 0o775)
    assert hook.job_env({"PYTHONPATH": "/a"}) == {}
    assert hook.job_env({"PYTHONPATH": "/a"}) == {}  # asked again: said once
    kind = "the per-rank hook" if what == "file" else "the per-rank hook directory"
    assert capfd.readouterr().err == (
        f"hosttune: refusing {kind} {target}: {target} is writable by its group, so another user could change what "
        f"runs as root; fix: chmod go-w {target}; the job runs without the per-rank hook\n")
