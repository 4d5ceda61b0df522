"""What the doctor tests (tests/test_doctor_*.py) share: a healthy CPU and GPU host built by hand and the changes
the case tables make to it, one check run on facts, a small captured host on disk (Debian 12, two NUMA nodes, two
NVIDIA GPUs on PCI) with the fake NVML's healthy scenario, and `hosttune doctor` in a child process."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from conftest import a100

from hosttune import doctor
from hosttune.detect import collect
from hosttune.doctor import Context, Finding, run_checks
from hosttune.facts import (
    Allocators,
    Cpu,
    Distro,
    Facts,
    Gpu,
    Kernel,
    Limits,
    Memory,
    Mount,
    Numa,
    NumaNode,
    Nvidia,
    Tools,
    TorchInstall,
    Tuned,
    TunedSetting,
)
from hosttune.profile import Active

R = dataclasses.replace

NO_PROFILE = Active(None, "built-in default")  # nothing configured: the profile checks have nothing to load

def in_use(path: Path) -> Active:
    """The profile in use is `path`, as if it were the user's generated profile."""
    return Active(str(path), "user profile")


# ---- hand-built facts ------------------------------------------------------------------------------------------------
def cpu_host(**over: Any) -> Facts:
    """A healthy 2-socket CPU host: Debian 12, 2 NUMA nodes, 8 CPUs, every setting as doctor wants it."""
    base = Facts(
        distro=Distro(id="debian", version="12", version_best="12.5", name="Debian GNU/Linux", family="debian"),
        kernel=Kernel(release="6.1.0", cmdline="BOOT_IMAGE=/vmlinuz root=/dev/sda1", thp="madvise",
                      numa_balancing=0, swappiness=10, governors=("performance",), modules=("nvme",)),
        cpu=Cpu(model="Xeon", logical=8, physical=8, packages=2, online=tuple(range(8)),
                allowed_cpus=tuple(range(8)), smt_control="off"),
        numa=Numa(nodes=(NumaNode(0, (0, 1, 2, 3), 1000), NumaNode(1, (4, 5, 6, 7), 1000)), allowed_mems=(0, 1)),
        allocators=Allocators(jemalloc="/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"),
        tools=Tools(numactl="/usr/bin/numactl"),
        memory=Memory(total_mb=64000, swap_total_mb=2048, shm_mb=32000),
        limits=Limits(nofile_soft=1048576, nofile_hard=1048576, memlock_soft=-1, memlock_hard=-1),
        torch=TorchInstall(python="/opt/train/bin/python", version="2.6.0", in_venv=True),
        storage=(Mount("/", "ext4", "/dev/nvme0n1p1", "nvme0n1", "nvme"),
                 Mount("/mnt/nfs", "nfs4", "srv:/data", None, "network"),
                 Mount("/mnt/hdd", "xfs", "/dev/sdb1", "sdb", "hdd")),
    )
    return R(base, **over)


def dgpu(index: int, **over: Any) -> Gpu:
    g = Gpu(index=index, name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{index:08x}-aaaa-bbbb-cccc-dddddddddddd",
            pci_bus_id=f"0000:{0x1b + index:02x}:00.0", numa_node=index % 2, memory_mb=81559, persistence_mode=True,
            ecc_enabled=True, ecc_pending=True, pcie_gen=5, pcie_gen_max=5, pcie_width=16, pcie_width_max=16,
            temperature_c=41, clock_event_reasons=0x1, ecc_uncorrected_volatile=0, retired_pages_pending=False,
            remapped_rows_pending=False, remapped_rows_failure=False, pci_class="0x030200", source="nvml")
    return R(g, **over)


def gpu_host(**over: Any) -> Facts:
    base = cpu_host(
        gpus=(dgpu(0), dgpu(1)),
        nvidia=Nvidia(driver="550.54.15", cuda_driver="12.4", nvml="ok", cudnn="9.1.0", nccl="2.21.5"),
        torch=TorchInstall(python="/opt/train/bin/python", version="2.6.0", cuda="12.4", cudnn="9.1.0",
                           nccl="2.21.5", cuda_available=True, device_count=2, in_venv=True),
        kernel=R(cpu_host().kernel, modules=("nvidia", "nvidia_uvm")),
    )
    return R(base, **over)


def run_one(check_id: str, facts: Facts, **ctx: Any) -> Finding:
    ctx.setdefault("env", {})
    ctx.setdefault("profile", NO_PROFILE)
    result = run_checks(Context(facts=facts, **ctx), checks=[doctor.BY_ID[check_id]])
    (r,) = result.results
    return Finding(status=r.status, actual=r.actual, expected=r.expected, fix=r.fix)


def table_test(cases: List[Tuple[Any, ...]]) -> Callable[..., None]:
    """A check group's table test: each row (check id, host, change, context, status, text) runs that one check on
    the changed host; the status must match, the text must appear in actual/fix/expected, and a warn or fail must
    carry a fix."""

    @pytest.mark.parametrize("check_id,host,change,ctx,status,text", cases,
                             ids=[f"{c[0]}-{c[4]}-{i}" for i, c in enumerate(cases)])
    def test_check(check_id: str, host: Callable[..., Facts], change: Callable[[Facts], Facts], ctx: Dict[str, Any],
                   status: str, text: str) -> None:
        f = run_one(check_id, change(host()), **ctx)
        assert f.status == status, f
        assert text in f.actual + "\n" + f.fix + "\n" + f.expected, f
        if status in ("warn", "fail"):
            assert f.fix or check_id == "os.distro", f"{check_id} {status} without a fix"

    return test_check


