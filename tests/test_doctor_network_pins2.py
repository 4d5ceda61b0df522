"""Pins (issue 21, second mutation round) for hosttune/doctor/deep/network.py: a 10 Gb/s link is the threshold, not
below it (SLOW_MBPS: below 10 Gb/s warns)."""

from hosttune.doctor.deep.network import NetPath, path_finding


def _eth(mbps: int) -> NetPath:
    return NetPath("node-b", "10.0.0.2", "10.0.0.1", "eth0", "other", operstate="up", mtu=1500, speed_mbps=mbps)


def test_a_10_gbps_link_passes_and_one_slower_warns() -> None:
    at = path_finding(_eth(10000))
    assert at.status == "pass" and "10 Gb/s" in at.actual, at
    below = path_finding(_eth(5000))
    assert below.status == "warn" and "link 5 Gb/s, below 10 Gb/s" in below.actual, below
