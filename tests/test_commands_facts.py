"""hosttune/commands/facts.py's summary (`render`): every row it draws and every branch of each row, as exact text."""

from hosttune.commands.facts import render
from hosttune.facts import (
    Allocators,
    Cgroup,
    Cpu,
    Distro,
    Facts,
    Gpu,
    Kernel,
    Memory,
    Mount,
    Numa,
    NumaNode,
    Nvidia,
    Tools,
    TorchInstall,
    Tuned,
)


def _full(**over: object) -> Facts:
    base = dict(
        root="/captured", hostname="node7",
        distro=Distro(id="ubuntu", version="24.04", version_best="24.04.1", codename="noble", name="Ubuntu",
                      family="debian"),
        kernel=Kernel(release="6.8.0", thp="madvise", numa_balancing=1, swappiness=60,
                      governors=("performance", "powersave")),
        cpu=Cpu(model="EPYC 9654", vendor="AuthenticAMD", arch="x86_64", flags=("avx2", "avx512f"), logical=8,
                physical=4, packages=1, smt=True, allowed_cpus=(0, 1, 2, 3, 6), quota_cpus=2.5,
                cgroup=Cgroup(version=2)),
        numa=Numa(nodes=(NumaNode(id=0, cpus=(0, 1, 2, 3), memory_mb=1024), NumaNode(id=1, memory_mb=512))),
        gpus=(Gpu(index=0, name="H200", pci_bus_id="0000:3b:00.0", numa_node=0, memory_mb=143771),
              Gpu(index=1, pci_bus_id="0000:5e:00.0", device_id="0x2335"),
              Gpu(index=2, pci_bus_id="0000:86:00.0", numa_node=1)),
        nvidia=Nvidia(driver="550.54.15", cuda_driver="12.4", nvml="ok", cuda_toolkit="12.4.1", cudnn="9.1",
                      nccl="2.21", nvswitches=4, fabric_manager_installed=True),
        torch=TorchInstall(python="/usr/bin/python3", version="2.4.0", cuda="12.4", cudnn="90100", nccl="2.21.5",
                           cuda_available=True, device_count=3),
        allocators=Allocators(jemalloc="/usr/lib/libjemalloc.so.2", gomp="/usr/lib/libgomp.so.1"),
        tools=Tools(numactl="/usr/bin/numactl", torchrun="/venv/bin/torchrun"),
        storage=(Mount(mount="/", fstype="ext4", device="nvme0n1", kind="nvme", size_mb=1000),
                 Mount(mount="/tmp", fstype="tmpfs", kind="tmpfs", size_mb=10),
                 Mount(mount="/dev/shm", fstype="tmpfs", kind="tmpfs", size_mb=20),
                 Mount(mount="/data", fstype="nfs", kind="network")),
        memory=Memory(total_mb=2048, available_mb=1024, swap_total_mb=0, shm_mb=20),
        tuned=Tuned(installed=True, running=True, profile="throughput-performance", mode="manual"),
        missing=("gpu nvml: library not found", "hwloc: absent"),
    )
    base.update(over)
    return Facts(**base)  # type: ignore[arg-type]


def test_a_bare_facts_draws_every_unknown_as_a_question_mark_or_a_dash() -> None:
    assert render(Facts()).splitlines() == [
        "host           ?",
        "distro         unknown  family=unknown",
        "kernel         ?  thp=?  numa_balancing=?  swappiness=?  governor=-",
        "cpu            ? (?, ?)",
        "cpu topology   0 package(s), 0 cores, 0 logical, smt=off",
        "cpu flags      -",
        "cpu allowed    - (0)  quota=none  no cgroup",
        "gpus           none",
        "nvidia driver  none  cuda=-  nvml=skipped",
        "cuda toolkit   none  cudnn=-  nccl=-",
        "torch          not found",
        "allocators     jemalloc=no  tcmalloc=no  tcmalloc_minimal=no  iomp5=no  gomp=no",
        "tools          numactl=no  nvidia-smi=no  torchrun=no",
        "memory         ? MiB total, ? MiB available, swap ? MiB, /dev/shm ? MiB",
        "tuned          not installed",
    ]


