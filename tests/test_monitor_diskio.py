"""Disk I/O in the monitor (issue 25): per whole disk read/write MB/s and %util from /proc/diskstats, the host's
iowait share from /proc/stat, as rates between two samples; in the JSONL, the textfile (HELP/TYPE, promtool) and
`monitor report`. Fixture /proc and /sys trees under tmp_path, and one run on this machine's real files."""

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import cli_runner
from prometheus_client.parser import text_string_to_metric_families
from test_monitor_fleet import promtool  # noqa: F401 - the fixture: Debian's promtool, unpacked once

from hosttune.cli import cli
from hosttune.monitor import diskio, sample, sinks, summary
from hosttune.monitor.config import Thresholds

MB = 1_000_000


def line(major: int, minor: int, name: str, read_sectors: int = 0, write_sectors: int = 0, io_ms: int = 0,
         columns: int = 20) -> str:
    """One /proc/diskstats line (iostats.rst): fields 3, 7 and 10 after the name are what the monitor reads; the
    others hold numbers that would be wrong if they were read instead."""
    fields = [11, 12, read_sectors, 14, 15, 16, write_sectors, 18, 19, io_ms, 21, 22, 23, 24, 25, 26, 27][:columns - 3]
    return f"{major:4d} {minor:7d} {name} " + " ".join(str(f) for f in fields) + "\n"


def stats(*lines: str) -> str:
    return "".join(lines)


# ---- pure parts --------------------------------------------------------------------------------------------------
def test_diskstats_of_every_kernel_layout_parse_and_bad_lines_are_skipped() -> None:
    text = stats(line(8, 0, "sda", 100, 200, 300, columns=14),  # Linux < 4.18
                 line(259, 0, "nvme0n1", 1, 2, 3, columns=18),  # 4.18: discards
                 line(253, 0, "dm-0", 4, 5, 6, columns=20),  # 5.5: flushes
                 "   8  1 sda1 1 2 3\n", "garbage\n", "8 2 sdx a b c d e f g h i j k\n")
    got = diskio.parse_diskstats(text)
    assert got == {"sda": diskio.Counters((8, 0), 100, 200, 300), "nvme0n1": diskio.Counters((259, 0), 1, 2, 3),
                   "dm-0": diskio.Counters((253, 0), 4, 5, 6)}


