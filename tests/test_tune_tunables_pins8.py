"""Pins (issue 21, round 8 practice) for hosttune/tune/tunables.py: NVIDIA persistence's expected value and reason
in each case, the live host's included (the GPU check replaced: this host's PCI devices are not the test's)."""

from pathlib import Path

import pytest

from hosttune.profile.settings import Tune
from hosttune.tune import tunables
from hosttune.tune.rootfs import Tree

P = tunables.BY_ID["persistence"]


def test_persistence_on_a_live_host_with_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tunables, "_has_gpus", lambda tree: True)
    assert P.want(Tree(Path("/")), Tune()) == (
        "enabled, active", "without it the driver tears the GPUs down when the last process exits")
    assert P.want(Tree(Path("/")), Tune(persistence=False)) == (None, "tune.persistence is off in the profile")


def test_persistence_on_a_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert P.want(Tree(tmp_path), Tune()) == (None, "no NVIDIA GPU")
    monkeypatch.setattr(tunables, "_has_gpus", lambda tree: True)
    assert P.want(Tree(tmp_path), Tune()) == (None, "--root: enabling a service needs systemctl on the host itself")
    assert (P.kind, P.check, P.persist, P.boot, P.own) == ("service", "nvidia.persistence", None, False,
                                                           "nvidia-persistenced")
