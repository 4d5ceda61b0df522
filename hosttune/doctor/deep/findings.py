"""What each measurement means: the probe's raw numbers (a JobResult) and the facts in, one Finding out. Pure: the
tests feed recorded probe output (8x H100 SXM, 1x L4, CPU hosts) and assert the findings.

Expected values come from hosttune.policy: gpu_peak (dense TFLOP/s per GPU model), bandwidth (nccl-tests bus
bandwidth, PCIe per gen x width, NVLink per model, disk kinds) and cpu_peak (cores x clock x FLOPs/cycle).
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune import nvml as nvmlmod
from hosttune.doctor.deep.host import Toolkit
from hosttune.doctor.deep.runner import JobResult
from hosttune.doctor.fixes import shell_path
from hosttune.doctor.model import Finding
from hosttune.policy import bandwidth, cpu_peak, gpu_health, gpu_peak

COMPUTE_WARN_FRACTION = 0.70  # the line: cuBLAS large GEMMs reach 70-90% of dense peak on healthy parts
MIN_DISK_BYTES = 8 << 20  # less than this read says nothing about throughput
TORCH_CHECK = "torch.deep_cuda"


def _gb(v: float) -> str:
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def _under(what: str, prefix: str) -> bool:
    return what == prefix or what.startswith(prefix + " ")


def absent(job: JobResult, prefix: str, expected: str = "") -> Finding:
    """The finding when `job` has no result for `prefix`: its error, the hang (a fail naming what hung, for the
    check that owns the hung measurement; a skip pointing there for the others), or why nothing ran."""
    errs = job.errors(prefix)
    if errs:
        return Finding(status="fail", actual=f"{errs[0]['what']}: {errs[0].get('error', '?')}", expected=expected,
                       fix=f"run the measurement by hand to see the whole error: {_by_hand(prefix)}")
    if job.timed_out and job.budget_cut:
        return Finding(status="skip", actual=f"not measured: the {job.name} probe {job.failure()}", expected=expected)
    if job.timed_out and job.hung_on and _under(job.hung_on, prefix):
        return Finding(status="fail", actual=f"{job.name} probe {job.failure()}", expected=expected,
                       fix=f"something blocks: run the probe by hand ({_by_hand(prefix)}) and look at the GPU/disk it "
                           "waits for (nvidia-smi, dmesg)")
    if job.start_error:
        return Finding(status="skip", actual=f"not measured: {job.start_error}", expected=expected)
    if job.timed_out:
        where = f" (hung in {job.hung_on})" if job.hung_on else ""
        return Finding(status="skip", actual=f"not measured: the {job.name} probe was stopped{where}",
                       expected=expected)
    info_failed = job.errors("info") or (job.result("info") is None and job.name in ("torch", "gpu"))
    if info_failed and prefix != "info":
        return Finding(status="skip", actual=f"needs a working torch (see {TORCH_CHECK})", expected=expected)
    actual = f"not measured: the {job.name} probe ended with {job.failure()}"
    if job.returncode == 0:
        return Finding(status="skip", actual=actual, expected=expected)
    return Finding(status="fail", actual=actual, expected=expected,
                   fix=f"run the measurement by hand to see the whole error: {_by_hand(prefix)}")


def _probe_hint() -> str:
    return "-m hosttune.doctor.deep.probe_torch"


def _by_hand(prefix: str) -> str:
    """The probe command that runs the measurement group a result `prefix` belongs to (cpu_matmul: the cpu group)."""
    group = prefix.split()[0]
    return f"python3 {_probe_hint()} --measure {'cpu' if group.startswith('cpu_') else group}"


# ---- torch works --------------------------------------------------------------------------------------------------
def cuda_fix(error: str) -> str:
    """What to do about the first CUDA call's error, by its well-known texts."""
    e = error.lower()
    if "too old" in e or "driver version is insufficient" in e:
        return "update the NVIDIA driver (see nvidia.driver_cuda) or install a torch built for an older CUDA"
    if "802" in e or "system not yet initialized" in e:
        return "NVSwitch host: start Fabric Manager (systemctl enable --now nvidia-fabricmanager)"
    if "mig" in e:
        return "MIG is on but no instance is usable: create GPU/compute instances (nvidia-smi mig -cgi ... -C) " \
               "or disable MIG (nvidia-smi -mig 0)"
    if "permission" in e or "not permitted" in e:
        return "the user cannot open /dev/nvidia*: ls -l /dev/nvidia*; add the user to the group owning them " \
               "(often video) or fix the device modes (NVreg_DeviceFileMode)"
    if "no cuda-capable device" in e or "no cuda gpus are available" in e:
        return "CUDA sees no GPU: check CUDA_VISIBLE_DEVICES (torch.cuda_visible_devices) and nvidia-smi"
    if "forward compatibility" in e or "unknown error" in e:
        return "reload the driver or reboot (a driver upgrade without reboot; nvidia.nvml shows a mismatch)"
    return "run `python3 -c 'import torch; torch.zeros(1).cuda()'` in the training interpreter for the full error"


