"""A root monitor beside node_exporter (hosttune/monitor/textfile.py, issue 22 item 9): root's store in hosttune's
state directory and a root-owned link in node_exporter's directory, nothing re-owned there; links user
prometheus plants are never followed; a directory at the textfile's name is renamed aside.

The other-user tests run as root and play `nobody` (conftest's `other_user`); the files they aim at are root's
and must come out byte for byte unchanged."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Tuple

import pytest
from _monitorhelp import _env, _monitor, _one_error_line, _snapshot, _targets
from conftest import OtherUser

from hosttune.errors import UserError
from hosttune.monitor import config as mconfig
from hosttune.monitor import textfile

PROM = "var/lib/prometheus"

NODE_EXPORTER = "var/lib/prometheus/node-exporter"


def _prometheus_tree(base: Path, user: OtherUser, layout: str) -> Path:
    """node_exporter's textfile directory as the distributions ship it, under a stand-in root `base/host`:
    /var/lib/prometheus belongs to user prometheus (played by the other user); node-exporter is root's 0755 (Debian)
    or prometheus's (Fedora/EPEL). The real /var/lib/prometheus is never touched."""
    root = base / "host"
    (root / "var/lib").mkdir(parents=True)
    for d in (root, root / "var", root / "var/lib"):
        os.chmod(d, 0o755)
    prom, ne = root / PROM, root / NODE_EXPORTER
    prom.mkdir()
    ne.mkdir()
    for d in (prom, ne):
        os.chmod(d, 0o755)
    os.chown(prom, user.uid, user.gid)
    if layout == "fedora":
        os.chown(ne, user.uid, user.gid)
    return root


def _owners(*paths: Path) -> List[Tuple[int, int, int]]:
    return [(os.lstat(p).st_uid, os.lstat(p).st_gid, os.lstat(p).st_mode) for p in paths]


@pytest.mark.parametrize("layout", ["debian", "fedora"])
def test_root_monitor_links_its_own_store_into_node_exporters_directory(
        tmp_path: Path, other_user: OtherUser, layout: str) -> None:
    """Root, textfile_dir auto, node_exporter's directory below user prometheus's /var/lib/prometheus: the old
    monitor refused to start (exit 2) and told the admin to `chown root: /var/lib/prometheus`, which breaks
    Prometheus. Now it takes the unit's route: root's store in hosttune's state directory, a root-owned link in
    node_exporter's directory, nothing else written or re-owned there, and nothing to fix."""
    import io

    from hosttune.monitor import daemon
    from hosttune.policy import dirs

    root = _prometheus_tree(tmp_path, other_user, layout)
    prom, ne = root / PROM, root / NODE_EXPORTER
    before = _owners(prom, ne)
    cfg = mconfig.MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="auto", tune_check_interval=0)
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(cfg, out, err, root=root)
    try:
        mon.open_sinks()
        store = Path(dirs.state_dir()) / "textfile"
        assert mon.textfile is not None and mon.textfile.path == str(store / "hosttune.prom")
        mon.textfile.write("hosttune_monitor_up 1\n")
        link = ne / "hosttune.prom"
        assert os.readlink(link) == str(store / "hosttune.prom") and os.lstat(link).st_uid == 0
        assert link.read_text() == "hosttune_monitor_up 1\n"  # node_exporter reads the store through the link
        mon.stopped()
        assert "hosttune_monitor_up 0" in link.read_text()
    finally:
        mon.close()
    assert os.listdir(ne) == ["hosttune.prom"] and _owners(prom, ne) == before
    assert store.stat().st_uid == 0 and (store / "hosttune.prom").stat().st_uid == 0
    assert out.getvalue() == "" and err.getvalue() == ""  # nothing to say, and no chown to suggest


