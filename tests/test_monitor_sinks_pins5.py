"""Pins for hosttune/monitor/sinks.py (issue 21, round 5): which files are the log and in what order, the log's
modes, rotation at exactly max_bytes, backups: 0, a log emptied by copytruncate or closed under the sink, which
directories count as hosttune's own, the exact exposition of numbers, labels, a lost GPU and each scaled metric,
and a directory at the textfile's name set aside."""

import json
import os
import stat
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hosttune.monitor import sinks
from hosttune.policy import dirs

REC = {"v": "x" * 20}
SIZE = len(json.dumps(REC, separators=(",", ":"))) + 1


def touch(d: Path, *names: str) -> None:
    for n in names:
        (d / n).write_text("")


def test_jsonl_files_oldest_first_and_only_numbered_backups(tmp_path: Path) -> None:
    touch(tmp_path, "monitor.jsonl", "monitor.jsonl.1", "monitor.jsonl.2", "monitor.jsonl.10", "monitor.jsonl.x",
          "monitor.jsonl.1.gz", "monitor.jsonl.", "other.jsonl.3", "monitor.jsonl3")
    order = ("monitor.jsonl.10", "monitor.jsonl.2", "monitor.jsonl.1", "monitor.jsonl")
    assert sinks.jsonl_files(str(tmp_path)) == [str(tmp_path / n) for n in order]
    (tmp_path / "monitor.jsonl").unlink()
    assert sinks.jsonl_files(str(tmp_path)) == [str(tmp_path / n) for n in
                                                ("monitor.jsonl.10", "monitor.jsonl.2", "monitor.jsonl.1")]
    assert sinks.jsonl_files(str(tmp_path / "missing")) == []
    only = tmp_path / "only"
    only.mkdir()
    touch(only, "monitor.jsonl")
    assert sinks.jsonl_files(str(only)) == [str(only / "monitor.jsonl")]


def test_hosttunes_own_directories_and_nothing_beside_them() -> None:
    assert sinks.own_dirs() == (dirs.log_dir(), dirs.state_dir(), sinks.RUNTIME_DIR)
    log = os.path.normpath(dirs.log_dir())
    assert sinks._is_own(log) and sinks._is_own(log + "/sub/x") and sinks._is_own(sinks.RUNTIME_DIR)
    assert not sinks._is_own(log + "x") and not sinks._is_own(os.path.dirname(log))
    assert not sinks._is_own("/run/hosttune-monitorx")


def test_a_directory_others_can_write_is_refused_in_one_line_naming_the_option(tmp_path: Path) -> None:
    d = tmp_path / "ww"
    d.mkdir()
    os.chmod(d, 0o775)
    with pytest.raises(sinks.UntrustedDir) as e:
        sinks.trusted_dir(str(d), "log dir", "--log-dir")
    msg = str(e.value)
    assert msg.startswith(f"refusing log dir {d}: ") and "\n" not in msg
    assert msg.endswith(f"fix: use another log dir (--log-dir) that only root or the monitor's user can write; "
                        f"hosttune never changes the owner or mode of {d}, which it did not create")
    with pytest.raises(sinks.UntrustedDir) as e:
        sinks.trusted_dir(str(d), "textfile dir")
    assert "fix: use another textfile dir that only root" in str(e.value)
    link = tmp_path / "link"
    link.symlink_to(d)
    with pytest.raises(sinks.UntrustedDir) as e:
        sinks.trusted_dir(str(link), "log dir")
    assert str(e.value).startswith(f"refusing log dir {link} (-> {d}): ")
    os.chmod(d, 0o755)
    assert sinks.trusted_dir(str(d), "log dir") is None


def test_the_log_is_0640_in_a_0755_directory_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        sinks.JsonlSink(str(tmp_path / "a" / "log"), 1000, 1).close()
        (tmp_path / "a" / "log" / "monitor.jsonl").unlink()
        os.umask(0o022)
        sink = sinks.JsonlSink(str(tmp_path / "a" / "log"), 1000, 1)
    finally:
        os.umask(old)
    sink.write(REC)
    sink.close()
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "log").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "log" / "monitor.jsonl").st_mode) == 0o640
    assert (tmp_path / "a" / "log" / "monitor.jsonl").read_text() == '{"v":"' + "x" * 20 + '"}\n'


