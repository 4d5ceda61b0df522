"""The monitor in a fleet: dcgm-level GPU health and XIDs through the fake NVML, the textfile where node_exporter
looks (scraped by a real prometheus-node-exporter), the shipped alert rules (promtool from Debian's prometheus
package) and the Grafana dashboard.

NVML only through tests/fakes/pynvml.py; a GPU that answers NOT_SUPPORTED must leave the metric out (never 0).
"""

import errno
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from _ranks import free_port
from conftest import REPO, a100, cli_runner
from prometheus_client.parser import text_string_to_metric_families
from test_monitor_daemon import Daemon, _env, rewrite, scenario, wait_for

from hosttune import nvml
from hosttune.cli import cli
from hosttune.monitor import daemon, sinks, textfile, xid
from hosttune.monitor.config import MonitorConfig
from hosttune.policy import dirs

CONTRIB = REPO / "contrib"
PROMTOOL_CACHE = REPO / "build" / "promtool"


def healthy(index: int, bus: str, **over: Any) -> Dict[str, Any]:
    """An H100-like GPU that reports every dcgm-level field."""
    dev = a100(index, bus, energy_mj=5_000_123, pcie_replay=2, memory_temperature_c=61,
               violations_ns={"power": 3_000_000_000, "thermal": 1_500_000_000, "sync_boost": 0, "board_limit": 0,
                              "low_utilization": 7_000_000_000, "reliability": 0, "total_app_clocks": 4_500_000_000,
                              "total_base_clocks": 0},
               nvlinks=[{"active": 1, "errors": {"replay": 1, "recovery": 0, "crc_flit": 4, "crc_data": 0}},
                        {"active": 0, "errors": {"replay": 0, "recovery": 2, "crc_flit": 0, "crc_data": 1}}])
    dev.update(over)
    return dev


def families(text: str) -> Dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