def test_a_full_captured_host_draws_every_row() -> None:
    assert render(_full()).splitlines() == [
        "host              node7 (/captured)",
        "distro            Ubuntu 24.04.1 (noble) family=debian",
        "kernel            6.8.0  thp=madvise  numa_balancing=1  swappiness=60  governor=performance,powersave",
        "cpu               EPYC 9654 (AuthenticAMD, x86_64)",
        "cpu topology      1 package(s), 4 cores, 8 logical, smt=on",
        "cpu flags         avx2 avx512f",
        "cpu allowed       0-3,6 (5)  quota=2.5  cgroup v2",
        "numa node0        cpus 0-3  1024 MiB",
        "numa node1        cpus -  512 MiB",
        "gpu0              H200  0000:3b:00.0  numa=0  143771 MiB",
        "gpu1              NVIDIA 0x2335  0000:5e:00.0  numa=-1",
        "gpu2              NVIDIA GPU  0000:86:00.0  numa=1",
        "nvidia driver     550.54.15  cuda=12.4  nvml=ok",
        "cuda toolkit      12.4.1  cudnn=9.1  nccl=2.21  nvswitches=4 fabricmanager=yes",
        "torch             2.4.0 cuda=12.4 cudnn=90100 nccl=2.21.5 cuda_available=True devices=3 (/usr/bin/python3)",
        "allocators        jemalloc=yes  tcmalloc=no  tcmalloc_minimal=no  iomp5=no  gomp=yes",
        "tools             numactl=/usr/bin/numactl  nvidia-smi=no  torchrun=/venv/bin/torchrun",
        "memory            2048 MiB total, 1024 MiB available, swap 0 MiB, /dev/shm 20 MiB",
        "tuned             running  profile=throughput-performance  mode=manual",
        "storage /         nvme (ext4, nvme0n1)  1000 MiB",
        "storage /dev/shm  tmpfs (tmpfs)  20 MiB",
        "storage /data     network (nfs)",
        "missing           gpu nvml: library not found",
        "missing           hwloc: absent",
    ]


def test_the_torch_row_names_a_failed_probe_and_a_root_that_was_not_probed() -> None:
    def torch_row(f: Facts) -> str:
        return next(line for line in render(f).splitlines() if line.startswith("torch"))

    assert torch_row(_full(torch=TorchInstall(python="/opt/py", error="timeout"))).split(None, 1)[1] == \
        "error: timeout (/opt/py)"
    assert torch_row(_full(torch=None)).split(None, 1)[1] == "not probed (--root)"
    assert torch_row(_full(root="/", torch=None)).split(None, 1)[1] == "not found"


def test_the_host_distro_cuda_and_tuned_rows_in_their_other_shapes() -> None:
    lines = render(_full(root="/", distro=Distro(id="rocky", version="9", family="rhel"),
                         nvidia=Nvidia(cuda_toolkit="12.1", nvswitches=2),
                         tuned=Tuned(installed=True))).splitlines()
    assert lines[0].split(None, 1)[1] == "node7"
    assert lines[1].split(None, 1)[1] == "rocky 9 family=rhel"
    assert "cuda toolkit      12.1  cudnn=-  nccl=-  nvswitches=2 fabricmanager=no" in lines
    assert "tuned             state unknown  profile=-  mode=-" in lines
    stopped = render(_full(tuned=Tuned(installed=True, running=False, profile="balanced"))).splitlines()
    assert "tuned             not running  profile=balanced  mode=-" in stopped


def test_host_text_cannot_drive_the_terminal() -> None:
    out = render(_full(cpu=Cpu(model="X\x1b[2Jwiped"), hostname="h\x1b]0;t\x07"))
    assert "\x1b" not in out and "\x07" not in out
