"""The monitor's log and textfile sinks (hosttune/monitor/sinks.py, issue 11 item 10): a directory another user
owns or can write is refused in one line, links planted where the monitor writes are never followed, rotation
only renames, and only hosttune's own directories get a chown/chmod fix.

The other-user tests run as root and play `nobody` (conftest's `other_user`); the files they aim at are root's
and must come out byte for byte unchanged."""

import os
from pathlib import Path
from typing import Dict, List

import pytest
from _monitorhelp import _monitor, _one_error_line, _snapshot, _targets
from conftest import OtherUser

from hosttune.errors import UserError
from hosttune.monitor import sinks


def _old_predictable_names() -> List[str]:
    pid = os.getpid()  # the sinks run in this process below, so the old names were exactly these
    return [f".hosttune.prom.{pid}.probe", f".hosttune.prom.{pid}.tmp"]


def _plant_links(user: OtherUser, rel_dir: str, targets: Dict[str, Path]) -> Path:
    d = user.home / rel_dir
    cmd = f'mkdir -p "{d}" && chmod 755 "{d}"'
    for name, target in targets.items():
        cmd += f' && ln -s "{target}" "{d}/{name}"'
    res = user.run(["sh", "-c", cmd])
    assert res.returncode == 0, res.stderr
    return d


def test_sinks_refuse_a_directory_another_user_owns_and_follow_none_of_their_links(
        tmp_path: Path, other_user: OtherUser) -> None:
    names = ["monitor.jsonl", "hosttune.prom", *_old_predictable_names()]
    targets = _targets(tmp_path, names)
    before = _snapshot(targets)
    d = _plant_links(other_user, "mon", targets)
    with pytest.raises(UserError, match=r"refusing log dir .* owned by nobody"):
        sinks.JsonlSink(str(d), 1 << 20, 2)
    with pytest.raises(UserError, match=r"refusing textfile dir .* owned by nobody"):
        sinks.TextfileSink(str(d))
    assert _snapshot(targets) == before


@pytest.mark.parametrize("mode", [0o1777, 0o775, 0o757])
def test_sinks_refuse_a_root_directory_others_can_write(tmp_path: Path, other_user: OtherUser, mode: int) -> None:
    """World-writable even with the sticky bit (as /tmp): anybody may plant a name the monitor writes."""
    d = other_user.home / "shared"  # under a directory the other user can reach; root's own, opened up by `mode`
    d.mkdir()
    os.chmod(d, mode)
    targets = _targets(tmp_path, ["monitor.jsonl", "hosttune.prom", *_old_predictable_names()])
    before = _snapshot(targets)
    if mode & 0o002:
        for name, target in targets.items():
            assert other_user.run(["ln", "-s", str(target), str(d / name)]).returncode == 0
    for make in (lambda: sinks.JsonlSink(str(d), 1 << 20, 2), lambda: sinks.TextfileSink(str(d))):
        with pytest.raises(UserError, match="writable by"):
            make()
    assert _snapshot(targets) == before


def test_daemon_refuses_a_log_dir_another_user_owns_in_one_line(tmp_path: Path, other_user: OtherUser) -> None:
    targets = _targets(tmp_path, ["monitor.jsonl"])
    before = _snapshot(targets)
    d = _plant_links(other_user, "var-log", targets)
    line = _one_error_line(_monitor("--log-dir", str(d), "--textfile-dir", "", "--interval", "0.1",
                                    "--config", os.devnull))
    assert "refusing log dir" in line and "owned by nobody" in line, line
    # not hosttune's directory: the fix is another one, never a chown of the other user's (issue 22 item 9)
    assert "fix: use another log dir (--log-dir" in line and "chown" not in line and "chmod" not in line, line
    assert _snapshot(targets) == before


