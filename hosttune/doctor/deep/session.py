"""One `doctor --deep` run: which interpreter measures, the time budget, and each measurement process (a "job"),
started once on the first check that needs it and shared by the checks that read it.

Jobs and what they run (probe_torch.py, written to a private directory so that the file we run is the one we
wrote; started as `python -I` from "/" with `child_env`, like the facts torch probe: as root a caller's PYTHON*
variables and untrusted PYTHONPATH entries never reach it):
- torch:      info (import torch, CUDA init, devices) + CPU matmul, triad, bf16 autocast   (training interpreter)
- gpu:        per-GPU matmul bf16/fp16/tf32, copies, P2P matrix and copies; NVML sampled meanwhile
- allreduce:  torchrun over the local GPUs (NCCL), or 2 CPU ranks (gloo) on a host without usable GPUs
- disk, shm:  sequential reads of --data paths, /dev/shm write/read (hosttune's own interpreter: no torch)
"""

import dataclasses
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from hosttune import nvml as nvmlmod
from hosttune import trust
from hosttune.detect import torchenv
from hosttune.detect.hostio import HostIO, child_env
from hosttune.doctor.deep.runner import JobResult, Progress, run_job
from hosttune.fsio import read_bounded

if TYPE_CHECKING:
    from hosttune.doctor.context import Context

PROBE = Path(__file__).with_name("probe_torch.py")
MiB = 1 << 20

# Seconds each job may take at most (the budget may cut them shorter). torch's import alone takes 2-5 s warm and
# can take 30 s from a cold network file system; NCCL's first init on 8 GPUs takes 5-15 s.
JOB_TIMEOUTS = {"torch": 90.0, "gpu": 30.0, "gpu_per_device": 8.0, "allreduce": 90.0, "disk": 20.0, "shm": 20.0}
BUDGET_S = 180.0  # the whole --deep part; an 8-GPU host needs about a minute


def measure_limit(what: str) -> float:
    """Seconds one measurement may take from its start line: `info` imports torch and initialises CUDA on every
    GPU, an all-reduce includes torchrun's start and NCCL's init; a matmul, a copy or a read takes well under a
    second, so 20 s means it is stuck (a GPU that stopped answering, an NFS server gone)."""
    return 60.0 if what.split(" ")[0] in ("info", "allreduce") else 20.0


@dataclass
class DeepOptions:
    """How hard `--deep` measures. Tests shrink sizes (`small`) and timeouts."""

    budget_s: float = BUDGET_S
    seconds: float = 0.3  # per measurement (a matmul, a copy direction)
    small: bool = False
    timeouts: Dict[str, float] = field(default_factory=dict)  # job name -> seconds, over JOB_TIMEOUTS
    progress: Optional[bool] = None  # None: when stderr is a terminal
    python: Optional[str] = None  # the training interpreter; None: the one the facts probed
    nodes: Tuple[str, ...] = ()  # --nodes: the job's other hosts (names or addresses), for the network path
    rdzv_port: int = 29400  # --rdzv-port: the cross-node all-reduce's rendezvous port on the first of --nodes


