"""Pins (issue 21, second mutation round) for hosttune/detect/container.py on synthetic roots: a CRI-O pod (which has
podman's /run/.containerenv too) is a Kubernetes pod; of two mounts at one path the later (top) one decides whether
/proc/sys is read-only; a kubelet's subPath bind mounts on a node do not make the node a container."""

from pathlib import Path
from typing import Dict, List

from _synthhost import cpu_files
from conftest import build_tree

from hosttune.detect import collect
from hosttune.facts import Container

HOST_MOUNTS = [
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda1 rw",
    "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
    "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw",
]
POD = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1f2e3d4c.slice/crio-77aa.scope"


def _container(tmp_path: Path, mounts: List[str], files: Dict[str, str], cgroup: str) -> Container:
    tree = cpu_files(4)
    tree.update({"/proc/self/mountinfo": "\n".join(mounts) + "\n", "/proc/self/cgroup": cgroup, **files})
    return collect(build_tree(tmp_path / "root", tree), probe_torch=False, use_nvml=False).container


def test_a_cri_o_pod_with_a_containerenv_file_is_kubernetes(tmp_path: Path) -> None:
    c = _container(tmp_path, HOST_MOUNTS, {"/run/.containerenv": ""}, f"0::{POD}\n")
    assert c.detected and c.evidence[0] == "/run/.containerenv exists"  # the strongest sign says podman...
    assert c.runtime == "kubernetes"  # ...but the pod is what the user must know about


def test_the_top_mount_of_two_at_one_path_decides_read_only(tmp_path: Path) -> None:
    ro_on_top = HOST_MOUNTS + ["30 23 0:21 /sys /proc/sys rw,relatime - proc proc rw",
                               "31 30 0:21 /sys /proc/sys ro,relatime - proc proc rw"]
    c = _container(tmp_path / "a", ro_on_top, {"/.dockerenv": ""}, "0::/\n")
    assert c.detected and c.proc_sys_readonly is True
    rw_on_top = HOST_MOUNTS + ["30 23 0:21 /sys /proc/sys ro,relatime - proc proc rw",
                               "31 30 0:21 /sys /proc/sys rw,relatime - proc proc rw"]
    assert _container(tmp_path / "b", rw_on_top, {"/.dockerenv": ""}, "0::/\n").proc_sys_readonly is False


def test_a_kubelets_subpath_bind_mounts_on_a_node_are_not_a_container(tmp_path: Path) -> None:
    uid = "1f2e3d4c-0000-4000-8000-000000000001"
    sub = (f"60 22 254:0 /var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~configmap/cfg/app.yaml "
           f"/var/lib/kubelet/pods/{uid}/volume-subpaths/cfg/app/0 rw,relatime - ext4 /dev/vda1 rw")
    c = _container(tmp_path, HOST_MOUNTS + [sub], {"/proc/1/cgroup": "0::/init.scope\n"},
                   "0::/system.slice/kubelet.service\n")
    assert c == Container() and not c.detected


def test_a_cpuset_of_every_online_cpu_is_no_limit(tmp_path: Path) -> None:
    """Only a cpuset narrower than the online CPUs is a limit worth saying; the memory limit still is one."""
    pod = "/kubepods/burstable/pod1f2e3d4c-0000-4000-8000-000000000001/cri-containerd-77aa"
    rel = pod[len("/kubepods"):]
    mounts = HOST_MOUNTS + ["705 24 0:31 /kubepods /sys/fs/cgroup/cpuset ro,relatime - cgroup cgroup rw,cpuset",
                            "706 24 0:32 /kubepods /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory"]
    files = {f"/sys/fs/cgroup/cpuset{rel}/cpuset.cpus": "0-3\n", f"/sys/fs/cgroup/cpuset{rel}/cpuset.mems": "0\n",
             f"/sys/fs/cgroup/memory{rel}/memory.limit_in_bytes": f"{2 << 30}\n"}
    c = _container(tmp_path, mounts, files, f"4:memory:{pod}\n3:cpuset:{pod}\n0::/\n")
    assert c.runtime == "kubernetes" and c.cgroup_limits == ("2048 MiB memory (memory limit)",)
