"""Pins for hosttune/monitor/textfile.py from issue 21's mutation run (as root, as the unit runs it): directories the
no-follow walk makes get DIR_MODE whatever the umask, and a hard link at the store's textfile name (the previous
run's user could have made one to a file of root's) is replaced, never chowned through."""

import os
import stat
from pathlib import Path

import pytest

from hosttune.monitor import textfile
from hosttune.monitor.sinks import DIR_MODE, TEXTFILE_NAME

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="publishing is root's (the unit's ExecStartPre=+)")


def test_directories_the_walk_makes_get_dir_mode_under_any_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        fd = textfile._open_dir_nofollow(str(tmp_path / "a" / "b"))
        os.close(fd)
    finally:
        os.umask(old)
    for d in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(os.stat(d).st_mode) == DIR_MODE


def test_a_hard_link_at_the_textfile_name_is_replaced_not_chowned(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    store = state / "textfile"
    store.mkdir(mode=0o755)
    precious = tmp_path / "precious"
    precious.write_text("root's\n")
    os.link(precious, store / TEXTFILE_NAME)
    textfile.publish("", 65534, 65534, store=str(store))
    assert os.stat(precious).st_uid == 0 and precious.read_text() == "root's\n"
    st = os.stat(store / TEXTFILE_NAME)
    assert st.st_uid == 65534 and st.st_nlink == 1


def test_a_link_another_user_made_on_the_way_is_never_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)
    fd = textfile._open_dir_nofollow(str(tmp_path / "via"))  # root's own link in root's directory: followed
    os.close(fd)
    os.lchown(tmp_path / "via", 65534, 65534)
    with pytest.raises(OSError, match="never followed"):
        textfile._open_dir_nofollow(str(tmp_path / "via" / "x"))
    assert not (real / "x").exists()


def test_a_root_link_in_a_directory_others_can_write_is_never_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # anyone could swap the link
    (shared / "via").symlink_to(real)
    with pytest.raises(OSError, match="never followed"):
        textfile._open_dir_nofollow(str(shared / "via" / "x"))
    assert not (real / "x").exists()


def test_a_link_another_user_made_at_the_textfile_name_is_replaced_by_roots(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    store = state / "textfile"
    target = tmp_path / "node_exporter"
    target.mkdir()
    (target / TEXTFILE_NAME).symlink_to(store / TEXTFILE_NAME)  # the right place, but nobody's link
    os.lchown(target / TEXTFILE_NAME, 65534, 65534)
    textfile.publish(str(target), 65534, 65534, store=str(store))
    assert os.lstat(target / TEXTFILE_NAME).st_uid == 0
    assert os.readlink(target / TEXTFILE_NAME) == str(store / TEXTFILE_NAME)