def torch_finding(job: JobResult, gpus_present: int, python: Optional[str]) -> Finding:
    """torch imports in the training interpreter and, on a GPU host, CUDA initialises every GPU."""
    expected = f"import torch; CUDA initialises {gpus_present} GPU(s)" if gpus_present else "import torch"
    info = job.result("info")
    if info is None:
        errs = job.errors("info")
        if errs:
            err = str(errs[0].get("error", "?"))
            py = shell_path(python) or "python3"  # a host-derived path reaches a fix only quoted (fixes.py)
            fix = f"{py} -m pip install torch" if "No module named" in err else \
                f"run `{py} -c 'import torch'` for the whole error"
            return Finding(status="fail", actual=f"import torch failed in {python or 'python3'}: {err}",
                           expected=expected, fix=fix)
        f = absent(job, "info", expected)
        if f.status == "fail" or job.budget_cut or "time budget" in (job.start_error or ""):
            return f
        return Finding(status="fail", actual=f.actual, expected=expected,
                       fix=f"run the interpreter by hand: {shell_path(python) or 'python3'} -c 'import torch'")
    head = f"torch {info.get('version')} imports in {info.get('import_s', 0):.1f} s"
    if not gpus_present:
        return Finding(status="pass", actual=f"{head}; no GPU on this host", expected=expected)
    if not info.get("cuda"):
        return Finding(status="fail", actual=f"{head} but it is a CPU-only build; {gpus_present} GPU(s) present",
                       expected=expected, fix="see nvidia.torch_build for the CUDA wheel to install")
    if info.get("cuda_error"):
        err = str(info["cuda_error"])
        return Finding(status="fail", actual=f"first CUDA call: {err}", expected=expected, fix=cuda_fix(err))
    devices = info.get("devices", [])
    broken = [d for d in devices if d.get("error")]
    if broken:
        d = broken[0]
        return Finding(status="fail", actual=f"cuda:{d['index']} ({d.get('name')}): {d['error']}"
                       + (f" (+{len(broken) - 1} more)" if len(broken) > 1 else ""),
                       expected=expected, fix=cuda_fix(str(d["error"])))
    kinds: Dict[str, int] = {}
    for d in devices:
        cap = d.get("capability") or [0, 0]
        label = f"{d.get('name')} cc {cap[0]}.{cap[1]}{', bf16' if d.get('bf16') else ', no bf16'}"
        kinds[label] = kinds.get(label, 0) + 1
    seen = "; ".join(f"{n}x {k}" for k, n in kinds.items())
    actual = f"{head}, CUDA {info.get('cuda')}: {len(devices)} GPU(s): {seen}"
    if len(devices) < gpus_present:
        return Finding(status="warn", actual=actual, expected=expected,
                       fix="CUDA sees fewer GPUs than NVML/PCI: check CUDA_VISIBLE_DEVICES, MIG mode and nvidia-smi")
    return Finding(status="pass", actual=actual, expected=expected)