def test_a_record_that_just_fits_stays_one_more_rotates(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), 2 * SIZE, 3)
    sink.write(REC)
    sink.write(REC)  # exactly max_bytes
    assert sink.size == 2 * SIZE and not (log / "monitor.jsonl.1").exists()
    sink.write(REC)
    sink.close()
    assert (log / "monitor.jsonl.1").stat().st_size == 2 * SIZE and (log / "monitor.jsonl").stat().st_size == SIZE


def test_a_record_larger_than_max_bytes_goes_into_an_empty_log(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), SIZE - 1, 2)
    sink.write(REC)
    assert not (log / "monitor.jsonl.1").exists() and sink.size == SIZE
    sink.write(REC)
    sink.close()
    assert (log / "monitor.jsonl.1").stat().st_size == SIZE and (log / "monitor.jsonl").stat().st_size == SIZE


def test_no_backups_means_the_full_log_is_dropped(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), SIZE, 0)
    sink.write({"i": 1, "v": "x" * 13})
    sink.write({"i": 2, "v": "x" * 13})
    sink.close()
    assert os.listdir(log) == ["monitor.jsonl"]
    assert json.loads((log / "monitor.jsonl").read_text())["i"] == 2


def test_backups_beyond_the_count_are_overwritten(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), SIZE, 2)
    for i in range(5):
        sink.write({"i": i, "v": "x" * 13})
    sink.close()
    assert sorted(os.listdir(log)) == ["monitor.jsonl", "monitor.jsonl.1", "monitor.jsonl.2"]
    got = [json.loads((log / n).read_text())["i"] for n in ("monitor.jsonl.2", "monitor.jsonl.1", "monitor.jsonl")]
    assert got == [2, 3, 4]


def test_a_log_emptied_under_the_sink_is_not_rotated_nor_padded(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), 2 * SIZE, 2)
    sink.write(REC)
    sink.write(REC)
    os.truncate(log / "monitor.jsonl", 0)  # logrotate's copytruncate
    sink.write(REC)
    sink.close()
    assert not (log / "monitor.jsonl.1").exists()
    assert (log / "monitor.jsonl").read_bytes() == (json.dumps(REC, separators=(",", ":")) + "\n").encode()


def test_an_existing_log_counts_toward_max_bytes(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir(mode=0o755)
    (log / "monitor.jsonl").write_text("y" * (SIZE - 1) + "\n")
    sink = sinks.JsonlSink(str(log), 2 * SIZE - 1, 1)
    assert sink.size == SIZE
    sink.write(REC)
    sink.close()
    assert (log / "monitor.jsonl.1").read_text() == "y" * (SIZE - 1) + "\n"


def test_close_is_idempotent_and_a_write_after_it_reopens(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), 1000, 1)
    fd = sink.fd
    assert fd is not None
    sink.close()
    assert sink.fd is None
    with pytest.raises(OSError):  # the descriptor itself is closed, not just forgotten
        os.fstat(fd)
    sink.close()
    sink.write(REC)
    assert sink.fd is not None and sink.size == SIZE
    os.replace(log / "monitor.jsonl", log / "moved")  # logrotate's move, then SIGHUP
    sink.reopen()
    sink.write(REC)
    sink.close()
    assert (log / "moved").stat().st_size == SIZE and (log / "monitor.jsonl").stat().st_size == SIZE


def test_a_deleted_log_is_replaced_at_the_next_write(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), 1000, 1)
    sink.write(REC)
    (log / "monitor.jsonl").unlink()
    sink.write({"after": 1})
    sink.close()
    assert (log / "monitor.jsonl").read_text() == '{"after":1}\n'


def test_a_failed_write_is_cut_back_and_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), 1000, 1)
    sink.write(REC)
    real = os.write

    def boom(fd: int, data: bytes) -> int:
        real(fd, data[:3])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sinks.os, "write", boom)
    with pytest.raises(OSError):
        sink.write(REC)
    monkeypatch.setattr(sinks.os, "write", lambda fd, data: real(fd, data[:5]))
    with pytest.raises(OSError, match=r"short write \(5 of "):
        sink.write(REC)
    assert sink.size == SIZE
    monkeypatch.setattr(sinks.os, "write", real)
    sink.write(REC)
    sink.close()
    assert (log / "monitor.jsonl").stat().st_size == 2 * SIZE


@pytest.mark.parametrize("value, text", [
    (True, "1"), (False, "0"), (0, "0"), (7, "7"), (2.5, "2.5"), (1e21, "1e+21"), (float("nan"), "NaN"),
    (float("inf"), "+Inf"), (float("-inf"), "-Inf"), ("3", "3.0"), (-0.5, "-0.5"),
])
def test_num(value: Any, text: str) -> None:
    assert sinks._num(value) == text


