"""Pins for hosttune/launch/rank.py (issue 21, round 6): the rank side's pure parts, in-process: the caller's own
environment from what the launcher touched, the handed plan of this rank (and the malformed handoffs that are
tampering), the tools and no_bind handed with it, THE failure rule's propagation of Untrusted, the root-side check of
the plan's variables, and the two lines the entries print."""

import os
import sys
from typing import Any, Dict

import pytest

from hosttune import trust
from hosttune.launch import rank
from hosttune.rankplan import RankPlan


def plan(r: int, n: int, **kw: Any) -> RankPlan:
    return RankPlan(local_rank=r, local_world_size=n, cpus=(r,), mems=(0,), mem_policy="bind",
                    env={"OMP_NUM_THREADS": "1"}, **kw)


def row(n: int) -> list:
    return [plan(r, n).to_dict() for r in range(n)]


# ---- users_env -------------------------------------------------------------------------------------------------------

def test_users_env_undoes_what_the_launcher_touched() -> None:
    environ = {"OMP_NUM_THREADS": "1", "LD_PRELOAD": "/ours.so:/yours.so", "KEEP": "k"}
    got = rank.users_env({"OMP_NUM_THREADS": None, "LD_PRELOAD": "/yours.so", "NEVER_SET": None}, environ)
    assert got == {"LD_PRELOAD": "/yours.so", "KEEP": "k"}
    assert environ == {"OMP_NUM_THREADS": "1", "LD_PRELOAD": "/ours.so:/yours.so", "KEEP": "k"}  # not changed
    assert rank.users_env(None, environ) == environ and rank.users_env(None, environ) is not environ
    assert rank.users_env({}, {"A": "1"}) == {"A": "1"}


@pytest.mark.parametrize("touched,msg", [
    (["OMP_NUM_THREADS"], "the launcher's handoff is malformed (what it touched is not a table); tampered?"),
    ("x", "the launcher's handoff is malformed (what it touched is not a table); tampered?"),
    ({"A": 1}, "the launcher's handoff is malformed (what it touched is not text); tampered?"),
    ({1: "x"}, "the launcher's handoff is malformed (what it touched is not text); tampered?"),
])
def test_users_env_refuses_a_malformed_touched_table(touched: Any, msg: str) -> None:
    with pytest.raises(trust.Untrusted) as e:
        rank.users_env(touched, {})
    assert str(e.value) == msg


# ---- handed ----------------------------------------------------------------------------------------------------------

def test_handed_returns_this_ranks_plan_of_this_world_size() -> None:
    data = {"plans": {"2": row(2), "3": row(3)}}
    got = rank.handed(data, 1, 2)
    assert got == plan(1, 2)
    assert rank.handed(data, 2, 3) == plan(2, 3)


@pytest.mark.parametrize("data,r,n", [
    ({}, 0, 1),
    ({"plans": None}, 0, 1),
    ({"plans": {"2": row(2)}}, 0, 4),  # a world size nobody foresaw
    ({"plans": {"2": row(2)}}, 2, 2),
    ({"plans": {"2": row(2)}}, -1, 2),
    ({"plans": {"2": "not a row"}}, 0, 2),
    ({"plans": {"2": [None, None]}}, 0, 2),
])
def test_handed_none_means_plan_again(data: Dict[str, Any], r: int, n: int) -> None:
    assert rank.handed(data, r, n) is None


def test_handed_refuses_tampering() -> None:
    with pytest.raises(trust.Untrusted) as e:
        rank.handed({"plans": ["x"]}, 0, 1)
    assert str(e.value) == "the launcher's handoff is malformed (its plans are not a table); tampered?"
    with pytest.raises(trust.Untrusted) as e:
        rank.handed({"plans": {"2": [{"local_rank": 0}, None]}}, 0, 2)
    assert str(e.value).startswith("the launcher's handoff has a malformed plan for rank 0/2 (")
    assert str(e.value).endswith("); tampered?")
    with pytest.raises(trust.Untrusted) as e:
        rank.handed({"plans": {"2": [row(2)[0], row(2)[0]]}}, 1, 2)
    assert str(e.value) == "the launcher's handoff gives rank 1/2 the plan of rank 0/2; tampered?"
    with pytest.raises(trust.Untrusted) as e:
        rank.handed({"plans": {"2": [row(3)[0], None]}}, 0, 2)
    assert str(e.value) == "the launcher's handoff gives rank 0/2 the plan of rank 0/3; tampered?"


