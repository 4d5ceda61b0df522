"""Pins for the profile settings table's validation (hosttune/profile/settings.py) from issue 21's mutation run: each
kind of value is checked at its edges, one value at a time, through `validate` (the one gateway every profile file
and the launcher's handoff go through)."""

from typing import Any, Dict, Optional

import pytest

from hosttune.errors import UserError
from hosttune.profile import settings


def bad(key: str, msg: str, sect: Optional[str]) -> UserError:
    return UserError(f"{sect}.{key}: {msg}" if sect else f"{key}: {msg}")


def unknown(key: Any, known: Any, sect: Optional[str]) -> UserError:
    return UserError(f"unknown key {key!r} in {sect or 'the profile'}")


def ok(data: Dict[str, Any]) -> bool:
    try:
        settings.validate(data, bad, unknown)
    except UserError:
        return False
    return True


@pytest.mark.parametrize("data", [
    {"threads": 1}, {"threads": 4096}, {"threads": "auto"}, {"dataloader": {"num_workers": 0}},
    {"dataloader": {"prefetch_factor": 1}}, {"memory_policy": "preferred"}, {"memory_policy": False},
    {"deterministic": True}, {"dataloader": {"pin_memory": "auto"}}, {"dataloader": {"pin_memory": False}},
    {"allocator_path": "/usr/lib/libjemalloc.so.2"}, {"malloc_conf": "background_thread:true"},
    {"env": {"OMP_PROC_BIND": "close", "NCCL_NTHREADS": 4}}, {"tcmalloc": {"TCMALLOC_RELEASE_RATE": "10"}},
    {"tune": {"swappiness": 0}}, {"tune": {"swappiness": 200}}, {"tune": {"governor": "performance"}},
])
def test_values_at_the_edges_pass(data: Dict[str, Any]) -> None:
    assert ok(data), data


@pytest.mark.parametrize("data", [
    {"threads": 0}, {"threads": 4097}, {"threads": True}, {"threads": "4"}, {"dataloader": {"num_workers": -1}},
    {"dataloader": {"prefetch_factor": 0}}, {"tune": {"swappiness": 201}}, {"tune": {"swappiness": -1}},
    {"binding": "nosuch"}, {"memory_policy": "no such"}, {"deterministic": "yes"}, {"deterministic": None},
    {"dataloader": {"pin_memory": "yes"}}, {"allocator_path": "lib/libjemalloc.so"}, {"malloc_conf": 5},
    {"malloc_conf": "a\x00b"}, {"env": {"A B": "1"}}, {"env": {"X=1": "1"}}, {"env": {"LD_PRELOAD": "/x.so"}},
    {"env": {"LD_AUDIT": "/x.so"}}, {"env": {"FLAG": True}}, {"env": {"V": None}}, {"env": {"V": "a\x00b"}},
    {"tcmalloc": {"MALLOC_CONF": "x"}}, {"tune": {"governor": "performance\n"}}, {"tune": {"governor": "perf x"}},
    {"threadz": 4}, {"dataloader": {"num_worker": 2}}, {"tune": {"nosuch": 1}},
])
def test_each_bad_value_is_refused(data: Dict[str, Any]) -> None:
    assert not ok(data), data


def test_a_tune_made_outside_a_profile_is_checked_too() -> None:
    with pytest.raises(UserError, match="tune.swappiness"):
        settings.Tune(swappiness=500)
    with pytest.raises(UserError, match="tune.governor"):
        settings.Tune(governor="performance\n[main]")
