"""Checks of GPU topology: NUMA locality, IOMMU pass-through, PCIe ACS between GPUs."""

import shlex
from typing import List, Tuple

from hosttune.doctor.context import Context, gpu_label, gpus, is_vm, multi_node
from hosttune.doctor.fixes import PCI_ADDRESS, install, kernel_arg_fix, valid
from hosttune.doctor.model import Finding


def check_gpu_numa(ctx: Context) -> Finding:
    """On multi-node hosts every GPU has a known NUMA node.

    hosttune pins each rank's CPU threads and memory to its GPU's node; `numa_node` = -1 in sysfs (a BIOS that
    does not publish PCIe locality, or "NUMA per socket" off) leaves that choice to chance.
    """
    found = gpus(ctx)
    if not multi_node(ctx):
        return Finding(status="pass", actual="one NUMA node: not relevant", expected="known node per GPU")
    online = set(ctx.facts.cpu.online)
    # local_cpulist naming every CPU is what the kernel reports when it knows nothing: no locality either
    unknown = [gpu_label(g) for g in found
               if g.numa_node < 0 and (not g.local_cpus or (online and set(g.local_cpus) >= online))]
    if unknown:
        return Finding(status="warn", actual="no NUMA node for " + ", ".join(unknown), expected="known node per GPU",
                       fix="enable ACPI SRAT / 'NUMA nodes per socket' in the BIOS; meanwhile set the binding in a "
                       "profile (hosttune profile show)")
    where = [f"GPU{g.index}->node{g.numa_node}" if g.numa_node >= 0 else f"GPU{g.index}->local CPUs only"
             for g in found]
    return Finding(status="pass", actual=", ".join(where), expected="known node per GPU")


def check_iommu(ctx: Context) -> Finding:
    """On multi-GPU bare metal, an enabled IOMMU runs in pass-through mode (`iommu=pt`).

    With `intel_iommu=on`/`amd_iommu=on` and full translation, GPU peer-to-peer and GPUDirect RDMA traffic is
    remapped by the IOMMU: P2P is slow or hangs (NCCL troubleshooting guide: "IOMMU"). `iommu=pt` keeps the IOMMU
    for VFIO but lets host devices DMA directly. VMs are skipped (the hypervisor's IOMMU is what matters).
    """
    if len(gpus(ctx)) < 2:
        return Finding(status="pass", actual=f"{len(gpus(ctx))} GPU: no peer-to-peer",
                       expected="iommu=pt when the IOMMU is on")
    if is_vm(ctx):
        return Finding(status="skip", actual="virtual machine: the host's IOMMU setting applies", expected="")
    cmd = ctx.facts.kernel.cmdline
    if cmd is None:
        return Finding(status="skip", actual="kernel command line not readable",
                       expected="iommu=pt when the IOMMU is on")
    args = cmd.split()
    on = [a for a in args if a in ("intel_iommu=on", "amd_iommu=on")]
    if on and "iommu=pt" not in args:
        return Finding(status="warn", actual=" ".join(on) + " without iommu=pt", expected="iommu=pt",
                       fix=kernel_arg_fix(ctx, "iommu=pt"))
    return Finding(status="pass", actual=" ".join(a for a in args if "iommu" in a) or "no IOMMU arguments",
                   expected="iommu=pt when on")


def parse_acs(text: str) -> Tuple[List[str], bool]:
    """`lspci -vvv` text -> (bridges with ACS redirect/source-validation enabled, capabilities hidden).

    A device block starts with "BB:DD.F ..." at column 0; its ACSCtl line lists flags with +/-.
    """
    enabled: List[str] = []
    denied = "access denied" in text
    dev = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            dev = line.split(" ", 1)[0]
        elif "ACSCtl:" in line:
            flags = line.split("ACSCtl:", 1)[1]
            if any(f"{name}+" in flags for name in ("SrcValid", "ReqRedir", "CmpltRedir")):
                enabled.append(dev)
    return enabled, denied


def check_acs(ctx: Context) -> Finding:
    """PCIe ACS is off on the bridges between GPUs (multi-GPU bare metal).

    Access Control Services with request redirection send every GPU-to-GPU transfer up to the root complex: P2P
    becomes slow or NCCL hangs (NCCL troubleshooting: "PCI Access Control Services"). sysfs does not expose the ACS
    control register, so this needs `lspci -vvv` as root on the live host; otherwise it is skipped with the reason.
    """
    if len(gpus(ctx)) < 2:
        return Finding(status="pass", actual=f"{len(gpus(ctx))} GPU: no peer-to-peer",
                       expected="ACS off on GPU bridges")
    if is_vm(ctx):
        return Finding(status="skip", actual="virtual machine: ACS is the host's business", expected="")
    if not ctx.live:
        return Finding(status="skip", actual="ACS control is not in sysfs; needs lspci on the live host",
                       expected="ACS off")
    try:
        text = ctx.probe.lspci_vvv()
    except RuntimeError as exc:
        return Finding(status="skip", actual=f"{exc} (ACS control is not readable from sysfs)", expected="ACS off")
    if text is None:
        return Finding(status="skip", actual="lspci not installed (ACS control is not readable from sysfs)",
                       expected="ACS off", fix=install(ctx, "pciutils", "pciutils"))
    enabled, denied = parse_acs(text)
    if enabled:
        # device addresses come from lspci's output: only a well-formed bus address goes into setpci
        ok = [d for d in enabled if valid(PCI_ADDRESS, d)]
        fix = "\n".join(f"setpci -s {shlex.quote(d)} ECAP_ACS+0x6.w=0000" for d in ok[:8]) or \
            "setpci -s BUS:DEV.FN ECAP_ACS+0x6.w=0000   # for each bridge lspci -vvv shows with ACSCtl SrcValid+"
        return Finding(status="warn", actual="ACS on for " + ", ".join(enabled), expected="ACS off",
                       fix=fix + "\n# lost at reboot: disable ACS in the BIOS or run this from a boot-time unit")
    if denied:
        return Finding(status="skip", actual="lspci could not read capabilities (run doctor as root)",
                       expected="ACS off")
    return Finding(status="pass", actual="no bridge with ACS redirect enabled", expected="ACS off")