# ---- NVML: the new calls, through the fake --------------------------------------------------------------------
def test_health_fields_and_their_units(fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B")))
    with nvml.Nvml() as nv:
        assert nv.nvlink_count(0) == 2
        h = nv.health(0, 2)
    assert h["energy_j"] == 5000.123  # mJ -> J
    assert h["pcie_replay_errors"] == 2 and h["memory_temperature_c"] == 61
    assert h["throttle_seconds"]["power"] == 3.0 and h["throttle_seconds"]["thermal"] == 1.5  # ns -> s
    assert set(h["throttle_seconds"]) == set(nvml.PERF_POLICIES.values())
    assert h["nvlink_up"] == [1, 0]  # by link number
    # ECC_DATA is NOT_SUPPORTED on this part: left out
    assert h["nvlink_errors"] == {"replay": [1, 0], "recovery": [0, 2], "crc_flit": [4, 0], "crc_data": [0, 1]}


def test_older_gpu_leaves_every_new_field_out_and_is_not_asked_again(fake_nvml: Any) -> None:
    """A Pascal/PCIe card: NOT_SUPPORTED for energy, replays, violations, NVLink; the memory-temperature field comes
    back with its own NOT_SUPPORTED status. Absent, never 0, and each query asked once."""
    fake_nvml(scenario(a100(0, "3B")))
    import pynvml

    with nvml.Nvml() as nv:
        assert nv.nvlink_count(0) == 0
        first = nv.sample(0, health=True)
        calls = pynvml.fake_calls()
        second = nv.sample(0, health=True)
        again = pynvml.fake_calls()
    for key in ("energy_j", "pcie_replay_errors", "memory_temperature_c", "throttle_seconds", "nvlink_up",
                "nvlink_errors"):
        assert key not in first and key not in second, key
    for fn in ("nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetPcieReplayCounter",
               "nvmlDeviceGetViolationStatus"):
        assert calls[fn] == again[fn], fn  # NOT_SUPPORTED is remembered
    # the field-values call itself succeeded, so it is asked again (the GPU may start to report it)
    assert again["nvmlDeviceGetFieldValues"] == calls["nvmlDeviceGetFieldValues"] + 1
    text = sinks.render_textfile({"ts": 1.0, "nvml": "ok", "gpus": [dict(first, index=0, uuid="GPU-x")]}, {})
    for name in ("energy", "pcie_replay", "memory_temperature", "throttle_seconds", "nvlink", "xid"):
        assert f"hosttune_gpu_{name}" not in text, name


def test_health_is_opt_in_for_detect_and_doctor(fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B")))
    import pynvml

    with nvml.Nvml() as nv:
        assert "energy_j" not in nv.sample(0)
    assert "nvmlDeviceGetTotalEnergyConsumption" not in pynvml.fake_calls()


def test_fake_follows_nvml_errors_for_the_new_calls(fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B")))
    import pynvml

    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlDeviceGetViolationStatus(h, pynvml.NVML_PERF_POLICY_COUNT)
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlDeviceGetNvLinkState(h, pynvml.NVML_NVLINK_MAX_LINKS)
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlDeviceGetNvLinkState(h, 2)  # past this GPU's links
        with pytest.raises(pynvml.NVMLError_NotSupported):  # ECC_DATA: not on this part
            pynvml.nvmlDeviceGetNvLinkErrorCounter(h, 0, pynvml.NVML_NVLINK_ERROR_DL_ECC_DATA)
        fv = pynvml.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_MEMORY_TEMP, 9999])
        assert fv[0].nvmlReturn == pynvml.NVML_SUCCESS and fv[0].value.uiVal == 61
        assert fv[1].nvmlReturn == pynvml.NVML_ERROR_INVALID_ARGUMENT
        es = pynvml.nvmlEventSetCreate()
        pynvml.nvmlDeviceRegisterEvents(h, pynvml.nvmlEventTypeXidCriticalError, es)
        with pytest.raises(pynvml.NVMLError_Timeout):
            pynvml.nvmlEventSetWait_v2(es, 1)
        pynvml.nvmlEventSetFree(es)
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            pynvml.nvmlEventSetWait_v2(es, 1)  # freed
    finally:
        pynvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlEventSetCreate()


# ---- XIDs ------------------------------------------------------------------------------------------------------
def test_xid_events_from_nvml_only_after_registration_and_mapped_to_the_gpu(fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B", xids=[13]), healthy(1, "5E")))
    import pynvml

    with nvml.Nvml() as nv:
        watch = nv.xid_events([0, 1])
        assert watch.gpus == [0, 1]
        assert watch.poll(1) == []  # Xid 13 happened before the monitor: history, not an event
        pynvml._state["scenario"]["devices"][1]["xids"] = [79]
        pynvml._state["scenario"]["devices"][0]["xids"] = [13, 48, 48]
        assert watch.poll(1) == [(0, 48), (0, 48), (1, 79)]
        assert watch.poll(1, limit=5) == []
        watch.close()


def test_an_xid_of_a_gpu_that_fell_off_the_bus_is_still_its_gpus(fake_nvml: Any) -> None:
    """XID 79: the GPU answers no query (its UUID neither), and the event still names it, by the handle registered
    for it (an event of a GPU never registered stays -1)."""
    fake_nvml(scenario(healthy(0, "3B"), healthy(1, "5E")))
    import pynvml

    with nvml.Nvml() as nv:
        watch = nv.xid_events([0, 1])
        assert [i for _, i in watch.handles] == [0, 1]
        pynvml._state["scenario"]["devices"][1].update(xids=[79], lost=True)
        assert watch.poll(1) == [(1, 79)]
        watch.handles = watch.handles[:1]
        pynvml._state["scenario"]["devices"][1]["xids"] = [79, 79]
        assert watch.poll(1) == [(-1, 79)]
        watch.close()


def test_one_gpus_handles_are_the_same_device_by_address_not_by_object() -> None:
    """pynvml's handles are ctypes pointers: two lookups of one GPU give two objects holding one address."""
    import ctypes

    class Device(ctypes.Structure):
        _fields_ = [("unused", ctypes.c_int)]

    gpu0, gpu1 = Device(), Device()
    a, b = ctypes.pointer(gpu0), ctypes.cast(ctypes.addressof(gpu0), ctypes.POINTER(Device))
    assert a is not b and nvml._same_device(a, b)
    assert not nvml._same_device(a, ctypes.pointer(gpu1))
    assert nvml._same_device("x", "x") and not nvml._same_device("x", ctypes.pointer(gpu1))


def test_xid_events_not_supported_registers_nothing(fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B", event_types=0x4), healthy(1, "5E")))
    with nvml.Nvml() as nv:
        watch = nv.xid_events([0, 1])
        assert watch.gpus == [1] and "GPU 0" in watch.why


def test_every_listed_xid_has_meaning_level_and_action() -> None:
    for code in (13, 31, 43, 45, 48, 63, 64, 74, 79, 92, 94, 95):
        level, text = xid.describe(code)
        assert level in ("critical", "error", "warning", "notice") and text.startswith(f"Xid {code}: ")
        assert "; action: " in text
    assert xid.describe(79)[0] == "critical" and "fallen off the bus" in xid.describe(79)[1]
    assert xid.describe(43)[0] == "notice"
    assert xid.describe(999) == ("warning", "Xid 999: GPU error (not in hosttune's XID table); action: see NVIDIA's "
                                            "XID catalogue")


def test_kmsg_lines_parse() -> None:
    assert xid.parse_kmsg_record("4,1534,123456789,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, "
                                 "GPU has fallen off the bus.") == ("0000:3b:00", 79)
    assert xid.parse_xid_message("NVRM: Xid (0000:AF:00): 13, Graphics Exception") == ("0000:af:00", 13)
    assert xid.parse_xid_message("NVRM: Xid (PCI:00000000:3b:00): 48, DBE") == ("0000:3b:00", 48)
    assert xid.parse_xid_message("NVRM: GPU at PCI:0000:3b:00: GPU-1234") is None


XID_TEXT = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."


@pytest.mark.parametrize("record, expected", [
    # the kernel's own records (facility 0, PRI = level 0..7), as /dev/kmsg gives them
    (f"4,1534,123456789,-;{XID_TEXT}", ("0000:3b:00", 79)),
    (f"0,1,2,c;{XID_TEXT}", ("0000:3b:00", 79)),  # KERN_EMERG, a continuation flag
    (f"3,99,5,-,caller=T412;{XID_TEXT}", ("0000:3b:00", 79)),  # CONFIG_PRINTK_CALLER adds a field
    # what a process writes to /dev/kmsg: the kernel stores it as LOG_USER (8 + level) or its own facility
    (f"12,1535,123456790,-;{XID_TEXT}", None),  # "<4>..." from user space: user.warning
    (f"14,1536,123456791,-;{XID_TEXT}", None),  # user.info (systemd's messages, `echo > /dev/kmsg`)
    (f"30,1537,123456792,-;{XID_TEXT}", None),  # daemon.info
    (f"190,1538,1,-;{XID_TEXT}", None),  # local7.info
    # the words inside another message, or a record without the kmsg header
    (f"4,1539,1,-;python[77]: last error was {XID_TEXT}", None),
    (f"4,1540,1,-; {XID_TEXT}", None),
    (XID_TEXT, None),
    (f"x,1,1,-;{XID_TEXT}", None),
])
def test_kmsg_records_only_the_kernels_xid_lines(record: str, expected: Any) -> None:
    """Issue 22 (low): the fallback counted any record, from any facility, with the pattern anywhere in it."""
    assert xid.parse_kmsg_record(record) == expected


def test_kmsg_reader_skips_user_records_in_a_stream(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    watch = xid.KmsgXids(str(kmsg))
    try:
        with kmsg.open("a") as f:
            f.write(f"12,1,1,-;{XID_TEXT}\n 4,2,2,-;fake dictionary line\n")
            f.write(f"6,3,3,-;systemd[1]: {XID_TEXT}\n4,4,4,-;NVRM: Xid (PCI:0000:5e:00): 48, DBE\n SUBSYSTEM=pci\n")
        assert watch.poll() == [("0000:5e:00", 48)]
    finally:
        watch.close()


def test_a_record_written_to_the_real_dev_kmsg_is_not_an_xid() -> None:
    """The real kernel: a process writes the driver's words to /dev/kmsg (here root, with a bus id no GPU has);
    the kernel files it under LOG_USER, and the reader that watches /dev/kmsg does not count it."""
    if os.geteuid() != 0 or not os.access("/dev/kmsg", os.R_OK | os.W_OK):
        pytest.skip("needs a readable and writable /dev/kmsg (root)")
    marker = f"hosttune-test-{os.getpid()}-{os.urandom(4).hex()}"
    text = f"NVRM: Xid (PCI:0000:ff:1f): 79, {marker}: a test record from user space, not a GPU error"
    try:
        watch = xid.KmsgXids("/dev/kmsg")
    except OSError as exc:
        pytest.skip(f"/dev/kmsg: {exc}")
    raw = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.lseek(raw, 0, os.SEEK_END)
        with open("/dev/kmsg", "w") as w:
            w.write(f"<4>{text}\n")
        mine = []
        while True:  # every record since the write: the kernel has stored ours before write(2) returned
            try:
                rec = os.read(raw, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # records overwritten meanwhile: read on
                    continue
                raise
            if marker in rec:
                mine.append(rec.split("\n", 1)[0])
        if not mine:
            pytest.skip("the kernel dropped the test's record (printk_devkmsg rate limit)")
        assert int(mine[0].split(",", 1)[0]) == 8 + 4, mine  # LOG_USER | LOG_WARNING: what user space gets
        assert xid.parse_kmsg_record(mine[0]) is None
        assert xid.parse_xid_message(mine[0].split(";", 1)[1]) == ("0000:ff:1f", 79)  # the text itself matches
        assert watch.poll() == []
    finally:
        os.close(raw)
        watch.close()


def test_daemon_counts_nvml_xids_logs_their_meaning_and_exports_them(
        tmp_path: Path, fake_nvml: Any) -> None:
    env = _env(fake_nvml(scenario(healthy(0, "3B"), healthy(1, "5E"))))
    d = Daemon(tmp_path, env)
    try:
        d.wait_lines(2)
        rewrite(env, scenario(healthy(0, "3B"), healthy(1, "5E", xids=[48, 79])))
        wait_for(lambda: any((g.get("xid_errors") or 0) >= 2 for r in d.lines() for g in r["gpus"]), 15, "xids", d)
        # the textfile is written after the JSONL line: wait for it too
        prom = wait_for(lambda: (lambda t: t if "hosttune_gpu_last_xid{" in t else None)(
            (d.tf / "hosttune.prom").read_text()), 15, "xids in the textfile", d)
        assert d.stop() == 0
    finally:
        d.kill()
    lines = d.lines()
    events = [ev for r in lines for ev in r.get("events", []) if ev["kind"] == "gpu_xid"]
    assert [(e["subject"], e["value"], e["level"]) for e in events] == [("gpu1", 48.0, "critical"),
                                                                       ("gpu1", 79.0, "critical")]
    assert "GPU 1 (GPU-00000001-1111-2222-3333-444444444444): Xid 79: GPU has fallen off the bus" in d.out
    assert d.out.count("Xid ") == 2
    last = lines[-1]["gpus"]
    assert last[0]["xid_errors"] == 0 and "last_xid" not in last[0] and last[0]["xid_source"] == "nvml"
    assert last[1]["xid_errors"] == 2 and last[1]["last_xid"] == 79
    fams = families(prom)
    xids = {s.labels["gpu"]: s.value for s in fams["hosttune_gpu_xid_errors"].samples if s.name.endswith("_total")}
    assert xids == {"0": 0, "1": 2}
    assert [(s.labels["gpu"], s.value) for s in fams["hosttune_gpu_last_xid"].samples] == [("1", 79)]


def test_kmsg_fallback_when_nvml_has_no_xid_events(tmp_path: Path, fake_nvml: Any) -> None:
    """GPU 0 cannot deliver XID events: its XIDs come from the kernel log (a growing file stands in for
    /dev/kmsg); GPU 1's come from NVML, and a kernel line about GPU 1 is not counted twice."""
    fake_nvml(scenario(healthy(0, "3B", event_types=0), healthy(1, "5E")))
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,1,-;NVRM: Xid (PCI:0000:3b:00): 31, old news before the monitor started\n")
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), io.StringIO(),
                         kmsg=str(kmsg))
    mon.open_sources()
    try:
        assert mon.xid_source == {0: "kmsg", 1: "nvml"}
        with kmsg.open("a") as f:
            f.write("4,2,2,-;NVRM: Xid (PCI:0000:3b:00): 94, pid=77, Contained ECC error\n")
            f.write(" SUBSYSTEM=pci\n4,3,3,-;NVRM: Xid (PCI:0000:5e:00): 79, pid=1, fallen off the bus\n")
            f.write("4,4,4,-;NVRM: Xid (PCI:0000:3b:00): 1")  # half a line: the rest comes later
        rec = mon.take()
        with kmsg.open("a") as f:
            f.write("3, pid=5, Graphics Exception\n")
        rec2 = mon.take()
    finally:
        mon.close()
    assert [(e["subject"], e["value"]) for e in rec["events"]] == [("gpu0", 94.0)]
    assert [(e["subject"], e["value"], e["level"]) for e in rec2["events"]] == [("gpu0", 13.0, "warning")]
    assert rec2["gpus"][0]["xid_errors"] == 2 and rec2["gpus"][0]["xid_source"] == "kmsg"


def test_no_xid_source_is_said_once_and_exports_no_xid_metric(tmp_path: Path, fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B", event_types=0)))
    err = io.StringIO()
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), err,
                         kmsg=str(tmp_path / "no-kmsg"))
    mon.open_sources()
    try:
        rec = mon.take()
        mon.take()
    finally:
        mon.close()
    assert err.getvalue().count("XID errors not watched on GPU 0") == 1, err.getvalue()
    assert "xid_errors" not in rec["gpus"][0]
    assert "hosttune_gpu_xid" not in sinks.render_textfile(rec, {}, mon.gpus)


# ---- the textfile ----------------------------------------------------------------------------------------------
def test_textfile_has_every_new_metric_with_nvml_values(tmp_path: Path, fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B")))
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), io.StringIO(),
                         kmsg=str(tmp_path / "none"))
    mon.open_sources()
    try:
        rec = mon.take()
    finally:
        mon.close()
    text = sinks.render_textfile(rec, {"samples": 1}, mon.gpus)
    fams = families(text)
    one = {"gpu": "0", "uuid": "GPU-00000000-1111-2222-3333-444444444444"}

    def value(name: str, **labels: str) -> float:
        want = dict(one, **labels)
        found = [s.value for f in fams.values() for s in f.samples if s.name == name and s.labels == want]
        assert len(found) == 1, (name, labels, found)
        return float(found[0])

    assert value("hosttune_gpu_energy_joules_total") == 5000.123
    assert value("hosttune_gpu_pcie_replay_errors_total") == 2
    assert value("hosttune_gpu_memory_temperature_celsius") == 61
    assert value("hosttune_gpu_throttle_seconds_total", reason="thermal") == 1.5
    assert value("hosttune_gpu_throttle_seconds_total", reason="low_utilization") == 7.0
    assert value("hosttune_gpu_nvlink_up", link="0") == 1 and value("hosttune_gpu_nvlink_up", link="1") == 0
    assert value("hosttune_gpu_nvlink_errors_total", link="1", type="recovery") == 2
    assert value("hosttune_gpu_xid_errors_total") == 0
    assert fams["hosttune_monitor_up"].samples[0].value == 1
    info = fams["hosttune_driver_info"].samples[0].labels
    assert info == {"driver_version": "550.54.15", "cuda_driver_version": "12.4"}
    assert fams["hosttune_gpu_energy_joules"].type == "counter"
    assert fams["hosttune_gpu_throttle_seconds"].type == "counter"


def test_nvlinks_are_read_every_period_and_repeated_in_between(tmp_path: Path, fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B")))
    import pynvml

    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), io.StringIO(),
                         kmsg=str(tmp_path / "none"))
    mon.open_sources()
    try:
        first = mon.take()["gpus"][0]
        calls = pynvml.fake_calls()["nvmlDeviceGetNvLinkErrorCounter"]
        pynvml._state["scenario"]["devices"][0]["nvlinks"][1]["active"] = 1
        second = mon.take()["gpus"][0]
        assert pynvml.fake_calls()["nvmlDeviceGetNvLinkErrorCounter"] == calls  # not due: not asked
        assert second["nvlink_up"] == first["nvlink_up"] == [1, 0]  # ... but still in every sample
        assert second["nvlink_errors"] == first["nvlink_errors"]
        mon._nvlink_read[0] -= daemon.NVLINK_PERIOD_S  # the period has passed
        third = mon.take()["gpus"][0]
    finally:
        mon.close()
    assert third["nvlink_up"] == [1, 1] and pynvml.fake_calls()["nvmlDeviceGetNvLinkErrorCounter"] > calls