def _wait_for(check: Any, timeout: float, what: str) -> Any:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_root_hosttune_monitor_without_config_starts_beside_node_exporter(
        tmp_path: Path, other_user: OtherUser) -> None:
    """The command itself, as root, with no monitor.yaml (conftest's $HOSTTUNE_ETC_DIR is empty) and the log and
    state directories of this test ($HOSTTUNE_LOG_DIR, $HOSTTUNE_STATE_DIR): it runs (exit 0 after SIGTERM, not 2)
    and node_exporter's directory shows its samples through the link."""
    import signal

    from hosttune.policy import dirs

    root = _prometheus_tree(tmp_path, other_user, "debian")
    ne = root / NODE_EXPORTER
    assert not os.path.exists(mconfig.default_config())
    proc = subprocess.Popen([sys.executable, "-m", "hosttune", "monitor", "--interval", "0.2", "--textfile-dir",
                             str(ne)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        _wait_for(lambda: proc.poll() is not None or "hosttune_monitor_samples_total 2" in _read(ne / "hosttune.prom"),
                  60, "two samples in node_exporter's directory")
        assert proc.poll() is None, proc.communicate()[1][-2000:]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _out, err_text = proc.communicate(timeout=60)
    assert proc.returncode == 0, err_text[-2000:]
    assert "chown" not in err_text and "chmod" not in err_text, err_text
    assert os.readlink(ne / "hosttune.prom") == os.path.join(dirs.state_dir(), "textfile", "hosttune.prom")
    assert "hosttune_monitor_up 0" in (ne / "hosttune.prom").read_text()
    assert Path(dirs.log_dir(), "monitor.jsonl").read_text().count("\n") >= 2


def test_a_link_prometheus_plants_for_node_exporters_directory_is_never_followed(
        tmp_path: Path, other_user: OtherUser) -> None:
    """User prometheus owns /var/lib/prometheus, so it can swap node-exporter for a link to a directory of root's:
    root's monitor must not make (or replace) hosttune.prom there. One line, exit 2, root's file unchanged."""
    root = _prometheus_tree(other_user.home, other_user, "debian")
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    precious = vault / "hosttune.prom"
    precious.write_text("root's own textfile\n")
    before = _snapshot({"p": precious})
    moved = other_user.run(["sh", "-c", f'mv "{root / NODE_EXPORTER}" "{root / PROM}/old" && '
                                        f'ln -s "{vault}" "{root / NODE_EXPORTER}"'])
    assert moved.returncode == 0, moved.stderr
    line = _one_error_line(_monitor("--textfile-dir", str(root / NODE_EXPORTER), "--interval", "0.2"))
    assert "textfile dir" in line and "never followed" in line and "chown" not in line, line
    assert os.listdir(vault) == ["hosttune.prom"] and _snapshot({"p": precious}) == before
    # the unit's route, `setup-textfile` as root before each start: the old one replaced root's file with its link
    with pytest.raises(OSError, match="never followed"):
        textfile.publish(str(root / NODE_EXPORTER), 0, 0, store=str(tmp_path / "state" / "textfile"))
    assert os.listdir(vault) == ["hosttune.prom"] and _snapshot({"p": precious}) == before


def test_a_link_prometheus_plants_at_the_textfile_name_is_replaced_not_followed(
        tmp_path: Path, other_user: OtherUser) -> None:
    """Fedora's node-exporter directory is prometheus's own: a link planted at hosttune.prom is renamed over."""
    root = _prometheus_tree(other_user.home, other_user, "fedora")
    ne = root / NODE_EXPORTER
    targets = _targets(tmp_path, ["hosttune.prom"])
    before = _snapshot(targets)
    assert other_user.run(["ln", "-s", str(targets["hosttune.prom"]), str(ne / "hosttune.prom")]).returncode == 0
    store = tmp_path / "state" / "textfile"
    done, warnings = textfile.publish(str(ne), 0, 0, store=str(store))
    assert os.readlink(ne / "hosttune.prom") == str(store / "hosttune.prom") and warnings == []
    assert _snapshot(targets) == before


def test_an_admins_root_link_on_the_way_to_node_exporter_is_followed(tmp_path: Path) -> None:
    """/var/lib/prometheus -> /srv/prometheus, made by root in a root-only directory: a trusted link."""
    real = tmp_path / "srv/prometheus/node-exporter"
    real.mkdir(parents=True)
    lib = tmp_path / "host/var/lib"
    lib.mkdir(parents=True)
    os.symlink(tmp_path / "srv/prometheus", lib / "prometheus")
    store = tmp_path / "state" / "textfile"
    textfile.publish(str(lib / "prometheus/node-exporter"), 0, 0, store=str(store))
    assert os.readlink(real / "hosttune.prom") == str(store / "hosttune.prom")


# ---- issue 22, low: a directory at the textfile's place --------------------------------------------------------------
def test_a_directory_at_the_textfile_name_is_renamed_aside_once_for_the_unit(tmp_path: Path) -> None:
    """The store (the dynamic user can make anything in it) and node_exporter's directory: a directory at
    hosttune.prom made `setup-textfile` fail, so the unit never started. Now it is renamed aside, one warning
    each, its contents kept."""
    from hosttune.policy import dirs

    if os.geteuid() != 0:
        pytest.skip("setup-textfile runs as root")
    target = tmp_path / "node-exporter"
    store = Path(dirs.state_dir()) / "textfile"
    for d in (target, store):
        (d / "hosttune.prom").mkdir(parents=True)
        (d / "hosttune.prom" / "keep").write_text("someone's\n")
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(f"textfile_dir: {target}\n")
    res = _monitor("setup-textfile", "--owner", "root", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    warnings = res.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("hosttune: warning: a directory was at ") for w in warnings)
    for d in (target, store):
        aside = [n for n in os.listdir(d) if n.startswith("hosttune.prom.aside-")]
        assert len(aside) == 1 and (d / aside[0] / "keep").read_text() == "someone's\n", os.listdir(d)
    assert "hosttune_monitor_up 0" in (target / "hosttune.prom").read_text()
    res = _monitor("setup-textfile", "--owner", "root", "--config", str(cfg))  # the next start: nothing to say
    assert res.returncode == 0 and res.stderr == "", res.stderr


def test_a_state_dir_another_user_owns_gets_no_store_from_root(tmp_path: Path, other_user: OtherUser) -> None:
    """$HOSTTUNE_STATE_DIR survives `sudo -E`: root chowns and writes the store below it, so it must be root's."""
    state = other_user.home / "state"
    assert other_user.run(["mkdir", "-m", "755", str(state)]).returncode == 0
    with pytest.raises(UserError, match=r"refusing state dir .* owned by nobody") as exc:
        textfile.publish(str(tmp_path / "node-exporter"), 0, 0, store=str(state / "textfile"))
    assert "chown" not in str(exc.value)
    assert os.listdir(state) == [] and not (tmp_path / "node-exporter").exists()
