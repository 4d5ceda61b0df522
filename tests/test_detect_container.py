"""The container detector (hosttune/detect/container.py) on synthetic roots: each runtime's own signs (docker,
podman, a Kubernetes pod, systemd-nspawn), read-only /proc/sys and /sys from the mount table, the /dev/nvidia* nodes
passed in against the GPUs the driver has, the limits of the container's cgroup; a host that runs containers is not
one itself; `facts` shows the section in text and JSON."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

import pytest
from _synthhost import cpu_files
from conftest import build_tree, run_cli

from hosttune.detect import collect
from hosttune.detect.container import cgroup_runtime, environ_container
from hosttune.facts import Container, Facts

HOST_MOUNTS = [  # an ordinary host: its own root, proc and sys read-write, cgroup2
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda1 rw",
    "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
    "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw",
    "25 24 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate",
]
# What docker gives an unprivileged container: overlay root, read-only /proc/sys and /sys, its own /etc/hostname.
DOCKER_MOUNTS = [
    "600 500 0:60 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X,upperdir=/u,workdir=/w",
    "601 600 0:61 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
    "602 600 0:62 / /sys ro,nosuid,nodev,noexec,relatime - sysfs sysfs ro",
    "603 602 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup cgroup2 rw,nsdelegate",
    "604 600 254:1 /var/lib/docker/containers/0123abcd/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw",
    "605 601 0:61 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw",
]


def tree(tmp_path: Path, mounts: list, extra: Optional[Dict[str, str]] = None, cgroup: str = "0::/\n") -> Path:
    files = cpu_files(8)
    files.update({"/proc/self/mountinfo": "\n".join(mounts) + "\n", "/proc/self/cgroup": cgroup})
    files.update(extra or {})
    return build_tree(tmp_path / "root", files)


def container_of(root: Path) -> Container:
    return collect(root, probe_torch=False, use_nvml=False).container


def test_a_host_that_runs_containers_is_not_one(tmp_path: Path) -> None:
    # Its PID 1 is in init.scope, a docker container's overlay is mounted somewhere under /var/lib/docker, and
    # docker's files exist on its disk: none of that makes the host a container.
    mounts = HOST_MOUNTS + ["90 22 0:70 / /var/lib/docker/overlay2/abc/merged rw - overlay overlay rw"]
    root = tree(tmp_path, mounts, {"/proc/1/cgroup": "0::/init.scope\n",
                                   "/var/lib/docker/containers/0123abcd/hostname": "c1\n"},
                cgroup="0::/user.slice/user-1000.slice/session-2.scope\n")
    c = container_of(root)
    assert c == Container() and not c.detected


def test_docker_container_with_read_only_proc_sys_and_sys(tmp_path: Path) -> None:
    root = tree(tmp_path, DOCKER_MOUNTS, {"/.dockerenv": ""})
    c = container_of(root)
    assert c.detected and c.runtime == "docker"
    assert "/.dockerenv exists" in c.evidence
    assert any("/etc/hostname <- /var/lib/docker/containers/0123abcd/hostname" in e for e in c.evidence)
    assert c.proc_sys_readonly is True and c.sys_readonly is True
    assert any("host's /proc/meminfo" in v for v in c.host_values)


def test_privileged_container_has_writable_proc_sys(tmp_path: Path) -> None:
    mounts = [re.sub(r"\bro\b", "rw", m) for m in DOCKER_MOUNTS if "/proc/sys" not in m]
    c = container_of(tree(tmp_path, mounts, {"/.dockerenv": ""}))
    assert c.detected and c.proc_sys_readonly is False and c.sys_readonly is False


def test_kubernetes_pod_gpus_passed_in_and_cgroup_limits(tmp_path: Path) -> None:
    """A pod on a cgroup v1 node without a cgroup namespace: kubepods in the cgroup path; 2 of the node's 8 GPUs
    passed in as /dev/nvidia0 and /dev/nvidia3 (the driver's /proc/driver/nvidia/gpus lists all 8); the pod's
    cpuset, CPU quota and memory limit come from its cgroup."""
    pod = "/kubepods/burstable/pod1f2e3d4c-0000-4000-8000-000000000001/cri-containerd-77aa"
    mounts = [
        "700 600 0:80 / / rw,relatime - overlay overlay rw",
        "701 700 0:81 / /proc rw,relatime - proc proc rw",
        "702 701 0:81 /sys /proc/sys ro,relatime - proc proc rw",
        "703 700 0:82 / /sys ro,relatime - sysfs sysfs ro",
        "704 703 0:30 /kubepods /sys/fs/cgroup/cpu,cpuacct ro,relatime - cgroup cgroup rw,cpu,cpuacct",
        "705 703 0:31 /kubepods /sys/fs/cgroup/cpuset ro,relatime - cgroup cgroup rw,cpuset",
        "706 703 0:32 /kubepods /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory",
        "707 700 254:1 /var/lib/kubelet/pods/1f2e3d4c/etc-hosts /etc/hosts rw,relatime - ext4 /dev/vda1 rw",
        "708 700 0:90 / /var/run/secrets/kubernetes.io/serviceaccount ro,relatime - tmpfs tmpfs rw",
    ]
    cg = f"4:memory:{pod}\n3:cpuset:{pod}\n2:cpu,cpuacct:{pod}\n0::/\n"
    rel = pod[len("/kubepods"):]
    extra = {"/dev/nvidia0": "", "/dev/nvidia3": "", "/dev/nvidiactl": "", "/dev/nvidia-uvm": "",
             f"/sys/fs/cgroup/cpuset{rel}/cpuset.cpus": "0-3\n",
             f"/sys/fs/cgroup/cpuset{rel}/cpuset.mems": "0\n",
             f"/sys/fs/cgroup/cpu,cpuacct{rel}/cpu.cfs_quota_us": "200000\n",
             f"/sys/fs/cgroup/cpu,cpuacct{rel}/cpu.cfs_period_us": "100000\n",
             f"/sys/fs/cgroup/memory{rel}/memory.limit_in_bytes": f"{4 << 30}\n"}
    for i in range(8):
        extra[f"/proc/driver/nvidia/gpus/0000:{0x10 + i:02x}:00.0/information"] = "Model: NVIDIA H100\n"
    c = container_of(tree(tmp_path, mounts, extra, cgroup=cg))
    assert c.runtime == "kubernetes"
    assert any(e.startswith("/proc/self/cgroup: /kubepods/burstable/pod1f2e3d4c") for e in c.evidence)
    assert c.proc_sys_readonly is True and c.sys_readonly is True
    assert c.nvidia_devices == ("nvidia-uvm", "nvidia0", "nvidia3", "nvidiactl")
    assert (c.gpu_nodes, c.driver_gpus) == (2, 8)
    assert c.cgroup_limits == ("cpus 0-3 (cpuset of 8 online)", "2 CPUs (cpu quota)", "4096 MiB memory (memory limit)")
    assert "the driver has 8 GPUs on the host; 2 passed in as /dev/nvidiaN" in c.host_values
    assert any("the container may use 4096 MiB" in v for v in c.host_values)


def test_podman_and_nspawn_markers(tmp_path: Path) -> None:
    podman = container_of(tree(tmp_path / "p", HOST_MOUNTS, {"/run/.containerenv": 'engine="podman-4.3.1"\n'},
                               cgroup="0::/machine.slice/libpod-9f8e.scope/container\n"))
    assert podman.runtime == "podman" and podman.evidence[0] == "/run/.containerenv exists"
    assert any("libpod-9f8e" in e for e in podman.evidence)
    nspawn = container_of(tree(tmp_path / "n", HOST_MOUNTS, {"/run/systemd/container": "systemd-nspawn\n"}))
    assert nspawn.runtime == "systemd-nspawn" and nspawn.proc_sys_readonly is False


def test_parsers() -> None:
    assert cgroup_runtime("0::/system.slice/docker-0123.scope\n") == ("docker", "/system.slice/docker-0123.scope")
    assert cgroup_runtime("12:pids:/docker/0123\n") == ("docker", "/docker/0123")
    assert cgroup_runtime("0::/init.scope\n") is None
    assert cgroup_runtime("0::/user.slice/user-1000.slice/app.slice/dockerd-helper.service\n") is None
    assert environ_container("PATH=/bin\0container=podman\0HOME=/\0") == "podman"
    assert environ_container("PATH=/bin\0") is None


def test_facts_cli_shows_the_container_section(tmp_path: Path) -> None:
    root = tree(tmp_path, DOCKER_MOUNTS, {"/.dockerenv": "", "/dev/nvidia0": "", "/dev/nvidiactl": ""})
    done = run_cli(["facts", "--root", str(root), "--json"])  # a tree on disk: in-process (issue 21)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["container"]["runtime"] == "docker" and data["container"]["proc_sys_readonly"] is True
    assert Facts.from_dict(data).container.nvidia_devices == ("nvidia0", "nvidiactl")
    text = run_cli(["facts", "--root", str(root)])
    assert text.returncode == 0, text.stderr
    assert re.search(r"^container host fs +/proc/sys and /sys read-only$", text.stdout, re.MULTILINE), text.stdout
    assert re.search(r"^container gpus +1 passed in  \(nvidia0 nvidiactl\)$", text.stdout, re.MULTILINE)
    assert re.search(r"^host's +memory total/available is the host's /proc/meminfo", text.stdout, re.MULTILINE)


def test_facts_under_systemd_nspawn_says_what_it_cannot_see(tmp_path: Path) -> None:
    """A real container: systemd-nspawn over an almost empty root (this interpreter, /usr and the checkout bound in
    read-only, as tests/test_container_image.py runs the image). nspawn mounts /proc/sys and /sys read-only and
    gives PID 1 container=systemd-nspawn; `facts --json` must say so rather than show the host's values as its own."""
    if os.geteuid() != 0 or shutil.which("systemd-nspawn") is None:
        pytest.skip("needs root and systemd-nspawn")
    repo = Path(__file__).resolve().parents[1]
    root = tmp_path / "ns"
    for d in ("etc", "usr", "tmp", "dev", "proc", "sys", "run"):
        (root / d).mkdir(parents=True)
    shutil.copy("/usr/lib/os-release" if Path("/usr/lib/os-release").exists() else "/etc/os-release",
                root / "etc/os-release")
    for top in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{top}"):
            (root / top).symlink_to(os.readlink(f"/{top}"))
    binds = {"/usr", str(repo), os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    machine = f"hosttune-facts-{os.getpid()}"
    cmd = ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--pipe", "--private-network",
           f"--machine={machine}", f"--directory={root}", f"--chdir={repo}", f"--setenv=PYTHONPATH={repo}",
           *[f"--bind-ro={b}" for b in sorted(binds) if not b.startswith("/usr/")],
           "--", sys.executable, "-m", "hosttune", "facts", "--json"]
    try:
        done = subprocess.run(["timeout", "120", *cmd], capture_output=True, text=True, timeout=180)
    finally:
        propagate = Path("/run/systemd/nspawn/propagate") / machine
        if propagate.is_dir() and not any(propagate.iterdir()):
            propagate.rmdir()
    if done.returncode != 0 and not done.stdout.strip():
        pytest.skip(f"systemd-nspawn cannot run here: {done.stderr.strip()[-300:]}")
    c = json.loads(done.stdout)["container"]
    assert c["detected"] and c["runtime"] == "systemd-nspawn", c
    assert "/proc/1/environ has container=systemd-nspawn" in c["evidence"]
    assert c["proc_sys_readonly"] is True and c["sys_readonly"] is True


def test_a_runtime_name_is_a_plain_word_or_unknown(tmp_path: Path) -> None:
    # The runtime's name reaches doctor's fix text: whatever a container's files spell, only a short plain word passes.
    for i, marker in enumerate(("$(touch /tmp/x); rm -rf /\n", "\x1b[31mred\n", "a" * 200 + "\n")):
        found = container_of(tree(tmp_path / str(i), HOST_MOUNTS, {"/run/systemd/container": marker}))
        assert found.runtime is not None
        assert found.runtime == "unknown" or re.fullmatch(r"[a-z0-9._-]{1,32}", found.runtime), found.runtime
    assert container_of(tree(tmp_path / "x", HOST_MOUNTS, {"/run/systemd/container": "$(x)\n"})).runtime == "unknown"
