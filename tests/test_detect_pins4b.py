"""Pins for mutation round 4 (issue 21) in hosttune/detect: /dev/shm's size when there is no /dev/shm mount, and
the hard rlimits as the kernel reports them."""

import resource
from pathlib import Path

from conftest import build_tree

from hosttune.detect import limits, storage
from hosttune.detect.hostio import HostIO

_NO_SHM = (
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "23 22 0:5 / /proc rw,nosuid shared:2 - proc proc rw\n"
)


def test_a_host_without_a_dev_shm_mount_reports_its_size_unknown_not_zero(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "host", {"/proc/self/mountinfo": _NO_SHM})
    mounts, shm = storage.probe(HostIO(root))
    assert [m.mount for m in mounts] == ["/"]
    assert shm is None  # unknown: 0 MiB would read as a /dev/shm too small for DataLoader workers
    with_shm = _NO_SHM + "24 22 0:6 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n"
    (root / "proc/self/mountinfo").write_text(with_shm)
    assert storage.probe(HostIO(root))[1] == 64


def test_the_hard_rlimit_is_the_hard_one_not_the_soft_one() -> None:
    """memlock (RDMA's pinned memory): soft lowered below hard in this process, each reported as it is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    assert hard != 0, "needs a memlock hard limit above 0"
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, hard))
        got = limits.probe(HostIO(Path("/")))
    finally:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))
    assert got.memlock_soft == 0
    assert got.memlock_hard == (-1 if hard == resource.RLIM_INFINITY else hard)
    nsoft, nhard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert (got.nofile_soft, got.nofile_hard) == tuple(-1 if v == resource.RLIM_INFINITY else v
                                                        for v in (nsoft, nhard))
