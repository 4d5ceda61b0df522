"""Pins for hosttune/launch/binding.py (issue 21, round 6): the CPUs and memory nodes a rank really gets inside what
it is allowed, the memory policy set_mempolicy really installs (read back with get_mempolicy, then reset), and
bind_self's numactl prefix and notes. In-process: the test binds nothing it does not undo (CPUs to the set this
process already has, the memory policy back to the default)."""

import ctypes
import ctypes.util
import os
from types import SimpleNamespace
from typing import Iterator, Optional, Sequence, Tuple

import pytest

from hosttune.launch import binding
from hosttune.launch.procfs import self_mems_allowed


def plan(cpus: Sequence[int] = (), mems: Sequence[int] = (), policy: str = "none") -> SimpleNamespace:
    return SimpleNamespace(cpus=tuple(cpus), mems=tuple(mems), mem_policy=policy)


# ---- effective_cpus / effective_mems ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cpus,allowed,want", [
    ((3, 1, 2), {0, 1, 2, 3}, (1, 2, 3)),
    ((2, 3, 9), {1, 2, 3}, (2, 3)),
    ((8, 9), {3, 1, 2}, (1, 2, 3)),  # they do not meet: the allowed set, never EINVAL
    ((), [5, 4], (4, 5)),
    ((4, 4, 5), [4], (4,)),
])
def test_effective_cpus(cpus: Tuple[int, ...], allowed: Sequence[int], want: Tuple[int, ...]) -> None:
    assert binding.effective_cpus(cpus, allowed) == want


@pytest.mark.parametrize("policy", ["none", "interleave", "", "auto"])
def test_effective_mems_only_for_bind_and_preferred(policy: str) -> None:
    assert binding.effective_mems(plan(mems=(0,), policy=policy), (0,)) == ("none", ())


@pytest.mark.parametrize("policy", ["bind", "preferred"])
def test_effective_mems(policy: str) -> None:
    assert binding.effective_mems(plan(mems=(), policy=policy), (0,)) == ("none", ())
    assert binding.effective_mems(plan(mems=(2, 0, 1), policy=policy), (0, 2, 3)) == (policy, (0, 2))
    assert binding.effective_mems(plan(mems=(2, 1), policy=policy), (0,)) == ("none", ())
    # Mems_allowed unreadable (empty): the plan's own nodes, sorted
    assert binding.effective_mems(plan(mems=(3, 1), policy=policy), ()) == (policy, (1, 3))
    mine = self_mems_allowed()
    assert binding.effective_mems(plan(mems=(max(mine) + 1, min(mine)), policy=policy)) == (policy, (min(mine),))


# ---- set_mempolicy, read back ----------------------------------------------------------------------------------------

LIBNUMA = ctypes.util.find_library("numa")
needs_libnuma = pytest.mark.skipif(LIBNUMA is None or not os.path.exists("/proc/self/numa_maps"),
                                   reason="libnuma not installed, or a kernel without CONFIG_NUMA")


def _lib() -> ctypes.CDLL:
    return ctypes.CDLL("libnuma.so.1", use_errno=True)


def current_policy() -> Tuple[int, int]:
    """(mode, first word of the node mask) of this thread, by get_mempolicy(2)."""
    lib = _lib()
    mode = ctypes.c_int(-1)
    mask = (ctypes.c_ulong * 16)()
    fn = lib.get_mempolicy
    fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_ulong), ctypes.c_ulong, ctypes.c_void_p,
                   ctypes.c_ulong]
    fn.restype = ctypes.c_long
    assert fn(ctypes.byref(mode), mask, 16 * 64, None, 0) == 0, os.strerror(ctypes.get_errno())
    return mode.value, mask[0]


@pytest.fixture()
def reset_policy() -> Iterator[None]:
    before = current_policy()
    try:
        yield
    finally:
        fn = _lib().set_mempolicy
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong]
        fn.restype = ctypes.c_long
        assert fn(0, None, 0) == 0  # MPOL_DEFAULT
        assert current_policy()[0] == 0 or before[0] != 0


@needs_libnuma
@pytest.mark.usefixtures("reset_policy")
def test_bind_installs_mpol_bind_on_exactly_the_node() -> None:
    node = min(self_mems_allowed())
    assert binding.set_mempolicy("bind", (node,)) is None
    assert current_policy() == (binding.MPOL_BIND, 1 << node)


