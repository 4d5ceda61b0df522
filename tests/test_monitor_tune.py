"""The monitor keeps the tunables: drift events (once, and their clear), the textfile gauge, `reapply: true` as a
request file for the root oneshot (never a privilege of its own), the monitor.yaml keys, and the .path unit.

`hosttune.tune.verify` is replaced by a stand-in that reads a captured tree (`proc/sys/vm/swappiness` against 10,
`var/lib/hosttune/tune-state.json` as "something was applied"): these tests are about what the monitor does with
verify's answer, and `hosttune tune`'s own tests cover the reading.
"""

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Set

import pytest
from conftest import run_cli
from prometheus_client.parser import text_string_to_metric_families

from hosttune.errors import UserError
from hosttune.monitor import config as mconfig
from hosttune.monitor import daemon
from hosttune.monitor.config import MonitorConfig

REPO = Path(__file__).resolve().parent.parent
PATH_UNIT = REPO / "systemd" / "hosttune-tune-reapply.path"
TUNE_SERVICE = REPO / "systemd" / "hosttune-tune-reapply.service"


@dataclass(frozen=True)
class Status:  # the fields of hosttune.tune.Status the monitor reads
    id: str
    title: str
    expected: str
    actual: str
    state: str
    reason: str = ""


def fake_verify(root: Path, profile: Any = None) -> List[Status]:
    if not (root / "var/lib/hosttune/tune-state.json").exists():
        raise RuntimeError("nothing to verify: `hosttune tune apply` was never run (no tune-state.json)")
    actual = (root / "proc/sys/vm/swappiness").read_text().strip()
    return [Status("swappiness", "vm.swappiness", "10", actual, "ok" if actual == "10" else "drift"),
            Status("numa_balancing", "kernel.numa_balancing", "0", "", "skip", "single NUMA node")]


@pytest.fixture
def tune_stub(monkeypatch: pytest.MonkeyPatch) -> List[Path]:
    """hosttune.tune with the stand-in verify; returns the roots it was called with."""
    calls: List[Path] = []

    def verify(root: Path = Path("/"), profile: Any = None) -> List[Status]:
        calls.append(root)
        return fake_verify(root, profile)

    stub_tune(monkeypatch, verify)
    return calls


def stub_tune(monkeypatch: pytest.MonkeyPatch, verify: Any, state: str = "var/lib/hosttune/tune-state.json") -> None:
    monkeypatch.setitem(sys.modules, "hosttune.tune", types.SimpleNamespace(verify=verify))
    monkeypatch.setitem(sys.modules, "hosttune.tune.model", types.SimpleNamespace(STATE_FILE=state))


def host_tree(tmp_path: Path, swappiness: str = "10", applied: bool = True) -> Path:
    root = tmp_path / "host"
    (root / "proc/sys/vm").mkdir(parents=True)
    (root / "proc/sys/vm/swappiness").write_text(swappiness + "\n")
    if applied:
        (root / "var/lib/hosttune").mkdir(parents=True)
        (root / "var/lib/hosttune/tune-state.json").write_text("{}\n")
    return root


class Run:
    def __init__(self, tmp_path: Path, root: Path, **cfg: Any) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        self.runtime = tmp_path / "run"
        self.cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=str(tmp_path / "textfile"), **cfg)
        self.mon = daemon.Monitor(self.cfg, self.out, self.err, environ={"RUNTIME_DIRECTORY": str(self.runtime)},
                                  root=root)
        self.mon.open_sinks()

    def check(self) -> Dict[str, Any]:
        record: Dict[str, Any] = {"ts": time.time(), "nvml": "ok", "host": {}, "gpus": []}
        self.mon.check_tune(record)
        self.mon.emit(record)
        return record

    def drift_gauges(self) -> Dict[str, float]:
        assert self.mon.textfile is not None
        text = Path(self.mon.textfile.path).read_text()
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        if "hosttune_tune_drift" not in fams:
            return {}
        return {s.labels["tunable"]: s.value for s in fams["hosttune_tune_drift"].samples}


