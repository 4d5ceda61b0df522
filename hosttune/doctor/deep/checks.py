"""doctor --deep's checks: each reads one measurement of the run's DeepRun (`ctx.deep`, started on first use and
shared) and turns it into a Finding through hosttune.doctor.deep.findings. Same model, table and JSON as the
inferred checks; each run function's docstring is its `--explain`."""

import json
import os
from pathlib import Path
from typing import Dict, Optional, Tuple

from hosttune import nvml as nvmlmod
from hosttune.detect.hostio import HostIO
from hosttune.doctor.checks.storage import _mount_for
from hosttune.doctor.context import GPU, Context, Need, gpus, live
from hosttune.doctor.deep import findings, host, network
from hosttune.doctor.deep.session import DeepRun, nvml_index
from hosttune.doctor.fixes import container_toolkit_install
from hosttune.doctor.model import Check, Finding
from hosttune.policy import bandwidth
from hosttune.policy import cpu as cpu_policy

DEEP = Need("deep", lambda ctx: ctx.deep is not None, "measured only with --deep")
LIVE = live("measurements run on this machine only (--root given)")


def _run(ctx: Context) -> DeepRun:
    assert ctx.deep is not None  # the DEEP need
    return ctx.deep  # type: ignore[no-any-return]


def _devices(ctx: Context, job: str = "torch") -> Tuple[Optional[dict], list]:
    info = _run(ctx).job(job).result("info")
    usable = [d for d in (info or {}).get("devices", []) if not d.get("error")]
    return info, usable


def _cuda_ready(ctx: Context) -> Optional[Finding]:
    """A skip when torch cannot use the GPUs (torch.deep_cuda says why), else None."""
    info, usable = _devices(ctx)
    if info is None or not usable:
        return Finding(status="skip", actual=f"needs torch with working CUDA (see {findings.TORCH_CHECK})")
    return None


def _two_gpus(ctx: Context, what: str) -> Tuple[Optional[Finding], list]:
    """(a skip, []) unless torch can use at least two GPUs; else (None, the usable devices)."""
    skip = _cuda_ready(ctx)
    if skip:
        return skip, []
    _, usable = _devices(ctx)
    if len(usable) < 2:
        return Finding(status="skip", actual=f"one GPU: {what}", expected=""), []
    return None, usable


def _slowest_pcie(ctx: Context) -> Optional[float]:
    """The realistic rate of the slowest GPU's PCIe link (policy.bandwidth), None when NVML gave none."""
    known = [x for x in (bandwidth.pcie_expected_gbps(g.pcie_gen_max, g.pcie_width_max) for g in gpus(ctx)) if x]
    return min(known) if known else None


def _index_map(ctx: Context, job: str) -> Dict[int, int]:
    info = _run(ctx).job(job).result("info") or {}
    devices = info.get("devices", [])
    return {int(d["index"]): nvml_index(ctx.facts.gpus, devices, int(d["index"])) for d in devices}


# ---- torch --------------------------------------------------------------------------------------------------------
def check_torch_cuda(ctx: Context) -> Finding:
    """torch imports in the training interpreter (the one `facts` probes, run isolated like that probe) and, on a
    GPU host, CUDA initialises every GPU.

    This runs torch for real, in a subprocess with a timeout: `import torch`, `torch.cuda.init()` (which raises
    the reason `cuda.is_available()` hides: driver too old, no permission on /dev/nvidia*, MIG without an
    instance, Fabric Manager not running), then a tiny kernel on each device. bf16 support is the compute
    capability >= 8.0 (Ampere): torch.cuda.is_bf16_supported() also says True on V100/T4, where bf16 is emulated.
    The first CUDA error is the finding's actual value."""
    run = _run(ctx)
    return findings.torch_finding(run.job("torch"), len(gpus(ctx)), run.python())


# ---- GPU ----------------------------------------------------------------------------------------------------------
def check_compute(ctx: Context) -> Finding:
    """Each GPU runs a large matmul (8192^2) in bf16, fp16 and tf32 for a few hundred ms; achieved TFLOP/s vs the
    model's dense peak from the one peak table (hosttune.policy.gpu_peak, also the engine's MFU).

    Below 70% of peak is a warning, shown with the clock-event reasons NVML reported for that GPU while it
    computed (power cap, thermal or hardware slowdown: the same levels as nvidia.clock_reasons, so a hardware
    slowdown fails). Volta/Turing have no bf16/tf32 tensor cores: those rows read n/a."""
    skip = _cuda_ready(ctx)
    if skip:
        return skip
    run = _run(ctx)
    return findings.compute_finding(run.job("gpu"), run.clock_events, _index_map(ctx, "gpu"))


