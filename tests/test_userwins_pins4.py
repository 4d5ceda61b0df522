"""Pins for hosttune/plan/userwins.py and hosttune/launch/pythons.py's pure parts: who wins a variable, torchrun's
own OMP_NUM_THREADS=1, the thread count of an OMP_NUM_THREADS value, and which names are Python (issue 21)."""

import pytest

from hosttune.launch.pythons import is_python
from hosttune.plan.userwins import MALLOC_LIBS, NOT_THE_USERS, _threads_of, launcher_default, settle, users_choice
from hosttune.rankplan import kept_line


def test_users_choice_is_every_name_but_hosttunes_own() -> None:
    assert users_choice("OMP_NUM_THREADS") and users_choice("HOSTTUNEX") is True
    assert users_choice("LD_PRELOAD") is False and users_choice("CUDA_DEVICE_ORDER") is False
    assert users_choice("HOSTTUNE_TRACE") is False and users_choice("MY_HOSTTUNE_X") is True
    assert NOT_THE_USERS == {"LD_PRELOAD", "CUDA_DEVICE_ORDER"}
    assert MALLOC_LIBS[0] == "libjemalloc" and "libtcmalloc" in MALLOC_LIBS


def test_settle_keeps_the_callers_value_and_says_so() -> None:
    planned = {"OMP_NUM_THREADS": "8", "KMP_BLOCKTIME": "1", "SAME": "x"}
    env, kept, overridden, reasons = settle(planned, {"OMP_NUM_THREADS": "3", "SAME": "x", "OTHER": "y"})
    assert env == {"OMP_NUM_THREADS": "3", "KMP_BLOCKTIME": "1", "SAME": "x"}  # never adds what was not planned
    assert kept == {"OMP_NUM_THREADS": "8"} and overridden == {}
    assert reasons == [kept_line("OMP_NUM_THREADS", "3", "8")]
    assert planned == {"OMP_NUM_THREADS": "8", "KMP_BLOCKTIME": "1", "SAME": "x"}  # the input is not changed


def test_settle_with_override_uses_the_profile_and_says_whose_value_it_replaced() -> None:
    env, kept, overridden, reasons = settle({"OMP_NUM_THREADS": "8", "A": "1"}, {"OMP_NUM_THREADS": "3"},
                                            override=True)
    assert env == {"OMP_NUM_THREADS": "8", "A": "1"} and kept == {}
    assert overridden == {"OMP_NUM_THREADS": "3"}
    assert reasons == ["OMP_NUM_THREADS=8 replaces yours (3): --override"]


def test_settle_an_empty_caller_value_is_still_the_callers() -> None:
    env, kept, _, reasons = settle({"NCCL_DEBUG": "INFO"}, {"NCCL_DEBUG": ""})
    assert env == {"NCCL_DEBUG": ""} and kept == {"NCCL_DEBUG": "INFO"} and len(reasons) == 1


@pytest.mark.parametrize("name", ["LD_PRELOAD", "CUDA_DEVICE_ORDER", "HOSTTUNE_RANK_HOOK"])
def test_settle_hosttunes_own_variables_stay_hosttunes(name: str) -> None:
    env, kept, overridden, reasons = settle({name: "ours"}, {name: "yours"})
    assert env == {name: "ours"} and kept == {} and overridden == {} and reasons == []


def test_settle_reasons_follow_the_sorted_names() -> None:
    _, kept, _, reasons = settle({"B": "1", "A": "1", "C": "1"}, {"C": "2", "A": "2"})
    assert list(kept) == ["A", "C"] and [r.split("=")[0] for r in reasons] == ["A", "C"]


@pytest.mark.parametrize("environ, expected", [
    ({"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "r", "LOCAL_WORLD_SIZE": "2"}, "OMP_NUM_THREADS"),
    ({"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "", "LOCAL_WORLD_SIZE": "8"}, "OMP_NUM_THREADS"),
    ({"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "r", "LOCAL_WORLD_SIZE": "1"}, None),  # torchrun's rule: >1
    ({"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "r"}, None),
    ({"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "r", "LOCAL_WORLD_SIZE": "x2"}, None),
    ({"OMP_NUM_THREADS": "1", "LOCAL_WORLD_SIZE": "2"}, None),  # not under torchrun: the caller's own 1
    ({"OMP_NUM_THREADS": "2", "TORCHELASTIC_RUN_ID": "r", "LOCAL_WORLD_SIZE": "2"}, None),
    ({"TORCHELASTIC_RUN_ID": "r", "LOCAL_WORLD_SIZE": "2"}, None),
])
def test_launcher_default_is_torchruns_one_thread_only(environ: dict, expected: object) -> None:
    assert launcher_default(environ) == expected


@pytest.mark.parametrize("value, expected", [
    ("4", 4), ("4,2", 4), (" 6 ,1", 6), ("1", 1), ("0", None), ("", None), (None, None), ("x", None), ("-2", None),
    (",4", None),
])
def test_threads_of_reads_the_outer_region(value: object, expected: object) -> None:
    assert _threads_of(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("path, expected", [
    ("/usr/bin/python3", True), ("python3.11", True), ("/opt/pypy3/bin/pypy3", True), ("python", True),
    ("/usr/bin/bash", False), ("/usr/bin/env", False), ("/python3/bin/torchrun", False), ("ipython", False),
])
def test_is_python_by_the_base_name(path: str, expected: bool) -> None:
    assert is_python(path) is expected