class DeepRun:
    def __init__(self, ctx: "Context", options: Optional[DeepOptions] = None) -> None:
        self.ctx = ctx
        self.options = options or DeepOptions()
        self.started = time.monotonic()
        self.jobs: Dict[str, JobResult] = {}
        self.clock_events: Dict[int, int] = {}  # NVML index -> clock-event bits seen while the GPUs computed
        self.pcie_seen: Dict[int, Dict[str, int]] = {}  # NVML index -> highest gen/width seen during the copies
        self.progress = Progress(self.options.progress)
        self._dir: Optional[str] = None
        self._nvml: Optional[Any] = None
        self.paths: Optional[List[Any]] = None  # --nodes: network.NetPath per node (checks.node_paths fills it)

    # ---- where and how ---------------------------------------------------------------------------------------
    def python(self) -> Optional[str]:
        """The training interpreter: --python, else the one the facts' torch probe ran, else python3 on PATH."""
        if self.options.python or self.ctx.python:
            return self.options.python or self.ctx.python
        t = self.ctx.facts.torch
        if t is not None and t.python:
            return t.python
        return torchenv.default_python(HostIO(Path("/")))

    def script(self) -> str:
        """The probe, copied into a fresh 0700 directory of ours. As root the directory's parent must pass the trust
        rule (a TMPDIR in another user's directory would let them swap our directory for theirs before python
        runs the file): otherwise /tmp, whose sticky bit keeps our entry ours."""
        if self._dir is None:
            base = tempfile.gettempdir()
            if trust.is_root() and trust.problem(base, kind="dir")[1] is not None:
                base = "/tmp"
            self._dir = tempfile.mkdtemp(prefix="hosttune-deep-", dir=base)  # 0700, ours
            text = read_bounded(PROBE, 1 << 20)
            with open(os.path.join(self._dir, PROBE.name), "wb") as fh:
                fh.write(text)
        path = os.path.join(self._dir, PROBE.name)
        if trust.is_root():
            trust.check_path(path, "doctor --deep probe")  # raises Untrusted (a one-line error) when it is not
        return path

    def close(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if self._nvml is not None:
            self._nvml.close()
            self._nvml = None

    def env(self, **extra: str) -> Dict[str, str]:
        env, _ = child_env(os.environ)
        # cuda:i is NVML's GPU i (PCI bus order) instead of "fastest first" (pitfalls.md)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env.update(extra)
        return env

    def remaining(self) -> float:
        return self.options.budget_s - (time.monotonic() - self.started)

    def limit(self, name: str, default: float) -> float:
        """A job's own time limit: the options' override, else its default."""
        return self.options.timeouts.get(name, default)

    def _common(self) -> List[str]:
        args = ["--json", "--seconds", f"{self.options.seconds:g}"]
        if self.options.small:
            args.append("--small")
        paths, _ = torchenv.probe_path(os.environ)  # PYTHONPATH entries allowed (as root: trusted ones only)
        for p in paths:
            args += ["--path", p]
        return args

    # ---- jobs ----------------------------------------------------------------------------------------------------
    def job(self, name: str) -> JobResult:
        if name not in self.jobs:
            self.jobs[name] = self._start(name)
        return self.jobs[name]

    def _start(self, name: str) -> JobResult:
        if name == "disk":
            return self._run(name, [sys.executable, "-I", self.script(), *self._common(), "--measure", "disk",
                                    *[a for p in self.ctx.data for a in ("--file", os.path.abspath(p))]],
                             JOB_TIMEOUTS["disk"] + 5.0 * len(self.ctx.data))
        if name == "shm":
            return self._run(name, [sys.executable, "-I", self.script(), *self._common(), "--measure", "shm",
                                    "--bytes", str(self.shm_bytes())], JOB_TIMEOUTS["shm"])
        python = self.python()
        if not python:
            return JobResult(name=name, start_error="no training interpreter: no python3 on PATH (use --python)")
        if name == "torch":
            return self._run(name, [python, "-I", self.script(), *self._common(), "--measure", "info,cpu"],
                             JOB_TIMEOUTS["torch"])
        if name == "gpu":
            n = len(self.ctx.facts.gpus)
            self._open_nvml()
            return self._run(name, [python, "-I", self.script(), *self._common(), "--measure",
                                    "info,gpu_compute,gpu_copies,p2p"],
                             JOB_TIMEOUTS["gpu"] + JOB_TIMEOUTS["gpu_per_device"] * n, tick=self._sample_nvml)
        if name in ("allreduce_nccl", "allreduce_gloo"):
            backend = name.split("_")[1]
            ranks = self.allreduce_ranks(backend)
            extra = ["--bytes", str(4 * MiB)] if self.options.small else []
            return self._run(name, [python, "-I", self.script(), *self._common(), "--torchrun", str(ranks),
                                    "--measure", "allreduce", "--backend", backend, *extra],
                             JOB_TIMEOUTS["allreduce"], env=self.env(OMP_NUM_THREADS="1"))
        raise ValueError(f"no deep job {name!r}")

    def nodes_allreduce(self, endpoint: str, nnodes: int, conf: str, local_addr: str, ifname: str,
                        tag: str) -> JobResult:
        """One rank on this node of a gloo all-reduce over `nnodes` nodes: torchrun's c10d rendezvous at
        `endpoint` (the same id on every node), gloo on `ifname`, this node advertised as `local_addr`; `tag` (JSON)
        is what this node tells the others (the probe's result lists every node's, in rank order)."""
        if "allreduce_nodes" not in self.jobs:
            python = self.python()
            if not python:
                return JobResult(name="allreduce_nodes", start_error="no training interpreter: no python3 on PATH")
            extra = ["--bytes", str(4 * MiB)] if self.options.small else []
            argv = [python, "-I", self.script(), *self._common(), "--torchrun", "1", "--nnodes", str(nnodes),
                    "--rdzv-endpoint", endpoint, "--rdzv-id", f"hosttune-doctor-{self.options.rdzv_port}",
                    "--rdzv-conf", conf, "--local-addr", local_addr, "--tag", tag, "--measure", "allreduce",
                    "--backend", "gloo", *extra]
            env = self.env(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME=ifname)
            self.jobs["allreduce_nodes"] = self._run("allreduce_nodes", argv, JOB_TIMEOUTS["allreduce"], env=env)
        return self.jobs["allreduce_nodes"]

    def allreduce_ranks(self, backend: str) -> int:
        if backend == "gloo":
            return 2
        info = self.job("torch").result("info") or {}
        return len([d for d in info.get("devices", []) if "error" not in d])

    def shm_bytes(self) -> int:
        want = (64 if self.options.small else 256) * MiB
        try:
            free = shutil.disk_usage("/dev/shm").free
        except OSError:
            return want
        return int(max(MiB, min(want, free // 2)))

    def _run(self, name: str, argv: Sequence[str], default_timeout: float, env: Optional[Dict[str, str]] = None,
             tick: Any = None) -> JobResult:
        limit = self.limit(name, default_timeout)
        timeout = min(limit, max(self.remaining(), 0.0))
        if timeout <= 0:
            return JobResult(name=name, start_error=f"time budget of {self.options.budget_s:g} s spent before this "
                                                    "measurement started")
        res = run_job(name, argv, env=env or self.env(), timeout=timeout, progress=self.progress, tick=tick,
                      measure_limit=measure_limit)
        if res.timed_out and res.timeout_s == timeout and timeout < limit:
            res = dataclasses.replace(res, budget_cut=True)
        return res

    # ---- NVML while the GPUs work ----------------------------------------------------------------------------------
    def _open_nvml(self) -> None:
        if self._nvml is None and self.ctx.facts.nvidia.nvml == "ok":
            try:
                self._nvml = nvmlmod.Nvml()
            except nvmlmod.NvmlUnavailable:
                self._nvml = None

    def _sample_nvml(self, now: Optional[str], events: Sequence[Dict[str, Any]]) -> None:
        """Clock-event bits per GPU while it computes, and the PCIe link it trains to while it copies."""
        if self._nvml is None or not now:
            return
        parts = now.split()
        if len(parts) < 2 or not parts[1].startswith("gpu") or not parts[1][3:].isdigit():
            return
        index = self._nvml_index(int(parts[1][3:]), events)
        try:
            sample = self._nvml.sample(index)
        except (nvmlmod.GpuLost, nvmlmod.NvmlUnavailable, IndexError, ValueError):
            return
        if parts[0] == "gpu_compute" and sample.get("clock_event_reasons") is not None:
            self.clock_events[index] = self.clock_events.get(index, 0) | int(sample["clock_event_reasons"])
        if parts[0] == "gpu_copies":
            seen = self.pcie_seen.setdefault(index, {})
            for key in ("pcie_gen", "pcie_width"):
                if sample.get(key) is not None:
                    seen[key] = max(seen.get(key, 0), int(sample[key]))

    def _nvml_index(self, cuda_index: int, events: Sequence[Dict[str, Any]]) -> int:
        """The NVML index of cuda:i: the probe runs with CUDA_DEVICE_ORDER=PCI_BUS_ID, and its info line carries
        each device's bus id where torch reports it (CUDA_VISIBLE_DEVICES can still renumber)."""
        for e in events:
            if e.get("event") == "result" and e.get("what") == "info":
                return nvml_index(self.ctx.facts.gpus, e.get("devices", []), cuda_index)
        return cuda_index


def nvml_index(gpus: Sequence[Any], devices: Sequence[Dict[str, Any]], cuda_index: int) -> int:
    """The facts' (NVML) index of torch's cuda:`cuda_index`, matched by PCI bus id, else the same number."""
    for d in devices:
        if d.get("index") == cuda_index and d.get("pci_bus_id"):
            bus = str(d["pci_bus_id"]).lower()[-12:]
            for g in gpus:
                if g.pci_bus_id and g.pci_bus_id.lower().endswith(bus):
                    return int(g.index)
    return cuda_index
