"""Pins (issue 21, round 7 practice) for hosttune/tune/programs.py: the OSError each failure raises, whole (class,
errno, text), since tune's report shows `strerror: filename` when the error has an errno and the text otherwise:
a program that does not finish in time, one not found, and /dev/shm options that are more than one size=."""

from typing import Callable, Tuple

import pytest

from hosttune.tune import programs


def _raised(fn: Callable[[], object]) -> Tuple[type, object, Tuple[object, ...], str]:
    with pytest.raises(OSError) as info:
        fn()
    e = info.value
    return type(e), e.errno, e.args, str(e)


def test_a_program_that_runs_out_of_time_is_an_oserror_without_errno() -> None:
    # sleep 600 against a 0.05 s limit: killed at the limit (600 s is only what it would take)
    got = _raised(lambda: programs.tool("sleep", ["600"], 0.05))
    assert got == (OSError, None, ("sleep: timed out after 0.05 s",), "sleep: timed out after 0.05 s")


def test_a_program_not_found_is_enoent_with_the_reason() -> None:
    got = _raised(lambda: programs.tool("no-such-program-hmon", [], 10))
    assert got == (FileNotFoundError, 2, (2, "no-such-program-hmon: not found in a PATH directory only root can write"),
                   "[Errno 2] no-such-program-hmon: not found in a PATH directory only root can write")


@pytest.mark.parametrize("opt", ["size=1,exec", "size=50%,suid", "nr_inodes=1", "size=", "size=1x", "Size=1g"])
def test_remount_shm_refuses_anything_but_one_size_option(opt: str) -> None:
    got = _raised(lambda: programs.remount_shm(opt))
    msg = f"refusing /dev/shm mount options {opt!r}: one size= option expected"
    assert got == (OSError, 22, (22, msg), f"[Errno 22] {msg}")
