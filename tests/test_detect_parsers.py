"""The detector's parsers, fed string literals (the text of real files), never paths."""

import pytest

from hosttune.detect import allocators, cgroup, cpu, kernel, mounts, numa, nvidia, storage, torchenv
from hosttune.detect.hostio import format_cpulist, parse_cpulist, parse_cpumask
from hosttune.facts import Gpu


def test_cpulist_forms() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("0-31\n\0") == list(range(32))  # 128arm node cpulists end in "\n\0"
    assert parse_cpulist("") == []
    assert parse_cpulist("0-7:2") == [0, 2, 4, 6]
    assert format_cpulist([5, 0, 1, 2, 9]) == "0-2,5,9"


def test_cpumask_is_hex_with_commas() -> None:
    assert parse_cpumask("00000000,0000000f\n") == [0, 1, 2, 3]
    assert parse_cpumask("00000001,00000000") == [32]
    assert parse_cpumask("0\n\0") == []


X86 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse2 lm avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16 amx_int8 avx512bw

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
"""
ARM = """processor\t: 0
BogoMIPS\t: 200.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve sve2 bf16 i8mm
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd4f
"""
POWER = """processor\t: 0
cpu\t\t: POWER9, altivec supported
clock\t\t: 3800.000000MHz
"""


def test_cpuinfo_x86_arm_power() -> None:
    x = cpu.parse_cpuinfo(X86)
    assert x["model"] == "Intel(R) Xeon(R) Platinum 8480+" and x["vendor"] == "GenuineIntel"
    assert cpu.interesting_flags(x["flags"]) == (
        "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
    a = cpu.parse_cpuinfo(ARM)
    assert a["vendor"] == "ARM" and a["model"] == "Neoverse-V2"  # from the part number, as lscpu names it
    assert cpu.parse_cpuinfo(ARM.replace("0xd4f", "0xfff"))["model"] is None  # unknown: py-cpuinfo fallback
    assert {"sve", "sve2", "bf16", "i8mm"} <= set(cpu.interesting_flags(a["flags"]))
    p = cpu.parse_cpuinfo(POWER)
    assert p["model"] == "POWER9, altivec supported" and p["vendor"] == "IBM"


def test_proc_cgroup_v1_v2_hybrid() -> None:
    assert cgroup.parse_proc_cgroup("0::/user.slice/session-2.scope\n") == ("/user.slice/session-2.scope", {})
    v2, v1 = cgroup.parse_proc_cgroup("7:cpu,cpuacct:/user.slice\n7:cpuset:/jjh\n1:name=systemd:/x\n0::/x\n")
    assert v2 == "/x" and v1["cpuset"] == "/jjh" and v1["cpu"] == "/user.slice" and v1["cpuacct"] == "/user.slice"


@pytest.mark.parametrize("text,expected", [
    ("max 100000\n", None), ("150000 100000", 1.5), ("50000 100000", 0.5), ("", None), (None, None),
])
def test_cpu_max(text, expected) -> None:  # type: ignore[no-untyped-def]
    assert cgroup.parse_cpu_max(text) == expected


def test_cfs_quota_and_memory_max() -> None:
    assert cgroup.parse_cfs("-1\n", "100000\n") is None
    assert cgroup.parse_cfs("200000", "100000") == 2.0
    assert cgroup.parse_memory_max("max\n") is None
    assert cgroup.parse_memory_max("8589934592\n") == 8 << 30
    assert cgroup.parse_memory_max("9223372036854771712") is None  # v1's "unlimited"


MOUNTINFO = r"""22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
25 22 0:23 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size=65536k
30 22 0:45 / /mnt/my\040data rw,relatime - nfs4 fs1:/export/my\040data rw,vers=4.2
31 22 0:46 /sub /data rw,relatime shared:7 master:2 propagation_from:1 - cifs //srv/share rw
"""


def test_mountinfo_optional_fields_and_escapes() -> None:
    got = mounts.parse_mountinfo(MOUNTINFO)
    assert [m.mount for m in got] == ["/", "/dev/shm", "/mnt/my data", "/data"]
    assert got[0].devno == "259:2" and got[0].fstype == "ext4" and got[0].source == "/dev/nvme0n1p2"
    assert got[2].source == "fs1:/export/my data" and got[2].fstype == "nfs4"
    assert got[3].fstype == "cifs" and got[3].root == "/sub"  # three optional fields before "-"
    assert "size=65536k" in got[1].options


def test_proc_mounts() -> None:
    got = mounts.parse_mounts("none /cgroup/unified cgroup2 rw 0 0\n/dev/sda1 / ext3 rw 0 0\n")
    assert got[0].fstype == "cgroup2" and got[0].mount == "/cgroup/unified" and got[1].source == "/dev/sda1"


def test_meminfo() -> None:
    info = numa.parse_meminfo("MemTotal:       16384000 kB\nHugePages_Total:       4\nHugepagesize:    2048 kB\n")
    assert info == {"MemTotal": 16384000, "HugePages_Total": 4, "Hugepagesize": 2048}
    assert numa.parse_node_meminfo("Node 3 MemTotal:       8388608 kB\nNode 3 MemFree: 1 kB\n") == 8192


def test_kernel_bracketed_and_modules() -> None:
    assert kernel.parse_bracketed("always [madvise] never\n") == "madvise"
    assert kernel.parse_bracketed(None) is None
    text = "nvidia_uvm 1 0 - Live 0x0\nnvidia 5 1 nvidia_uvm, Live 0x0\nmlx5_core 9 0 - Live 0x0\n"
    assert kernel.parse_modules(text) == ["nvidia", "nvidia_uvm", "mlx5_core"]


def test_nvidia_versions() -> None:
    proc = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version: 12\n"
    assert nvidia.parse_proc_driver_version(proc) == "550.54.15"
    open_proc = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build\n"
    assert nvidia.parse_proc_driver_version(open_proc) == "570.86.15"
    assert nvidia.parse_cuda_version_json('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}') == "12.4.1"
    assert nvidia.parse_cuda_version_json("not json") is None
    assert nvidia.parse_cuda_version_txt("CUDA Version 10.2.89\n") == "10.2.89"
    assert nvidia.parse_cuda_version_txt("Cuda compilation tools, release 12.4, V12.4.131\n") == "12.4.131"
    hdr = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
    assert nvidia.parse_header_version(hdr, "CUDNN") == "9.1.0"
    assert nvidia.parse_header_version("#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n",
                                       "NCCL") == "2.21.5"
    assert nvidia.soname_version(["libnccl.so.2", "libnccl.so.2.21.5", "libnccl.so"], "libnccl") == "2.21.5"


def test_library_pick_prefers_runtime_soname() -> None:
    names = ["libjemalloc.so", "libjemalloc.so.2", "libjemalloc_pic.a", "libtcmalloc_minimal.so.4.5.9",
             "libtcmalloc_minimal.so.4"]
    assert allocators.pick(names, "libjemalloc") == "libjemalloc.so.2"
    assert allocators.pick(names, "libtcmalloc_minimal") == "libtcmalloc_minimal.so.4"
    assert allocators.pick(names, "libtcmalloc") is None  # minimal is not the full tcmalloc
    assert allocators.pick(["libiomp5.so"], "libiomp5") == "libiomp5.so"
    ld = "\tlibjemalloc.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libjemalloc.so.2\n"
    assert allocators.parse_ldconfig(ld) == {"libjemalloc.so.2": "/lib/x86_64-linux-gnu/libjemalloc.so.2"}


def test_disk_kind_and_tmpfs_size() -> None:
    assert storage.disk_kind("nvme0n1", "0") == "nvme"
    assert storage.disk_kind("sda", "1") == "hdd"
    assert storage.disk_kind("sdb", "0") == "ssd"
    assert storage.disk_kind("vdz", None) == "unknown"
    assert storage._size_option("rw,size=65536k") == 64
    assert storage._canonical_nvme("nvme0c0n1") == "nvme0n1"


def test_torch_cuda_inference() -> None:
    g = [Gpu(index=0, pci_bus_id="0000:3b:00.0")]
    assert torchenv.infer_cuda("12.4", "12.2", g)  # minor-version compatibility within a major
    assert not torchenv.infer_cuda("12.4", "11.8", g)  # driver too old for the major
    assert not torchenv.infer_cuda(None, "12.4", g)  # CPU wheel on a GPU host
    assert not torchenv.infer_cuda("12.4", "12.4", [])  # no visible GPU
    assert not torchenv.infer_cuda("12.4", None, g)  # no driver


def test_cpulist_round_trip_and_mask_agree() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=200, deadline=None)
    @given(st.sets(st.integers(min_value=0, max_value=511), max_size=64))
    def check(cpus: set) -> None:  # type: ignore[type-arg]
        assert parse_cpulist(format_cpulist(sorted(cpus))) == sorted(cpus)
        mask = sum(1 << c for c in cpus)
        words = f"{mask:x}".rjust(((max(cpus, default=0) // 32) + 1) * 8, "0")
        text = ",".join(words[i:i + 8] for i in range(0, len(words), 8))  # sysfs groups 32 bits
        assert parse_cpumask(text) == sorted(cpus)

    check()
