"""Pins of mutation round 4 (issue 21) on hosttune/monitor/diskio.py: each limit at its edge (a wrap exactly at the
possible rate, busy time at its slack, MAX_DISKS, the 14-column minimum), which names are whole disks, and the
textfile rows in base units."""

from hosttune.monitor import diskio as D
from hosttune.monitor.diskio import Counters

W = 1 << 32


def _line(name: str, rs: int, ws: int, ms: int, cols: int = 14, major: int = 8) -> str:
    vals = [0] * (cols - 3)
    vals[2], vals[6], vals[9] = rs, ws, ms
    return f"{major} 0 {name} " + " ".join(map(str, vals))


def test_parse_needs_14_columns_and_numbers() -> None:
    text = "\n".join([_line("sda", 1, 2, 3), _line("sdb", 4, 5, 6, cols=20), _line("sdc", 1, 1, 1, cols=13),
                      "8 x sdd " + " ".join(["0"] * 11), "8 0 sde " + " ".join(["1"] * 10) + " z", ""])
    assert D.parse_diskstats(text) == {"sda": Counters((8, 0), 1, 2, 3), "sdb": Counters((8, 0), 4, 5, 6)}


def test_counter_delta_edges() -> None:
    assert D.counter_delta(5, 5, 0) == 0 and D.counter_delta(5, 9, 0) == 4
    assert D.counter_delta(W - 10, 5, 15) == 15  # exactly the possible amount: a wrap
    assert D.counter_delta(W - 10, 5, 14.9) is None  # more than possible: a reset
    assert D.counter_delta(W, 5, 1e30) is None  # a 64-bit counter that went down never wrapped at 32 bits
    assert D.counter_delta(W - 1, 0, 1) == 1


def test_disk_rates_edges() -> None:
    a = Counters((8, 0), 0, 0, 0)
    b = Counters((8, 0), 2_000_000, 1_000_000, 500)
    assert D.disk_rates(a, b, 1.0) == {"read_mb_s": 1024.0, "write_mb_s": 512.0, "util_pct": 50.0}
    assert D.disk_rates(a, b, 0.0) is None and D.disk_rates(a, b, -1.0) is None
    assert D.disk_rates(a, Counters((8, 16), 1, 1, 1), 1.0) is None
    # busy: at most the time passed x 1.5 + 1 s of slack, and the share is capped at 100 %
    assert D.disk_rates(Counters((8, 0), 0, 0, W - 1000), Counters((8, 0), 0, 0, 1500), 1.0) == \
        {"read_mb_s": 0.0, "write_mb_s": 0.0, "util_pct": 100.0}
    assert D.disk_rates(Counters((8, 0), 0, 0, W - 1000), Counters((8, 0), 0, 0, 1501), 1.0) is None
    # sectors: a wrap of up to MAX_BYTES_PER_S for the time passed is taken
    most = D.MAX_BYTES_PER_S // D.SECTOR_BYTES
    assert D.disk_rates(Counters((8, 0), W - 1, 0, 0), Counters((8, 0), most - 1, 0, 0), 1.0) is not None
    assert D.disk_rates(Counters((8, 0), W - 1, 0, 0), Counters((8, 0), most, 0, 0), 1.0) is None
    assert D.disk_rates(Counters((8, 0), 0, W - 1, 0), Counters((8, 0), 0, most, 0), 1.0) is None


def test_whole_disks() -> None:
    names = ["sda", "sda1", "nvme0n1", "nvme0n1p2", "nvme0c0n1", "mmcblk0", "mmcblk0p1", "md0", "md0p1", "dm-0",
             "loop0", "ram1", "zram0", "xvda", "xvda1", "vdb3", "hda"]
    assert D.whole_disks(names, None) == ["dm-0", "hda", "md0", "mmcblk0", "nvme0c0n1", "nvme0n1", "sda", "xvda"]
    assert D.whole_disks(names, []) == D.whole_disks(names, None)
    assert D.whole_disks(names, ["sda1", "loop0", "nvme0n1"]) == ["nvme0n1", "sda1"]
    many = [f"sd{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(300)]
    assert D.whole_disks(many, None) == sorted(many)[:256] and D.MAX_DISKS == 256


def test_rates_across_updates() -> None:
    r = D.DiskRates()
    assert r.update(_line("sda", 0, 0, 0), 10.0, ["sda"]) == {}
    assert r.update(_line("sda", 20000, 0, 100) + "\n" + _line("sdb", 0, 0, 0), 20.0, ["sda", "sdb"]) == {
        "sda": {"read_mb_s": 1.024, "write_mb_s": 0.0, "util_pct": 1.0}}
    assert r.update(None, 30.0, ["sda"]) == {}
    assert r.update(_line("sda", 40000, 0, 100), 40.0, ["sda"]) == {}  # starts over after an unreadable one


def test_iowait_pct() -> None:
    assert D.iowait_pct((10, 100), (30, 200)) == 20.0
    assert D.iowait_pct((10, 100), (5, 200)) == 0.0  # iowait went down: 0, never negative
    assert D.iowait_pct((0, 100), (500, 200)) == 100.0  # never above all the time
    assert D.iowait_pct((0, 100), (0, 100)) is None and D.iowait_pct((0, 100), (0, 50)) is None
    assert D.iowait_pct((0, 0), (1, 3)) == 33.33


def test_textfile_rows_in_base_units() -> None:
    host = {"iowait_pct": 25.0, "disk_io": {"sdb": {"read_mb_s": 2.0, "write_mb_s": None, "util_pct": 50.0},
                                            "sda": {"read_mb_s": 1.0, "write_mb_s": 3.0, "util_pct": 10.0}}}
    rows = [(n, t, labels, v) for n, t, _h, labels, v in D.textfile_rows(host)]
    assert rows == [("hosttune_cpu_iowait_ratio", "gauge", {}, 0.25),
                    ("hosttune_disk_read_bytes_per_second", "gauge", {"device": "sda"}, 1e6),
                    ("hosttune_disk_read_bytes_per_second", "gauge", {"device": "sdb"}, 2e6),
                    ("hosttune_disk_written_bytes_per_second", "gauge", {"device": "sda"}, 3e6),
                    ("hosttune_disk_busy_ratio", "gauge", {"device": "sda"}, 0.1),
                    ("hosttune_disk_busy_ratio", "gauge", {"device": "sdb"}, 0.5)]
    assert list(D.textfile_rows({})) == []