def test_a_link_at_the_log_name_in_a_trusted_dir_is_refused_not_followed(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    targets = _targets(tmp_path, ["monitor.jsonl"])
    before = _snapshot(targets)
    os.symlink(targets["monitor.jsonl"], log / "monitor.jsonl")  # left from when the directory was open to others
    line = _one_error_line(_monitor("--log-dir", str(log), "--textfile-dir", "", "--config", os.devnull))
    assert "refusing" in line and "monitor.jsonl" in line and "link" in line, line
    assert _snapshot(targets) == before


def test_textfile_replaces_a_link_at_its_name_and_leaves_the_target(tmp_path: Path) -> None:
    tf = tmp_path / "tf"
    tf.mkdir()
    targets = _targets(tmp_path, ["hosttune.prom"])
    before = _snapshot(targets)
    os.symlink(targets["hosttune.prom"], tf / "hosttune.prom")
    sink = sinks.TextfileSink(str(tf))
    sink.write("hosttune_up 1\n")
    assert not os.path.islink(tf / "hosttune.prom") and (tf / "hosttune.prom").read_text() == "hosttune_up 1\n"
    assert os.listdir(tf) == ["hosttune.prom"]  # no probe or temp file left behind
    assert _snapshot(targets) == before


def test_rotation_moves_links_never_writes_through_them(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    targets = _targets(tmp_path, ["monitor.jsonl.1", "monitor.jsonl.2"])
    before = _snapshot(targets)
    for name, target in targets.items():
        os.symlink(target, log / name)
    sink = sinks.JsonlSink(str(log), 4096, 2)
    for i in range(60):  # a few rotations
        sink.write({"ts": 1700000000 + i, "pad": "x" * 200})
    sink.close()
    assert _snapshot(targets) == before
    assert not any(os.path.islink(log / n) for n in os.listdir(log))  # the links rotated out of the backups


def test_a_directory_owned_by_the_monitors_own_user_is_accepted(tmp_path: Path, other_user: OtherUser) -> None:
    """DynamicUser=: the state directory belongs to the dynamic uid, which is the monitor's own euid."""
    d = other_user.home / "state"
    assert other_user.run(["mkdir", "-m", "750", str(d)]).returncode == 0
    with pytest.raises(UserError, match="owned by nobody"):  # as root: another user's directory
        sinks.TextfileSink(str(d))
    os.setegid(other_user.gid)
    os.seteuid(other_user.uid)
    try:
        sink = sinks.JsonlSink(str(d), 1 << 20, 2)
        sink.write({"ts": 1700000000})
        sink.close()
        sinks.TextfileSink(str(d)).write("a 1\n")
    finally:
        os.seteuid(0)
        os.setegid(0)
    assert (d / "monitor.jsonl").stat().st_uid == other_user.uid
    assert (d / "hosttune.prom").read_text() == "a 1\n"


def test_only_hosttunes_own_directories_get_a_chown_or_chmod_fix(tmp_path: Path) -> None:
    from hosttune.policy import dirs

    own = Path(dirs.log_dir())
    own.mkdir(parents=True)
    os.chmod(own, 0o777)
    with pytest.raises(UserError, match=r"fix: chmod go-w "):
        sinks.JsonlSink(str(own), 1 << 20, 2)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chmod(theirs, 0o777)
    with pytest.raises(UserError) as exc:
        sinks.JsonlSink(str(theirs), 1 << 20, 2)
    assert "chmod" not in str(exc.value) and "chown" not in str(exc.value) and "use another log dir" in str(exc.value)


def test_a_directory_at_the_textfile_name_does_not_stop_the_sink(tmp_path: Path) -> None:
    tf = tmp_path / "tf"
    (tf / "hosttune.prom").mkdir(parents=True)
    sink = sinks.TextfileSink(str(tf))
    assert len(sink.warnings) == 1 and "renamed it to hosttune.prom.aside-" in sink.warnings[0]
    sink.write("a 1\n")
    assert (tf / "hosttune.prom").read_text() == "a 1\n"
