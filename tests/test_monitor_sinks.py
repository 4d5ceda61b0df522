"""The monitor's log and textfile sinks (hosttune/monitor/sinks.py, issue 11 item 10): a directory another user
owns or can write is refused in one line, links planted where the monitor writes are never followed, rotation
only renames, and only hosttune's own directories get a chown/chmod fix.

The other-user tests run as root and play `nobody` (conftest's `other_user`); the files they aim at are root's
and must come out byte for byte unchanged."""

import os
from pathlib import Path
from typing import Any, Dict, List

import pytest
from _monitorhelp import _monitor, _one_error_line, _snapshot, _targets
from conftest import OtherUser

from hosttune.errors import UserError
from hosttune.monitor import sinks
from hosttune.monitor.sinks import render_textfile


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


RECORDED = Path(__file__).resolve().parent / "recorded" / "textfile"


def full_sample() -> Dict[str, Any]:
    gpu0: Dict[str, Any] = {
        "index": 0, "uuid": "GPU-a\"b", "temperature_c": 71, "memory_used_mb": 1024, "memory_total_mb": 81920,
        "utilization_gpu_pct": 55, "utilization_memory_pct": 12.5, "power_w": 301.25, "power_limit_w": 700,
        "ecc_uncorrected_volatile": 0, "retired_pages_pending": False, "remapped_rows_correctable": 2,
        "remapped_rows_uncorrectable": 0, "remapped_rows_pending": False, "remapped_rows_failure": False,
        "pcie_gen": 5, "pcie_width": 16, "memory_temperature_c": 80, "energy_j": 123456.5, "pcie_replay_errors": 3,
        "xid_errors": 1, "last_xid": 79, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
        "clock_event_reasons": 0x20 | 0x4, "throttle_seconds": {"power": 1.5, "thermal\n": 0.0},
        "nvlink_up": [True, False], "nvlink_errors": {"replay": [0, 4], "crc_flit": [1, 0]},
    }
    return {
        "ts": 1700000000.25, "nvml": "ok",
        "driver": {"driver_version": "550.54.15", "cuda_driver_version": "12.4"},
        "gpus": [gpu0, {"index": 1, "lost": True, "temperature_c": 99}],
        "host": {
            "cpu_temps_c": {"k10temp-0": 55.5, "coretemp-1": 48}, "cpu_util_pct": 37.5,
            "load1": 1.5, "load5": 0.75, "load15": 0.25,
            "mem_total_bytes": 16 << 30, "mem_available_bytes": 8 << 30, "mem_used_bytes": 8 << 30,
            "swap_total_bytes": 0, "swap_used_bytes": 0, "shm_total_bytes": 8 << 30, "shm_used_bytes": 1 << 20,
            "disks": {"/data": {"total_bytes": 1 << 40, "used_bytes": 1 << 39}, "/": {"total_bytes": 100,
                                                                                     "used_bytes": 50}},
        },
    }


def test_a_full_sample_gives_the_recorded_textfile() -> None:
    stats = {"samples": 42, "write_errors": {"textfile": 1, "jsonl": 2}, "sample_seconds": 0.031}
    info = [{"index": 0, "uuid": "GPU-a\"b", "name": "H200", "pci_bus_id": "0000:3b:00.0", "temp_slowdown_c": 87},
            {"index": 1, "uuid": None, "name": None, "pci_bus_id": None}]
    got = render_textfile(full_sample(), stats, info, tune_drift={"thp": True, "swappiness": False})
    assert got == (RECORDED / "full.prom").read_text(encoding="utf-8")


def test_an_empty_sample_gives_only_the_monitors_own_metrics() -> None:
    assert render_textfile({"ts": 5}, {}) == "\n".join([
        "# HELP hosttune_monitor_up 1 while the monitor runs; 0 in the file it leaves when it stops.",
        "# TYPE hosttune_monitor_up gauge",
        "hosttune_monitor_up 1",
        "# HELP hosttune_monitor_last_success_timestamp_seconds Unix time of the last sample the monitor completed.",
        "# TYPE hosttune_monitor_last_success_timestamp_seconds gauge",
        "hosttune_monitor_last_success_timestamp_seconds 5",
        "# HELP hosttune_monitor_samples_total Samples taken since the monitor started.",
        "# TYPE hosttune_monitor_samples_total counter",
        "hosttune_monitor_samples_total 0",
        "# HELP hosttune_monitor_nvml_up 1 when NVML is initialised.",
        "# TYPE hosttune_monitor_nvml_up gauge",
        "hosttune_monitor_nvml_up 0",
    ]) + "\n"