def check_copies(ctx: Context) -> Finding:
    """Pinned and pageable host-to-device and device-to-host copies per GPU (256 MiB) vs what the GPU's PCIe link
    allows: NVML's maximum gen x width at the coded rate per lane x 80% (TLP overhead; what bandwidthTest reaches
    on a healthy link). Pinned copies below 75% of that warn; the link NVML saw during the copies is shown."""
    skip = _cuda_ready(ctx)
    if skip:
        return skip
    run = _run(ctx)
    links = {g.index: (g.pcie_gen_max, g.pcie_width_max) for g in ctx.facts.gpus}
    return findings.copies_finding(run.job("gpu"), links, run.pcie_seen, _index_map(ctx, "gpu"))


def check_p2p(ctx: Context) -> Finding:
    """The peer-to-peer access matrix (torch.cuda.can_device_access_peer) and a 256 MiB peer copy from each GPU
    to the next. On NVLink models every pair should be peer-accessible and copies reach >= 40% of one
    direction's NVLink rate; on PCIe, >= 50% of the link's realistic rate (ACS or IOMMU translation on the path
    sends peer traffic through the root complex, or turns P2P off)."""
    skip, usable = _two_gpus(ctx, "no peer to copy to")
    if skip:
        return skip
    return findings.p2p_finding(_run(ctx).job("gpu"), [str(d.get("name")) for d in usable], _slowest_pcie(ctx))


def check_nccl(ctx: Context) -> Finding:
    """NCCL all-reduce over every local GPU, started through torchrun (one rank per GPU), 256 MiB float32: the
    nccl-tests bus bandwidth `busbw = algbw * 2(n-1)/n` (NVIDIA/nccl-tests doc/PERFORMANCE.md), comparable with
    one GPU's link bandwidth whatever the rank count, and whether the sums were right.

    Expected: on NVLink models >= 60% of one direction's NVLink rate per GPU (nccl-tests on healthy 8x A100
    reach ~230 of 300 GB/s, 8x H100 ~350-480 of 450); on PCIe >= 40% of the link's realistic rate."""
    skip, usable = _two_gpus(ctx, "no all-reduce across GPUs")
    if skip:
        return skip
    name = str(usable[0].get("name"))
    nvlink = bandwidth.nvlink_gbps(name)
    if nvlink:
        want: Optional[float] = nvlink * bandwidth.NVLINK_WARN_FRACTION
        basis = f"60% of NVLink {nvlink:.0f} GB/s per GPU ({name})"
    else:
        slowest = _slowest_pcie(ctx)
        want = slowest * bandwidth.PCIE_ALLREDUCE_WARN_FRACTION if slowest else None
        basis = "40% of the slowest PCIe link's realistic rate" if slowest else "completes with correct sums"
    return findings.allreduce_finding(_run(ctx).job("allreduce_nccl"), "nccl", want, basis)


def check_nvlink(ctx: Context) -> Finding:
    """Every NVLink of every GPU is up (NVML nvmlDeviceGetNvLinkState). A link down halves (or worse) what NCCL
    gets between that GPU and the others; PCIe GPUs have none and skip."""
    links: Dict[int, list] = {}
    try:
        with nvmlmod.Nvml() as session:
            for g in ctx.facts.gpus:
                count = session.nvlink_count(g.index)
                if count:  # nvlink_up: per link 1 up, 0 down, None did not answer
                    ups = session.health(g.index, count).get("nvlink_up") or []
                    links[g.index] = [{"link": k, "up": bool(v)} for k, v in enumerate(ups) if v is not None]
    except (nvmlmod.NvmlUnavailable, nvmlmod.GpuLost) as exc:
        return Finding(status="skip", actual=f"NVML: {exc}")
    return findings.nvlink_finding(links)


