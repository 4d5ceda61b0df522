"""Pin for mutation round 4's last textfile survivor (issue 21): a store named with a trailing slash is the same
store as without it, so the unit's ExecStartPre=+ publishes it on every start, not only the first (the store belongs
to the monitor's user after a start; only its parent, the state directory, is held to root's trust rule)."""
import os
from pathlib import Path

import pytest

from hosttune.monitor import textfile
from hosttune.monitor.sinks import TEXTFILE_NAME

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