def _lines(stream: io.StringIO, word: str) -> List[str]:
    return [line for line in stream.getvalue().splitlines() if word in line]


def test_drift_under_the_monitor_is_one_warning_and_one_clear(tmp_path: Path, tune_stub: List[Path]) -> None:
    root = host_tree(tmp_path)
    run = Run(tmp_path, root)
    knob = root / "proc/sys/vm/swappiness"
    records = []
    for value in ("10", "60", "60", "60", "10", "10"):
        knob.write_text(value + "\n")
        records.append(run.check())
        gauges = run.drift_gauges()
        # a skipped tunable is not checked, so it has no gauge
        assert gauges == {"swappiness": 0.0 if value == "10" else 1.0}
    assert tune_stub == [root] * 6
    events = [ev for rec in records for ev in rec.get("events", [])]
    assert [(ev["kind"], ev["subject"], ev["state"], ev["level"]) for ev in events] == [
        ("tune_drift", "swappiness", "start", "warning"), ("tune_drift", "swappiness", "clear", "info")]
    assert "expected 10, actual 60" in events[0]["message"]
    journal = _lines(run.out, "swappiness")
    assert len(journal) == 2 and "warning" in journal[0] and "cleared" in journal[1], journal
    assert "numa_balancing" not in run.out.getvalue() + run.err.getvalue()
    # the events are in the JSONL too, where `hosttune monitor report` finds them
    assert Path(run.cfg.log_dir, "monitor.jsonl").read_text().count('"tune_drift"') == 2
    assert not run.runtime.exists()  # reapply is off: no request


def test_nothing_applied_is_quiet_and_no_events(tmp_path: Path, tune_stub: List[Path]) -> None:
    root = host_tree(tmp_path, swappiness="60", applied=False)
    run = Run(tmp_path, root)
    records = [run.check() for _ in range(4)]
    assert not [rec for rec in records if rec.get("events")]
    assert run.out.getvalue() == "" and run.err.getvalue() == ""
    assert tune_stub == []  # verify compares with the profile: on a host never tuned it is not asked
    assert run.drift_gauges() == {}
    # once something is applied, the checks start and the drift is reported
    (root / "var/lib/hosttune").mkdir(parents=True)
    (root / "var/lib/hosttune/tune-state.json").write_text("{}\n")
    rec = run.check()
    assert [ev["subject"] for ev in rec["events"]] == ["swappiness"]
    assert run.drift_gauges() == {"swappiness": 1.0}


def test_skip_never_makes_an_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([[Status("thp", "THP", "never", "always", "drift")],
                    [Status("thp", "THP", "never", "", "skip", "read-only /sys")],
                    [Status("thp", "THP", "never", "", "skip", "read-only /sys")],
                    [Status("thp", "THP", "never", "always", "drift")],
                    [Status("thp", "THP", "never", "never", "ok")]])
    stub_tune(monkeypatch, lambda root: next(answers))
    root = host_tree(tmp_path)
    run = Run(tmp_path, root)
    states = [[ev["state"] for ev in run.check().get("events", [])] for _ in range(5)]
    # a skip neither clears the drift in force nor starts a new one
    assert states == [["start"], [], [], [], ["clear"]]


def _files(top: Path) -> Set[str]:
    return {str(p.relative_to(top)) for p in top.rglob("*")}


def test_reapply_touches_only_the_request_file_once_per_drift(tmp_path: Path, tune_stub: List[Path]) -> None:
    root = host_tree(tmp_path)
    run = Run(tmp_path, root, reapply=True)
    request = run.runtime / daemon.REAPPLY_NAME
    before = _files(tmp_path)
    knob = root / "proc/sys/vm/swappiness"
    seen = []
    for value in ("10", "60", "60", "10", "60"):
        knob.write_text(value + "\n")
        run.check()
        seen.append(request.stat().st_ino if request.exists() else None)
    # no request while clean; a new file (renamed over the old one: PathChanged= fires) for each new drift only
    assert seen[0] is None and seen[1] is not None and seen[2] == seen[1] and seen[3] == seen[2]
    assert seen[4] is not None and seen[4] != seen[3]
    assert request.read_text() == "drifted: swappiness\n"
    assert not request.is_symlink() and oct(request.stat().st_mode & 0o777) == "0o644"
    new = _files(tmp_path) - before
    logs = {n for n in new if n.startswith(("log/", "textfile/"))}
    assert new - logs == {"run/tune-reapply"}, new
    assert len(_lines(run.err, "re-apply of swappiness requested")) == 2


