"""Pins for hosttune.launch.rank.handed (issue 21, round-8 practice, HLAU8), as one table: the launcher's plan for a
rank is taken only from a table of world size -> row of plans; anything else under "plans" (a list, text, a number)
is tampering (Untrusted, one exact line); a missing world size, row or entry means "plan again" (None); a plan
that does not parse or names another rank is tampering; a good one comes back whole."""

from typing import Any, Dict, Tuple

import pytest

from hosttune import trust
from hosttune.launch.rank import handed
from hosttune.rankplan import RankPlan

PLAN = RankPlan(local_rank=1, local_world_size=2, cpus=(2, 3), mems=(1,), mem_policy="bind",
                env={"OMP_NUM_THREADS": "2"}, reasons=("threads: 2",), threads=2)
ROW = [None, PLAN.to_dict()]
NOT_A_TABLE = "the launcher's handoff is malformed (its plans are not a table); tampered?"
CASES: Dict[str, Tuple[Any, Any]] = {
    "good": ({"plans": {"2": ROW}}, PLAN),
    "no_plans": ({}, None),
    "plans_null": ({"plans": None}, None),
    "plans_empty_list": ({"plans": []}, None),  # empty: `or {}` takes it as no plans
    "plans_list": ({"plans": [ROW]}, NOT_A_TABLE),
    "plans_text": ({"plans": "2"}, NOT_A_TABLE),
    "plans_number": ({"plans": 2}, NOT_A_TABLE),
    "plans_true": ({"plans": True}, NOT_A_TABLE),
    "other_world": ({"plans": {"4": ROW}}, None),
    "int_key_is_not_the_world": ({"plans": {2: ROW}}, None),
    "row_not_a_list": ({"plans": {"2": {"1": PLAN.to_dict()}}}, None),
    "row_too_short": ({"plans": {"2": [PLAN.to_dict()]}}, None),
    "entry_null": ({"plans": {"2": [PLAN.to_dict(), None]}}, None),
    "entry_malformed": ({"plans": {"2": [None, {"local_rank": 1}]}},
                        "the launcher's handoff has a malformed plan for rank 1/2 (not a plan: 'local_world_size'); "
                        "tampered?"),
    "entry_of_another_rank": ({"plans": {"2": [None, dict(PLAN.to_dict(), local_rank=0)]}},
                              "the launcher's handoff gives rank 1/2 the plan of rank 0/2; tampered?"),
    "entry_of_another_world": ({"plans": {"2": [None, dict(PLAN.to_dict(), local_world_size=3)]}},
                               "the launcher's handoff gives rank 1/2 the plan of rank 1/3; tampered?"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_handed_table(name: str) -> None:
    data, want = CASES[name]
    if isinstance(want, str):
        with pytest.raises(trust.Untrusted) as exc:
            handed(data, 1, 2)
        assert str(exc.value) == want
    else:
        assert handed(data, 1, 2) == want


# ---- setup: the failure rule's whole answer --------------------------------------------------------------------
def test_setup_takes_the_handed_plan_with_its_tools_and_no_bind() -> None:
    from hosttune.launch.rank import Setup, setup

    data = {"plans": {"2": ROW}, "tools": {"libnuma": "/lib/libnuma.so.1", "numactl": "/usr/bin/numactl"},
            "no_bind": True}
    assert setup(data, 1, 2, {}) == Setup(PLAN, "/lib/libnuma.so.1", "/usr/bin/numactl", True, None)
    assert setup({"plans": {"2": ROW}, "tools": "x"}, 1, 2, {}) == Setup(PLAN, None, None, False, None)


def test_setup_without_a_plan_is_one_warning_and_binds_nothing(tmp_path: Any) -> None:
    import os

    import hosttune
    from hosttune.launch.rank import Setup, setup

    root = os.path.dirname(os.path.dirname(os.path.realpath(hosttune.__file__)))
    missing = str(tmp_path / "python3")
    got = setup({"planner": {"python": missing, "root": root}}, 1, 2, {"PATH": "/usr/bin:/bin"})
    assert got == Setup(None, None, None, True,
                        f"plan not applied (the launcher's planner (its Python) {missing}: not an executable file)")