@needs_libnuma
@pytest.mark.usefixtures("reset_policy")
def test_preferred_installs_mpol_preferred_on_exactly_the_node() -> None:
    node = min(self_mems_allowed())
    assert binding.set_mempolicy("preferred", (node,), libnuma_path=LIBNUMA) is None
    assert current_policy() == (binding.MPOL_PREFERRED, 1 << node)


@needs_libnuma
@pytest.mark.usefixtures("reset_policy")
def test_a_node_that_does_not_exist_is_the_kernels_error() -> None:
    missing = max(self_mems_allowed()) + 7
    assert binding.set_mempolicy("bind", (missing,)) == "set_mempolicy failed: Invalid argument"
    assert binding.set_mempolicy("preferred", (missing, missing + 1)) == "set_mempolicy failed: Invalid argument"
    assert current_policy()[0] == 0


@needs_libnuma
@pytest.mark.usefixtures("reset_policy")
def test_a_node_past_the_first_mask_word() -> None:
    # node 70 lives in the second word of the mask: maxnode must cover it (words * bits + 1), and it does not
    # exist here, so the kernel answers EINVAL rather than a mask that silently lost the bit
    assert binding.set_mempolicy("bind", (70,)) == "set_mempolicy failed: Invalid argument"


def test_a_library_without_set_mempolicy_is_said() -> None:
    assert binding.set_mempolicy("bind", (0,), libnuma_path="libc.so.6") == "libnuma.so.1 not found"
    assert binding._libnuma("libc.so.6") is not None
    assert binding._libnuma("/nonexistent/libnothing.so") is not None or LIBNUMA is None  # falls back to libnuma


# ---- bind_self -------------------------------------------------------------------------------------------------------

def test_bind_self_with_nothing_to_bind() -> None:
    got = binding.bind_self(plan())
    assert got == binding.Binding((), "none", (), (), ())
    assert got.cpus == () and got.prefix == () and got.notes == ()


def test_bind_self_narrows_the_cpus_to_the_allowed_and_says_so() -> None:
    allowed = tuple(sorted(os.sched_getaffinity(0)))
    got = binding.bind_self(plan(cpus=(*allowed, 4095)))
    assert got.cpus == allowed and tuple(sorted(os.sched_getaffinity(0))) == allowed
    from hosttune.cpulist import format_cpulist
    assert got.notes == (f"plan CPUs {format_cpulist((*allowed, 4095))} narrowed to the allowed "
                         f"{format_cpulist(allowed)}",)
    same = binding.bind_self(plan(cpus=allowed))
    assert same.cpus == allowed and same.notes == ()


@pytest.mark.parametrize("policy,flag", [("bind", "--membind=0"), ("preferred", "--preferred=0")])
def test_bind_self_without_libnuma_uses_the_numactl_prefix(policy: str, flag: str) -> None:
    if 0 not in self_mems_allowed():
        pytest.skip("node 0 is not allowed here")
    got = binding.bind_self(plan(mems=(0,), policy=policy), libnuma_path="libc.so.6", numactl="/opt/numactl")
    assert got == binding.Binding((), policy, (0,), ("/opt/numactl", flag), ())


def test_bind_self_leaves_memory_alone_for_none_or_disallowed_nodes() -> None:
    missing = max(self_mems_allowed()) + 1
    got = binding.bind_self(plan(mems=(missing,), policy="bind"), libnuma_path="libc.so.6", numactl="/opt/numactl")
    assert got == binding.Binding((), "none", (), (), ())
    got = binding.bind_self(plan(mems=(0,), policy="none"), libnuma_path="libc.so.6", numactl="/opt/numactl")
    assert got.prefix == () and got.mem_policy == "none"


def test_bind_self_without_numactl_either_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    # the real gateway, on an empty PATH: numactl is not found, so the rank runs without the memory binding
    if 0 not in self_mems_allowed():
        pytest.skip("node 0 is not allowed here")
    tool, why = binding._numactl()
    assert (tool is None) == bool(why)
    monkeypatch.setenv("PATH", "/nonexistent-pins6")
    missing: Optional[str] = binding._numactl()[0]
    if missing is not None:
        pytest.skip("the programs gateway finds numactl outside PATH here")
    got = binding.bind_self(plan(mems=(0,), policy="bind"), libnuma_path="libc.so.6")
    assert got.prefix == () and got.mem_policy == "none" and got.mems == ()
    assert got.notes == ("memory not bound (libnuma.so.1 not found; numactl not found either)",)
