"""The detector's text parsers pinned at their edges (issue 21): cgroup files, container signs, mount tables,
NVIDIA version texts, PCI classes, disk kinds, tmpfs sizes, distro families. Strings in, values out."""

from typing import Any, Optional

import pytest

from hosttune.detect import cgroup, container, distro, gpu, mounts, nvidia, storage
from hosttune.detect.mounts import MountEntry


def test_proc_cgroup_v1_and_v2() -> None:
    text = "12:cpu,cpuacct:/slice/a\n11:cpuset:/c\n1:name=systemd:/s\n0::/user.slice/x\nbroken\n3:::\n"
    v2, v1 = cgroup.parse_proc_cgroup(text)
    assert v2 == "/user.slice/x"
    assert v1 == {"cpu": "/slice/a", "cpuacct": "/slice/a", "cpuset": "/c", "name=systemd": "/s"}
    assert cgroup.parse_proc_cgroup(None) == (None, {})
    assert cgroup.parse_proc_cgroup("0::/a:b\n") == ("/a:b", {})  # a path may hold ":"
    assert cgroup.parse_proc_cgroup("1::/v1-unnamed\n") == (None, {})


@pytest.mark.parametrize("text,cpus", [("max 100000", None), ("150000 100000", 1.5), ("50000", 0.5),
                                       ("0 100000", None), ("100000 0", None), ("x 100000", None), ("", None),
                                       (None, None), ("200000 50000\n", 4.0), ("-1 100000", None)])
def test_cpu_max(text: Optional[str], cpus: Optional[float]) -> None:
    assert cgroup.parse_cpu_max(text) == cpus


@pytest.mark.parametrize("quota,period,cpus", [("-1", "100000", None), ("250000", "100000", 2.5),
                                               ("50000", None, 0.5), ("0", "100000", None), ("1", "0", None),
                                               (None, "100000", None), ("x", "1", None), ("300000\n", "100000\n", 3.0)])
def test_cfs(quota: Optional[str], period: Optional[str], cpus: Optional[float]) -> None:
    assert cgroup.parse_cfs(quota, period) == cpus


@pytest.mark.parametrize("text,value", [("max", None), ("max\n", None), ("1073741824\n", 1 << 30), ("0", 0),
                                        (str(1 << 62), None), (str((1 << 62) - 1), (1 << 62) - 1),
                                        ("9223372036854771712", None),
                                        ("junk", None), (None, None), ("", None)])
def test_memory_max(text: Optional[str], value: Optional[int]) -> None:
    assert cgroup.parse_memory_max(text) == value


def test_tightest() -> None:
    assert cgroup._tightest([None, 3, 2.5, None]) == 2.5
    assert cgroup._tightest([None, None]) is None and cgroup._tightest([]) is None
    assert cgroup._tightest([0, 4]) == 0


@pytest.mark.parametrize("line,runtime", [
    ("0::/docker/0123abcd", "docker"),
    ("0::/system.slice/docker-0123.scope", "docker"),
    ("0::/kubepods/burstable/pod1/abc", "kubernetes"),
    ("0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-ab.scope", "kubernetes"),
    ("0::/machine.slice/libpod-0123.scope", "podman"),
    ("0::/lxc.payload.c1/", "lxc"),
    ("0::/lxc/c1", "lxc"),
    ("0::/machine.slice/systemd-nspawn@c1.service/payload", "systemd-nspawn"),
    ("0::/machine.slice/machine-c1.scope", "systemd-nspawn"),
    ("0::/user.slice/user-1000.slice/session-2.scope", None),
    ("0::/", None),
])
def test_cgroup_runtime(line: str, runtime: Optional[str]) -> None:
    got = container.cgroup_runtime("1:cpu:/\n" + line + "\n")
    assert (got[0] if got else None) == runtime
    if got:
        assert got[1] == line.split(":", 2)[2]


def _m(mount: str, root: str = "/") -> MountEntry:
    return MountEntry(mount=mount, fstype="ext4", source="/dev/sda1", root=root)