def kern(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, kernel=R(f.kernel, **kw))


def gpu0(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, gpus=(R(f.gpus[0], **kw),) + f.gpus[1:])


def nv(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, nvidia=R(f.nvidia, **kw))


def tor(**kw: Any) -> Callable[[Facts], Facts]:
    return lambda f: R(f, torch=R(f.torch, **kw))


def same(f: Facts) -> Facts:
    return f


def tuned(profile: str, *settings: Any) -> Callable[[Facts], Facts]:
    sets = tuple(TunedSetting(*s) for s in settings)
    return lambda f: R(f, tuned=Tuned(installed=True, running=True, profile=profile, mode="manual", settings=sets))


# ---- a captured host on disk, NVML through the fake pynvml -----------------------------------------------------------
def synthetic_root(tmp: Path, files: Optional[Dict[str, Optional[str]]] = None) -> Path:
    """A small captured host: Debian 12, 2 NUMA nodes x 2 CPUs, two NVIDIA GPUs on PCI, every setting healthy.
    `files` replaces paths (None: leave the file out)."""
    base: Dict[str, Optional[str]] = {
        "etc/os-release": 'ID=debian\nVERSION_ID="12"\nVERSION_CODENAME=bookworm\nPRETTY_NAME="Debian GNU/Linux 12"\n'
                          'NAME="Debian GNU/Linux"\n',
        "etc/debian_version": "12.5\n",
        "proc/cpuinfo": "".join(f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon Gold 6338\n"
                                f"flags\t\t: fpu avx2 avx512f\n\n" for i in range(4)),
        "proc/meminfo": "MemTotal:       65536000 kB\nMemAvailable:   60000000 kB\nSwapTotal:       2097148 kB\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p1 ro quiet\n",
        "proc/modules": "nvidia_uvm 1 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n",
        "proc/sys/kernel/numa_balancing": "0\n",
        "proc/sys/vm/swappiness": "10\n",
        "proc/self/mountinfo": "22 1 259:1 / / rw,relatime - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,size=32768000k\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
        "sys/devices/system/cpu/online": "0-3\n",
        "sys/devices/system/node/online": "0-1\n",
        "sys/devices/system/node/node0/cpulist": "0-1\n",
        "sys/devices/system/node/node1/cpulist": "2-3\n",
        "sys/devices/system/node/node0/meminfo": "Node 0 MemTotal:       32768000 kB\n",
        "sys/devices/system/node/node1/meminfo": "Node 1 MemTotal:       32768000 kB\n",
        "usr/lib/x86_64-linux-gnu/libjemalloc.so.2": "\x7fELF\x02\x01\x01" + "\0" * 57,  # an ELF header
        "usr/bin/numactl": "",
    }
    for cpu in range(4):
        t = f"sys/devices/system/cpu/cpu{cpu}"
        base[f"{t}/topology/physical_package_id"] = f"{cpu // 2}\n"
        base[f"{t}/topology/core_id"] = f"{cpu % 2}\n"
        base[f"{t}/topology/thread_siblings_list"] = f"{cpu}\n"
        base[f"{t}/topology/core_siblings_list"] = f"{cpu // 2 * 2}-{cpu // 2 * 2 + 1}\n"
        base[f"{t}/cpufreq/scaling_governor"] = "performance\n"
    for i, bus in enumerate(("1b", "1c")):
        d = f"sys/bus/pci/devices/0000:{bus}:00.0"
        base.update({f"{d}/vendor": "0x10de\n", f"{d}/class": "0x030200\n", f"{d}/device": "0x2330\n",
                     f"{d}/numa_node": f"{i}\n", f"{d}/local_cpulist": f"{2 * i}-{2 * i + 1}\n"})
    base.update(files or {})
    for rel, text in base.items():
        if text is None:
            continue
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def healthy_scenario() -> Dict[str, Any]:
    return {"driver": "550.54.15", "cuda_driver": 12040,
            "devices": [a100(0, "1B", 0), a100(1, "1C", 1)]}


def gpu_facts_from(tmp: Path, fake: Callable[[Any], Dict[str, str]], scenario: Any) -> Facts:
    import pynvml

    fake(scenario)
    root = synthetic_root(tmp / "host")
    # probe_torch=True keeps the full NVML sample; on a foreign root no interpreter is run anyway
    return collect(root, probe_torch=True, nvml_module=pynvml)


# ---- the command line ------------------------------------------------------------------------------------------------
def hosttune(*args: str, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def doctor_json(*args: str, env: Dict[str, str]) -> Dict[str, Dict[str, str]]:
    done = hosttune("doctor", "--json", *args, env=env)
    assert done.returncode in (0, 1), done.stderr
    return {f["id"]: f for f in json.loads(done.stdout)["findings"]}


def profile_env(tmp_path: Path) -> Dict[str, str]:
    """This test's environment (scrubbed by conftest) for a `hosttune` child, with a generated user profile that
    plans 2 threads per rank."""
    env = dict(os.environ)
    user = Path(env["XDG_CONFIG_HOME"]) / "hosttune" / "profile.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("threads: 2\n")
    return env