# ---- plan_for / setup (handed plans only: nothing is started) --------------------------------------------------------

def test_plan_for_a_handed_plan_carries_the_tools_and_no_bind() -> None:
    data = {"plans": {"2": row(2)}, "tools": {"libnuma": "/usr/lib/libnuma.so.1", "numactl": "/usr/bin/numactl"},
            "no_bind": 1}
    assert rank.plan_for(data, 1, 2, {}) == (plan(1, 2), "/usr/lib/libnuma.so.1", "/usr/bin/numactl", True)
    bare = {"plans": {"2": row(2)}, "tools": ["x"]}
    assert rank.plan_for(bare, 0, 2, {}) == (plan(0, 2), None, None, False)
    assert rank.plan_for({"plans": {"2": row(2)}, "no_bind": False}, 0, 2, {})[3] is False


def test_setup_with_a_handed_plan() -> None:
    data = {"plans": {"1": row(1)}, "tools": {"numactl": "/usr/bin/numactl"}}
    got = rank.setup(data, 0, 1, {})
    assert got == rank.Setup(plan(0, 1), None, "/usr/bin/numactl", False, None)


def test_setup_lets_tampering_through() -> None:
    with pytest.raises(trust.Untrusted):
        rank.setup({"plans": {"2": [row(2)[1], None]}}, 0, 2, {})
    with pytest.raises(trust.Untrusted) as e:
        rank.setup({"plans": {}, "planner": "python3"}, 0, 2, {})
    assert str(e.value) == "the launcher's handoff is malformed (its planner is not a table); tampered?"


@pytest.mark.parametrize("planner", [{"python": 5}, {"root": ["/"]}])
def test_a_planner_whose_paths_are_not_text_is_tampering(planner: Dict[str, Any]) -> None:
    with pytest.raises(trust.Untrusted) as e:
        rank._planner_argv({"planner": planner})
    assert str(e.value) == "the launcher's handoff is malformed (its planner's paths are not text); tampered?"


def test_planner_is_this_interpreter_and_this_hosttune() -> None:
    assert rank.planner() == {"python": sys.executable, "root": rank.own_root()}
    assert os.path.isfile(os.path.join(rank.own_root(), "hosttune", "launch", "rank.py"))
    assert rank.REPLAN_TIMEOUT_S >= 60 and rank.REPLAN_LIMIT == 4 << 20


# ---- checked_env (as root) and the lines -----------------------------------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="the check applies as root")
def test_checked_env_as_root_judges_only_what_the_plan_adds() -> None:
    assert rank.checked_env({"OMP_NUM_THREADS": "4"}, None, {}) == {"OMP_NUM_THREADS": "4"}
    with pytest.raises(trust.Untrusted) as e:
        rank.checked_env({"MY_DATA_DIR": "/data/x", "A": "1"}, None, {})
    assert "the launcher's plan: refusing env MY_DATA_DIR='/data/x' as root" in str(e.value)
    # the caller's own value is the caller's, not the plan's to judge
    assert rank.checked_env({"MY_DATA_DIR": "/data/x"}, None, {"MY_DATA_DIR": "/data/x"}) == {"MY_DATA_DIR": "/data/x"}
    # ... unless the launcher put it there itself (touched: unset before)
    with pytest.raises(trust.Untrusted):
        rank.checked_env({"MY_DATA_DIR": "/data/x"}, {"touched": {"MY_DATA_DIR": None}}, {"MY_DATA_DIR": "/data/x"})
    with pytest.raises(trust.Untrusted):
        rank.checked_env({"MY_DATA_DIR": "/data/x"}, None, {"MY_DATA_DIR": "/data/y"})


def test_the_two_lines() -> None:
    assert rank.refused_line("hosttune rank 1", ValueError("bad")) == "hosttune rank 1: bad; rank not started"
    assert (rank.warned_line("hosttune rank 1", "plan not applied (x)")
            == "hosttune rank 1: plan not applied (x); it runs as its launcher started it")
