"""Pins for hosttune.launch.job (issue 21, session 9 practice rounds): prepare() plans from the profile it is given (a
path: its values, not the host's active profile's) and render_text (`hosttune exec --dry-run`) shows every rank, each
with its own CPUs, memory nodes, variables and reasons. Synthetic facts (4 cores, 2 NUMA nodes, no allocator found),
so the whole text is exact; in-process (prepare never starts anything)."""

from pathlib import Path

import pytest

from hosttune.errors import UserError
from hosttune.facts import Cpu, Facts, Numa, NumaNode
from hosttune.launch import job

CPUS = (0, 1, 2, 3)
FACTS = Facts(cpu=Cpu(logical=4, physical=4, online=CPUS, allowed_cpus=CPUS, cores=tuple((c,) for c in CPUS)),
              numa=Numa(nodes=(NumaNode(0, (0, 1), 1000), NumaNode(1, (2, 3), 1000)), allowed_mems=(0, 1)))
ENV = {"PATH": "/usr/bin:/bin"}

TORCHRUN_TEXT = (
    '# torchrun job\n'
    'argv: torchrun --nproc-per-node=2 train.py\n'
    'torchrun env (same for every rank):\n'
    '  HOSTTUNE_DETERMINISTIC=0\n'
    '  HOSTTUNE_PIN_MEMORY=0\n'
    '  OMP_NUM_THREADS=1\n'
    'rank 0/2: cpus 0-1 mems 0 (bind)\n'
    '  HOSTTUNE_NUM_WORKERS=0\n'
    '  HOSTTUNE_PERSISTENT_WORKERS=0\n'
    '  MKL_NUM_THREADS=1\n'
    '  # allocator: jemalloc not found on this host\n'
    '  # allocator: tcmalloc not found on this host\n'
    '  # allocator: glibc malloc (no usable jemalloc/tcmalloc)\n'
    '  # network: torchrun --master-addr 127.0.0.1 is loopback: one node, no interface named\n'
    '  # binding: 2 core(s) 0-1 on NUMA node(s) 0, disjoint from the other ranks\n'
    '  # memory: bind to node(s) 0\n'
    '  # threads: 1 (1 physical core for this rank; SMT siblings count once)\n'
    '  # dataloader: 0 workers (<= 2 cores: workers would take cores from compute)\n'
    'rank 1/2: cpus 2-3 mems 1 (bind)\n'
    '  HOSTTUNE_NUM_WORKERS=0\n'
    '  HOSTTUNE_PERSISTENT_WORKERS=0\n'
    '  MKL_NUM_THREADS=1\n'
    '  # allocator: jemalloc not found on this host\n'
    '  # allocator: tcmalloc not found on this host\n'
    '  # allocator: glibc malloc (no usable jemalloc/tcmalloc)\n'
    '  # network: torchrun --master-addr 127.0.0.1 is loopback: one node, no interface named\n'
    '  # binding: 2 core(s) 2-3 on NUMA node(s) 1, disjoint from the other ranks\n'
    '  # memory: bind to node(s) 1\n'
    '  # threads: 1 (1 physical core for this rank; SMT siblings count once)\n'
    '  # dataloader: 0 workers (<= 2 cores: workers would take cores from compute)\n'
    '(restarted ranks and a changed world size get their plan again from the per-rank hook)'
)

PLAIN_TEXT = (
    '# plain job\n'
    'argv: python3 train.py\n'
    'rank 0/1: cpus 0-3 mems 0-1 (bind)\n'
    '  HOSTTUNE_DETERMINISTIC=0\n'
    '  HOSTTUNE_NUM_WORKERS=0\n'
    '  HOSTTUNE_PERSISTENT_WORKERS=0\n'
    '  HOSTTUNE_PIN_MEMORY=0\n'
    '  MKL_NUM_THREADS=1\n'
    '  OMP_NUM_THREADS=1\n'
    '  # allocator: jemalloc not found on this host\n'
    '  # allocator: tcmalloc not found on this host\n'
    '  # allocator: glibc malloc (no usable jemalloc/tcmalloc)\n'
    '  # binding: 4 core(s) 0-3 on NUMA node(s) 0-1, disjoint from the other ranks\n'
    '  # memory: bind to node(s) 0-1\n'
    '  # threads: 1 (1 physical core for this rank; SMT siblings count once)\n'
    '  # dataloader: 0 workers (<= 2 cores: workers would take cores from compute)\n'
    '(Python processes this job starts with rank variables apply their own plan at start; '
    'multiprocessing children without them get an even share of the threads)'
)