# ---- GPU compute --------------------------------------------------------------------------------------------------
def compute_finding(job: JobResult, clock_events: Mapping[int, int], nvml_index: Mapping[int, int]) -> Finding:
    """Achieved matmul TFLOP/s per GPU and dtype vs the dense peak (policy.gpu_peak); warn below 70%, with the
    clock events NVML reported while that GPU computed (policy.gpu_health levels: a hardware slowdown fails)."""
    rows = job.results("gpu_compute")
    if not rows:
        return absent(job, "gpu_compute", "matmul >= 70% of the dense peak")
    peaks: Dict[str, gpu_peak.GpuPeak] = {}
    status, slow, lines = "pass", [], []
    per_gpu: Dict[int, List[str]] = {}
    for r in rows:
        i, dt = int(r["gpu"]), str(r["dtype"])
        if r.get("unsupported"):
            per_gpu.setdefault(i, []).append(f"{dt} n/a")
            continue
        tflops = float(r["flops"]) / float(r["seconds"]) / 1e12 if r.get("seconds") else 0.0
        entry = gpu_peak.match(str(r.get("name", "")))
        peak = entry.tflops(dt) if entry else None
        if entry:
            peaks[entry.key] = entry
        if peak:
            frac = tflops / peak
            per_gpu.setdefault(i, []).append(f"{dt} {tflops:.0f} ({frac:.0%})")
            if frac < COMPUTE_WARN_FRACTION:
                slow.append((i, dt, tflops, peak, frac))
        else:
            per_gpu.setdefault(i, []).append(f"{dt} {tflops:.1f}")
    events: List[str] = []
    levels = []
    for i in sorted(per_gpu):
        mask = clock_events.get(nvml_index.get(i, i), 0)
        for _kind, level, bits, what in gpu_health.clock_events(mask):
            levels.append(level)
            events.append(f"GPU{i}: {what} ({', '.join(nvmlmod.reason_names(bits))})")
    if slow:
        status = "warn"
    worst_level = gpu_health.worst(levels)
    if gpu_health.doctor_status(worst_level) == "fail":
        status = "fail"
    lines = [f"GPU{i} " + ", ".join(v) for i, v in sorted(per_gpu.items())]
    actual = "TFLOP/s " + "; ".join(lines)
    if events:
        actual += "; NVML clock events during the run: " + "; ".join(events)
    if peaks:
        expected = "; ".join(f"{e.key} >= 70% of dense bf16 {e.bf16 or '-'} / fp16 {e.fp16} / tf32 {e.tf32 or '-'}"
                             f" TFLOP/s ({e.source})" for e in peaks.values())
    else:
        expected = "no dense peak known for this GPU model (hosttune.policy.gpu_peak)"
    fix = ""
    if status != "pass":
        fix = ("look at what holds the clocks down: nvidia-smi -q -d PERFORMANCE,CLOCK,POWER,TEMPERATURE; "
               "other processes on the GPU (nvidia-smi); cooling and power-supply state (see nvidia.clock_reasons)")
    return Finding(status=status, actual=actual, expected=expected, fix=fix)


# ---- copies -------------------------------------------------------------------------------------------------------
def copies_finding(job: JobResult, links: Mapping[int, Tuple[Optional[int], Optional[int]]],
                   seen: Mapping[int, Mapping[str, int]], nvml_index: Mapping[int, int]) -> Finding:
    """Pinned host<->device copy GB/s per GPU vs its PCIe link's realistic rate (policy.bandwidth: gen x width x
    80%); warn below 75% of it. Pageable copies are shown beside them (they stage through a pinned buffer)."""
    rows = job.results("gpu_copies")
    if not rows:
        return absent(job, "gpu_copies", "pinned copies near the PCIe link rate")
    by: Dict[int, Dict[str, float]] = {}
    for r in rows:
        if r.get("seconds"):
            by.setdefault(int(r["gpu"]), {})[f"{r['kind']} {r['direction']}"] = \
                float(r["bytes"]) / float(r["seconds"]) / 1e9
    status, parts, exp_parts, slow = "pass", [], [], []
    for i, v in sorted(by.items()):
        idx = nvml_index.get(i, i)
        gen, width = links.get(idx, (None, None))
        want = bandwidth.pcie_expected_gbps(gen, width)
        h2d, d2h = v.get("pinned h2d", 0.0), v.get("pinned d2h", 0.0)
        text = (f"GPU{i} pinned {_gb(h2d)}/{_gb(d2h)}, pageable {_gb(v.get('pageable h2d', 0.0))}/"
                f"{_gb(v.get('pageable d2h', 0.0))} GB/s")
        now = seen.get(idx, {})
        if now.get("pcie_gen"):
            text += f" (link gen{now['pcie_gen']} x{now.get('pcie_width', '?')} while copying)"
        parts.append(text)
        if want:
            exp_parts.append(f"GPU{i} gen{gen} x{width}: {_gb(want)}")
            if min(h2d, d2h) < want * bandwidth.PCIE_WARN_FRACTION:
                slow.append(i)
    if slow:
        status = "warn"
    expected = ("pinned H2D/D2H >= 75% of " + ", ".join(exp_parts) + " GB/s (PCIe coded rate x 80%)"
                if exp_parts else "PCIe link unknown (NVML gave no max gen/width)")
    fix = ("a slow link: check nvidia.pcie_link (downtrained gen/width), the slot and riser, the BIOS PCIe "
           "setting; copies across sockets (numactl --cpunodebind to the GPU's node)" if slow else "")
    return Finding(status=status, actual="H2D/D2H " + "; ".join(parts), expected=expected, fix=fix)