def test_exposition_skips_none_and_renders_labels() -> None:
    ex = sinks._Exposition()
    ex.add("a", "gauge", "A.", {}, None)
    assert ex.families == {} and ex.text() == "\n"
    ex.add("a", "gauge", "A.", {}, 1)
    ex.add("a", "gauge", "ignored.", {"k": 'q"\\\n'}, 2)
    ex.add("a", "gauge", "A.", 'x="1"', 3)
    assert ex.text() == '# HELP a A.\n# TYPE a gauge\na 1\na{k="q\\"\\\\\\n"} 2\na{x="1"} 3\n'


def sample(**gpu: Any) -> Dict[str, Any]:
    return {"ts": 100.5, "gpus": [dict({"index": 0, "uuid": "GPU-a"}, **gpu)], "host": {}}


def rows(text: str, name: str) -> List[str]:
    return [ln for ln in text.splitlines() if ln.startswith(name + "{") or ln.startswith(name + " ")]


def test_gpu_metrics_are_in_base_units() -> None:
    t = sinks.render_textfile(sample(memory_used_mb=2, utilization_gpu_pct=50, power_w=300, sm_clock_mhz=1500,
                                     mem_clock_mhz=2, temperature_c=40, xid_errors=0), {})
    lab = 'gpu="0",uuid="GPU-a"'
    assert rows(t, "hosttune_gpu_memory_used_bytes") == [f"hosttune_gpu_memory_used_bytes{{{lab}}} 2097152"]
    assert rows(t, "hosttune_gpu_utilization_ratio") == [f"hosttune_gpu_utilization_ratio{{{lab}}} 0.5"]
    assert rows(t, "hosttune_gpu_power_watts") == [f"hosttune_gpu_power_watts{{{lab}}} 300"]
    assert rows(t, "hosttune_gpu_temperature_celsius") == [f"hosttune_gpu_temperature_celsius{{{lab}}} 40"]
    assert rows(t, "hosttune_gpu_xid_errors_total") == [f"hosttune_gpu_xid_errors_total{{{lab}}} 0"]
    assert rows(t, "hosttune_gpu_clock_hertz") == [f'hosttune_gpu_clock_hertz{{{lab},clock="sm"}} 1500000000',
                                                   f'hosttune_gpu_clock_hertz{{{lab},clock="memory"}} 2000000']
    assert rows(t, "hosttune_gpu_up") == [f"hosttune_gpu_up{{{lab}}} 1"]
    assert "# TYPE hosttune_gpu_xid_errors_total counter" in t and "hosttune_gpu_power_limit_watts" not in t


def test_clock_reasons_one_row_per_known_bit() -> None:
    t = sinks.render_textfile(sample(clock_event_reasons=0x1 | 0x40), {})
    got = rows(t, "hosttune_gpu_clock_event_reason")
    assert len(got) == 9
    assert 'hosttune_gpu_clock_event_reason{gpu="0",uuid="GPU-a",reason="gpu_idle"} 1' in got
    assert 'hosttune_gpu_clock_event_reason{gpu="0",uuid="GPU-a",reason="hw_thermal_slowdown"} 1' in got
    assert sum(r.endswith(" 1") for r in got) == 2


def test_a_lost_gpu_only_says_it_is_down() -> None:
    t = sinks.render_textfile(sample(lost=True, temperature_c=40, sm_clock_mhz=1), {})
    assert [ln for ln in t.splitlines() if "gpu=" in ln] == ['hosttune_gpu_up{gpu="0",uuid="GPU-a"} 0']


def test_throttle_jobs_and_nvlink_rows() -> None:
    t = sinks.render_textfile(sample(throttle_seconds={"power": 1.5}, nvlink_up=[True, False],
                                     nvlink_errors={"replay": [0, 3], "crc": [1]},
                                     jobs=[{"job": "42", "kind": "slurm"}]), {})
    lab = 'gpu="0",uuid="GPU-a"'
    assert rows(t, "hosttune_gpu_throttle_seconds_total") == [
        f'hosttune_gpu_throttle_seconds_total{{{lab},reason="power"}} 1.5']
    assert rows(t, "hosttune_gpu_nvlink_up") == [f'hosttune_gpu_nvlink_up{{{lab},link="0"}} 1',
                                                 f'hosttune_gpu_nvlink_up{{{lab},link="1"}} 0']
    assert rows(t, "hosttune_gpu_nvlink_errors_total") == [
        f'hosttune_gpu_nvlink_errors_total{{{lab},link="0",type="crc"}} 1',
        f'hosttune_gpu_nvlink_errors_total{{{lab},link="0",type="replay"}} 0',
        f'hosttune_gpu_nvlink_errors_total{{{lab},link="1",type="replay"}} 3']
    assert rows(t, "hosttune_job_info") == [f'hosttune_job_info{{{lab},job="42",kind="slurm",user=""}} 1']