@pytest.mark.parametrize("entries,want", [
    ([_m("/etc/hostname", "/var/lib/docker/containers/abc/hostname")],
     ("docker", "/etc/hostname <- /var/lib/docker/containers/abc/hostname")),
    ([_m("/etc/hosts", "/var/lib/kubelet/pods/u/etc-hosts")],
     ("kubernetes", "/etc/hosts <- /var/lib/kubelet/pods/u/etc-hosts")),
    ([_m("/etc/resolv.conf", "/x/containers/storage/overlay/r")],
     ("podman", "/etc/resolv.conf <- /x/containers/storage/overlay/r")),
    ([_m("/etc/hosts", "/run/libpod/h")], ("podman", "/etc/hosts <- /run/libpod/h")),
    ([_m("/etc/hosts", "/run/containerd/h")], ("containerd", "/etc/hosts <- /run/containerd/h")),
    ([_m("/etc/hosts", "/run/crio/h")], ("cri-o", "/etc/hosts <- /run/crio/h")),
    ([_m("/var/run/secrets/kubernetes.io/serviceaccount")],
     ("kubernetes", "/var/run/secrets/kubernetes.io/serviceaccount")),
    ([_m("/etc/motd", "/var/lib/docker/containers/abc/motd"), _m("/etc/hosts", "/home/me/hosts")], None),
])
def test_mount_runtime(entries: Any, want: Any) -> None:
    assert container.mount_runtime(entries) == want


@pytest.mark.parametrize("text,value", [("A=1\0container=podman\0B=2", "podman"), ("container=\0", None),
                                        ("container= lxc \0", "lxc"), ("xcontainer=docker\0", None), (None, None)])
def test_environ_container(text: Optional[str], value: Optional[str]) -> None:
    assert container.environ_container(text) == value


@pytest.mark.parametrize("value,name", [("docker", "docker"), ("LXC-libvirt", "lxc"), ("oci", "oci"),
                                        ("Custom_RT.1 extra", "custom_rt.1"), ("bad/name", "unknown"),
                                        ("", "unknown"), ("x" * 40, "x" * 32), ("systemd-nspawn", "systemd-nspawn")])
def test_runtime_name(value: str, name: str) -> None:
    assert container._runtime_name(value) == name


@pytest.mark.parametrize("text,out", [("a\\040b", "a b"), ("\\011t\\012n\\134", "\tt\nn\\"),
                                      ("plain", "plain"), ("end\\04", "end\\04"), ("\\040", " "), ("\\09x", "\\09x"),
                                      ("a\\040", "a ")])
def test_unescape(text: str, out: str) -> None:
    assert mounts.unescape(text) == out


def test_mountinfo_optional_fields_and_escapes() -> None:
    text = ("36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue\n"
            "37 35 0:5 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n"
            "38 35 0:6 / /short rw -\n"
            "too short - x\n")
    got = mounts.parse_mountinfo(text)
    assert got == [
        MountEntry(mount="/mnt two", fstype="ext3", source="/dev/root", root="/mnt1", devno="98:0",
                   options="rw,noatime,rw,errors=continue"),
        MountEntry(mount="/dev/shm", fstype="tmpfs", source="tmpfs", root="/", devno="0:5",
                   options="rw,rw,size=65536k"),
    ]
    assert mounts.parse_mountinfo(None) == []


def test_proc_mounts() -> None:
    got = mounts.parse_mounts("srv:/x /mnt/a\\040b nfs4 rw,vers=4.2 0 0\nshort line\n")
    assert got == [MountEntry(mount="/mnt/a b", fstype="nfs4", source="srv:/x", options="rw,vers=4.2")]


@pytest.mark.parametrize("text,version", [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 22:23:56 UTC 2024", "550.54.15"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build", "570.86.15"),
    ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.104  x", "535.104"),
    ("nothing", None), (None, None)])
def test_proc_driver_version(text: Optional[str], version: Optional[str]) -> None:
    assert nvidia.parse_proc_driver_version(text) == version


@pytest.mark.parametrize("text,version", [('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}', "12.4.1"),
                                          ('{"cuda": {"version": ""}}', None), ('{"cuda": "12"}', None),
                                          ("[1]", None), ("not json", None), (None, None)])
def test_cuda_version_json(text: Optional[str], version: Optional[str]) -> None:
    assert nvidia.parse_cuda_version_json(text) == version


@pytest.mark.parametrize("text,version", [("CUDA Version 10.2.89", "10.2.89"),
                                          ("Cuda compilation tools, release 12.4, V12.4.131", "12.4.131"),
                                          ("Cuda compilation tools, release 11.8", "11.8"), ("nope", None)])