# ---- P2P ----------------------------------------------------------------------------------------------------------
def p2p_finding(job: JobResult, names: Sequence[str], link_gbps: Optional[float]) -> Finding:
    """The peer-access matrix and peer copy GB/s for each GPU and its neighbour. NVLink models (policy.bandwidth
    NVLINK_GBPS): every pair peer-accessible and copies >= 40% of one direction's NVLink rate; PCIe models:
    copies >= 50% of the link's realistic rate (`link_gbps`: PCIe expectation of the slowest link)."""
    matrix = job.result("p2p matrix")
    pairs = job.results("p2p")
    pairs = [p for p in pairs if p.get("what") != "p2p matrix"]
    if matrix is None:
        return absent(job, "p2p", "peer access between GPUs")
    m = matrix.get("matrix") or []
    n = len(m)
    no_peer = [(i, j) for i in range(n) for j in range(n) if i != j and not m[i][j]]
    nvlink = bandwidth.nvlink_gbps(names[0]) if names else None
    rates = [(int(p["src"]), int(p["dst"]), float(p["bytes"]) / float(p["seconds"]) / 1e9)
             for p in pairs if p.get("seconds")]
    status = "pass"
    actual = f"{n} GPUs, {n * (n - 1) - len(no_peer)}/{n * (n - 1)} pairs peer-accessible"
    if no_peer:
        actual += " (no P2P: " + ", ".join(f"{i}->{j}" for i, j in no_peer[:6]) + \
            (" ..." if len(no_peer) > 6 else "") + ")"
    if rates:
        lo = min(rates, key=lambda r: r[2])
        actual += f"; copies {_gb(lo[2])}-{_gb(max(r[2] for r in rates))} GB/s (slowest {lo[0]}->{lo[1]})"
    if nvlink:
        line = nvlink * bandwidth.P2P_NVLINK_WARN_FRACTION
        expected = f"all pairs peer-accessible, copies >= {_gb(line)} GB/s (40% of NVLink {_gb(nvlink)} GB/s)"
        if no_peer or (rates and min(r[2] for r in rates) < line):
            status = "warn"
    else:
        line = (link_gbps or 0.0) * bandwidth.P2P_PCIE_WARN_FRACTION
        expected = f"copies >= {_gb(line)} GB/s (50% of the PCIe link)" if line else "peer copies work"
        if rates and line and min(r[2] for r in rates) < line:
            status = "warn"
        if no_peer and n and len(no_peer) == n * (n - 1):
            status = "warn"
    fix = ("P2P off or slow: see nvidia.acs and nvidia.iommu (ACS on switch ports and IOMMU translation force "
           "peer traffic through the root complex); nvidia-smi topo -m shows the paths; NVLink hosts: "
           "nvidia-smi nvlink -s" if status != "pass" else "")
    return Finding(status=status, actual=actual, expected=expected, fix=fix)


