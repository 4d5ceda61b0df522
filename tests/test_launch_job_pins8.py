"""Pins for hosttune.launch.job (issue 21, round-8 practice, HLAU8): the whole `exec --dry-run` text, the start-up
notices and the world sizes planned ahead (more_plans) of the job shapes test_launch_job_pins7 does not show: an
mpirun job with unknown local ranks that binds itself, an mpirun job with a thread count on its command line, a
Slurm rank under --no-bind (kind srun) and a plain job under --no-bind. Synthetic facts (4 cores, 2 NUMA nodes, no
GPU) and a profile file: the whole text is exact; in-process (prepare never starts anything)."""

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from hosttune.errors import UserError
from hosttune.facts import Cpu, Facts, Numa, NumaNode
from hosttune.launch import job

CPUS = (0, 1, 2, 3)
FACTS = Facts(cpu=Cpu(logical=4, physical=4, online=CPUS, allowed_cpus=CPUS, cores=tuple((c,) for c in CPUS)),
              numa=Numa(nodes=(NumaNode(0, (0, 1), 1000), NumaNode(1, (2, 3), 1000)), allowed_mems=(0, 1)))
ENV = {"PATH": "/usr/bin:/bin"}

SLURM = dict(ENV, SLURM_LOCALID="1", SLURM_NTASKS_PER_NODE="2", SLURM_STEP_NUM_TASKS="2", SLURM_STEP_NUM_NODES="1")

MPIRUN_UNKNOWN_BOUND_TEXT = (
    "# launcher job (mpirun, unknown local ranks)\n"
    "argv: mpirun -np 4 -H n1,n2 --bind-to core python3 t.py\n"
    "# ranks per node unknown from the command line: each rank plans from OMPI_COMM_WORLD_LOCAL_SIZE / "
    "MPI_LOCALNRANKS\n"
    "# mpirun --bind-to core binds each rank: hosttune binds nothing on top (no affinity, memory policy "
    "or numactl); threads, allocator and env as below\n"
    "mpirun env (same for every rank):\n"
    "  HOSTTUNE_DETERMINISTIC=0\n"
    "  HOSTTUNE_PIN_MEMORY=0\n"
    "(each Python rank applies its plan at start from LOCAL_RANK/OMPI_COMM_WORLD_LOCAL_RANK/... through "
    "hosttune's per-rank hook)"
)
MPIRUN_TWO_THREADS_TEXT = (
    "# launcher job (mpirun, 2 local ranks)\n"
    "argv: mpirun --bind-to none -np 2 -x OMP_NUM_THREADS=2 python3 t.py\n"
    "# Open MPI binds ranks by default (core for np<=2, socket above): hosttune adds --bind-to none and "
    "binds each rank itself\n"
    "# OMP_NUM_THREADS=2 exported by the command line: each rank keeps it\n"
    "mpirun env (same for every rank):\n"
    "  HOSTTUNE_DETERMINISTIC=0\n"
    "  HOSTTUNE_PIN_MEMORY=0\n"
    "  OMP_NUM_THREADS=2\n"
    "rank 0/2: cpus 0-1 mems 0 (bind)\n"
    "  HOSTTUNE_NUM_WORKERS=0\n"
    "  HOSTTUNE_PERSISTENT_WORKERS=0\n"
    "  MKL_NUM_THREADS=2\n"
    "  # allocator: jemalloc not found on this host\n"
    "  # allocator: tcmalloc not found on this host\n"
    "  # allocator: glibc malloc (no usable jemalloc/tcmalloc)\n"
    "  # binding: 2 core(s) 0-1 on NUMA node(s) 0, disjoint from the other ranks\n"
    "  # memory: bind to node(s) 0\n"
    "  # threads: 2 (2 physical cores for this rank; SMT siblings count once)\n"
    "  # dataloader: 0 workers (<= 2 cores: workers would take cores from compute)\n"
    "rank 1/2: cpus 2-3 mems 1 (bind)\n"
    "  HOSTTUNE_NUM_WORKERS=0\n"
    "  HOSTTUNE_PERSISTENT_WORKERS=0\n"
    "  MKL_NUM_THREADS=2\n"
    "  # allocator: jemalloc not found on this host\n"
    "  # allocator: tcmalloc not found on this host\n"
    "  # allocator: glibc malloc (no usable jemalloc/tcmalloc)\n"
    "  # binding: 2 core(s) 2-3 on NUMA node(s) 1, disjoint from the other ranks\n"
    "  # memory: bind to node(s) 1\n"
    "  # threads: 2 (2 physical cores for this rank; SMT siblings count once)\n"
    "  # dataloader: 0 workers (<= 2 cores: workers would take cores from compute)\n"
    "(each Python rank applies its plan at start from LOCAL_RANK/OMPI_COMM_WORLD_LOCAL_RANK/... through "
    "hosttune's per-rank hook)"
)
SRUN_RANK_NO_BIND_TEXT = (
    "# srun job\n"
    "argv: python3 t.py\n"
    "rank 1/2: cpus (not bound) mems - (none)\n"
    "  HOSTTUNE_DETERMINISTIC=0\n"
    "  HOSTTUNE_NUM_WORKERS=0\n"
    "  HOSTTUNE_PERSISTENT_WORKERS=0\n"
    "  HOSTTUNE_PIN_MEMORY=0\n"
    "  MKL_NUM_THREADS=2\n"
    "  OMP_NUM_THREADS=2\n"
    "  # allocator: jemalloc not found on this host\n"
    "  # allocator: tcmalloc not found on this host\n"
    "  # allocator: glibc malloc (no usable jemalloc/tcmalloc)\n"
    "  # binding: none - --no-bind, the environment only\n"
    "  # threads: 2 (2 physical cores for this rank; SMT siblings count once)\n"
    "  # dataloader: 0 workers (<= 2 cores: workers would take cores from compute)\n"
    "(Python processes this job starts with rank variables apply their own plan at start; "
    "multiprocessing children without them get an even share of the threads)"
)
PLAIN_NO_BIND_TEXT = (
    "# plain job\n"
    "argv: python3 t.py\n"
    "rank 0/1: cpus (not bound) mems - (none)\n"
    "  HOSTTUNE_DETERMINISTIC=0\n"
    "  HOSTTUNE_NUM_WORKERS=0\n"
    "  HOSTTUNE_PERSISTENT_WORKERS=0\n"
    "  HOSTTUNE_PIN_MEMORY=0\n"
    "  MKL_NUM_THREADS=2\n"
    "  OMP_NUM_THREADS=2\n"
    "  # allocator: jemalloc not found on this host\n"
    "  # allocator: tcmalloc not found on this host\n"
    "  # allocator: glibc malloc (no usable jemalloc/tcmalloc)\n"
    "  # binding: none - --no-bind, the environment only\n"
    "  # threads: 2 (2 physical cores for this rank; SMT siblings count once)\n"
    "  # dataloader: 0 workers (<= 2 cores: workers would take cores from compute)\n"
    "(Python processes this job starts with rank variables apply their own plan at start; "
    "multiprocessing children without them get an even share of the threads)"
)