def test_stopped_file_is_valid_and_only_says_down() -> None:
    text = sinks.render_stopped(1700000000.5, {"samples": 7})
    assert text.splitlines()[2] == "hosttune_monitor_up 0"
    fams = families(text)
    assert set(fams) == {"hosttune_monitor_up", "hosttune_monitor_last_success_timestamp_seconds",
                         "hosttune_monitor_samples"}
    assert "hosttune_monitor_last_success" not in sinks.render_stopped(None, {})  # never sampled: no timestamp


def test_default_textfile_dir_is_node_exporters_when_it_exists(tmp_path: Path) -> None:
    # the store follows $HOSTTUNE_STATE_DIR (conftest points it into the test's own directory)
    assert textfile.resolve_textfile_dir("auto", str(tmp_path)) == os.path.join(dirs.state_dir(), "textfile")
    assert textfile.store_dir({}) == textfile.STORE_DIR == "/var/lib/hosttune/textfile"
    (tmp_path / "var/lib/prometheus/node-exporter").mkdir(parents=True)
    assert textfile.resolve_textfile_dir("auto", str(tmp_path)) == str(tmp_path / "var/lib/prometheus/node-exporter")
    assert textfile.resolve_textfile_dir("/srv/tf", str(tmp_path)) == "/srv/tf"
    assert textfile.resolve_textfile_dir("", str(tmp_path)) == ""
    assert MonitorConfig().textfile_dir == "auto"


