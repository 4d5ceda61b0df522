"""Container evidence one sign at a time (issue 21): each runtime's cgroup path and bind-mount source, PID 1's
`container=`, runtime names, which mount decides read-only, the limits' wording, and a whole docker probe with its
host_values (hosttune.detect.container)."""

from pathlib import Path
from typing import Optional, Tuple

import pytest
from conftest import build_tree

from hosttune.detect import container
from hosttune.detect.hostio import HostIO
from hosttune.detect.mounts import MountEntry
from hosttune.facts import Cgroup, Container


@pytest.mark.parametrize("text,found", [
    ("0::/kubepods/burstable/pod1/abc\n", ("kubernetes", "/kubepods/burstable/pod1/abc")),
    ("0::/machine.slice/libpod-abc.scope\n", ("podman", "/machine.slice/libpod-abc.scope")),
    ("0::/libpod_parent/x\n", ("podman", "/libpod_parent/x")),
    ("0::/system.slice/docker-abc.scope\n", ("docker", "/system.slice/docker-abc.scope")),
    ("12:memory:/docker/abc\n", ("docker", "/docker/abc")),
    ("0::/crio-abc.scope\n", ("cri-o", "/crio-abc.scope")),
    ("0::/system.slice/containerd.service/x\n", ("containerd", "/system.slice/containerd.service/x")),
    ("0::/lxc.payload.c1\n", ("lxc", "/lxc.payload.c1")), ("0::/lxc/c1\n", ("lxc", "/lxc/c1")),
    ("0::/machine.slice/systemd-nspawn@c1.service\n", ("systemd-nspawn", "/machine.slice/systemd-nspawn@c1.service")),
    ("0::/machine.slice/machine-c1.scope\n", ("systemd-nspawn", "/machine.slice/machine-c1.scope")),
    ("0::/kubepods/docker-x\n", ("kubernetes", "/kubepods/docker-x")),
    ("0::/init.scope\n", None), ("0::/\n", None), ("0::/user.slice/mydocker/x\n", None),
    ("0::/system.slice/lxcfs.service\n", None), (None, None),
    ("1:name=systemd:/\n0::/docker/abc\n", ("docker", "/docker/abc")),
])
def test_cgroup_runtime(text: Optional[str], found: Optional[Tuple[str, str]]) -> None:
    assert container.cgroup_runtime(text) == found


def _m(mount: str, root: str = "/") -> MountEntry:
    return MountEntry(mount=mount, fstype="ext4", source="/dev/sda1", root=root)


@pytest.mark.parametrize("mounts,found", [
    ([_m("/etc/hostname", "/var/lib/kubelet/pods/1/etc-hosts")],
     ("kubernetes", "/etc/hostname <- /var/lib/kubelet/pods/1/etc-hosts")),
    ([_m("/etc/hosts", "/var/lib/docker/containers/ab/hosts")],
     ("docker", "/etc/hosts <- /var/lib/docker/containers/ab/hosts")),
    ([_m("/etc/resolv.conf", "/var/lib/containers/storage/overlay-containers/x/resolv.conf")],
     ("podman", "/etc/resolv.conf <- /var/lib/containers/storage/overlay-containers/x/resolv.conf")),
    ([_m("/etc/hosts", "/run/libpod/x")], ("podman", "/etc/hosts <- /run/libpod/x")),
    ([_m("/etc/hosts", "/run/containerd/x")], ("containerd", "/etc/hosts <- /run/containerd/x")),
    ([_m("/etc/hosts", "/run/crio/x")], ("cri-o", "/etc/hosts <- /run/crio/x")),
    ([_m("/var/run/secrets/kubernetes.io/serviceaccount")],
     ("kubernetes", "/var/run/secrets/kubernetes.io/serviceaccount")),
    ([_m("/etc/hosts", "/etc/hosts")], None), ([_m("/etc/motd", "/docker/containers/x")], None), ([], None),
])
def test_mount_runtime(mounts: list, found: Optional[Tuple[str, str]]) -> None:
    assert container.mount_runtime(mounts) == found


def test_environ_container_and_runtime_names() -> None:
    assert container.environ_container("PATH=/bin\0container=podman\0HOME=/") == "podman"
    assert container.environ_container("container= \0") is None
    assert container.environ_container("xcontainer=docker\0") is None and container.environ_container(None) is None
    assert container._runtime_name("Docker") == "docker" and container._runtime_name("lxc-libvirt") == "lxc"
    assert container._runtime_name("  ") == "unknown" and container._runtime_name("my-rt.v2 x") == "my-rt.v2"
    assert container._runtime_name("a$b") == "unknown" and container._runtime_name("x" * 40) == "x" * 32


def _ro(mount: str, options: str) -> MountEntry:
    return MountEntry(mount=mount, fstype="proc", source="proc", options=options)