# ---- collectives --------------------------------------------------------------------------------------------------
def allreduce_finding(job: JobResult, backend: str, expected_busbw: Optional[float], basis: str) -> Finding:
    """All-reduce bus bandwidth (nccl-tests: busbw = algbw x 2(n-1)/n) and whether the sums were right."""
    r = job.result(f"allreduce {backend}")
    want = f"busbw >= {_gb(expected_busbw)} GB/s ({basis})" if expected_busbw else basis
    if r is None:
        f = absent(job, f"allreduce {backend}", want)
        if f.status == "skip" and not job.start_error and not job.timed_out:
            tail = [ln for ln in job.stderr_tail.splitlines() if ln.strip()]
            return Finding(status="fail", actual=f"torchrun: {job.failure()}" if not tail else
                           f"torchrun: {tail[-1].strip()[:300]}", expected=want, fix=_allreduce_fix(backend))
        return f
    n, size, secs = int(r["world"]), float(r["bytes"]), float(r["seconds"])
    busbw = bandwidth.allreduce_busbw_gbps(size, secs, n)
    algbw = bandwidth.algbw_gbps(size, secs)
    actual = (f"{n} ranks, {size / (1 << 20):.0f} MiB: busbw {_gb(busbw)} GB/s (algbw {_gb(algbw)}, "
              f"{secs * 1e3:.2f} ms per all-reduce)")
    if not r.get("correct", False):
        return Finding(status="fail", actual=actual + "; WRONG SUMS", expected=want, fix=_allreduce_fix(backend))
    if expected_busbw and busbw < expected_busbw:
        return Finding(status="warn", actual=actual, expected=want, fix=_allreduce_fix(backend))
    return Finding(status="pass", actual=actual, expected=want)


def _allreduce_fix(backend: str) -> str:
    if backend == "gloo":
        return ("gloo needs this host's name to resolve to a local address (getent hosts $(hostname)); "
                "GLOO_SOCKET_IFNAME=lo pins it to loopback")
    return ("rerun with NCCL_DEBUG=INFO to see the transport NCCL chose (P2P/NVLS vs SHM/NET); check "
            "NCCL_P2P_DISABLE / NCCL_SHM_DISABLE, nvidia.fabric_manager on NVSwitch hosts, and nvidia.acs")


# ---- CPU ----------------------------------------------------------------------------------------------------------
def cpu_matmul_finding(job: JobResult, cores: int, ghz: Optional[float], flags: Sequence[str],
                       vendor: Optional[str], arch: Optional[str]) -> Finding:
    """fp32 matmul GFLOP/s vs cores x clock x FLOPs/cycle (policy.cpu_peak); warn below 40% of it."""
    r = job.result("cpu_matmul")
    if r is None:
        return absent(job, "cpu_matmul", "fp32 matmul near the CPU's peak")
    gflops = float(r["flops"]) / float(r["seconds"]) / 1e9
    actual = f"{gflops:.1f} GFLOP/s fp32 ({r['n']}x{r['n']} matmul, {r.get('threads')} threads)"
    if not ghz:
        return Finding(status="pass", actual=actual, expected="no clock known: peak not computed")
    peak, how = cpu_peak.peak_gflops(cores, ghz, flags, vendor, arch)
    actual += f" = {gflops / peak:.0%} of peak"
    expected = f">= {cpu_peak.MATMUL_WARN_FRACTION:.0%} of {peak:.0f} GFLOP/s ({how})"
    if gflops < peak * cpu_peak.MATMUL_WARN_FRACTION:
        return Finding(status="warn", actual=actual, expected=expected,
                       fix="something takes the cores: other processes (top), a cgroup quota (cpu.cgroup_limit), "
                           "OMP_NUM_THREADS (cpu.omp_threads), the governor (os.governor); or the clock is lower "
                           "than the CPU reports")
    return Finding(status="pass", actual=actual, expected=expected)


