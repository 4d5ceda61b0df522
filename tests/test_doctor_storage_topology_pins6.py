"""Storage and GPU-topology checks at their boundaries (issue 21): free space at 5 GiB, 50 GiB and 10 %, which
mount a --data path is on (the longest prefix, never a sibling that shares its start), ACS flags in lspci text and
the setpci fix, IOMMU arguments, GPU NUMA locality (hosttune.doctor.checks.storage, hosttune.doctor.checks.topology)."""

from typing import Dict, Tuple

import pytest
from _doctorhelp import R, cpu_host, dgpu, gpu_host, run_one

from hosttune.doctor.checks import storage as storage_checks
from hosttune.doctor.checks import topology
from hosttune.doctor.context import Live
from hosttune.facts import Cpu, Mount, Numa, NumaNode

G = 1024


@pytest.mark.parametrize("total,free,status", [
    (1000 * G, 5 * G - 1, "fail"), (1000 * G, 5 * G, "warn"), (1000 * G, 50 * G - 1, "warn"),
    (0, 50 * G, "pass"), (1000 * G, 50 * G, "warn"), (500 * G, 50 * G, "pass"), (500 * G + 10, 50 * G, "warn"),
    (100 * G, 99 * G, "pass"), (0, 0, "fail"),
])
def test_space_status(total: int, free: int, status: str) -> None:
    assert storage_checks.space_status(total, free) == status


class Disk(Live):
    def __init__(self, sizes: Dict[str, Tuple[int, int]]) -> None:
        self.sizes = sizes

    def disk_free_mb(self, path: str) -> Tuple[int, int]:
        return self.sizes[path]


def test_free_space_worst_place_and_not_data() -> None:
    probe = Disk({"/srv/train": (100 * G, 4 * G), "/data": (1000 * G, 60 * G)})
    f = run_one("storage.free_space", cpu_host(), cwd="/srv/train", data=("/data", "/srv/train", "/dev/null"),
                probe=probe)
    assert (f.status, f.expected) == ("fail", ">= 50 GiB and >= 10% free")
    assert f.actual == ("/srv/train: 4 GiB free of 100 GiB; /data: 60 GiB free of 1000 GiB; /dev/null is a "
                        "character device, not a file or directory of data (not checked)")
    assert f.fix == ("free space (old checkpoints: keep the last N), or write checkpoints to a bigger local disk "
                     "(the engine's --set checkpoint.dir=/scratch/ckpt)")
    f = run_one("storage.free_space", cpu_host(), cwd="/srv/train", probe=Disk({"/srv/train": (100 * G, 20 * G)}))
    assert (f.status, f.actual) == ("warn", "/srv/train: 20 GiB free of 100 GiB")
    f = run_one("storage.free_space", cpu_host(), cwd="/srv/train", probe=Disk({"/srv/train": (100 * G, 60 * G)}))
    assert (f.status, f.fix) == ("pass", "")


@pytest.mark.parametrize("data,status,actual", [
    (("/mnt/nfs/ds",), "warn", "/mnt/nfs/ds: network (nfs4 on /mnt/nfs)"),
    (("/srv/x",), "pass", "/srv/x: nvme (ext4 on /)"),
    (("/mnt/hddx/y",), "pass", "/mnt/hddx/y: nvme (ext4 on /)"),
    (("/mnt/hdd",), "warn", "/mnt/hdd: hdd (xfs on /mnt/hdd)"),
    (("/mnt/hdd/a", "/srv/b"), "warn", "/mnt/hdd/a: hdd (xfs on /mnt/hdd)"),
    (("/dev/null",), "skip", "/dev/null is a character device, not a file or directory of data"),
    (("/dev/null", "/srv/x"), "pass",
     "/srv/x: nvme (ext4 on /); /dev/null is a character device, not a file or directory of data"),
    (("/mnt/nfs/a", "/dev/null"), "warn",
     "/mnt/nfs/a: network (nfs4 on /mnt/nfs); /dev/null is a character device, not a file or directory of data"),
])
def test_data_storage(data: Tuple[str, ...], status: str, actual: str) -> None:
    f = run_one("storage.data", cpu_host(), data=data)
    assert (f.status, f.actual, f.expected) == (status, actual, "local nvme/ssd")
    assert bool(f.fix) is (status == "warn")


def test_data_on_a_virtual_disk_and_without_mounts() -> None:
    vd = cpu_host(storage=(Mount("/", "ext4", "/dev/vda1", "vda", "hdd"),))
    f = run_one("storage.data", vd, data=("/srv/x",))
    assert f.actual == ("/srv/x: hdd (ext4 on /) [a virtual disk: it reports rotational whatever backs it; measure "
                        "with fio to be sure]")
    f = run_one("storage.data", cpu_host(storage=()), data=("/srv/x",))
    assert (f.status, f.actual) == ("pass", "/srv/x: unknown")


ACS = ("00:01.0 PCI bridge: Intel Corporation Device\n"
       "\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd- EgressCtrl- DirectTrans-\n"
       "3a:00.0 PCI bridge: PLX\n\tACSCtl:\tSrcValid- ReqRedir- CmpltRedir-\n"
       "0000:5b:00.0 PCI bridge: PLX\n\tACSCap:\tSrcValid+\n\tACSCtl: CmpltRedir+\n"
       "zz;rm PCI bridge\n\tACSCtl: ReqRedir+\n")


def test_parse_acs() -> None:
    assert topology.parse_acs(ACS) == (["00:01.0", "0000:5b:00.0", "zz;rm"], False)
    assert topology.parse_acs("00:02.0 x\n\tCapabilities: <access denied>\n") == ([], True)
    assert topology.parse_acs("") == ([], False)