def test_reapply_never_writes_through_a_planted_link(tmp_path: Path, tune_stub: List[Path]) -> None:
    root = host_tree(tmp_path, swappiness="60")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "run").mkdir(mode=0o755)
    (tmp_path / "run" / daemon.REAPPLY_NAME).symlink_to(victim)
    Run(tmp_path, root, reapply=True).check()
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "run" / daemon.REAPPLY_NAME).is_symlink()  # the link itself was replaced


def test_reapply_with_an_unwritable_runtime_dir_is_exit_2_at_start(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can write any directory")
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="", reapply=True)
    mon = daemon.Monitor(cfg, io.StringIO(), io.StringIO(), environ={"RUNTIME_DIRECTORY": str(ro)})
    with pytest.raises(UserError, match="reapply: true, but the runtime dir .* is not writable"):
        mon.open_sinks()


def test_the_daemon_loop_checks_at_start_and_then_every_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_nvml: Any) -> None:
    fake_nvml({"gpus": []})
    calls: List[Path] = []

    def verify(root: Path = Path("/"), profile: Any = None) -> List[Status]:
        calls.append(root)
        os.kill(os.getpid(), signal.SIGTERM)  # one tick is enough: stop the loop (no clock in this test)
        return [Status("swappiness", "vm.swappiness", "10", "60", "drift")]

    state = tmp_path / "tune-state.json"  # an absolute STATE_FILE: the live root "/" joined with it is this file
    state.write_text("{}\n")
    stub_tune(monkeypatch, verify, str(state))
    written: List[str] = []  # every textfile the loop wrote (the last one is the stopped monitor's, without readings)
    real_write = daemon.TextfileSink.write
    monkeypatch.setattr(daemon.TextfileSink, "write", lambda self, text: (written.append(text), real_write(self, text)))
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXFSZ)}
    out, err = io.StringIO(), io.StringIO()
    try:
        cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=str(tmp_path / "tf"), interval=0.05,
                            tune_check_interval=3600)
        assert daemon.run(cfg, out, err) == 0
    finally:
        signal.set_wakeup_fd(-1)
        for s, h in old.items():
            signal.signal(s, h)
    assert calls == [Path("/")]  # live: the host's own root
    assert "tunable swappiness (vm.swappiness) drifted: expected 10, actual 60" in out.getvalue()
    assert len(written) == 2 and 'hosttune_tune_drift{tunable="swappiness"} 1' in written[0]
    assert (tmp_path / "tf" / "hosttune.prom").read_text() == written[1] and "hosttune_monitor_up 0" in written[1]


def test_tune_checks_off_never_call_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_nvml: Any) -> None:
    fake_nvml({"gpus": []})
    calls: List[Path] = []
    stub_tune(monkeypatch, lambda root: calls.append(root) or [])
    emitted: List[Dict[str, Any]] = []
    real_emit = daemon.Monitor.emit

    def emit(self: daemon.Monitor, record: Dict[str, Any]) -> None:
        real_emit(self, record)
        emitted.append(record)
        if len(emitted) == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(daemon.Monitor, "emit", emit)
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXFSZ)}
    try:
        cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="", interval=0.05, tune_check_interval=0)
        assert daemon.run(cfg, io.StringIO(), io.StringIO()) == 0
    finally:
        signal.set_wakeup_fd(-1)
        for s, h in old.items():
            signal.signal(s, h)
    assert len(emitted) == 3 and calls == []


