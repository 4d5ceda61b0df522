"""Pins for mutation round 4's launch survivors (issue 21): the libnuma a caller names is the one used, and a
handed plan for another local world size is refused as tampered."""
import json
from typing import Any, Dict

import pytest

from hosttune import trust
from hosttune.launch import binding, handoff, rank
from hosttune.launch.job import prepare


def test_set_mempolicy_uses_the_libnuma_it_is_given() -> None:
    # libc loads but has no set_mempolicy (glibc does not wrap it): the named library is the one asked, so the
    # call reports it unusable rather than quietly loading the system libnuma and changing this process's policy.
    assert binding.set_mempolicy("preferred", [0], libnuma_path="libc.so.6") == "libnuma.so.1 not found"


def test_a_handed_plan_for_another_local_world_size_is_untrusted() -> None:
    content: Dict[str, Any] = json.loads(json.dumps(handoff.payload(prepare(["python3", "x.py"]), "m")))
    row = content["plans"]["2"]
    forged = dict(row[1], local_world_size=3)  # rank 1's plan, but planned for a world of 3
    with pytest.raises(trust.Untrusted, match="plan of rank 1/3"):
        rank.handed(dict(content, plans={"2": [row[0], forged]}), 1, 2)