class Lspci(Live):
    def __init__(self, text: object) -> None:
        self.text = text

    def lspci_vvv(self) -> object:
        if isinstance(self.text, Exception):
            raise self.text
        return self.text


def test_acs_findings() -> None:
    f = run_one("nvidia.acs", gpu_host(), probe=Lspci(ACS))
    assert (f.status, f.actual, f.expected) == ("warn", "ACS on for 00:01.0, 0000:5b:00.0, zz;rm", "ACS off")
    assert f.fix == ("setpci -s 00:01.0 ECAP_ACS+0x6.w=0000\nsetpci -s 0000:5b:00.0 ECAP_ACS+0x6.w=0000\n"
                     "# lost at reboot: disable ACS in the BIOS or run this from a boot-time unit")
    f = run_one("nvidia.acs", gpu_host(), probe=Lspci("bad;x y\n\tACSCtl: SrcValid+\n"))
    assert f.fix.startswith("setpci -s BUS:DEV.FN ECAP_ACS+0x6.w=0000   # for each bridge")
    f = run_one("nvidia.acs", gpu_host(), probe=Lspci("00:01.0 x\n\tACSCtl: SrcValid-\n"))
    assert (f.status, f.actual) == ("pass", "no bridge with ACS redirect enabled")
    f = run_one("nvidia.acs", gpu_host(), probe=Lspci("00:01.0 x\n\tCapabilities: <access denied>\n"))
    assert (f.status, f.actual) == ("skip", "lspci could not read capabilities (run doctor as root)")
    f = run_one("nvidia.acs", gpu_host(), probe=Lspci(None))
    assert (f.status, f.actual, f.fix) == ("skip", "lspci not installed (ACS control is not readable from sysfs)",
                                           "apt-get install -y pciutils")
    f = run_one("nvidia.acs", gpu_host(), probe=Lspci(RuntimeError("lspci -vvv: timed out")))
    assert (f.status, f.actual) == ("skip", "lspci -vvv: timed out (ACS control is not readable from sysfs)")
    f = run_one("nvidia.acs", gpu_host(), probe=Lspci(ACS), live=False)
    assert (f.status, f.actual) == ("skip", "ACS control is not in sysfs; needs lspci on the live host")
    vm = gpu_host(cpu=R(gpu_host().cpu, flags=("avx2", "hypervisor")))
    assert run_one("nvidia.acs", vm, probe=Lspci(ACS)).actual == "virtual machine: ACS is the host's business"
    one = gpu_host(gpus=(dgpu(0),))
    assert run_one("nvidia.acs", one, probe=Lspci(ACS)).actual == "1 GPU: no peer-to-peer"


@pytest.mark.parametrize("cmdline,status,actual", [
    ("BOOT_IMAGE=/vmlinuz intel_iommu=on quiet", "warn", "intel_iommu=on without iommu=pt"),
    ("amd_iommu=on", "warn", "amd_iommu=on without iommu=pt"),
    ("intel_iommu=on iommu=pt", "pass", "intel_iommu=on iommu=pt"),
    ("quiet", "pass", "no IOMMU arguments"), ("intel_iommu=off", "pass", "intel_iommu=off"),
    (None, "skip", "kernel command line not readable"),
])
def test_iommu(cmdline: object, status: str, actual: str) -> None:
    facts = gpu_host()
    f = run_one("nvidia.iommu", R(facts, kernel=R(facts.kernel, cmdline=cmdline)))
    assert (f.status, f.actual) == (status, actual)
    if status == "warn":
        assert f.fix == ("sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT=\"/&iommu=pt /' /etc/default/grub && update-grub "
                         "&& reboot")


def test_gpu_numa() -> None:
    f = run_one("nvidia.gpu_numa", gpu_host())
    assert (f.status, f.actual) == ("pass", "GPU0->node0, GPU1->node1")
    f = run_one("nvidia.gpu_numa", gpu_host(gpus=(dgpu(0), dgpu(1, numa_node=-1, local_cpus=(4, 5, 6, 7)))))
    assert (f.status, f.actual) == ("pass", "GPU0->node0, GPU1->local CPUs only")
    f = run_one("nvidia.gpu_numa", gpu_host(gpus=(dgpu(0, numa_node=-1, local_cpus=tuple(range(8))),
                                                    dgpu(1, numa_node=-1))))
    assert (f.status, f.actual) == ("warn", "no NUMA node for GPU0 (0000:1b:00.0), GPU1 (0000:1c:00.0)")
    assert f.fix.startswith("enable ACPI SRAT / 'NUMA nodes per socket' in the BIOS")
    one = gpu_host(numa=Numa(nodes=(NumaNode(0, tuple(range(8)), 1000),), allowed_mems=(0,)),
                   cpu=Cpu(logical=8, online=tuple(range(8))))
    assert run_one("nvidia.gpu_numa", one).actual == "one NUMA node: not relevant"


def test_iommu_on_a_vm_is_the_hosts() -> None:
    vm = gpu_host(cpu=R(gpu_host().cpu, flags=("avx2", "hypervisor")))
    facts = R(vm, kernel=R(vm.kernel, cmdline="intel_iommu=on"))
    got = run_one("nvidia.iommu", facts)
    assert (got.status, got.actual, got.expected) == ("skip", "virtual machine: the host's IOMMU setting applies", "")
    one = gpu_host(gpus=(dgpu(0),))
    assert run_one("nvidia.iommu", R(one, kernel=R(one.kernel, cmdline="intel_iommu=on"))).actual == \
        "1 GPU: no peer-to-peer"