def membw_finding(job: JobResult) -> Finding:
    """STREAM-triad GB/s (a = b + s*c over 3 float32 arrays) vs a floor per thread (policy.cpu_peak)."""
    r = job.result("cpu_triad")
    if r is None:
        return absent(job, "cpu_triad", "memory bandwidth")
    gbps = float(r["bytes"]) / float(r["seconds"]) / 1e9
    threads = int(r.get("threads") or 1)
    floor = cpu_peak.MEMBW_PER_THREAD_GBPS * threads
    actual = f"triad {gbps:.1f} GB/s ({threads} threads, {3 * 4 * int(r['elems']) >> 20} MiB arrays)"
    expected = f">= {floor:.0f} GB/s ({cpu_peak.MEMBW_PER_THREAD_GBPS:g} GB/s per thread)"
    if gbps < floor:
        return Finding(status="warn", actual=actual, expected=expected,
                       fix="memory far away or scarce: numactl -H (a node without memory, memory on the other "
                           "socket); a single populated channel (dmidecode -t memory); memory pressure (free -m)")
    return Finding(status="pass", actual=actual, expected=expected)


def bf16_finding(job: JobResult, flags: Sequence[str]) -> Finding:
    """bf16 autocast vs fp32 matmul on this CPU: without avx512_bf16/amx_bf16 every bf16 op is emulated, 10-30x
    slower (perf-notes: x0.03-0.10), and a training run with amp=bf16 crawls."""
    r = job.result("cpu_bf16")
    if r is None:
        return absent(job, "cpu_bf16", "bf16 autocast not slower than fp32")
    f32, b16 = float(r["fp32_gflops"]), float(r["bf16_gflops"])
    ratio = b16 / f32 if f32 else 0.0
    hw = cpu_peak.has_bf16(flags)
    actual = (f"bf16 autocast {b16:.1f} vs fp32 {f32:.1f} GFLOP/s (x{ratio:.2f}); "
              f"{'avx512_bf16/amx_bf16 present' if hw else 'no avx512_bf16/amx_bf16'}")
    expected = f"bf16 >= x{cpu_peak.BF16_SLOW_RATIO:g} of fp32"
    if ratio < cpu_peak.BF16_SLOW_RATIO:
        fix = ("train in fp32 on this CPU: hosttune's engine --set amp=off (torch.autocast('cpu') only where the "
               "CPU has avx512_bf16 or amx_bf16)" if not hw else
               "the CPU has bf16 units but torch does not use them: check torch.backends.cpu.get_cpu_capability() "
               "and ONEDNN_MAX_CPU_ISA")
        return Finding(status="warn", actual=actual, expected=expected, fix=fix)
    return Finding(status="pass", actual=actual, expected=expected)


# ---- storage ------------------------------------------------------------------------------------------------------
def disk_finding(job: JobResult, kinds: Mapping[str, str]) -> Finding:
    """Sequential read MB/s of each --data path with the page cache bypassed vs its disk kind's floor
    (policy.bandwidth DISK_READ_MBPS)."""
    rows = job.results("disk")
    if not rows:
        return absent(job, "disk", "sequential read at the disk kind's rate")
    status, parts, exps, fadv = "pass", [], [], False
    for r in rows:
        path = str(r["path"])
        kind = kinds.get(path, "unknown")
        want = bandwidth.disk_expected_mbps(kind)
        nbytes, secs = float(r["bytes"]), float(r["seconds"])
        if nbytes < MIN_DISK_BYTES or secs <= 0:
            parts.append(f"{path}: only {nbytes / 1e6:.1f} MB to read, not timed")
            continue
        mbps = nbytes / secs / 1e6
        how = "O_DIRECT" if r.get("method") == "O_DIRECT" else "page cache dropped with posix_fadvise"
        fadv = fadv or how != "O_DIRECT"
        parts.append(f"{path} ({kind}): {mbps:.0f} MB/s over {nbytes / 1e6:.0f} MB ({how})")
        if want:
            exps.append(f"{kind} >= {want:.0f} MB/s")
            if mbps < want:
                status = "warn"
    for e in job.errors("disk"):
        status = "fail"
        parts.append(f"{e['what'][5:]}: {e.get('error')}")
    if job.timed_out and job.hung_on:
        status = "fail"
        parts.append(f"{job.hung_on[5:]}: hung (read killed after {job.timeout_s:g} s)")
    expected = "; ".join(sorted(set(exps))) or "a rate for the disk kind"
    if fadv:
        expected += " (O_DIRECT refused by the file system: clean cached pages dropped instead)"
    fix = ("stage the data on local NVMe, or read it in large sequential shards (WebDataset/tar) with more "
           "DataLoader workers; see storage.data" if status == "warn" else "")
    if status == "fail":
        fix = "a read failed or hung: check the file system (dmesg, mount) and permissions"
    return Finding(status=status, actual="; ".join(parts), expected=expected, fix=fix)


