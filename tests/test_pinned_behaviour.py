"""Behaviour pinned before the issue-17 rebuild moves the code that decides it (each test fails when it breaks).

Every pin goes through an entry point that outlives the refactor: the CLI (`hosttune env|doctor`), `detect.collect`
on a synthetic captured host, `monitor.events.Alerts`. Each test is named after the behaviour it pins.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import a100, run_cli
from conftest import build_tree as build

from hosttune.detect import collect

REPO = Path(__file__).resolve().parents[1]


def cpu_files(n: int) -> Dict[str, str]:
    """n online CPUs, one package, one NUMA node, no SMT."""
    files = {"/sys/devices/system/cpu/online": f"0-{n - 1}\n",
             "/sys/devices/system/node/online": "0\n",
             "/sys/devices/system/node/node0/cpulist": f"0-{n - 1}\n",
             "/sys/devices/system/node/node0/meminfo": f"Node 0 MemTotal:       {16 << 20} kB\n",
             "/proc/cpuinfo": "".join(f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Test Xeon\n"
                                      "flags\t\t: fpu lm sse2 avx2\n\n" for i in range(n)),
             "/proc/meminfo": "MemTotal:       16777216 kB\nMemAvailable:   16000000 kB\nSwapTotal:  0 kB\n",
             "/etc/os-release": 'ID=debian\nVERSION_ID="12"\n'}
    for c in range(n):
        t = f"/sys/devices/system/cpu/cpu{c}/topology"
        files.update({f"{t}/physical_package_id": "0\n", f"{t}/core_id": f"{c}\n",
                      f"{t}/thread_siblings_list": f"{c}\n", f"{t}/core_siblings_list": f"0-{n - 1}\n"})
    return files


def hosttune(*args: str, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=str(REPO))


# ---- cgroups ---------------------------------------------------------------------------------------------------
def test_hybrid_cgroup_host_is_read_as_v1_for_cpu_and_cpuset(tmp_path: Path) -> None:
    """systemd's hybrid layout: v1 controllers plus a cgroup2 tree at /sys/fs/cgroup/unified holding no
    controllers. The limits are the v1 ones; the (planted, tighter) v2 values must be ignored."""
    files = cpu_files(8)
    files.update({
        "/proc/self/cgroup": "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n"
                             "1:name=systemd:/docker/abc\n0::/docker/abc\n",
        "/proc/self/mountinfo": "\n".join([
            "30 1 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate",
            "31 1 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct",
            "32 1 0:28 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset",
            "33 1 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
            "34 1 0:30 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd",
        ]) + "\n",
        "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000\n",
        "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        "/sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus": "0-5\n",
        "/sys/fs/cgroup/cpuset/docker/abc/cpuset.mems": "0\n",
        "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": f"{6 << 30}\n",
        # what the v2 tree would say if it were read: tighter everywhere
        "/sys/fs/cgroup/unified/docker/abc/cpu.max": "100000 100000\n",
        "/sys/fs/cgroup/unified/docker/abc/cpuset.cpus.effective": "0\n",
        "/sys/fs/cgroup/unified/docker/abc/memory.max": f"{1 << 30}\n",
    })
    c = collect(build(tmp_path, files), probe_torch=False, use_nvml=False).cpu
    assert c.cgroup.version == 1
    assert c.cgroup.quota_cpus == 3.0 and c.quota_cpus == 3.0
    assert c.cgroup.cpuset == (0, 1, 2, 3, 4, 5) and c.allowed_cpus == (0, 1, 2, 3, 4, 5)
    assert c.cgroup.memory_max == 6 << 30


def v2_nested(tmp_path: Path, leaf_cpu: str, parent_cpu: str, leaf_mem: str, parent_mem: str) -> Path:
    files = cpu_files(8)
    cg = "/sys/fs/cgroup/kubepods.slice/pod1"
    files.update({
        "/proc/self/cgroup": "0::/kubepods.slice/pod1/ctr\n",
        "/proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
        f"{cg}/ctr/cpu.max": leaf_cpu, f"{cg}/ctr/memory.max": leaf_mem,
        f"{cg}/cpu.max": parent_cpu, f"{cg}/memory.max": parent_mem,
        "/sys/fs/cgroup/kubepods.slice/cpu.max": "max 100000\n",
        "/sys/fs/cgroup/kubepods.slice/memory.max": "max\n",
    })
    return build(tmp_path, files)


def test_parent_cgroup_tighter_cpu_max_and_memory_max_win_over_the_leaf(tmp_path: Path) -> None:
    root = v2_nested(tmp_path / "a", "400000 100000\n", "150000 100000\n", f"{8 << 30}\n", f"{2 << 30}\n")
    c = collect(root, probe_torch=False, use_nvml=False).cpu
    assert c.cgroup.version == 2
    assert c.quota_cpus == 1.5 and c.cgroup.quota_cpus == 1.5
    assert c.cgroup.memory_max == 2 << 30
    # and the other way round: a tighter leaf still wins (so the rule is "the tightest level", not "the parent")
    root = v2_nested(tmp_path / "b", "150000 100000\n", "400000 100000\n", f"{2 << 30}\n", f"{8 << 30}\n")
    c = collect(root, probe_torch=False, use_nvml=False).cpu
    assert c.quota_cpus == 1.5 and c.cgroup.memory_max == 2 << 30


def test_a_2_5_cpu_quota_gives_2_threads_not_3(tmp_path: Path) -> None:
    """Rounding a fractional quota up oversubscribes it: 3 threads on 2.5 CPUs are throttled every period."""
    files = cpu_files(8)
    files.update({
        "/proc/self/cgroup": "0::/job\n",
        "/proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "/sys/fs/cgroup/job/cpu.max": "250000 100000\n",
    })
    root = build(tmp_path / "host", files)
    done = hosttune("env", "--root", str(root), "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["env"]["OMP_NUM_THREADS"] == "2", plan
    # two ranks share the same 2 CPUs' worth of quota: one thread each, never 2 + 1 or 2 + 2
    threads = []
    for rank in (0, 1):
        done = hosttune("env", "--root", str(root), "--json", "--local-rank", str(rank), "--local-world-size", "2")
        assert done.returncode == 0, done.stderr
        threads.append(int(json.loads(done.stdout)["env"]["OMP_NUM_THREADS"]))
    assert sum(threads) <= 2, threads


# ---- storage ---------------------------------------------------------------------------------------------------
def test_raid_of_hdd_and_ssd_is_reported_as_hdd(tmp_path: Path) -> None:
    """md0 = RAID1 of a spinning disk and an SSD: reads are as slow as the slowest member can make them."""
    pci = "/sys/devices/pci0000:00"
    files = cpu_files(2)
    files.update({
        "/proc/self/mountinfo": "21 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                                "25 21 9:0 / /data rw,relatime - xfs /dev/md0 rw\n",
        f"{pci}/nvme/nvme0/nvme0n1/queue/rotational": "0\n",
        f"{pci}/nvme/nvme0/nvme0n1/nvme0n1p1/partition": "1\n",
        "/sys/devices/virtual/block/md0/queue/rotational": "0\n",  # md reports 0 whatever it is made of
        f"{pci}/ata1/sda/queue/rotational": "1\n",
        f"{pci}/ata2/sdb/queue/rotational": "0\n",
    })
    links = {
        "/sys/dev/block/259:1": "../../devices/pci0000:00/nvme/nvme0/nvme0n1/nvme0n1p1",
        "/sys/dev/block/9:0": "../../devices/virtual/block/md0",
        "/sys/devices/virtual/block/md0/slaves/sda": "../../../../pci0000:00/ata1/sda",
        "/sys/devices/virtual/block/md0/slaves/sdb": "../../../../pci0000:00/ata2/sdb",
        "/sys/class/block/nvme0n1": "../../devices/pci0000:00/nvme/nvme0/nvme0n1",
        "/sys/class/block/sda": "../../devices/pci0000:00/ata1/sda",
        "/sys/class/block/sdb": "../../devices/pci0000:00/ata2/sdb",
    }
    for order in ("sda,sdb", "sdb,sda"):  # member order must not matter
        root = build(tmp_path / order, files, links)
        got = {m.mount: m for m in collect(root, probe_torch=False, use_nvml=False).storage}
        assert got["/"].kind == "nvme"
        assert got["/data"].kind == "hdd", got["/data"]
        assert set((got["/data"].device or "").split(",")) == {"sda", "sdb"}


# ---- preload libraries and profile env -------------------------------------------------------------------------
ELF_SO = b"\x7fELF\x02\x01\x01" + b"\0" * 57


def write_profile(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o644)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user the library is refused for its owner already")
def test_preload_library_in_a_world_writable_non_sticky_directory_is_refused(tmp_path: Path) -> None:
    """Anyone can replace a file in such a directory between the check and the rank's exec: never preload it."""
    lib_dir = tmp_path / "shared-libs"
    lib_dir.mkdir()
    lib = lib_dir / "libjemalloc.so.2"
    lib.write_bytes(ELF_SO)
    lib.chmod(0o755)
    lib_dir.chmod(0o777)  # world-writable, no sticky bit
    assert not lib_dir.stat().st_mode & stat.S_ISVTX
    profile = write_profile(tmp_path / "conf" / "p.yaml",
                            f"allocator: jemalloc\nallocator_path: {lib}\n")
    done = hosttune("env", "--profile", str(profile), "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert str(lib) not in plan["env"].get("LD_PRELOAD", "")
    assert "shared-libs" not in plan["env"].get("LD_PRELOAD", "")

    # control: the same library in a directory only its owner can write is preloaded (so the refusal above is
    # about the directory, not about the file)
    lib_dir.chmod(0o755)
    done = hosttune("env", "--profile", str(profile), "--json")
    assert done.returncode == 0, done.stderr
    assert str(lib) in json.loads(done.stdout)["env"].get("LD_PRELOAD", ""), done.stdout


def test_ld_audit_in_a_profile_env_is_refused(tmp_path: Path) -> None:
    """LD_AUDIT loads code into every rank like LD_PRELOAD, outside the allocator check: a profile may not set it."""
    lib = tmp_path / "libaudit.so"
    lib.write_bytes(ELF_SO)
    profile = write_profile(tmp_path / "conf" / "p.yaml", f"env:\n  LD_AUDIT: {lib}\n")
    done = hosttune("env", "--profile", str(profile), "--json")
    assert done.returncode == 2, done.stdout
    assert "LD_AUDIT" in done.stderr and "Traceback" not in done.stderr
    assert str(lib) not in done.stdout


# ---- doctor and monitor thresholds -----------------------------------------------------------------------------
def doctor_findings(facts: Any) -> Dict[str, Dict[str, str]]:
    """Run every doctor check over facts built here (the same catalogue `hosttune doctor` runs)."""
    from hosttune import doctor
    from hosttune.profile import Active

    ctx = doctor.Context(facts=facts, env={}, live=False, profile=Active(None, "built-in default"))
    return {r.id: r.to_dict() for r in doctor.run_checks(ctx).results}


def gpu_facts(driver: str, cuda: str) -> Any:
    from hosttune.facts import Distro, Facts, Gpu, Nvidia, TorchInstall

    gpu = Gpu(index=0, name="NVIDIA H100 80GB HBM3", pci_bus_id="0000:1b:00.0", pci_class="0x030200",
              source="nvml")
    return Facts(distro=Distro(id="debian", version="12", family="debian"), gpus=(gpu,),
                 nvidia=Nvidia(driver=driver, nvml="ok"),
                 torch=TorchInstall(python="/opt/train/bin/python", version="2.6.0", cuda=cuda,
                                    cuda_available=True, device_count=1, in_venv=True))


@pytest.mark.parametrize("cuda,minimum,below", [
    ("12.4", "550.54.14", "550.54.13"),  # the CUDA 12.4 toolkit's driver (NVIDIA's release notes, table 3)
    ("13.0", "580.65.06", "580.65.05"),
])
def test_doctor_driver_exactly_at_the_cuda_toolkit_minimum_passes(cuda: str, minimum: str, below: str) -> None:
    at = doctor_findings(gpu_facts(minimum, cuda))["nvidia.driver_cuda"]
    assert at["status"] == "pass", at
    under = doctor_findings(gpu_facts(below, cuda))["nvidia.driver_cuda"]
    assert under["status"] in ("warn", "fail"), under  # one patch level below is not enough


def test_doctor_gpu_at_exactly_85_c_fails(fake_nvml: Any) -> None:
    """85 C is where most datacenter parts start thermal slowdown: without the GPU's own slowdown threshold doctor
    fails from there (>= 85) and warns from 75 (a reading AT a line is at that level, as in the monitor)."""
    statuses = {}
    for temp in (74, 75, 76, 84, 85):
        env = fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
                         "devices": [a100(0, "1B", 0, temperature_c=temp)]})
        done = run_cli(["doctor", "--json", "--only", "nvidia"], env=env)  # in-process: the fake NVML is this one
        by = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
        statuses[temp] = by["nvidia.temperature"]["status"]
    assert statuses == {74: "pass", 75: "warn", 76: "warn", 84: "warn", 85: "fail"}, statuses