def test_whole_disks_are_what_sys_block_lists_less_loop_and_ram() -> None:
    names = ["sda", "sda1", "sda2", "nvme0n1", "nvme0n1p1", "nvme0c0n1", "loop0", "ram0", "zram0", "dm-0", "md0",
             "md0p1", "mmcblk0", "mmcblk0p1", "vda", "vda1", "xvdb", "xvdb3"]
    block = ["sda", "nvme0n1", "loop0", "ram0", "zram0", "dm-0", "md0", "mmcblk0", "vda", "xvdb"]
    assert diskio.whole_disks(names, block) == ["dm-0", "md0", "mmcblk0", "nvme0n1", "sda", "vda", "xvdb"]
    # without /sys/block (unreadable, or empty in an odd container): partitions are told by name
    by_name = ["dm-0", "md0", "mmcblk0", "nvme0c0n1", "nvme0n1", "sda", "vda", "xvdb"]
    assert diskio.whole_disks(names, None) == by_name and diskio.whole_disks(names, []) == by_name
    many = [f"sd{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(300)]
    assert len(diskio.whole_disks(many, many)) == diskio.MAX_DISKS


def test_rates_between_two_readings() -> None:
    rates = diskio.DiskRates()
    before = stats(line(8, 0, "sda", 1000, 5000, 70_000), line(8, 16, "sdb", 0, 0, 0))
    assert rates.update(before, 100.0, ["sda", "sdb"]) == {}  # one reading: no rate yet
    # 2 s later: sda read 4,000,000 sectors (2.048 GB), wrote 1,000,000 (512 MB), busy 1.5 s of 2; sdb idle
    after = stats(line(8, 0, "sda", 4_001_000, 1_005_000, 71_500), line(8, 16, "sdb", 0, 0, 0))
    assert rates.update(after, 102.0, ["sda", "sdb"]) == {
        "sda": {"read_mb_s": 1024.0, "write_mb_s": 256.0, "util_pct": 75.0},
        "sdb": {"read_mb_s": 0.0, "write_mb_s": 0.0, "util_pct": 0.0}}


def test_a_32_bit_counter_that_went_round_is_a_rate_and_a_reset_disk_is_none_once() -> None:
    rates = diskio.DiskRates()
    top = 1 << 32
    rates.update(stats(line(8, 0, "sda", top - 100, 10**12, top - 500), line(8, 16, "sdb", 10**9, 10**9, 10**9)),
                 0.0, None)
    # sda: io_ticks (%u in the kernel) and a 32-bit kernel's sectors went round; sdb came back with fresh counters
    # (hot-plugged, or removed and added again): its old counters say nothing about the new ones
    got = rates.update(stats(line(8, 0, "sda", 1900, 10**12, 1500), line(8, 16, "sdb", 10, 20, 30)), 2.0, None)
    assert got == {"sda": {"read_mb_s": 0.512, "write_mb_s": 0.0, "util_pct": 100.0}}
    got = rates.update(stats(line(8, 0, "sda", 1900, 10**12, 1500), line(8, 16, "sdb", 2010, 20, 1030)), 4.0, None)
    assert got["sdb"] == {"read_mb_s": 0.512, "write_mb_s": 0.0, "util_pct": 50.0}  # and from then on it counts
    # a 64-bit counter that goes down is never a wrap
    assert diskio.counter_delta(top + 5, 3, float("inf")) is None
    assert diskio.counter_delta(top - 1, 0, 1) == 1 and diskio.counter_delta(top - 1, 5, 1) is None


def test_a_disk_that_appears_disappears_or_changes_device_number() -> None:
    rates = diskio.DiskRates()
    rates.update(stats(line(8, 0, "sda", 0, 0, 0)), 0.0, None)
    got = rates.update(stats(line(8, 0, "sda", 2000, 0, 0), line(8, 16, "sdb", 5, 5, 5)), 1.0, None)
    assert set(got) == {"sda"}  # sdb is new: its first reading has nothing to compare with
    got = rates.update(stats(line(8, 16, "sdb", 2005, 5, 5)), 2.0, None)
    assert set(got) == {"sdb"}  # sda went away
    assert set(rates.update(stats(line(8, 0, "sda", 9, 9, 9), line(8, 16, "sdb", 2005, 5, 5)), 3.0, None)) == {"sdb"}
    # the name sda now under another device number (another disk took it): no rate until the next sample
    assert set(rates.update(stats(line(65, 0, "sda", 9, 9, 9), line(8, 16, "sdb", 2005, 5, 5)), 4.0, None)) == {"sdb"}
    assert set(rates.update(stats(line(65, 0, "sda", 9, 9, 9), line(8, 16, "sdb", 2005, 5, 5)), 5.0, None)) == \
        {"sda", "sdb"}
    # an unreadable /proc/diskstats gives nothing, and the next reading starts over
    assert rates.update(None, 6.0, None) == {}
    assert rates.update(stats(line(8, 16, "sdb", 9005, 5, 5)), 7.0, None) == {}


def test_iowait_share() -> None:
    assert diskio.iowait_pct((50, 1000), (80, 1200)) == 15.0
    assert diskio.iowait_pct((80, 1200), (70, 1300)) == 0.0  # proc(5): iowait can go down
    assert diskio.iowait_pct((80, 1200), (80, 1200)) is None
    a = sample.parse_proc_stat_times("cpu  100 0 50 800 50 0 0 0 0 0\n")
    b = sample.parse_proc_stat_times("cpu  200 0 100 900 110 0 0 0 0 0\n")
    assert a == (150, 1000, 50) and b == (300, 1310, 110)


# ---- the host reader on a fixture tree ------------------------------------------------------------------------------
def _tree(root: Path, diskstats: str, block: List[str]) -> None:
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc/diskstats").write_text(diskstats)
    for name in block:
        (root / "sys/block" / name).mkdir(parents=True, exist_ok=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_host_reader_samples_disk_io_and_iowait_from_a_tree(tmp_path: Path) -> None:
    block = ["nvme0n1", "sda", "loop0"]
    _tree(tmp_path, stats(line(259, 0, "nvme0n1", 0, 0, 0), line(259, 1, "nvme0n1p1", 0, 0, 0),
                          line(8, 0, "sda", 0, 0, 0), line(7, 0, "loop0", 0, 0, 0)), block)
    (tmp_path / "proc/stat").write_text("cpu  100 0 50 800 50 0 0 0 0 0\n")
    clock = Clock()
    reader = sample.HostReader(tmp_path, disks=[], clock=clock)
    # 5 s of training: the data disk (sda) busy all the time at 40 MB/s of reads, the CPUs waiting on it 60 %
    clock.now += 5.0
    _tree(tmp_path, stats(line(259, 0, "nvme0n1", 0, 10_000, 50), line(259, 1, "nvme0n1p1", 0, 10_000, 50),
                          line(8, 0, "sda", 390_625, 0, 5000), line(7, 0, "loop0", 800, 0, 10)), block)
    (tmp_path / "proc/stat").write_text("cpu  200 0 100 1050 650 0 0 0 0 0\n")
    host = reader.read()
    assert host["disk_io"] == {"nvme0n1": {"read_mb_s": 0.0, "write_mb_s": 1.024, "util_pct": 1.0},
                               "sda": {"read_mb_s": 40.0, "write_mb_s": 0.0, "util_pct": 100.0}}
    assert host["iowait_pct"] == 60.0 and host["cpu_util_pct"] == 15.0
    json.dumps(host)  # the JSONL line


def test_host_reader_without_diskstats_or_sys_block(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    clock = Clock()
    reader = sample.HostReader(tmp_path, disks=[], clock=clock)
    assert "disk_io" not in reader.read()  # no /proc/diskstats: no field, no error
    (tmp_path / "proc/diskstats").write_text(stats(line(8, 0, "sda", 0, 0, 0), line(8, 1, "sda1", 0, 0, 0)))
    reader.read()
    clock.now += 1.0
    (tmp_path / "proc/diskstats").write_text(stats(line(8, 0, "sda", 2000, 0, 0), line(8, 1, "sda1", 2000, 0, 0)))
    assert reader.read()["disk_io"] == {"sda": {"read_mb_s": 1.024, "write_mb_s": 0.0, "util_pct": 0.0}}


def test_host_reader_reads_diskstats_bounded(tmp_path: Path) -> None:
    """A /proc/diskstats over the bound (a broken tree, or a FIFO planted in a test root) is no reading, never a hang
    or a huge read."""
    (tmp_path / "proc").mkdir()
    big = line(8, 0, "sda") * (diskio.DISKSTATS_LIMIT // len(line(8, 0, "sda")) + 2)
    (tmp_path / "proc/diskstats").write_text(big)
    reader = sample.HostReader(tmp_path, disks=[], clock=Clock())
    assert "disk_io" not in reader.read()
    (tmp_path / "proc/diskstats").unlink()
    os.mkfifo(tmp_path / "proc/diskstats")
    assert "disk_io" not in reader.read()


# ---- the textfile and the report -------------------------------------------------------------------------------------
def _record(ts: float, util: float, read: float, iowait: float) -> Dict[str, object]:
    return {"ts": ts, "time": "t", "host": {"iowait_pct": iowait, "mem_used_pct": 10.0,
                                           "disk_io": {"sdb": {"read_mb_s": read, "write_mb_s": 0.5,
                                                               "util_pct": util},
                                                       "nvme0n1": {"read_mb_s": 0.0, "write_mb_s": 1.25,
                                                                   "util_pct": 0.4}}}}


def test_textfile_families_have_help_and_type_in_base_units(promtool: str) -> None:  # noqa: F811
    text = sinks.render_textfile(_record(1.0, 99.5, 40.0, 62.5), {"samples": 1})
    families = {f.name: f for f in text_string_to_metric_families(text)}
    got: Dict[Tuple[str, str], float] = {}
    for name in ("hosttune_disk_read_bytes_per_second", "hosttune_disk_written_bytes_per_second",
                 "hosttune_disk_busy_ratio", "hosttune_cpu_iowait_ratio"):
        fam = families[name]
        assert fam.type == "gauge" and fam.documentation, name
        assert f"# HELP {name} " in text and f"# TYPE {name} gauge" in text
        for s in fam.samples:
            got[(name, s.labels.get("device", ""))] = s.value
    assert got[("hosttune_disk_read_bytes_per_second", "sdb")] == 40e6
    assert got[("hosttune_disk_written_bytes_per_second", "nvme0n1")] == 1.25e6
    assert got[("hosttune_disk_busy_ratio", "sdb")] == pytest.approx(0.995)
    assert got[("hosttune_cpu_iowait_ratio", "")] == 0.625
    res = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stdout + res.stderr


def test_a_slow_data_disk_shows_in_monitor_report(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    recs = [_record(1700000000.0 + 5 * i, util, read, iowait)
            for i, (util, read, iowait) in enumerate([(20, 300, 1), (100, 12, 55), (100, 11, 60), (98, 13, 58)])]
    (log / "monitor.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    table = summary.summarize(recs, Thresholds())["metrics"]
    assert table["disk_io.sdb.util_pct"]["max"] == 100.0 and table["disk_io.sdb.read_mb_s"]["min"] == 11.0
    assert table["host.iowait_pct"]["max"] == 60.0 and table["disk_io.nvme0n1.write_mb_s"]["mean"] == 1.25
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull])
    assert res.exit_code == 0, res.output
    rows = {r.split()[0]: r.split()[1:] for r in res.output.splitlines() if r.startswith(("disk_io.", "host."))}
    assert rows["disk_io.sdb.util_pct"][-1] == "100" and rows["disk_io.sdb.read_mb_s"][0] == "11"
    assert rows["host.iowait_pct"][-1] == "60"


# ---- this machine ------------------------------------------------------------------------------------------------
def _disk_of(path: Path) -> str:
    """The whole disk under `path`'s filesystem, from sysfs (a partition's parent), or "" (no block device)."""
    st = os.stat(path)
    sys_dev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if os.major(st.st_dev) == 0 or not sys_dev.exists():
        return ""
    real = sys_dev.resolve()
    return real.parent.name if (real / "partition").exists() else real.name


def test_on_this_machine_the_disks_are_lsblks_and_the_bytes_fit_psutils(tmp_path: Path) -> None:
    """The real /proc/diskstats and /sys/block: the disks are lsblk's whole disks (less loop/ram/zram); between two
    readings the bytes a disk moved lie within what psutil (its own parse of the same counters) saw around them, and
    the disk under tmp_path wrote at least what the test wrote and fsynced there."""
    psutil = pytest.importorskip("psutil")
    seen: List[float] = []

    def clock() -> float:
        seen.append(time.monotonic())
        return seen[-1]

    p1 = psutil.disk_io_counters(perdisk=True)
    reader = sample.HostReader(disks=[], clock=clock)
    data = os.urandom(8 << 20)
    with open(tmp_path / "blob", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    host = reader.read()
    p2 = psutil.disk_io_counters(perdisk=True)
    dt = seen[-1] - seen[-2]
    got = host.get("disk_io") or {}
    try:
        lsblk = subprocess.run(["lsblk", "-d", "-n", "-o", "NAME"], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        lsblk = None
    if lsblk is not None and lsblk.returncode == 0:
        want = {n for n in lsblk.stdout.split() if not n.startswith(("loop", "ram", "zram"))}
        assert set(got) == want, (sorted(got), lsblk.stdout)
    assert 0.0 <= host["iowait_pct"] <= 100.0
    slack = 0.0006 * MB * dt  # the rates are rounded to 0.001 MB/s
    for name, rates in got.items():
        assert 0.0 <= rates["util_pct"] <= 100.0
        if name in p1 and name in p2:
            assert rates["read_mb_s"] * MB * dt <= p2[name].read_bytes - p1[name].read_bytes + slack, name
            assert rates["write_mb_s"] * MB * dt <= p2[name].write_bytes - p1[name].write_bytes + slack, name
    disk = _disk_of(tmp_path)
    if disk in got:
        assert got[disk]["write_mb_s"] * MB * dt >= len(data) - slack, (disk, got[disk], dt)