def test_readonly_is_decided_by_the_deepest_then_last_mount() -> None:
    assert container._readonly([_ro("/", "rw"), _ro("/proc/sys", "ro,nosuid")], "/proc/sys") is True
    assert container._readonly([_ro("/proc/sys", "ro"), _ro("/proc", "rw")], "/proc/sys") is True
    assert container._readonly([_ro("/proc/sys", "ro"), _ro("/proc/sys", "rw")], "/proc/sys") is False
    assert container._readonly([_ro("/proc/sysrq", "ro"), _ro("/", "rw")], "/proc/sys") is False
    assert container._readonly([_ro("/sys/", "ro")], "/sys/kernel/mm") is True
    assert container._readonly([_ro("/sys", "rw,errors=ro")], "/sys") is False
    assert container._readonly([_ro("/dev", "ro")], "/proc/sys") is None


def test_limits_wording() -> None:
    cg = Cgroup(cpuset=(0, 1, 2, 3), quota_cpus=2.5, memory_max=(4 << 30) + 5)
    assert container._limits(cg, range(8)) == ("cpus 0-3 (cpuset of 8 online)", "2.5 CPUs (cpu quota)",
                                               "4096 MiB memory (memory limit)")
    assert container._limits(Cgroup(cpuset=(1, 0)), [0, 1]) == ()
    assert container._limits(Cgroup(quota_cpus=2.0), []) == ("2 CPUs (cpu quota)",)
    assert container._limits(Cgroup(memory_max=0), []) == ("0 MiB memory (memory limit)",)  # a limit of nothing


def test_a_docker_container_whole(tmp_path: Path) -> None:
    mountinfo = ("1 0 0:1 / / rw - overlay overlay rw\n"
                 "2 1 0:2 / /proc rw - proc proc rw\n"
                 "3 2 0:2 /sys /proc/sys ro,nosuid - proc proc rw\n"
                 "4 1 0:3 / /sys ro - sysfs sysfs ro\n"
                 "5 1 8:1 /var/lib/docker/containers/ab/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n")
    files = {"/.dockerenv": "", "/proc/self/mountinfo": mountinfo, "/proc/1/cgroup": "0::/\n",
             "/proc/self/cgroup": "0::/docker/ab\n", "/dev/nvidia0": "", "/dev/nvidia3": "", "/dev/nvidiactl": "",
             "/dev/nvidia-uvm": "", "/dev/null": "", "/proc/driver/nvidia/gpus/0000:1b:00.0/information": "",
             "/proc/driver/nvidia/gpus/0000:2b:00.0/information": "",
             "/proc/driver/nvidia/gpus/0000:3b:00.0/information": ""}
    io = HostIO(build_tree(tmp_path, files))
    got = container.probe(io, Cgroup(version=2, quota_cpus=4.0), online=range(16))
    assert got == Container(
        detected=True, runtime="docker",
        evidence=("/.dockerenv exists", "/proc/self/cgroup: /docker/ab",
                  "/proc/self/mountinfo: /etc/hostname <- /var/lib/docker/containers/ab/hostname"),
        proc_sys_readonly=True, sys_readonly=True,
        nvidia_devices=("nvidia-uvm", "nvidia0", "nvidia3", "nvidiactl"), gpu_nodes=2, driver_gpus=3,
        cgroup_limits=("4 CPUs (cpu quota)",),
        host_values=("kernel sysctls, transparent hugepages and cpufreq are the host's (read-only here)",
                     "cpu model, topology and numa nodes are the host's; cpu allowed is the container's",
                     "memory total/available is the host's /proc/meminfo; no memory limit in the container's cgroup",
                     "the driver has 3 GPUs on the host; 2 passed in as /dev/nvidiaN"))


def test_podman_containerenv_engine_and_pid1_environ(tmp_path: Path) -> None:
    files = {"/run/.containerenv": 'name="x"\nengine="buildah-1.2"\n', "/proc/1/environ": "container=oci\0",
             "/run/systemd/container": "podman\n"}
    io = HostIO(build_tree(tmp_path, files))
    got = container.probe(io, Cgroup(memory_max=1 << 30))
    assert (got.runtime, got.evidence) == ("buildah", ("/run/.containerenv exists",
                                                       "/run/systemd/container says 'podman'",
                                                       "/proc/1/environ has container=oci"))
    assert (got.proc_sys_readonly, got.sys_readonly, got.gpu_nodes, got.driver_gpus) == (None, None, 0, None)
    assert got.host_values[0] == "kernel sysctls, transparent hugepages and cpufreq are the host's"
    assert got.host_values[2] == "memory total/available is the host's /proc/meminfo; the container may use 1024 MiB"
    assert len(got.host_values) == 3
    plain = HostIO(build_tree(tmp_path / "p", {"/run/.containerenv": "\n"}))
    assert container.probe(plain, Cgroup()).runtime == "podman"
    assert container.probe(HostIO(build_tree(tmp_path / "n", {"/proc/1/cgroup": "0::/init.scope\n"})),
                           Cgroup()) == Container()