# ---- monitor.yaml -----------------------------------------------------------------------------------------------
def test_shipped_config_has_the_defaults() -> None:
    cfg = mconfig.load(str(REPO / "conf" / "monitor.yaml"))
    assert (cfg.tune_check_interval, cfg.reapply) == (300.0, False)
    assert (MonitorConfig().tune_check_interval, MonitorConfig().reapply) == (300.0, False)


@pytest.mark.parametrize("text, expected", [
    ("tune_check_interval: 60\nreapply: true\n", (60.0, True)),
    ("tune_check_interval: 0\n", (0.0, False)),
])
def test_tune_keys_load(tmp_path: Path, text: str, expected: Any) -> None:
    path = tmp_path / "monitor.yaml"
    path.write_text(text)
    cfg = mconfig.load(str(path))
    assert (cfg.tune_check_interval, cfg.reapply) == expected


@pytest.mark.parametrize("text, message", [
    ("tune_check_interval: soon\n", "tune_check_interval: expected a number"),
    ("tune_check_interval: -5\n", "tune_check_interval must be 0 (off) or between 1 and 86400 seconds"),
    ("tune_check_interval: 0.5\n", "tune_check_interval must be 0 (off) or between 1 and 86400 seconds"),
    ("tune_check_interval: true\n", "tune_check_interval: expected a number"),
    ("reapply: yes please\n", "reapply: expected true or false"),
    ("reapply: 1\n", "reapply: expected true or false"),
    ("reapply: true\ntune_check_interval: 0\n", "reapply: true needs tune checks"),
    ("reaply: true\n", "unknown key 'reaply'"),
])
def test_bad_tune_keys_are_one_line_and_exit_2(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "monitor.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as exc:
        mconfig.load(str(path))
    assert str(exc.value).startswith(f"{path}: ") and message in str(exc.value) and "\n" not in str(exc.value)
    res = run_cli(["monitor", "--config", str(path), "--once"])
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


# ---- the .path unit ---------------------------------------------------------------------------------------------
def test_path_unit_watches_the_monitors_request_file() -> None:
    settings = [line for line in PATH_UNIT.read_text().splitlines() if line and not line.startswith("#")]
    assert f"PathChanged={daemon.RUNTIME_DIR}/{daemon.REAPPLY_NAME}" in settings
    # its own oneshot: hosttune-tune.service stays active after boot (RemainAfterExit=), so starting it does nothing
    assert "Unit=hosttune-tune-reapply.service" in settings
    service = [line for line in TUNE_SERVICE.read_text().splitlines() if line and not line.startswith("#")]
    assert "Type=oneshot" in service and not any(line.startswith("RemainAfterExit=") for line in service)
    # the monitor's RuntimeDirectory= is where the request is written, and the monitor gains nothing for it
    unit = (REPO / "systemd" / "hosttune-monitor.service").read_text()
    assert f"RuntimeDirectory={os.path.basename(daemon.RUNTIME_DIR)}\n" in unit
    assert "DynamicUser=yes\n" in unit and "CapabilityBoundingSet=\n" in unit


def test_no_unit_names_roots_runtime_directory() -> None:
    """Issue 22 item 5: RuntimeDirectory=hosttune was root's /run/hosttune (handoffs, exec cache); systemd chowned it
    to the monitor's dynamic user at start and deleted it at stop. No unit may name it, in a setting or a comment."""
    from hosttune.policy import dirs

    units = sorted((REPO / "systemd").iterdir())
    assert units
    root_runtime = re.compile(re.escape(dirs.RUNTIME) + r"(?![-\w.])")
    for unit in units:
        text = unit.read_text()
        assert not root_runtime.search(text), unit.name
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("RuntimeDirectory", "StateDirectory", "CacheDirectory"):
                assert os.path.basename(dirs.RUNTIME) not in value.split(), (unit.name, line)
    assert daemon.RUNTIME_DIR != dirs.RUNTIME and not daemon.RUNTIME_DIR.startswith(dirs.RUNTIME + "/")


@pytest.mark.parametrize("given, expected", [
    ({}, daemon.RUNTIME_DIR),
    ({"RUNTIME_DIRECTORY": "/run/hosttune-monitor"}, "/run/hosttune-monitor"),
    ({"RUNTIME_DIRECTORY": "/run/a:/run/b"}, "/run/a"),
    ({"RUNTIME_DIRECTORY": "relative/dir"}, daemon.RUNTIME_DIR),
    ({"RUNTIME_DIRECTORY": "/run/hosttune"}, daemon.RUNTIME_DIR),  # root's: never the monitor's, whoever set it
    ({"RUNTIME_DIRECTORY": "/run/hosttune/"}, daemon.RUNTIME_DIR),
])
def test_the_monitors_runtime_dir_comes_from_systemd_and_is_never_roots(
        given: Dict[str, str], expected: str) -> None:
    assert daemon.runtime_dir(given) == expected
    assert daemon.runtime_dir({}) != "/run/hosttune"
    cfg = MonitorConfig(log_dir="/nonexistent", textfile_dir="")
    assert daemon.Monitor(cfg, io.StringIO(), io.StringIO(), environ=given).reapply_path == \
        os.path.join(expected, daemon.REAPPLY_NAME)


def test_path_unit_and_tune_service_verify_clean(tmp_path: Path) -> None:
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    if not TUNE_SERVICE.exists():
        pytest.skip("systemd/hosttune-tune-reapply.service is not in the tree; the .path unit names it in Unit=")
    exe = shutil.which("hosttune") or str(Path(sys.executable).parent / "hosttune")
    assert os.path.exists(exe)
    for unit in (PATH_UNIT, TUNE_SERVICE):
        (tmp_path / unit.name).write_text(unit.read_text().replace("/usr/bin/hosttune ", f"{exe} "))
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(tmp_path / PATH_UNIT.name),
                          str(tmp_path / TUNE_SERVICE.name)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stdout + res.stderr


def test_the_real_tune_verify_on_a_tree_drives_the_monitors_drift_events(tmp_path: Path) -> None:
    """No stand-in: `hosttune tune apply --root` on a captured two-node host, then the monitor with the real
    `hosttune.tune.verify` sees swappiness drift under it once, and its return once."""
    from test_tune import host_tree as tune_host_tree

    import hosttune.tune as tune

    root = tune_host_tree(tmp_path / "host")
    tune.apply(root)
    run = Run(tmp_path, root)
    knob = root / "proc/sys/vm/swappiness"
    want = knob.read_text()
    records = []
    for value in (want, "60\n", "60\n", want):
        knob.write_text(value)
        records.append(run.check())
    events = [(ev["kind"], ev["subject"], ev["state"]) for rec in records for ev in rec.get("events", [])]
    assert events == [("tune_drift", "swappiness", "start"), ("tune_drift", "swappiness", "clear")], events
    assert run.drift_gauges()["swappiness"] == 0.0


def test_on_the_live_host_the_saved_state_is_looked_for_where_tune_keeps_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tune apply` saves its state in dirs.state_dir() ($HOSTTUNE_STATE_DIR, this test's own directory): the
    monitor looks for it there on the live host, not in a fixed /var/lib/hosttune."""
    import hosttune.tune.model  # noqa: F401 - the real one: only verify is stood in for
    from hosttune.policy import dirs

    calls: List[Path] = []

    def verify(root: Path = Path("/"), profile: Any = None) -> List[Status]:
        calls.append(root)
        return [Status("swappiness", "vm.swappiness", "10", "60", "drift")]

    monkeypatch.setitem(sys.modules, "hosttune.tune", types.SimpleNamespace(verify=verify))
    cfg = MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="")
    mon = daemon.Monitor(cfg, io.StringIO(), io.StringIO(), environ={}, root=Path("/"))
    mon.check_tune({})
    assert calls == [] and mon.tune_drift == {}  # nothing saved: not tuned, not drifting
    state = Path(dirs.state_dir()) / "tune-state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text("{}\n")
    mon.check_tune({})
    assert calls == [Path("/")] and mon.tune_drift == {"swappiness": True}