def test_monitor_critical_gpu_temperature_starts_at_the_threshold_as_doctor() -> None:
    """One rule for doctor and the monitor (policy.gpu_health): a reading AT a line is at that level. Without the
    GPU's own slowdown threshold the lines are 75 C (warning) and 85 C (critical), so 85 C exactly is critical, as
    doctor fails it; with slowdown 90 C they are 80 and 90."""
    from hosttune.monitor.config import Thresholds
    from hosttune.monitor.events import Alerts
    from hosttune.policy import gpu_health

    def levels(temps: List[float], slowdown: Optional[int] = None) -> List[List[str]]:
        alerts = Alerts(Thresholds())
        out = []
        for temp in temps:
            gpu: Dict[str, Any] = {"index": 0, "temperature_c": temp}
            if slowdown is not None:
                gpu["temp_slowdown_c"] = slowdown
            evs = alerts.update({"gpus": [gpu]})
            out.append([f"{e.level}:{e.state}" for e in evs if e.kind == "gpu_temperature"])
        return out

    assert Thresholds().gpu_temp_crit_c is None and Thresholds().gpu_temp_warn_c is None  # per GPU, else the table
    assert levels([85.0]) == [["critical:start"]]
    assert levels([84.9]) == [["warning:start"]]
    assert levels([75.0]) == [["warning:start"]]
    assert levels([74.9]) == [[]]
    assert levels([84.0, 85.0])[1] == ["critical:start"]
    assert levels([90.0], slowdown=90) == [["critical:start"]]
    assert levels([89.9], slowdown=90) == [["warning:start"]]
    assert levels([80.0], slowdown=90) == [["warning:start"]]
    assert levels([79.9], slowdown=90) == [[]]
    # doctor shows the same level for the same reading as fail / warn / pass
    assert [gpu_health.doctor_status(gpu_health.temperature(t)) for t in (74.9, 75.0, 85.0)] == ["pass", "warn", "fail"]
