"""Pin for mutation round 4's last storage survivor (issue 21): a network mount whose statvfs gives no answer in
time (a hard NFS mount whose server is gone) has no size and no free space in the facts, with a note saying why: not
0 MiB free, which doctor's free-space check would report as a full disk; without sizes (the launcher's fast path) a
network mount is never statvfs'd at all."""
import os
import threading
from typing import Any, List

import pytest

from hosttune.detect import storage
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry

DEAD = "/mnt/dead-nfs"


def test_a_network_mount_whose_statvfs_hangs_has_unknown_size_and_free_space(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real = os.statvfs

    def statvfs(path: Any) -> Any:
        if str(path) == DEAD:
            release.wait(30)  # the kernel waiting on a dead server: never answers while the probe waits
            raise OSError(5, "Input/output error")
        return real(path)

    monkeypatch.setattr(storage.os, "statvfs", statvfs)
    monkeypatch.setattr(storage, "read_mounts", lambda io: [MountEntry(DEAD, "nfs4", "filer:/export")])
    io = HostIO()
    assert io.live
    try:
        mounts, _shm = storage.probe(io, network_timeout=0.05)
    finally:
        release.set()
    (m,) = mounts
    assert (m.mount, m.kind, m.size_mb, m.free_mb) == (DEAD, "network", None, None)
    assert any(DEAD in line and "no answer" in line for line in io.missing), io.missing


def test_without_sizes_a_network_mount_is_never_statvfsd(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher's fast path (sizes=False): a hung NFS server must not even cost it the timeout."""
    asked: List[str] = []
    real = os.statvfs

    def statvfs(path: Any) -> Any:
        asked.append(str(path))
        return real("/")

    monkeypatch.setattr(storage.os, "statvfs", statvfs)
    monkeypatch.setattr(storage, "read_mounts", lambda io: [MountEntry(DEAD, "nfs4", "filer:/export")])
    io = HostIO()
    (m,), _shm = storage.probe(io, sizes=False, network_timeout=0.05)
    assert (m.size_mb, m.free_mb, asked, io.missing) == (None, None, [], [])
