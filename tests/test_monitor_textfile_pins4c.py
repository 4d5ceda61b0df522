"""Pin for mutation round 4's last textfile survivor (issue 21): a store named with a trailing slash is the same
store as without it, so the unit's ExecStartPre=+ publishes it on every start, not only the first (the store belongs
to the monitor's user after a start; only its parent, the state directory, is held to root's trust rule). Neighbours in
publish(): an existing store is given DIR_MODE (node_exporter lists it), and a link at the store's name is refused
before root changes anything through it."""
import errno
import os
import stat
from pathlib import Path

import pytest

from hosttune.monitor import textfile
from hosttune.monitor.sinks import DIR_MODE, TEXTFILE_NAME

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="publishing is root's (the unit's ExecStartPre=+)")


def test_a_store_named_with_a_trailing_slash_is_published_on_every_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    store = state / "textfile"
    target = tmp_path / "node_exporter"
    target.mkdir(mode=0o755)
    for _start in range(2):  # the second start finds the store owned by the monitor's (dynamic) user
        textfile.publish(str(target), 65534, 65534, store=str(store) + "/")
    assert os.stat(store).st_uid == 65534 and os.stat(state).st_uid == 0
    assert os.readlink(target / TEXTFILE_NAME) == str(store / TEXTFILE_NAME)
    assert "hosttune_monitor_up 0\n" in (target / TEXTFILE_NAME).read_text()  # valid from the start


def test_an_existing_store_gets_dir_mode_for_node_exporter(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    store = state / "textfile"
    store.mkdir(mode=0o700)  # left private by an admin or an older version: node_exporter could not list it
    textfile.publish("", 65534, 65534, store=str(store))
    assert stat.S_IMODE(os.lstat(store).st_mode) == DIR_MODE


def test_a_link_at_the_stores_name_is_refused_and_its_target_left_alone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    precious = tmp_path / "precious"
    precious.mkdir(mode=0o700)
    (state / "textfile").symlink_to(precious, target_is_directory=True)
    with pytest.raises(OSError) as err:
        textfile.publish("", 65534, 65534, store=str(state / "textfile"))
    assert err.value.errno == errno.ENOTDIR and "a link or a file at the store's name" in str(err.value)
    st = os.stat(precious)
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o700, 0) and not list(precious.iterdir())
