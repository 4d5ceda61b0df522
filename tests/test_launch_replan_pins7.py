"""Pins for hosttune.launch.replan.plan (issue 21, session 9 practice rounds), in-process: the launcher's planner
plans one rank from the facts and profile it is handed; a handed profile without handed facts is not used (no facts:
everything comes from this host, its detected facts and its active profile, as the docstring says)."""

from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune import profile as profmod
from hosttune.facts import Cpu, Facts, Numa, NumaNode
from hosttune.launch import replan

CPUS = (0, 1, 2, 3)
FACTS = Facts(cpu=Cpu(logical=4, physical=4, online=CPUS, allowed_cpus=CPUS, cores=tuple((c,) for c in CPUS)),
              numa=Numa(nodes=(NumaNode(0, CPUS, 1000),), allowed_mems=(0,)))


@pytest.fixture
def one_thread(tmp_path: Path) -> Dict[str, Any]:
    path = tmp_path / "one-thread.yaml"
    path.write_text("threads: 1\n")
    return profmod.active(str(path), FACTS).to_dict()


def _req(**kw: Any) -> Dict[str, Any]:
    return {"local_rank": 1, "world": 2, "environ": {"PATH": "/usr/bin:/bin"}, **kw}


def test_handed_facts_and_profile_plan_the_rank(one_thread: Dict[str, Any]) -> None:
    out = replan.plan(_req(facts=FACTS.to_dict(), profile=one_thread))
    assert sorted(out) == ["libnuma", "numactl", "plan"] and out["libnuma"] is None and out["numactl"] is None
    plan = out["plan"]
    assert (plan["local_rank"], plan["local_world_size"], plan["cpus"]) == (1, 2, [2, 3])
    assert plan["env"]["OMP_NUM_THREADS"] == "1"
    default = replan.plan(_req(facts=FACTS.to_dict()))["plan"]  # no profile handed: the active one (the default)
    assert default["cpus"] == [2, 3] and default["env"]["OMP_NUM_THREADS"] == "2"


def test_without_handed_facts_a_handed_profile_is_not_used(one_thread: Dict[str, Any]) -> None:
    host = replan.plan(_req())
    assert replan.plan(_req(profile=one_thread)) == host
