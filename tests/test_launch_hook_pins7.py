"""Pins for hosttune.launch.hook.spawn_share (issue 21, session 9 practice rounds): a multiprocessing child's share of
the job's threads, as (threads, children counted, the job's threads). The job's threads are the top process's
OMP_NUM_THREADS, else this process's own, else the CPUs this process may run on (its affinity, which a bound job
narrows: not the machine's CPU count); the children are the launcher's hint or the siblings seen, whichever is more."""

import os
from typing import Iterator

import pytest

from hosttune.launch.hook import spawn_share
from hosttune.policy import names


@pytest.fixture
def one_cpu() -> Iterator[int]:
    """This thread bound to one of its CPUs for the test (a bound rank), then given its CPUs back."""
    before = os.sched_getaffinity(0)
    if (os.cpu_count() or 1) < 2:  # bound to one of one, the count and the affinity agree
        pytest.skip("needs a machine with two CPUs")
    cpu = min(before)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, before)


def test_without_a_thread_count_the_job_has_the_cpus_it_is_bound_to(one_cpu: int) -> None:
    assert spawn_share({}, {names.SPAWN_PROCS: "1"}) == (1, 1, 1)
    assert spawn_share({"top_env": {}}, {names.SPAWN_PROCS: "1", "OMP_NUM_THREADS": "0"}) == (1, 1, 1)


def test_the_top_processs_thread_count_wins_and_is_shared_among_the_children_hinted() -> None:
    data = {"top_env": {"OMP_NUM_THREADS": "8"}}
    assert spawn_share(data, {names.SPAWN_PROCS: "4:pool", "OMP_NUM_THREADS": "2"}) == (2, 4, 8)
    assert spawn_share(data, {names.SPAWN_PROCS: "3"}) == (2, 3, 8)
    assert spawn_share({}, {names.SPAWN_PROCS: "16", "OMP_NUM_THREADS": "6"}) == (1, 16, 6)  # never below one


def test_a_thread_count_of_seven_digits_is_no_count() -> None:
    mine = len(os.sched_getaffinity(0))
    assert spawn_share({"top_env": {"OMP_NUM_THREADS": "1" * 7}}, {names.SPAWN_PROCS: "1"}) == (mine, 1, mine)
    assert spawn_share({}, {names.SPAWN_PROCS: "9" * 7}) == (mine, 1, mine)  # nor is a hint of seven digits