def test_cuda_version_txt(text: str, version: Optional[str]) -> None:
    assert nvidia.parse_cuda_version_txt(text) == version


def test_header_and_soname_versions() -> None:
    h = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n#define CUDNN_MAJOR 8\n"
    assert nvidia.parse_header_version(h, "CUDNN") == "9.1.0"
    assert nvidia.parse_header_version("#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n",
                                       "NCCL") == "2.21.5"
    assert nvidia.parse_header_version("#define NCCL_MAJOR 2\n", "NCCL") == "2"
    assert nvidia.parse_header_version("#define NCCL_MINOR 2\n", "NCCL") is None
    assert nvidia.parse_header_version("#define CUDNN_MAJOR 9x\n", "CUDNN") is None
    names = ["libcudnn.so.9", "libcudnn.so.9.1.0", "libcudnn.so.9.1", "libcudnn_ops.so.9.9.9.9", "libcudnn.so"]
    assert nvidia.soname_version(names, "libcudnn") == "9.1.0"
    assert nvidia.soname_version(["libnccl.so.2"], "libnccl") == "2"
    assert nvidia.soname_version(["libnccl.so"], "libnccl") is None
    # cuDNN 8 and 9 side by side: the higher by number, in either listing order (a string sort puts 10 before 9).
    for pair in (["libcudnn.so.8.9.7", "libcudnn.so.9.1.0"], ["libcudnn.so.9.1.0", "libcudnn.so.8.9.7"]):
        assert nvidia.soname_version(pair, "libcudnn") == "9.1.0"
    assert nvidia.soname_version(["libcudnn.so.10.0.0", "libcudnn.so.9.1.0"], "libcudnn") == "10.0.0"
    assert nvidia.soname_version(["libcudnn.so.9.1.0", "libcudnn.so.10.0.0"], "libcudnn") == "10.0.0"


@pytest.mark.parametrize("vendor,cls,is_gpu,is_switch", [
    ("0x10de", "0x030200", True, False), ("0x10DE", "0x030000", True, False), ("0x10de", "0x038000", True, False),
    ("0x10de", "0x068000", False, True), ("0x10de", "0x040300", False, False), ("0x1002", "0x030000", False, False),
    ("0x10de", None, False, False), (None, "0x030200", False, False), ("0x1002", "0x068000", False, False)])
def test_pci_classes(vendor: Optional[str], cls: Optional[str], is_gpu: bool, is_switch: bool) -> None:
    assert gpu.is_nvidia_gpu(vendor, cls) is is_gpu
    assert gpu.is_nvswitch(vendor, cls) is is_switch


@pytest.mark.parametrize("name,rot,kind", [("nvme0n1", "1", "nvme"), ("sda", "1", "hdd"), ("sda", "0", "ssd"),
                                           ("vda", None, "unknown"), ("sdb", "2", "unknown")])
def test_disk_kind(name: str, rot: Optional[str], kind: str) -> None:
    assert storage.disk_kind(name, rot) == kind


def test_canonical_nvme() -> None:
    assert storage._canonical_nvme("nvme0c0n1") == "nvme0n1"
    assert storage._canonical_nvme("nvme12c3n4") == "nvme12n4"
    assert storage._canonical_nvme("nvme0n1") == "nvme0n1" and storage._canonical_nvme("nvme0c0n1p1") == "nvme0c0n1p1"


@pytest.mark.parametrize("options,mb", [("rw,size=65536k", 64), ("size=2g,mode=1777", 2048), ("size=512m", 512),
                                        ("size=1048576", 1), ("size=10G", 10240), ("nr_inodes=5,size=3K", 0),
                                        ("rw,mode=1777", None), ("size=50%", None), ("xsize=5k", None),
                                        ("size=" + "9" * 21, None)])
def test_tmpfs_size_option(options: str, mb: Optional[int]) -> None:
    assert storage._size_option(options) == mb


@pytest.mark.parametrize("dist_id,like,fam", [("ubuntu", "debian", "debian"), ("debian", "", "debian"),
                                              ("rocky", "rhel centos fedora", "rhel"), ("fedora", "", "rhel"),
                                              ("pop", "ubuntu debian", "debian"), ("ol", "fedora", "rhel"),
                                              ("arch", "", "unknown"), ("opensuse-leap", "suse opensuse", "unknown")])
def test_distro_family(dist_id: str, like: str, fam: str) -> None:
    assert distro.family(dist_id, like) == fam
