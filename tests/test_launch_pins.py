"""Pins for where a rank learns its place and how mpirun's line is counted (hosttune/launch/rankvars.py,
hosttune/launch/launchers/mpirun.py), from issue 21's mutation run: a WORLD_SIZE that does not cover LOCAL_RANK is
no size, a rank equal to its size is refused, a multi-node Slurm allocation is not one node, and -npernode above -np
is capped at -np."""

from typing import Dict, Optional

import pytest

from hosttune.errors import UserError
from hosttune.launch import rankvars
from hosttune.launch.launchers import KnownLauncher, identify

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}


def ident(*argv: str, env: Optional[Dict[str, str]] = None) -> KnownLauncher:
    got = identify(list(argv), env if env is not None else ENV, gpus=0, numa_nodes=1, mpi="openmpi")
    assert got is not None, argv
    return got


def test_a_world_size_that_does_not_cover_local_rank_is_no_size() -> None:
    assert rankvars.place({"LOCAL_RANK": "3", "WORLD_SIZE": "2"}) == rankvars.Place(3, 4, "LOCAL_RANK")
    assert rankvars.place({"LOCAL_RANK": "1", "WORLD_SIZE": "4"}) == rankvars.Place(1, 4, "LOCAL_RANK")


@pytest.mark.parametrize("rank_key, size_key", rankvars.RANK_VARIABLES)
def test_a_local_rank_equal_to_its_size_is_refused(rank_key: str, size_key: str) -> None:
    with pytest.raises(UserError, match=f"{rank_key}=2 is outside"):
        rankvars.place({rank_key: "2", size_key: "2"})
    assert rankvars.place({rank_key: "1", size_key: "2"}) == rankvars.Place(1, 2, rank_key)


@pytest.mark.parametrize("var", ["SLURM_JOB_NUM_NODES", "SLURM_NNODES"])
def test_mpirun_in_a_multi_node_allocation_is_not_one_node(var: str) -> None:
    assert ident("mpirun", "-np", "8", "python", "t.py", env=dict(ENV, **{var: "2"})).local_ranks is None
    assert ident("mpirun", "-np", "8", "python", "t.py", env=dict(ENV, **{var: "1"})).local_ranks == 8


def test_npernode_above_np_is_capped_at_np() -> None:
    assert ident("mpirun", "-np", "2", "-npernode", "4", "python", "t.py").local_ranks == 2


def test_a_multiprocessing_childs_share_is_of_the_allowed_cpus_when_no_thread_count_is_set() -> None:
    import os

    from hosttune.launch import hook
    from hosttune.policy import names

    cpus = len(os.sched_getaffinity(0))
    assert hook.spawn_share({}, {})[2] == cpus
    assert hook.spawn_share({}, {"OMP_NUM_THREADS": "6"})[2] == 6
    assert hook.spawn_share({"top_env": {"OMP_NUM_THREADS": "4"}}, {"OMP_NUM_THREADS": "6"})[2] == 4
    threads, counted, job = hook.spawn_share({}, {"OMP_NUM_THREADS": "8", names.SPAWN_PROCS: "4"})
    assert job == 8 and counted >= 4 and threads == max(1, 8 // counted)  # siblings spawned here count too