# ---- CPU ----------------------------------------------------------------------------------------------------------
def _cores(ctx: Context, threads: Optional[int]) -> int:
    """Threads the CPU measurements run: the thread budget (policy.cpu: physical cores of the allowed set, capped by
    the quota), or `threads` when fewer."""
    cores = cpu_policy.thread_budget(ctx.facts.cpu) or 1
    return max(1, min(cores, threads) if threads else cores)


def check_cpu_matmul(ctx: Context) -> Finding:
    """An fp32 matmul (1024^2; 2048^2 above 8 threads, 4096^2 above 32) with torch's threads: achieved GFLOP/s
    vs the CPU's peak = physical cores this process may use x clock x FLOPs per cycle of its widest vector FMA
    (AVX-512 64, AVX2+FMA 32, AVX 16, SSE 8; hosttune.policy.cpu_peak). Below 40% of it something takes the
    cores (other jobs, a quota, oversubscribed threads) or the clock is lower than reported."""
    run = _run(ctx)
    job = run.job("torch")
    r = job.result("cpu_matmul")
    cpu = ctx.facts.cpu
    ghz, _ = host.cpu_clock_ghz(HostIO(Path("/")), cpu.model)
    threads = int(r["threads"]) if r and r.get("threads") else None
    return findings.cpu_matmul_finding(job, _cores(ctx, threads), ghz, cpu.flags, cpu.vendor, cpu.arch)


def check_membw(ctx: Context) -> Finding:
    """STREAM triad (a = b + s*c, three 128 MiB float32 arrays) with torch's threads: GB/s vs a floor of 2 GB/s
    per thread (hosttune.policy.cpu_peak: a memory channel streams 15-35 GB/s for at most ~8-12 cores). Below it,
    memory is on another NUMA node, a channel is empty, or the host swaps."""
    return findings.membw_finding(_run(ctx).job("torch"))


def check_bf16(ctx: Context) -> Finding:
    """The same matmul in fp32 and under torch.autocast('cpu', bfloat16). A CPU without avx512_bf16/amx_bf16
    emulates bf16: autocast runs 10-30x slower than fp32 (perf-notes: x0.03-0.10 here), so amp=bf16 on such a
    CPU is the slowest choice; warn when bf16 reaches less than 0.8x of fp32."""
    return findings.bf16_finding(_run(ctx).job("torch"), ctx.facts.cpu.flags)


def check_gloo(ctx: Context) -> Finding:
    """On a host without usable GPUs: a gloo all-reduce over 2 local ranks through torchrun (16 MiB float32), the
    path CPU DDP training takes. It must finish with correct sums; the bus bandwidth (nccl-tests formula) is
    shown, with no rated peak to hold it to (loopback TCP)."""
    info, usable = _devices(ctx)
    if usable:
        return Finding(status="skip", actual="GPU host: see nvidia.deep_allreduce", expected="")
    if info is None:
        return Finding(status="skip", actual=f"needs a working torch (see {findings.TORCH_CHECK})")
    if not info.get("gloo"):
        return Finding(status="fail", actual="torch.distributed has no gloo backend", expected="gloo available",
                       fix="install a torch wheel built with distributed support (the pytorch.org wheels are)")
    return findings.allreduce_finding(_run(ctx).job("allreduce_gloo"), "gloo", None,
                                      "2 ranks finish with correct sums (loopback: no rated peak)")


# ---- network ------------------------------------------------------------------------------------------------------
def check_network(ctx: Context) -> Finding:
    """For each host named by --nodes: the address it resolves to, the interface the kernel routes it through (the
    same lookup as `ip route get`; what GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME should name) and that interface's
    kind, link state, MTU and speed (/sys/class/net/IF), its NUMA node beside the GPUs', and on InfiniBand/RoCE
    hosts the state and rate of the ports behind it (/sys/class/infiniband/DEV/ports/N).

    Fails when the peer does not resolve, resolves to loopback, has no route, is reached through loopback or a
    container bridge (the collectives never leave this host), the link is down or an IB port behind it is not
    ACTIVE. Warns on an MTU below 1500 on Ethernet (a tunnel; a node with a different MTU drops the large packets
    of the first big collective), a link below 10 Gb/s, or different MTUs on the interfaces that reach the peers.
    A host of the list that is this host passes (the same --nodes list can be given on every node)."""
    return network.nodes_finding(node_paths(ctx), [g.numa_node for g in gpus(ctx) if g.numa_node >= 0])