@pytest.fixture
def one_thread(tmp_path: Path) -> str:
    path = tmp_path / "one-thread.yaml"
    path.write_text("threads: 1\n")
    return str(path)


def test_a_torchrun_job_plans_each_rank_from_the_profile_given(one_thread: str) -> None:
    launch = job.prepare(["torchrun", "--nproc-per-node=2", "train.py"], profile=one_thread, facts=FACTS,
                         environ=ENV, measured=False)
    assert job.render_text(launch) == TORCHRUN_TEXT


def test_a_plain_job_plans_from_the_profile_given(one_thread: str) -> None:
    launch = job.prepare(["python3", "train.py"], profile=one_thread, facts=FACTS, environ=ENV, measured=False)
    assert job.render_text(launch) == PLAIN_TEXT
    assert launch.env["OMP_NUM_THREADS"] == "1" and launch.ranks[0].env["OMP_NUM_THREADS"] == "1"


def test_a_profile_path_that_does_not_exist_is_an_error_not_the_default(tmp_path: Path) -> None:
    with pytest.raises(UserError) as err:
        job.prepare(["true"], profile=str(tmp_path / "missing.yaml"), facts=FACTS, environ=ENV, measured=False)
    assert "missing.yaml" in str(err.value)


NO_GPU = "; but this host has no GPU, and torchrun's NUMA binding places each rank by its GPU, so it will fail"


def test_a_launcher_that_binds_is_named_with_the_no_gpu_warning_in_the_text_and_the_notices(one_thread: str) -> None:
    launch = job.prepare(["torchrun", "--nproc-per-node=2", "--numa-binding=node", "train.py"], profile=one_thread,
                         facts=FACTS, environ=ENV, measured=False)
    assert job.render_text(launch).split("\n")[:3] == [
        "# torchrun job",
        "argv: torchrun --nproc-per-node=2 --numa-binding=node train.py",
        "# torchrun --numa-binding=node binds each rank: hosttune binds nothing on top (no affinity, memory policy or "
        "numactl); threads, allocator and env as below" + NO_GPU,
    ]
    assert job.notices(launch) == [
        "torchrun --numa-binding=node binds the ranks; hosttune does not bind on top (it sets threads, allocator and "
        "env)" + NO_GPU]
    assert [(r.cpus, r.mem_policy) for r in launch.ranks] == [((), "none"), ((), "none")]


def test_a_cpu_hosts_deepspeed_ranks_are_its_numa_nodes_with_cores() -> None:
    # deepspeed's CPU accelerator counts the NUMA nodes that have cores: a memory-only node (CXL, HBM) is no rank
    memory_only = Facts(cpu=FACTS.cpu, numa=Numa(nodes=(NumaNode(0, CPUS, 1000), NumaNode(1, (), 1000)),
                                                 allowed_mems=(0, 1)))
    launch = job.prepare(["deepspeed", "train.py"], facts=memory_only, environ=ENV, measured=False)
    assert (launch.kind, launch.launcher.local_ranks, [r.cpus for r in launch.ranks]) == ("launcher", 1, [CPUS])
    launch = job.prepare(["deepspeed", "train.py"], facts=FACTS, environ=ENV, measured=False)
    assert (launch.launcher.local_ranks, [r.cpus for r in launch.ranks]) == (2, [(0, 1), (2, 3)])
