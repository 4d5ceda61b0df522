"""Pins for hosttune/launch/binding.py (issue 21, coverage after mutation round 5): what a plain job's binding really
does to the process it binds. bind_self runs in a child interpreter (it changes its own process's affinity and memory
policy, which a pytest worker must keep), on this machine's real CPUs and memory nodes; the child reports its Binding
and its affinity as the kernel gives it back."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, Optional, Sequence

import pytest

import hosttune
from hosttune.launch import binding
from hosttune.launch.procfs import self_mems_allowed

REPO = str(Path(hosttune.__file__).resolve().parent.parent)
ALLOWED = tuple(sorted(os.sched_getaffinity(0)))
NODE = (self_mems_allowed() or (0,))[0]

CHILD = """
import json, os, sys
from types import SimpleNamespace
from hosttune.launch import binding
spec = json.loads(sys.argv[1])
plan = SimpleNamespace(cpus=tuple(spec["cpus"]), mems=tuple(spec["mems"]), mem_policy=spec["policy"])
b = binding.bind_self(plan, spec.get("libnuma"), spec.get("numactl"))
print(json.dumps({"binding": b._asdict(), "affinity": sorted(os.sched_getaffinity(0))}))
"""


def has_libnuma() -> bool:
    """Asked of the dynamic loader here, not of binding._libnuma (the code under test)."""
    import ctypes

    try:
        ctypes.CDLL("libnuma.so.1")
    except OSError:
        return False
    return True


def bind_in_child(cpus: Sequence[int] = (), mems: Sequence[int] = (), policy: str = "none",
                  libnuma: Optional[str] = None, numactl: Optional[str] = None, **env: str) -> Dict[str, Any]:
    spec = {"cpus": list(cpus), "mems": list(mems), "policy": policy, "libnuma": libnuma, "numactl": numactl}
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=dict(os.environ, PYTHONPATH=REPO, **env),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_effective_cpus_are_the_plans_inside_the_allowed_set_or_the_whole_allowed_set() -> None:
    assert binding.effective_cpus((1, 2, 9), (0, 1, 2, 3)) == (1, 2)
    assert binding.effective_cpus((8, 9), (3, 1, 2)) == (1, 2, 3)  # never an empty (EINVAL) mask


def test_effective_mems_without_a_policy_or_nodes_is_none_and_an_unreadable_mems_allowed_keeps_the_plan() -> None:
    plan = SimpleNamespace(cpus=(), mems=(3, 1), mem_policy="bind")
    assert binding.effective_mems(plan, ()) == ("bind", (1, 3))
    assert binding.effective_mems(SimpleNamespace(cpus=(), mems=(1,), mem_policy="none"), (1,)) == ("none", ())
    assert binding.effective_mems(SimpleNamespace(cpus=(), mems=(), mem_policy="bind"), (1,)) == ("none", ())


def test_plan_cpus_outside_the_allowed_set_are_dropped_with_a_note_and_the_rest_is_the_affinity() -> None:
    mine = ALLOWED[-1]
    out = bind_in_child(cpus=(mine, 4095))
    assert out["affinity"] == [mine]
    assert out["binding"]["cpus"] == [mine]
    assert out["binding"]["notes"] == [f"plan CPUs {mine},4095 narrowed to the allowed {mine}"]


def test_plan_cpus_none_of_which_are_allowed_leave_the_whole_allowed_set() -> None:
    out = bind_in_child(cpus=(4095,))
    assert out["affinity"] == list(ALLOWED) and out["binding"]["cpus"] == list(ALLOWED)
    assert out["binding"]["notes"][0].startswith("plan CPUs 4095 narrowed to the allowed ")


def test_no_cpus_in_the_plan_leaves_the_affinity_alone() -> None:
    out = bind_in_child()
    assert out["affinity"] == list(ALLOWED)
    assert out["binding"] == {"cpus": [], "mem_policy": "none", "mems": [], "prefix": [], "notes": []}


def test_without_set_mempolicy_and_without_numactl_memory_is_left_unbound_and_said(tmp_path: Path) -> None:
    """libnuma here lacks set_mempolicy (a real library without it) and no numactl is on PATH."""
    out = bind_in_child(mems=(NODE,), policy="bind", libnuma="libm.so.6", PATH=str(tmp_path))
    b = out["binding"]
    assert (b["mem_policy"], b["mems"], b["prefix"]) == ("none", [], [])
    assert b["notes"] == ["memory not bound (libnuma.so.1 not found; numactl not found either)"]


def test_without_set_mempolicy_numactl_from_path_becomes_the_prefix(tmp_path: Path) -> None:
    tool = tmp_path / "numactl"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    out = bind_in_child(mems=(NODE,), policy="preferred", libnuma="libm.so.6", PATH=str(tmp_path))
    b = out["binding"]
    assert (b["mem_policy"], b["mems"], b["notes"]) == ("preferred", [NODE], [])
    assert b["prefix"] == [str(tool), f"--preferred={NODE}"]


def test_a_refused_set_mempolicy_says_why() -> None:
    out = subprocess.run([sys.executable, "-c", "from hosttune.launch.binding import set_mempolicy; "
                          "print(set_mempolicy('bind', (1023,)))"], env=dict(os.environ, PYTHONPATH=REPO),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    if not has_libnuma():
        assert out.stdout.strip() == "libnuma.so.1 not found"
    else:
        # EINVAL: no such node (EPERM where a seccomp profile refuses the call itself)
        assert out.stdout.strip() in ("set_mempolicy failed: Invalid argument",
                                      "set_mempolicy failed: Operation not permitted"), out.stdout


def test_a_libnuma_path_that_is_gone_falls_back_to_the_systems_libnuma(tmp_path: Path) -> None:
    """facts.tools.libnuma names a file removed since detection: the system's libnuma.so.1 binds, no numactl."""
    if not has_libnuma():
        pytest.skip("libnuma.so.1 not installed")
    out = bind_in_child(mems=(NODE,), policy="bind", libnuma=str(tmp_path / "libnuma.so.1"), PATH=str(tmp_path))
    b = out["binding"]
    if b["notes"] and "Operation not permitted" in b["notes"][0]:
        pytest.skip("set_mempolicy is not permitted here (a seccomp profile without CAP_SYS_NICE)")
    assert (b["mem_policy"], b["mems"], b["prefix"], b["notes"]) == ("bind", [NODE], [], []), b


@pytest.mark.skipif(os.geteuid() != 0, reason="the trust rule for programs applies as root")
def test_as_root_a_numactl_others_may_write_is_refused_and_memory_left_unbound(tmp_path: Path) -> None:
    tool = tmp_path / "numactl"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o777)  # anyone may change what root would run
    out = bind_in_child(mems=(NODE,), policy="bind", libnuma="libm.so.6", PATH=str(tmp_path))
    b = out["binding"]
    assert (b["mem_policy"], b["mems"], b["prefix"]) == ("none", [], []), b
    (note,) = b["notes"]
    assert note.startswith(f"memory not bound (libnuma.so.1 not found; refusing numactl {tool}"), note