def node_paths(ctx: Context) -> list:
    """network.NetPath for each --nodes host, read once per run."""
    run = _run(ctx)
    if run.paths is None:
        from hosttune.detect.netroute import LiveRoutes

        routes = LiveRoutes()
        ports = network.ib_ports(routes.io)
        run.paths = [network.network_path(peer, routes, routes.io, ports) for peer in run.options.nodes]
    return run.paths


def check_nodes_allreduce(ctx: Context) -> Finding:
    """A gloo all-reduce across the nodes named by --nodes, one rank per node, through torchrun's c10d rendezvous
    (the launcher the job itself uses). Give the same --nodes list on every node, this one included, and start
    doctor --deep on all of them: the first host of the list hosts the rendezvous (--rdzv-port, 29400), gloo runs
    over the interface the kernel routes the others through (GLOO_SOCKET_IFNAME) and each node advertises its
    address on it (torchrun --local-addr). The bus bandwidth is nccl-tests' busbw = algbw x 2(n-1)/n (n ranks):
    what the network carries per node, comparable whatever the node count. It must finish with correct sums;
    gloo over TCP has no rated peak to hold it to, the network path's speed is in os.deep_network. Each node
    also tells the others the MTU of its interface: nodes whose MTUs differ warn (the larger side's big packets
    are dropped or fragmented on the way, which stalls RDMA and jumbo-frame traffic)."""
    paths = node_paths(ctx)
    own = [p for p in paths if p.own]
    others = [p for p in paths if not p.own]
    if not own:
        return Finding(status="skip", actual="this host is not in --nodes: give every node, this one included")
    if not others:
        return Finding(status="skip", actual="--nodes names only this host")
    broken = [p.peer for p in others if p.ifname is None or p.kind in ("loopback", "container-bridge")]
    if broken:
        return Finding(status="skip", actual=f"no usable route to {', '.join(broken)} (see os.deep_network)")
    first = paths[0]
    host = f"[{first.address}]" if ":" in str(first.address) else str(first.address)
    conf = f"is_host={int(first.own)},join_timeout=80"  # torch's own host test misses a second NIC
    via = others[0]
    tag = json.dumps({"node": via.source, "ifname": via.ifname, "mtu": via.mtu})
    job = _run(ctx).nodes_allreduce(f"{host}:{_run(ctx).options.rdzv_port}", len(paths), conf, str(via.source),
                                    str(via.ifname), tag)
    return network.nodes_allreduce_finding(job, len(paths))


# ---- storage ------------------------------------------------------------------------------------------------------
def check_disk_read(ctx: Context) -> Finding:
    """Sequential read of each --data path (a file, or the largest files under a directory; up to 512 MiB or 2 s)
    with the page cache bypassed: O_DIRECT into page-aligned buffers, or, where the file system refuses O_DIRECT
    (tmpfs, some FUSE/network mounts), posix_fadvise(DONTNEED) first, which the finding says. MB/s vs the floor of
    the disk kind the detector found (hosttune.policy.bandwidth: nvme 1000, ssd 300, hdd 100, network 100)."""
    kinds = {}
    for p in ctx.data:
        m = _mount_for(ctx, p)
        kinds[os.path.abspath(p)] = m.kind if m is not None else "unknown"
    return findings.disk_finding(_run(ctx).job("disk"), kinds)


def check_shm_speed(ctx: Context) -> Finding:
    """Write then read a file in /dev/shm (256 MiB, or half of what is free): DataLoader workers pass every batch
    through it. Below 1000 MB/s either way means memory pressure or a starved cgroup."""
    return findings.shm_finding(_run(ctx).job("shm"))


