"""binding: the memory policy a rank really runs under.

- Mems_allowed (the cpuset's memory nodes) narrows the plan's nodes: set_mempolicy with a node outside it fails
  with EINVAL, and numactl --membind refuses it, so a plan made from a captured or wider view would leave the rank
  unbound or not started;
- `memory_policy: preferred` is applied as MPOL_PREFERRED (numa_maps "prefer:N"), not dropped and not turned into a
  hard bind: read back from a real child's /proc/<pid>/numa_maps after bind_self and exec, through libnuma and
  through the numactl prefix.
"""

import functools
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import pytest

from hosttune.launch import binding
from hosttune.launch.procfs import parse_numa_maps_policy

REPO = Path(__file__).resolve().parents[1]
HAS_NUMA_MAPS = os.path.exists("/proc/self/numa_maps")


def plan(policy: str, mems: Tuple[int, ...], cpus: Tuple[int, ...] = ()) -> Any:
    return SimpleNamespace(cpus=cpus, mems=mems, mem_policy=policy)


def my_mems_allowed() -> List[int]:
    """Mems_allowed_list of this process, read here (not through procfs.py)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Mems_allowed_list:"):
            out: List[int] = []
            for part in line.split(":", 1)[1].strip().split(","):
                lo, _, hi = part.partition("-")
                out.extend(range(int(lo), int(hi or lo) + 1))
            return out
    return []


# ---- Mems_allowed ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["bind", "preferred"])
@pytest.mark.parametrize("mems, allowed, want", [
    ((0, 1), (1,), (1,)),  # a cpuset that gives this job node 1 only
    ((0, 1, 2, 3), (1, 3), (1, 3)),
    ((2,), (0, 1), ()),  # nothing of the plan is allowed: no policy rather than EINVAL
    ((0, 1), (0, 1, 2, 3), (0, 1)),
])
def test_plan_nodes_are_narrowed_to_mems_allowed(policy: str, mems: Tuple[int, ...], allowed: Tuple[int, ...],
                                                 want: Tuple[int, ...]) -> None:
    got = binding.effective_mems(plan(policy, mems), allowed)
    assert got == ((policy, want) if want else ("none", ()))


def test_this_process_mems_allowed_is_read_when_not_given() -> None:
    allowed = my_mems_allowed()
    assert allowed, "Mems_allowed_list missing from /proc/self/status"
    outside = max(allowed) + 1
    assert binding.effective_mems(plan("bind", (allowed[0], outside))) == ("bind", (allowed[0],))
    assert binding.effective_mems(plan("preferred", (outside,))) == ("none", ())


# ---- the policy a real child runs under -----------------------------------------------------------------------

CHILD = r"""
import os, sys
from types import SimpleNamespace
from hosttune.launch import binding
policy, node, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if how == "numactl":
    binding._libnuma = lambda path: None  # as on a host without libnuma.so.1: the numactl prefix instead
b = binding.bind_self(SimpleNamespace(cpus=(), mems=(node,), mem_policy=policy), numactl="numactl")
sys.stderr.write(repr(b) + "\n")
argv = list(b.prefix) + ["cat", "/proc/self/numa_maps"]
os.execvp(argv[0], argv)
"""


def child_policy(policy: str, node: int, how: str) -> Tuple[Optional[Tuple[str, Tuple[int, ...]]], str]:
    env: Dict[str, str] = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", CHILD, policy, str(node), how], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return parse_numa_maps_policy(r.stdout), r.stderr


def _libnuma_works() -> bool:
    return binding._libnuma(None) is not None


@functools.cache
def mempolicy_permitted() -> bool:
    """set_mempolicy is allowed here (Docker's default seccomp profile refuses it without CAP_SYS_NICE): tried in
    a child, so this process keeps its own policy."""
    code = ("import sys; from hosttune.launch.binding import set_mempolicy; "
            "sys.exit(0 if set_mempolicy('preferred', (int(sys.argv[1]),)) is None else 1)")
    r = subprocess.run([sys.executable, "-c", code, str(my_mems_allowed()[0])],
                       env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, timeout=120)
    return r.returncode == 0


def needs_mempolicy() -> None:
    if not HAS_NUMA_MAPS:
        pytest.skip("kernel without CONFIG_NUMA: no numa_maps to read back")
    if not _libnuma_works():
        pytest.skip("libnuma.so.1 not installed")
    if not mempolicy_permitted():
        pytest.skip("set_mempolicy is not permitted here (a seccomp profile without CAP_SYS_NICE)")


@pytest.mark.skipif(not HAS_NUMA_MAPS, reason="kernel without CONFIG_NUMA: no numa_maps to read back")
@pytest.mark.parametrize("policy, shown", [("preferred", "preferred"), ("bind", "bind")])
def test_memory_policy_reaches_the_exec_d_program_through_libnuma(policy: str, shown: str) -> None:
    needs_mempolicy()
    node = my_mems_allowed()[0]
    got, log = child_policy(policy, node, "libnuma")
    assert "prefix=()" in log, log  # set_mempolicy itself, no numactl
    assert got == (shown, (node,)), (got, log)


@pytest.mark.skipif(not HAS_NUMA_MAPS, reason="kernel without CONFIG_NUMA: no numa_maps to read back")
@pytest.mark.parametrize("policy, flag", [("preferred", "--preferred="), ("bind", "--membind=")])
def test_memory_policy_reaches_the_program_through_the_numactl_prefix(policy: str, flag: str) -> None:
    import shutil

    if not shutil.which("numactl"):
        pytest.skip("numactl not installed")
    needs_mempolicy()  # numactl makes the same call
    node = my_mems_allowed()[0]
    got, log = child_policy(policy, node, "numactl")
    assert f"'{flag}{node}'" in log, log
    assert got == (policy, (node,)), (got, log)


@pytest.mark.skipif(not HAS_NUMA_MAPS, reason="kernel without CONFIG_NUMA: no numa_maps to read back")
@pytest.mark.parametrize("policy", ["preferred", "bind"])
def test_profile_memory_policy_reaches_a_program_under_hosttune_exec(tmp_path: Path, policy: str) -> None:
    """The whole path: profile -> plan -> exec's binding -> the program. Run twice: the second start may be served
    from the exec start-up cache, which must apply the same policy."""
    import json

    needs_mempolicy()
    prof = tmp_path / "p.yaml"
    prof.write_text(f"base: throughput\nmemory_policy: {policy}\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "hosttune", "exec", "--profile", str(prof)]
    dry = subprocess.run(base + ["--dry-run", "--json", "--", "cat"], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    rank = json.loads(dry.stdout)["ranks"][0]
    assert rank["mem_policy"] == policy and rank["mems"], rank
    for _ in range(2):
        r = subprocess.run(base + ["--", "cat", "/proc/self/numa_maps"], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert parse_numa_maps_policy(r.stdout) == (policy, tuple(rank["mems"])), (r.stdout[:200], r.stderr)
