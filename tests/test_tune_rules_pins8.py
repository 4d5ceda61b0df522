"""Pins (issue 21, round 8 practice) for hosttune/tune/rules.py, whole: what each tunable expects of the default
tune section, the comparison each tunable makes (at most, at least, THP order, exactly) over one table of
(actual, expected) pairs, and why each does not apply on a few hosts."""

from typing import Dict, Optional

import pytest

from hosttune.profile.settings import Tune
from hosttune.tune import rules


def test_expected_of_the_default_tune_section() -> None:
    assert {t: rules.expected(t, Tune()) for t in rules.EXPECTED} == {
        "thp": "madvise", "thp_defrag": "madvise", "numa_balancing": "0", "swappiness": "10",
        "governor": "performance", "epp": "performance", "nofile": "65536", "memlock": "unlimited",
        "shm": "size=50%", "persistence": "enabled, active"}


PAIRS = [("never", "madvise"), ("always", "madvise"), ("madvise", "madvise"), ("5", "10"), ("10", "10"),
         ("60", "10"), ("unlimited", "unlimited"), ("unlimited", "65536"), ("1048576", "65536"), ("1024", "65536"),
         ("65536", "unlimited"), ("x", "10"), ("", "")]


@pytest.mark.parametrize("tid,want", [
    ("thp", "TFTFTFTFFFFFT"),  # never is at most madvise; a value outside the THP order exactly
    ("thp_defrag", "FFTFTFTFFFFFT"),  # exactly
    ("swappiness", "FFFTTFFFFTFFF"),  # a lower swappiness is fine (numbers only)
    ("nofile", "FFFFTTTTTFFFF"),  # a higher limit (or unlimited) is fine
    ("memlock", "FFFFTTTTTFFFF"),
    ("governor", "FFTFTFTFFFFFT"),
    ("shm", "FFTFTFTFFFFFT"),
])
def test_ok_over_one_table_of_pairs(tid: str, want: str) -> None:
    assert "".join("T" if rules.ok(tid, a, e) else "F" for a, e in PAIRS) == want


@pytest.mark.parametrize("host,want", [
    (rules.Host(), {"numa_balancing": "1 NUMA node: nothing to balance",
                    "memlock": "no RDMA devices: only RDMA pins memory"}),
    (rules.Host(numa_nodes=2, swap_mb=0, rdma_devices=1),
     {"swappiness": "no swap configured: swappiness has no effect"}),
    (rules.Host(numa_nodes=0, swap_mb=None, rdma_devices=2), {"numa_balancing": "1 NUMA node: nothing to balance"}),
    (rules.Host(numa_nodes=4, swap_mb=1, rdma_devices=1), {}),
])
def test_not_here_on_each_host(host: rules.Host, want: Dict[str, Optional[str]]) -> None:
    got = {t: rules.not_here(t, host) for t in rules.EXPECTED}
    assert {t: why for t, why in got.items() if why is not None} == want


def test_shm_big_enough_down_to_the_slack_exactly() -> None:
    assert (rules.shm_slack(1_000_000), rules.shm_slack(1000), rules.shm_slack(0)) == (1000, 4, 4)
    assert rules.shm_big_enough(999_000, 1_000_000) and not rules.shm_big_enough(998_999, 1_000_000)
    assert rules.shm_big_enough(996, 1000) and not rules.shm_big_enough(995, 1000)
    assert rules.shm_big_enough(2_000_000, 1_000_000)