def test_auto_is_the_directory_debians_node_exporter_reads_by_default() -> None:
    """Asked of the real binary: the default of --collector.textfile.directory (Debian passes no flag)."""
    exe = shutil.which("prometheus-node-exporter")
    if exe is None:
        pytest.skip("prometheus-node-exporter not installed (make setup installs it)")
    res = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    m = re.search(r'--collector\.textfile\.directory="([^"]+)"', res.stdout + res.stderr)
    assert m, res.stderr[-2000:]
    assert m.group(1) in textfile.NODE_EXPORTER_DIRS
    default_args = Path("/etc/default/prometheus-node-exporter")
    if default_args.exists():  # Debian's unit passes $ARGS: the shipped file leaves the directory alone
        assert not re.search(r"^ARGS=.*textfile\.directory", default_args.read_text(), re.MULTILINE)
    assert textfile.resolve_textfile_dir("auto") == m.group(1)  # this host has the package


def test_publish_links_the_store_and_the_daemon_writes_there(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("publish runs as root (the unit's ExecStartPre=+)")
    target, store = tmp_path / "node-exporter", tmp_path / "store"
    target.mkdir()
    said, warnings = textfile.publish(str(target), 65534, 65534, store=str(store))
    link = target / "hosttune.prom"
    assert os.readlink(link) == str(store / "hosttune.prom") and said.endswith(f"linked from {link}")
    assert warnings == []
    st = (store / "hosttune.prom").stat()
    assert (st.st_uid, oct(st.st_mode & 0o777), oct(store.stat().st_mode & 0o777)) == (65534, "0o644", "0o755")
    assert store.stat().st_uid == 65534
    assert "hosttune_monitor_up 0" in link.read_text()  # valid before the first sample: never a dangling link
    assert textfile.write_dir(str(target), str(store)) == str(store)
    textfile.publish(str(target), 0, 0, store=str(store))  # again (a new dynamic uid): same link, re-owned
    assert store.stat().st_uid == 0 and os.readlink(link) == str(store / "hosttune.prom")
    assert [n for n in os.listdir(target)] == ["hosttune.prom"]
    # what the monitor's user may leave in its store is never chowned or followed by root: a link, a hard link
    precious = tmp_path / "precious"
    precious.write_text("root's\n")
    (store / "hosttune.prom").unlink()
    os.link(precious, store / "hosttune.prom")
    textfile.publish(str(target), 65534, 65534, store=str(store))
    assert precious.stat().st_uid == 0 and precious.read_text() == "root's\n"
    assert (store / "hosttune.prom").stat().st_nlink == 1 and "hosttune_monitor_up 0" in link.read_text()
    (store / "hosttune.prom").unlink()
    os.symlink(precious, store / "hosttune.prom")
    textfile.publish(str(target), 65534, 65534, store=str(store))
    assert precious.stat().st_uid == 0 and not (store / "hosttune.prom").is_symlink()
    # a link that root did not make, or that points elsewhere, is not followed: the writes stay in target
    other = tmp_path / "other"
    other.mkdir()
    os.symlink("/etc/hosttune.prom", other / "hosttune.prom")
    assert textfile.write_dir(str(other), str(store)) == str(other)
    os.lchown(link, 65534, 65534)
    assert textfile.write_dir(str(target), str(store)) == str(target)


def test_service_user_from_the_user_database_or_systemds_dynamic_uid_records(tmp_path: Path) -> None:
    assert textfile.service_user("root") == (0, 0)
    # what systemd records for a running DynamicUser= unit (read by nss-systemd, absent on a minimal Debian)
    os.symlink("62563", tmp_path / "direct:hosttune-monitor")
    os.symlink("hosttune-monitor", tmp_path / "direct:62563")
    assert textfile.service_user("hosttune-monitor", str(tmp_path)) == (62563, 62563)
    assert textfile.service_user("no-such-unit-user", str(tmp_path)) is None
    assert textfile.service_user("../direct:hosttune-monitor", str(tmp_path)) is None


def test_setup_textfile_cli(tmp_path: Path) -> None:
    cfg = tmp_path / "m.yaml"
    cfg.write_text("textfile_dir: ''\n")
    res = cli_runner().invoke(cli, ["monitor", "setup-textfile", "--config", str(cfg)])
    assert res.exit_code == 0 and "nothing to set up" in res.output
    cfg.write_text(f"textfile_dir: {tmp_path / 'tf'}\n")
    res = cli_runner().invoke(cli, ["monitor", "setup-textfile", "--config", str(cfg), "--owner", "no-such-user-x"])
    assert res.exit_code == 2 and "--owner: no user 'no-such-user-x'" in res.stderr


def test_once_json_is_accepted_and_json_alone_is_not(fake_nvml: Any) -> None:
    fake_nvml(scenario(healthy(0, "3B")))
    res = cli_runner().invoke(cli, ["monitor", "--once", "--json", "--config", os.devnull])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["gpus"][0]["energy_j"] == 5000.123
    res = cli_runner().invoke(cli, ["monitor", "--json", "--config", os.devnull])
    assert res.exit_code == 2 and "--json goes with --once" in res.stderr


# ---- promtool: the textfile, the rules and their unit tests ---------------------------------------------------
@pytest.fixture(scope="module")
def promtool() -> str:
    """promtool from Debian's prometheus package, unpacked (never installed as a service): `make setup` puts it in
    build/promtool; without it, root with apt fetches it here the same way (`fetch_promtool`)."""
    exe = shutil.which("promtool") or str(PROMTOOL_CACHE / "usr/bin/promtool")
    if os.access(exe, os.X_OK):
        return exe
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("promtool not available (make setup unpacks Debian's prometheus package into build/promtool)")
    return fetch_promtool(PROMTOOL_CACHE)


def fetch_promtool(cache: Path) -> str:
    """Download and unpack the package in a directory of this run's own, then rename it to `cache` whole: two runs
    at once (pytest-xdist workers, two test runs in one checkout) never see a half-unpacked promtool, and nothing a
    run left behind (an old .deb in a shared download folder) is taken for this one's download."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".promtool-", dir=str(cache.parent)))
    try:
        res = subprocess.run(["apt-get", "download", "-qq", "prometheus"], cwd=str(work), capture_output=True,
                             text=True, timeout=300)
        debs = sorted(work.glob("prometheus_*.deb"))
        if res.returncode != 0 or len(debs) != 1:
            pytest.skip(f"apt-get download prometheus failed: {res.stderr[-500:]}")
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(work / "root")], check=True, timeout=300)
        try:
            os.rename(str(work / "root"), str(cache))
        except OSError:  # another run put a whole one there first (a non-empty directory is never replaced)
            pass
        exe = cache / "usr/bin/promtool"
        if not os.access(str(exe), os.X_OK):
            pytest.skip(f"{cache} holds no usable promtool (remove it: make setup unpacks it again)")
        return str(exe)
    finally:
        shutil.rmtree(str(work), ignore_errors=True)


def test_textfile_passes_promtool_check_metrics(tmp_path: Path, fake_nvml: Any, promtool: str) -> None:
    fake_nvml(scenario(healthy(0, "3B", xids=[]), healthy(1, "5E", lost=False)))
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), io.StringIO(),
                         kmsg=str(tmp_path / "none"))
    mon.open_sources()
    try:
        rec = mon.take()
    finally:
        mon.close()
    rec["gpus"][1]["xid_errors"], rec["gpus"][1]["last_xid"] = 1, 79
    for text in (sinks.render_textfile(rec, {"samples": 1, "write_errors": {"jsonl": 0}}, mon.gpus),
                 sinks.render_stopped(rec["ts"], {"samples": 1})):
        res = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stdout + res.stderr


def test_rules_pass_promtool_check_and_unit_tests(tmp_path: Path, promtool: str) -> None:
    rules = CONTRIB / "prometheus" / "hosttune-rules.yml"
    res = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "SUCCESS: 16 rules found" in res.stdout, res.stdout + res.stderr
    res = subprocess.run([promtool, "test", "rules", "hosttune-rules.test.yml"], cwd=str(rules.parent),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "SUCCESS" in res.stdout, res.stdout + res.stderr
    # the unit tests can fail: a rule whose line moved is caught
    (tmp_path / "hosttune-rules.yml").write_text(rules.read_text().replace(">= 85", ">= 95"))
    shutil.copy(str(rules.parent / "hosttune-rules.test.yml"), str(tmp_path))
    res = subprocess.run([promtool, "test", "rules", "hosttune-rules.test.yml"], cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "HosttuneGpuTooHot" in res.stdout + res.stderr


def _exported_names(tmp_path: Path, fake_nvml: Any) -> List[str]:
    """Every metric family the monitor can write, from a sample with every feature on."""
    fake_nvml(scenario(healthy(0, "3B", temperature_thresholds={"slowdown": 90})))
    mon = daemon.Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), io.StringIO(), io.StringIO(),
                         kmsg=str(tmp_path / "none"))
    mon.open_sources()
    try:
        rec = mon.take()
    finally:
        mon.close()
    rec["gpus"][0]["last_xid"] = 79
    rec["gpus"].append({"index": 1, "uuid": "GPU-lost", "lost": True})
    rec["host"]["cpu_temps_c"] = {"coretemp/Package id 0": 50.0}
    rec["host"]["cpu_util_pct"] = 10.0  # needs two /proc/stat readings apart in time
    text = sinks.render_textfile(rec, {"samples": 1, "write_errors": {"jsonl": 0}, "sample_seconds": 0.001},
                                 mon.gpus, {"swappiness": False})
    return sorted({s.name for f in text_string_to_metric_families(text) for s in f.samples})


def test_rules_and_dashboard_use_only_metrics_we_export(tmp_path: Path, fake_nvml: Any) -> None:
    names = set(_exported_names(tmp_path, fake_nvml))
    rules_text = (CONTRIB / "prometheus" / "hosttune-rules.yml").read_text()
    dash = json.loads((CONTRIB / "grafana" / "hosttune-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dash["templating"]["list"] if v.get("definition")]
    used = set(re.findall(r"\bhosttune_[a-z0-9_]+", rules_text + "\n".join(exprs)))
    # hosttune_gpu_last_xid is named in an annotation; every name must be a real series
    assert used and used <= names, sorted(used - names)
    for metric in ("hosttune_gpu_xid_errors_total", "hosttune_gpu_throttle_seconds_total", "hosttune_monitor_up",
                   "hosttune_gpu_nvlink_errors_total", "hosttune_shm_used_bytes"):
        assert metric in rules_text or metric in "\n".join(exprs), metric


def test_dashboard_structure() -> None:
    """Grafana is not packaged by Debian (no schema check to run here): the structure Grafana's importer needs."""
    dash = json.loads((CONTRIB / "grafana" / "hosttune-dashboard.json").read_text())
    assert dash["uid"] == "hosttune-monitor" and isinstance(dash["schemaVersion"], int) and dash["title"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    refs = {v["name"] for v in dash["templating"]["list"]}
    assert refs == {"datasource", "instance", "gpu"}
    for p in dash["panels"]:
        g = p["gridPos"]
        assert {"h", "w", "x", "y"} <= set(g) and 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] == "row":
            continue
        assert p["type"] in ("timeseries", "stat") and p["datasource"]["uid"] == "${datasource}", p["title"]
        assert p["targets"] and all(t["refId"] and t["expr"] for t in p["targets"]), p["title"]
        for t in p["targets"]:
            for var in re.findall(r"\$(\w+)", t["expr"]):
                assert var in refs or var == "__rate_interval", (p["title"], var)
    # no two panels overlap
    cells = set()
    for p in dash["panels"]:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, p["title"]
                cells.add((x, y))


# ---- a real node_exporter --------------------------------------------------------------------------------------
def _scrape(port: int) -> Dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: Dict[str, float] = {}
    for f in text_string_to_metric_families(text):
        for s in f.samples:
            if s.name.startswith(("node_textfile_scrape_error", "hosttune_monitor_up", "hosttune_gpu_energy")):
                out[s.name] = s.value
    return out


@pytest.mark.parametrize("how", ["direct", "linked"])
def test_real_node_exporter_scrapes_the_textfile_running_and_stopped(tmp_path: Path, fake_nvml: Any,
                                                                      how: str) -> None:
    """Debian's prometheus-node-exporter, in the foreground on a free localhost port, reads the textfile from its
    default directory's layout (a temp copy: the test does not write the real /var/lib path) while the real
    `hosttune monitor` process runs and after it stopped: never a scrape error, and the monitor-down gauge.
    "linked": the unit's layout, hosttune.prom in node_exporter's directory a link made by `publish` to the store
    the monitor writes (node_exporter follows it)."""
    exe = shutil.which("prometheus-node-exporter")
    if exe is None:
        pytest.skip("prometheus-node-exporter not installed (make setup installs it)")
    if how == "linked" and os.geteuid() != 0:
        pytest.skip("publish runs as root")
    root = tmp_path / "root"
    ne_dir = root / textfile.NODE_EXPORTER_DIRS[0].lstrip("/")
    ne_dir.mkdir(parents=True)
    assert textfile.resolve_textfile_dir("auto", str(root)) == str(ne_dir)
    textfile_dir = ne_dir
    if how == "linked":
        textfile_dir = root / textfile.STORE_DIR.lstrip("/")
        textfile.publish(str(ne_dir), os.geteuid(), os.getegid(), store=str(textfile_dir))
        assert (ne_dir / "hosttune.prom").is_symlink()
    env = _env(fake_nvml(scenario(healthy(0, "3B"))))
    port = free_port()
    ne = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                           "--collector.textfile", f"--collector.textfile.directory={ne_dir}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    d: Optional[Daemon] = None
    try:
        before = wait_for(lambda: _try(lambda: _scrape(port)), 20, "node_exporter listening")
        if how == "linked":  # published before the first sample: already valid, "down"
            assert before["node_textfile_scrape_error"] == 0 and before["hosttune_monitor_up"] == 0
        d = Daemon(tmp_path, env, extra=f"textfile_dir: {textfile_dir}\n")
        running = wait_for(lambda: (lambda m: m if m.get("hosttune_monitor_up") == 1 else None)(_scrape(port)), 20,
                           "hosttune metrics through node_exporter", d)
        assert running["node_textfile_scrape_error"] == 0 and running["hosttune_gpu_energy_joules_total"] == 5000.123
        assert d.stop() == 0, d.err
        stopped = _scrape(port)
        assert stopped["node_textfile_scrape_error"] == 0 and stopped["hosttune_monitor_up"] == 0
        assert "hosttune_gpu_energy_joules_total" not in stopped  # no stale readings from a stopped monitor
        assert oct((textfile_dir / "hosttune.prom").stat().st_mode & 0o777) == "0o644"
    finally:
        if d is not None:
            d.kill()
        ne.terminate()
        ne.wait(timeout=10)


def _try(fn: Any) -> Any:
    try:
        return fn()
    except OSError:
        return None


# ---- monitor report: --until, percentiles, bytes ---------------------------------------------------------------
def _log(tmp_path: Path, n: int = 100, t0: float = 1764547200.0) -> Path:  # 2025-12-01T00:00:00Z
    log = tmp_path / "log"
    log.mkdir()
    with (log / "monitor.jsonl").open("w") as f:
        for i in range(n):
            f.write(json.dumps({"ts": t0 + 10 * i, "host": {"mem_used_bytes": 24_330_000_000 + i * 1_000_000,
                                                            "mem_used_pct": 50.0},
                                "gpus": [{"index": 0, "temperature_c": 40 + (i * 37) % 50}]}) + "\n")
    return log


def test_report_percentiles_match_numpy(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    log = _log(tmp_path)
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--json", "--config", os.devnull])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)["metrics"]["gpu0.temperature_c"]
    temps = [40 + (i * 37) % 50 for i in range(100)]
    for q in (50, 95, 99):
        assert m[f"p{q}"] == pytest.approx(float(np.percentile(temps, q)), abs=1e-3), q


def test_report_until_cuts_the_end(tmp_path: Path) -> None:
    log = _log(tmp_path)
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--json", "--config", os.devnull,
                                    "--until", "2025-12-01T00:04:50Z"])
    out = json.loads(res.output)
    assert out["samples"] == 30 and out["last"] == 1764547200.0 + 290
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--json", "--config", os.devnull,
                                    "--since", "1000d", "--until", "1000d"])  # nothing between "1000 days ago" twice
    assert json.loads(res.output)["samples"] == 0
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--until", "yesterday-ish"])
    assert res.exit_code == 2 and "--until: cannot read 'yesterday-ish'" in res.stderr


def test_report_text_prints_bytes_in_binary_units(tmp_path: Path) -> None:
    log = _log(tmp_path, n=3)
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull])
    assert res.exit_code == 0, res.output
    header = next(line for line in res.output.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "min", "mean", "p50", "p95", "p99", "max"]
    row = next(line for line in res.output.splitlines() if line.startswith("host.mem_used_bytes"))
    assert "22.7 GiB" in row and "e+" not in row
    from hosttune.monitor import report

    assert report.human_bytes(512) == "512 B" and report.human_bytes(1536) == "1.5 KiB"
