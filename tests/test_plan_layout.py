"""The node's layout (hosttune/plan/layout.py): a launcher resolving each of N ranks in turn lays the node out once."""

import dataclasses
from typing import Any

import pytest
from _profilehelp import small_facts

from hosttune import plan, profile


def test_many_ranks_share_one_node_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher resolving each of N ranks in turn lays the node out once, not N times (4,000 ranks planned
    in quadratic time took 24 s)."""
    calls = []
    orig = plan._layout

    def counting(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return orig(*a, **k)

    monkeypatch.setattr(plan, "_layout", counting)
    facts, prof = small_facts(), profile.load("throughput")
    n = 300
    plans = [plan.resolve(facts, prof, r, n, environ={}) for r in range(n)]
    assert len(calls) == 1
    assert [p.local_rank for p in plans] == list(range(n))
    # the same answer a separate process (a rank's shim) gets when it plans only its own rank
    assert plan.resolve(dataclasses.replace(facts), prof, 7, n, environ={}).to_dict() == plans[7].to_dict()
    # another rank count or environment is laid out afresh
    assert plan.resolve(facts, prof, 0, 2, environ={}).cpus == (0, 1)
    assert len(calls) == 3