def shm_finding(job: JobResult) -> Finding:
    """/dev/shm write and read MB/s (DataLoader workers hand every batch over through it)."""
    r = job.result("shm")
    want = f">= {bandwidth.SHM_MBPS:.0f} MB/s write and read"
    if r is None:
        return absent(job, "shm", want)
    nbytes = float(r["bytes"])
    w = nbytes / float(r["write_s"]) / 1e6 if r.get("write_s") else 0.0
    rd = nbytes / float(r["read_s"]) / 1e6 if r.get("read_s") else 0.0
    actual = f"write {w:.0f} MB/s, read {rd:.0f} MB/s ({nbytes / (1 << 20):.0f} MiB)"
    if min(w, rd) < bandwidth.SHM_MBPS:
        return Finding(status="warn", actual=actual, expected=want,
                       fix="memory pressure or a tiny /dev/shm: free -m; see storage.shm")
    return Finding(status="pass", actual=actual, expected=want)


def nvlink_finding(links: Mapping[int, Sequence[Mapping[str, Any]]]) -> Finding:
    """NVLink state per GPU from NVML: every link a GPU has is up, and all GPUs have the same number up."""
    if not links:
        return Finding(status="skip", actual="no NVLink on these GPUs (NVML reports none)", expected="")
    ups = {i: sum(1 for ln in ls if ln.get("up")) for i, ls in links.items()}
    down = {i: [int(ln["link"]) for ln in ls if not ln.get("up")] for i, ls in links.items()}
    total = {i: len(ls) for i, ls in links.items()}
    actual = ", ".join(f"GPU{i} {ups[i]}/{total[i]}" for i in sorted(links)) + " links up"
    expected = "every NVLink up on every GPU"
    bad = {i: d for i, d in down.items() if d}
    if bad:
        actual += "; down: " + "; ".join(f"GPU{i} link {','.join(map(str, d))}" for i, d in sorted(bad.items()))
        return Finding(status="warn", actual=actual, expected=expected,
                       fix="nvidia-smi nvlink -s and -e (errors); on NVSwitch hosts check nvidia.fabric_manager; "
                           "a link that stays down after a reboot is a hardware (baseboard/bridge) fault")
    return Finding(status="pass", actual=actual, expected=expected)


def toolkit_finding(tk: Toolkit, install_fix: str) -> Finding:
    """The NVIDIA Container Toolkit's pieces on a GPU host with docker or podman; `install_fix` is this distro's
    install command (fixes.container_toolkit_install)."""
    engines = [n for n, p in (("docker", tk.docker), ("podman", tk.podman)) if p]
    if not engines:
        return Finding(status="skip", actual="no docker or podman on this host", expected="")
    expected = "nvidia-ctk installed; CDI spec for nvidia.com/gpu; docker: nvidia runtime or CDI"
    if not tk.nvidia_ctk:
        return Finding(status="warn", actual=f"{' and '.join(engines)} installed, nvidia-ctk missing",
                       expected=expected, fix=install_fix)
    problems, fixes = [], []
    if not tk.cdi_specs:
        problems.append("no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi")
        fixes.append("nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")
    if tk.docker and not (tk.docker_nvidia_runtime or tk.docker_cdi):
        problems.append("docker's daemon.json has no nvidia runtime")
        fixes.append("nvidia-ctk runtime configure --runtime=docker && systemctl restart docker")
    actual = f"nvidia-ctk {tk.nvidia_ctk}; " + (", ".join(tk.cdi_specs) or "no CDI spec")
    if problems:
        return Finding(status="warn", actual=f"{actual}; " + "; ".join(problems), expected=expected,
                       fix="\n".join(fixes))
    return Finding(status="pass", actual=actual, expected=expected)