CASES: Dict[str, Tuple[List[str], Dict[str, str], bool, str, str, List[str], List[Tuple[int, int]]]] = {
    "mpirun_unknown_bound": (
        ["mpirun", "-np", "4", "-H", "n1,n2", "--bind-to", "core", "python3", "t.py"], ENV, False, "launcher",
        MPIRUN_UNKNOWN_BOUND_TEXT,
        ["mpirun --bind-to core binds the ranks; hosttune does not bind on top (it sets threads, allocator and env)"],
        [(0, 2), (1, 2)]),
    "mpirun_two_threads": (
        ["mpirun", "-np", "2", "-x", "OMP_NUM_THREADS=2", "python3", "t.py"], ENV, False, "launcher",
        MPIRUN_TWO_THREADS_TEXT, [], []),
    "srun_rank_no_bind": (["python3", "t.py"], SLURM, True, "srun", SRUN_RANK_NO_BIND_TEXT, [], []),
    "plain_no_bind": (["python3", "t.py"], ENV, True, "plain", PLAIN_NO_BIND_TEXT, [], [(0, 2), (1, 2)]),
}


@pytest.fixture
def two_threads(tmp_path: Path) -> str:
    path = tmp_path / "two-threads.yaml"
    path.write_text("threads: 2\n")
    return str(path)


@pytest.mark.parametrize("name", list(CASES))
def test_whole_dry_run_text_notices_and_sizes_planned_ahead(name: str, two_threads: str) -> None:
    argv, env, no_bind, kind, text, notices, more = CASES[name]
    launch = job.prepare(argv, profile=two_threads, facts=FACTS, environ=env, measured=False, no_bind=no_bind)
    assert launch.kind == kind
    assert job.render_text(launch) == text
    assert job.notices(launch) == notices
    assert [(p.local_rank, p.local_world_size) for p in launch.more_plans] == more
    assert launch.measured_note is None


def test_no_command_is_one_exact_line() -> None:
    with pytest.raises(UserError) as err:
        job.prepare([], facts=FACTS, environ=ENV, measured=False)
    assert str(err.value) == "exec: no COMMAND given (hosttune exec [OPTIONS] -- COMMAND [ARGS...])"


def test_the_measured_overlays_line_reaches_the_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    # the overlay lookup itself is profile.measured's (its own tests); here: prepare hands its line on, for every shape
    from hosttune.profile import measured

    seen: List[List[str]] = []

    def overlay(prof, command, fingerprint, environ=None):  # type: ignore[no-untyped-def]
        seen.append(list(command))
        return prof, f"measured overlay applied to {command[0]}"

    monkeypatch.setattr(measured, "apply", overlay)
    for argv in (["python3", "t.py"], ["mpirun", "-np", "2", "python3", "t.py"], ["torchrun", "t.py"]):
        launch = job.prepare(argv, facts=FACTS, environ=ENV)
        assert launch.measured_note == f"measured overlay applied to {argv[0]}"
    assert [a[0] for a in seen] == ["python3", "mpirun", "torchrun"]
    assert job.prepare(["python3", "t.py"], facts=FACTS, environ=ENV, measured=False).measured_note is None