def test_monitor_and_host_rows() -> None:
    s = {"ts": 5, "nvml": "ok", "driver": {"driver_version": "550.1"}, "gpus": [],
         "host": {"cpu_temps_c": {"b": 50, "a": 40}, "cpu_util_pct": 25, "load1": 1.5, "load15": 3,
                  "mem_used_bytes": 10, "disks": {"/z": {"total_bytes": 9, "used_bytes": 1},
                                                  "/a": {"total_bytes": 8, "used_bytes": 2}}}}
    t = sinks.render_textfile(s, {"samples": 3, "write_errors": {"textfile": 2, "jsonl": 1}, "sample_seconds": 0.25},
                              tune_drift={"thp": True, "governor": False})
    assert rows(t, "hosttune_monitor_up") == ["hosttune_monitor_up 1"]
    assert rows(t, "hosttune_monitor_last_success_timestamp_seconds") == [
        "hosttune_monitor_last_success_timestamp_seconds 5"]
    assert rows(t, "hosttune_monitor_samples_total") == ["hosttune_monitor_samples_total 3"]
    assert rows(t, "hosttune_monitor_write_errors_total") == ['hosttune_monitor_write_errors_total{sink="jsonl"} 1',
                                                              'hosttune_monitor_write_errors_total{sink="textfile"} 2']
    assert rows(t, "hosttune_monitor_sample_duration_seconds") == ["hosttune_monitor_sample_duration_seconds 0.25"]
    assert rows(t, "hosttune_monitor_nvml_up") == ["hosttune_monitor_nvml_up 1"]
    assert rows(t, "hosttune_driver_info") == ['hosttune_driver_info{driver_version="550.1",cuda_driver_version=""} 1']
    assert rows(t, "hosttune_cpu_temperature_celsius") == ['hosttune_cpu_temperature_celsius{sensor="a"} 40',
                                                           'hosttune_cpu_temperature_celsius{sensor="b"} 50']
    assert rows(t, "hosttune_cpu_utilization_ratio") == ["hosttune_cpu_utilization_ratio 0.25"]
    assert rows(t, "hosttune_load1") == ["hosttune_load1 1.5"] and rows(t, "hosttune_load5") == []
    assert rows(t, "hosttune_load15") == ["hosttune_load15 3"]
    assert rows(t, "hosttune_memory_used_bytes") == ["hosttune_memory_used_bytes 10"]
    assert rows(t, "hosttune_tune_drift") == ['hosttune_tune_drift{tunable="governor"} 0',
                                              'hosttune_tune_drift{tunable="thp"} 1']
    assert rows(t, "hosttune_filesystem_size_bytes") == ['hosttune_filesystem_size_bytes{path="/a"} 8',
                                                         'hosttune_filesystem_size_bytes{path="/z"} 9']
    assert rows(t, "hosttune_filesystem_used_bytes") == ['hosttune_filesystem_used_bytes{path="/a"} 2',
                                                         'hosttune_filesystem_used_bytes{path="/z"} 1']
    bare = sinks.render_textfile({"ts": 5, "nvml": "failed"}, {})
    assert rows(bare, "hosttune_monitor_nvml_up") == ["hosttune_monitor_nvml_up 0"]
    assert rows(bare, "hosttune_monitor_samples_total") == ["hosttune_monitor_samples_total 0"]
    assert "hosttune_driver_info" not in bare and "hosttune_monitor_sample_duration_seconds" not in bare


def test_gpu_info_rows() -> None:
    t = sinks.render_textfile({"ts": 1}, {}, gpu_info=[
        {"index": 0, "uuid": "GPU-a", "name": "H100", "pci_bus_id": "0000:01:00.0", "temp_slowdown_c": 87},
        {"index": 1}])
    assert rows(t, "hosttune_gpu_info") == [
        'hosttune_gpu_info{gpu="0",uuid="GPU-a",name="H100",pci_bus_id="0000:01:00.0"} 1',
        'hosttune_gpu_info{gpu="1",uuid="",name="",pci_bus_id=""} 1']
    assert rows(t, "hosttune_gpu_slowdown_temperature_celsius") == [
        'hosttune_gpu_slowdown_temperature_celsius{gpu="0",uuid="GPU-a"} 87']


