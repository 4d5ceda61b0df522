"""hosttune.detect.limits pins (issue 21, practice round HDET8): each rlimit in its own field (unlimited is
resource.RLIM_INFINITY, -1 on Linux), an rlimit that cannot be read is None, and a captured tree has RDMA devices
but no rlimits."""

import resource
from pathlib import Path
from typing import Tuple

import pytest
from conftest import build_tree

from hosttune.detect import limits
from hosttune.detect.hostio import HostIO
from hosttune.facts import Limits

INF = resource.RLIM_INFINITY


def test_pair_that_cannot_be_read_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(which: int) -> Tuple[int, int]:
        raise ValueError("invalid resource")

    monkeypatch.setattr(limits.resource, "getrlimit", refuse)
    assert limits._pair(resource.RLIMIT_MEMLOCK) == (None, None)


def test_live_probe_reads_both_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {resource.RLIMIT_NOFILE: (1024, 524288), resource.RLIMIT_MEMLOCK: (8388608, INF)}
    monkeypatch.setattr(limits.resource, "getrlimit", lambda which: answers[which])
    io = HostIO(Path("/"))
    got = limits.probe(io)
    assert got == Limits(nofile_soft=1024, nofile_hard=524288, memlock_soft=8388608, memlock_hard=-1,
                         rdma_devices=len(io.listdir("/sys/class/infiniband")))


def test_captured_tree_has_rdma_devices_and_no_rlimits(tmp_path: Path) -> None:
    root = build_tree(tmp_path, {"/sys/class/infiniband/mlx5_0/node_type": "1\n",
                                 "/sys/class/infiniband/mlx5_1/node_type": "1\n"})
    assert limits.probe(HostIO(root)) == Limits(rdma_devices=2)
    assert limits.probe(HostIO(tmp_path / "empty")) == Limits()
