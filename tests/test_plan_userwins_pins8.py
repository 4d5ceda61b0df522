"""Pins for hosttune/plan/userwins.py (issue 21, practice round HTOP8): `settle`'s whole answer, in its order (the
kept and replaced lines are printed in that order, one per variable, sorted by name whatever order the plan built)."""

from hosttune.plan import userwins

PLANNED = {"ZED": "1", "HOSTTUNE_X": "a", "LD_PRELOAD": "lib.so", "ALPHA": "2", "MID": "m", "SAME": "s",
           "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "BETA": "\x1b"}
CALLERS = {"ZED": "9", "HOSTTUNE_X": "b", "LD_PRELOAD": "mine.so", "ALPHA": "3", "SAME": "s",
           "CUDA_DEVICE_ORDER": "FASTEST_FIRST", "BETA": "", "OTHER": "o"}


def test_settle_keeps_the_callers_values_sorted_by_name() -> None:
    env, kept, overridden, reasons = userwins.settle(PLANNED, CALLERS)
    assert list(env.items()) == [("ZED", "9"), ("HOSTTUNE_X", "a"), ("LD_PRELOAD", "lib.so"), ("ALPHA", "3"),
                                 ("MID", "m"), ("SAME", "s"), ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"), ("BETA", "")]
    assert list(kept.items()) == [("ALPHA", "2"), ("BETA", "\x1b"), ("ZED", "1")]
    assert overridden == {}
    assert reasons == [
        "ALPHA=3 kept: set by you (profile: 2; --override to use the profile)",
        "BETA= kept: set by you (profile: \\x1b; --override to use the profile)",
        "ZED=9 kept: set by you (profile: 1; --override to use the profile)",
    ]


def test_settle_with_override_uses_the_profile_and_says_whose_value_it_replaced() -> None:
    env, kept, overridden, reasons = userwins.settle(PLANNED, CALLERS, override=True)
    assert env == PLANNED and list(env) == list(PLANNED)
    assert kept == {}
    assert list(overridden.items()) == [("ALPHA", "3"), ("BETA", ""), ("ZED", "9")]
    assert reasons == ["ALPHA=2 replaces yours (3): --override", "BETA=\\x1b replaces yours (''): --override",
                       "ZED=1 replaces yours (9): --override"]


def test_nothing_to_settle() -> None:
    assert userwins.settle(PLANNED, {}) == (PLANNED, {}, {}, [])
    assert userwins.settle({}, CALLERS, override=True) == ({}, {}, {}, [])


def test_whose_choice_and_torchruns_default() -> None:
    assert [userwins.users_choice(n) for n in ("OMP_NUM_THREADS", "LD_PRELOAD", "CUDA_DEVICE_ORDER",
                                               "HOSTTUNE_NUM_WORKERS", "hosttune_x")] == [True, False, False, False,
                                                                                          True]
    worker = {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "r", "LOCAL_WORLD_SIZE": "2"}
    assert userwins.launcher_default(worker) == "OMP_NUM_THREADS"
    assert userwins.launcher_default({**worker, "LOCAL_WORLD_SIZE": "1"}) is None
    assert userwins.launcher_default({**worker, "LOCAL_WORLD_SIZE": "+2"}) is None
    assert userwins.launcher_default({**worker, "OMP_NUM_THREADS": "2"}) is None
    del worker["TORCHELASTIC_RUN_ID"]
    assert userwins.launcher_default(worker) is None
