"""Pins for hosttune/plan/__init__.py (issue 21, practice round HTOP8): `resolve_all` is `resolve` for every local
rank with every argument passed on (the endpoint too), and a rank's reasons in their order."""

import dataclasses

import pytest

from hosttune import plan, profile
from hosttune.facts import Cpu, Facts
from hosttune.plan.network import Endpoint

CORES = tuple((i,) for i in range(4))
FACTS = Facts(cpu=Cpu(online=tuple(range(4)), logical=4, physical=4, cores=CORES, allowed_cpus=tuple(range(4))),
              root="/captured/host")
EP = Endpoint("10.1.2.3", "torchrun --rdzv-endpoint", nodes=2, torchrun=True)


@pytest.fixture(scope="module")
def prof() -> profile.Profile:
    return dataclasses.replace(profile.load("throughput"), env={"A": "1"})


def test_resolve_all_passes_every_argument_on(prof: profile.Profile) -> None:
    environ = {"OMP_NUM_THREADS": "3"}
    for kw in ({}, {"endpoint": EP}, {"override": True}, {"bound_by": "numactl"},
               {"endpoint": EP, "override": True, "bound_by": "srun --cpu-bind"}):
        got = plan.resolve_all(FACTS, prof, 2, environ, **kw)  # type: ignore[arg-type]
        assert got == [plan.resolve(FACTS, prof, r, 2, environ, **kw) for r in range(2)], kw  # type: ignore[arg-type]


def test_the_endpoint_of_a_captured_host_is_said_and_names_no_interface(prof: profile.Profile) -> None:
    line = ("network: torchrun --rdzv-endpoint 10.1.2.3: no interface named for a captured host (its routes are not "
            "in the capture)")
    with_ep = plan.resolve_all(FACTS, prof, 2, {}, endpoint=EP)
    without = plan.resolve_all(FACTS, prof, 2, {})
    for a, b in zip(with_ep, without):
        assert line in a.reasons and line not in b.reasons
        assert [r for r in a.reasons if r != line] == list(b.reasons)
        assert a.env == b.env


def test_a_ranks_whole_plan_with_the_callers_threads_kept(prof: profile.Profile) -> None:
    r1 = plan.resolve(FACTS, prof, 1, 2, {"OMP_NUM_THREADS": "3"})
    assert (r1.cpus, r1.mems, r1.mem_policy, r1.threads, r1.gpu, r1.cuda_device) == ((2, 3), (), "none", 3, None, None)
    assert r1.env == {"HOSTTUNE_PIN_MEMORY": "0", "HOSTTUNE_DETERMINISTIC": "0", "A": "1", "OMP_NUM_THREADS": "3",
                      "HOSTTUNE_NUM_WORKERS": "0", "HOSTTUNE_PERSISTENT_WORKERS": "0"}
    assert (r1.kept, r1.overridden) == ({"OMP_NUM_THREADS": "2"}, {})
    assert list(r1.reasons) == [
        "allocator: jemalloc not found on this host",
        "allocator: tcmalloc not found on this host",
        "allocator: glibc malloc (no usable jemalloc/tcmalloc)",
        "env: 1 literal entries from the profile (A)",
        "binding: 2 core(s) 2-3, disjoint from the other ranks",
        "memory: no policy (no allowed memory node for this rank's CPUs)",
        "threads: 2 (2 physical cores for this rank; SMT siblings count once)",
        "dataloader: 0 workers (<= 2 cores: workers would take cores from compute)",
        "OMP_NUM_THREADS=3 kept: set by you (profile: 2; --override to use the profile)",
        "MKL_NUM_THREADS: not set, so MKL follows your OMP_NUM_THREADS",
    ]
