"""Pins for hosttune.detect.container (issue 21, practice round HDOC): mount_runtime's whole answer, a kubelet's
service-account mount below the account folder included."""

from typing import List, Optional, Tuple

import pytest

from hosttune.detect.container import mount_runtime
from hosttune.detect.mounts import MountEntry as M

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.mark.parametrize("mounts,want", [
    ([M(ACCOUNT, "tmpfs", "tmpfs")], ("kubernetes", ACCOUNT)),
    ([M("/", "overlay", "overlay"), M(f"{ACCOUNT}/token", "tmpfs", "tmpfs")], ("kubernetes", f"{ACCOUNT}/token")),
    ([M("/etc/hostname", "ext4", "/dev/sda1", root="/var/lib/docker/containers/abc/hostname")],
     ("docker", "/etc/hostname <- /var/lib/docker/containers/abc/hostname")),
    ([M("/etc/hosts", "ext4", "/dev/sda1", root="/var/lib/kubelet/pods/x/etc-hosts")],
     ("kubernetes", "/etc/hosts <- /var/lib/kubelet/pods/x/etc-hosts")),
    ([M("/etc/resolv.conf", "ext4", "/dev/sda1", root="/var/lib/containers/storage/overlay-containers/a/resolv.conf")],
     ("podman", "/etc/resolv.conf <- /var/lib/containers/storage/overlay-containers/a/resolv.conf")),
    ([M("/etc/hostname", "ext4", "/dev/sda1", root="/home/x"), M("/var/run/secrets", "tmpfs", "tmpfs"),
      M("/data/docker/containers/x", "ext4", "/dev/sdb", root="/docker/containers/x")], None),
])
def test_mount_runtime(mounts: List[M], want: Optional[Tuple[str, str]]) -> None:
    assert mount_runtime(mounts) == want