def test_render_stopped_exact() -> None:
    assert sinks.render_stopped(None, {}).splitlines()[2:3] == ["hosttune_monitor_up 0"]
    t = sinks.render_stopped(12.5, {"samples": 4})
    assert rows(t, "hosttune_monitor_last_success_timestamp_seconds") == [
        "hosttune_monitor_last_success_timestamp_seconds 12.5"]
    assert rows(t, "hosttune_monitor_samples_total") == ["hosttune_monitor_samples_total 4"]
    assert "hosttune_monitor_last_success" not in sinks.render_stopped(None, {})


def test_set_aside_moves_only_a_directory(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert sinks.set_aside(fd, str(tmp_path)) is None  # nothing there
        (tmp_path / "hosttune.prom").write_text("x")
        assert sinks.set_aside(fd, str(tmp_path)) is None and (tmp_path / "hosttune.prom").is_file()
        (tmp_path / "hosttune.prom").unlink()
        (tmp_path / "d").mkdir()
        (tmp_path / "hosttune.prom").symlink_to(tmp_path / "d")
        assert sinks.set_aside(fd, str(tmp_path)) is None and (tmp_path / "hosttune.prom").is_symlink()
        (tmp_path / "hosttune.prom").unlink()
        (tmp_path / "hosttune.prom").mkdir()
        (tmp_path / "hosttune.prom" / "keep").write_text("k")
        msg = sinks.set_aside(fd, str(tmp_path))
    finally:
        os.close(fd)
    aside = [n for n in os.listdir(tmp_path) if n.startswith("hosttune.prom.aside-")]
    assert len(aside) == 1 and len(aside[0]) == len("hosttune.prom.aside-") + 8
    assert (tmp_path / aside[0] / "keep").read_text() == "k" and not (tmp_path / "hosttune.prom").exists()
    assert msg == (f"a directory was at {tmp_path / 'hosttune.prom'}, where the textfile goes; renamed it to "
                   f"{aside[0]} (look inside, then remove it)")


def test_textfile_sink_sets_aside_warns_and_leaves_no_probe(tmp_path: Path) -> None:
    d = tmp_path / "tf"
    d.mkdir(mode=0o755)
    (d / "hosttune.prom").mkdir()
    sink = sinks.TextfileSink(str(d))
    assert len(sink.warnings) == 1 and sink.warnings[0].startswith(f"a directory was at {d / 'hosttune.prom'}")
    assert [n for n in os.listdir(d) if n.startswith(".")] == []
    sink.write("a 1\n")
    assert (d / "hosttune.prom").read_text() == "a 1\n"
    assert stat.S_IMODE(os.stat(d / "hosttune.prom").st_mode) == 0o644
    assert sinks.TextfileSink(str(d)).warnings == []
    sinks.TextfileSink(str(d))
    assert os.path.realpath(d) not in open_paths()  # the directory descriptor is closed again


def open_paths() -> List[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # closed since the listing (another thread's)
            pass
    return out


def test_disk_io_and_iowait_rows_reach_the_textfile() -> None:
    t = sinks.render_textfile({"ts": 1, "host": {"iowait_pct": 12.5}}, {})
    assert rows(t, "hosttune_cpu_iowait_ratio") == ["hosttune_cpu_iowait_ratio 0.125"]


def test_rotation_closes_the_old_log(tmp_path: Path) -> None:
    log = tmp_path / "log"
    sink = sinks.JsonlSink(str(log), SIZE, 2)
    sink.write(REC)
    sink.write(REC)  # rotates
    try:
        assert str(log / "monitor.jsonl.1") not in open_paths()
        assert str(log / "monitor.jsonl") in open_paths()
    finally:
        sink.close()


def test_untrusted_sink_directories_name_their_option(tmp_path: Path) -> None:
    d = tmp_path / "ww"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.raises(sinks.UntrustedDir) as e:
        sinks.JsonlSink(str(d), 1 << 20, 2)
    assert "fix: use another log dir (--log-dir, monitor.yaml log_dir) that only root" in str(e.value)
    with pytest.raises(sinks.UntrustedDir) as e:
        sinks.TextfileSink(str(d))
    assert "fix: use another textfile dir (--textfile-dir, monitor.yaml textfile_dir) that only root" in str(e.value)
