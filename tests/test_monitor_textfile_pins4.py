"""Pins of mutation round 4 (issue 21) on hosttune/monitor/textfile.py: where "auto" resolves, which link redirects
the monitor's writes (root's, naming exactly the store's file, nothing else), and the dynamic-user lookup."""

import os
from pathlib import Path
from typing import Any

import pytest

from hosttune.monitor import textfile as T


def test_store_dir_and_auto(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("HOSTTUNE_STATE_DIR", str(tmp_path / "state"))
    assert T.store_dir() == str(tmp_path / "state/textfile")
    assert T.store_dir({}) == "/var/lib/hosttune/textfile"
    assert T.resolve_textfile_dir("", str(tmp_path)) == ""
    assert T.resolve_textfile_dir("/x/y", str(tmp_path)) == "/x/y"
    assert T.resolve_textfile_dir("auto", str(tmp_path)) == str(tmp_path / "state/textfile")
    (tmp_path / "var/lib/prometheus/node-exporter").mkdir(parents=True)
    assert T.resolve_textfile_dir("auto", str(tmp_path)) == str(tmp_path / "var/lib/prometheus/node-exporter")
    assert T.resolve_textfile_dir("AUTO", str(tmp_path)) == "AUTO"


@pytest.mark.skipif(os.geteuid() != 0, reason="a root-owned link needs root")
def test_write_dir_takes_only_roots_link_to_the_store(tmp_path: Path) -> None:
    target, store = tmp_path / "ne", tmp_path / "store"
    target.mkdir()
    store.mkdir()
    assert T.write_dir(str(target), str(store)) == str(target)  # no link
    link = target / "hosttune.prom"
    link.symlink_to(store / "hosttune.prom")
    assert os.lstat(link).st_uid == 0
    assert T.write_dir(str(target), str(store)) == str(store)
    link.unlink()
    link.symlink_to(store / "other.prom")
    assert T.write_dir(str(target), str(store)) == str(target)
    link.unlink()
    link.symlink_to(str(store) + "/./hosttune.prom")  # the same file, spelled otherwise: not taken
    assert T.write_dir(str(target), str(store)) == str(target)
    link.unlink()
    link.symlink_to(store / "hosttune.prom")
    os.lchown(link, 1, 1)  # not root's
    assert T.write_dir(str(target), str(store)) == str(target)
    link.unlink()
    link.write_text("x\n")  # a plain file
    assert T.write_dir(str(target), str(store)) == str(target)


def test_service_user(tmp_path: Path) -> None:
    assert T.service_user("root", str(tmp_path)) == (0, 0)
    (tmp_path / "direct:hosttune-monitor").symlink_to("61234")
    assert T.service_user("hosttune-monitor", str(tmp_path)) == (61234, 61234)
    (tmp_path / "direct:odd").symlink_to("12x")
    assert T.service_user("odd", str(tmp_path)) is None
    assert T.service_user("nobody-such-user", str(tmp_path)) is None
    assert T.service_user("a/b", str(tmp_path)) is None and T.service_user("", str(tmp_path)) is None
    assert (T.DYNAMIC_UID_DIR, T.MAX_LINK_HOPS, T.NODE_EXPORTER_DIRS) == (
        "/run/systemd/dynamic-uid", 40, ("/var/lib/prometheus/node-exporter",))