# ---- containers ---------------------------------------------------------------------------------------------------
def check_container(ctx: Context) -> Finding:
    """Whether hosttune runs inside a container (the facts' container section: the runtimes' marker files, PID 1's
    container=, the cgroup path, the runtime's bind mounts). Inside one on a GPU host, the GPUs
    must have been passed in: /dev/nvidiactl present (docker --gpus all, CDI --device nvidia.com/gpu=all, or the
    Kubernetes device plugin)."""
    box = ctx.facts.container  # detect/container.py: the one reader of a container's signs
    if not box.detected:
        return Finding(status="pass", actual="not in a container", expected="")
    actual = f"inside a {box.runtime or 'unknown'} container ({box.evidence[0] if box.evidence else '?'})"
    if gpus(ctx) and not HostIO(Path("/")).exists("/dev/nvidiactl"):
        return Finding(status="warn", actual=f"{actual}; GPUs on the PCI bus but no /dev/nvidiactl",
                       expected="the GPUs passed into the container",
                       fix="start the container with the GPUs: docker run --gpus all ... (NVIDIA Container Toolkit "
                           "on the host), podman run --device nvidia.com/gpu=all ... (CDI), or request "
                           "nvidia.com/gpu in Kubernetes")
    return Finding(status="pass", actual=actual, expected="")


def check_container_toolkit(ctx: Context) -> Finding:
    """On a GPU host with docker or podman: the NVIDIA Container Toolkit (nvidia-ctk) is installed, a CDI spec for
    nvidia.com/gpu exists in /etc/cdi or /var/run/cdi (podman and docker >= 25 use it), and docker's daemon.json
    names the nvidia runtime (or enables CDI). Without them `--gpus all` fails with "could not select device
    driver"."""
    if ctx.facts.container.detected:
        return Finding(status="skip", actual="inside a container: the toolkit belongs on the host", expected="")
    return findings.toolkit_finding(host.toolkit(HostIO(Path("/"))), container_toolkit_install(ctx))


NEEDS = (DEEP, LIVE)
GPU_NEEDS = NEEDS + (GPU,)
NODES = Need("nodes", lambda ctx: bool(_run(ctx).options.nodes), "no --nodes given",
             "each peer routed over a NIC that is up")
DATA = Need("data", lambda ctx: bool(ctx.data), "no --data PATH given", "sequential read at the disk kind's rate")

DEEP_CHECKS: Tuple[Check, ...] = (
    Check("torch.deep_cuda", "torch", "torch imports, CUDA initialises (measured)", check_torch_cuda, needs=NEEDS),
    Check("cpu.deep_matmul", "cpu", "CPU matmul vs peak (measured)", check_cpu_matmul, needs=NEEDS),
    Check("cpu.deep_membw", "cpu", "Memory bandwidth, triad (measured)", check_membw, needs=NEEDS),
    Check("cpu.deep_bf16", "cpu", "bf16 autocast speed on this CPU (measured)", check_bf16, needs=NEEDS),
    Check("cpu.deep_allreduce", "cpu", "gloo all-reduce, 2 local ranks (measured)", check_gloo, needs=NEEDS),
    Check("nvidia.deep_compute", "nvidia", "GPU matmul vs dense peak (measured)", check_compute, needs=GPU_NEEDS),
    Check("nvidia.deep_copies", "nvidia", "Host<->GPU copies vs PCIe link (measured)", check_copies,
          needs=GPU_NEEDS),
    Check("nvidia.deep_p2p", "nvidia", "GPU peer access and copies (measured)", check_p2p, needs=GPU_NEEDS),
    Check("nvidia.deep_allreduce", "nvidia", "NCCL all-reduce bus bandwidth (measured)", check_nccl,
          needs=GPU_NEEDS),
    Check("nvidia.deep_nvlink", "nvidia", "NVLink links up", check_nvlink,
          needs=GPU_NEEDS + (Need("nvml", lambda ctx: ctx.facts.nvidia.nvml == "ok", "NVML not available"),)),
    Check("os.deep_network", "os", "Network path to the other nodes (--nodes)", check_network,
          needs=NEEDS + (NODES,)),
    Check("os.deep_nodes_allreduce", "os", "gloo all-reduce across the nodes (--nodes, measured)",
          check_nodes_allreduce, needs=NEEDS + (NODES,)),
    Check("storage.deep_read", "storage", "Data read throughput, page cache bypassed (measured)", check_disk_read,
          needs=NEEDS + (DATA,)),
    Check("storage.deep_shm", "storage", "/dev/shm throughput (measured)", check_shm_speed, needs=NEEDS),
    Check("os.deep_container", "os", "Inside a container?", check_container, needs=NEEDS),
    Check("nvidia.deep_container_toolkit", "nvidia", "NVIDIA Container Toolkit for docker/podman",
          check_container_toolkit, needs=GPU_NEEDS),
)
