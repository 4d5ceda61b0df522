"""hosttune/doctor/deep/checks.py in-process (issue 21): what each `doctor --deep` check hands to its finding (the job
it reads, the expected rate and its wording, the GPU index map, the core count, the disk kinds, the network route
chosen, the rendezvous options), and every skip it returns itself (no usable GPU, one GPU, no gloo, a host not in
--nodes, a broken route, a container). A stand-in DeepRun hands out fabricated probe results; the findings
functions are recorded where the check's own arithmetic is what is pinned."""

import json
import types
from typing import Any, Dict, List, Optional

import pytest

from hosttune.doctor.deep import checks as C
from hosttune.doctor.deep.runner import JobResult
from hosttune.doctor.model import Finding
from hosttune.policy import bandwidth


def res(what: str, **kw: Any) -> Dict[str, Any]:
    return dict(kw, event="result", what=what)


class Run:
    """The part of DeepRun the checks read: jobs by name (fabricated), NVML observations, options."""

    def __init__(self, jobs: Dict[str, JobResult], nodes: Any = (), port: int = 29400) -> None:
        self.jobs, self.asked = jobs, []
        self.clock_events = {0: 4}
        self.pcie_seen = {0: {"pcie_gen": 4}}
        self.options = types.SimpleNamespace(nodes=tuple(nodes), rdzv_port=port)
        self.paths: Optional[List[Any]] = None
        self.nodes_calls: List[Any] = []

    def job(self, name: str) -> JobResult:
        self.asked.append(name)
        return self.jobs.get(name) or JobResult(name=name)

    def python(self) -> str:
        return "/opt/py"

    def nodes_allreduce(self, *a: Any) -> JobResult:
        self.nodes_calls.append(a)
        return JobResult(name="allreduce_nodes")


def gpu(index: int, bus: str = "", gen: Any = 4, width: Any = 16, numa: int = 0, cls: str = "0x030200") -> Any:
    return types.SimpleNamespace(index=index, pci_bus_id=bus, pcie_gen_max=gen, pcie_width_max=width,
                                 numa_node=numa, pci_class=cls)


def ctx(run: Any, gpus: Any = (), data: Any = (), container: Any = None, cpu: Any = None) -> Any:
    facts = types.SimpleNamespace(gpus=list(gpus), cpu=cpu, nvidia=types.SimpleNamespace(nvml="ok"),
                                  container=container or types.SimpleNamespace(detected=False))
    return types.SimpleNamespace(deep=run, facts=facts, data=list(data), live=True)


def info(*devices: Dict[str, Any], **kw: Any) -> JobResult:
    return JobResult(name="torch", events=(res("info", devices=list(devices), **kw),))


H100 = "NVIDIA H100 80GB HBM3"
TWO = info({"index": 0, "name": H100, "pci_bus_id": "0000:41:00.0"}, {"index": 1, "name": H100})


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    got: List[Any] = []
    for name in ("torch_finding", "compute_finding", "copies_finding", "p2p_finding", "allreduce_finding",
                 "membw_finding", "bf16_finding", "disk_finding", "shm_finding", "cpu_matmul_finding",
                 "nvlink_finding", "toolkit_finding"):
        monkeypatch.setattr(C.findings, name,
                            (lambda n: lambda *a: got.append((n,) + a) or Finding(status="pass", actual=n))(name))
    return got


# ---- skips of the GPU checks ---------------------------------------------------------------------------------------
SKIP_TORCH = "needs torch with working CUDA (see torch.deep_cuda)"


@pytest.mark.parametrize("job", [None, info(), info({"index": 0, "error": "E"})])
@pytest.mark.parametrize("check", [C.check_compute, C.check_copies, C.check_p2p, C.check_nccl])
def test_gpu_checks_skip_without_a_usable_gpu(calls: List[Any], job: Any, check: Any) -> None:
    run = Run({"torch": job} if job else {})
    f = check(ctx(run, [gpu(0)]))
    assert (f.status, f.actual) == ("skip", SKIP_TORCH) and calls == []
    assert "gpu" not in run.asked and "allreduce_nccl" not in run.asked


@pytest.mark.parametrize("check,what", [(C.check_p2p, "one GPU: no peer to copy to"),
                                        (C.check_nccl, "one GPU: no all-reduce across GPUs")])
def test_peer_checks_skip_with_one_usable_gpu(calls: List[Any], check: Any, what: str) -> None:
    run = Run({"torch": info({"index": 0, "name": H100}, {"index": 1, "error": "E"})})
    f = check(ctx(run, [gpu(0), gpu(1)]))
    assert (f.status, f.actual, f.expected) == ("skip", what, "") and calls == []


def test_torch_cuda_counts_only_gpus(calls: List[Any]) -> None:
    run = Run({"torch": TWO})
    C.check_torch_cuda(ctx(run, [gpu(0), gpu(1), gpu(2, cls="0x068000")]))  # an NVSwitch is not a GPU
    assert calls == [("torch_finding", TWO, 2, "/opt/py")]


def test_compute_and_copies_hand_over_the_gpu_job_and_index_map(calls: List[Any]) -> None:
    g = info({"index": 0, "pci_bus_id": "0000:41:00.0"}, {"index": 1})
    run = Run({"torch": TWO, "gpu": g})
    c = ctx(run, [gpu(0, "00000000:01:00.0", gen=3, width=8), gpu(1, "00000000:41:00.0", gen=None, width=None)])
    C.check_compute(c)
    C.check_copies(c)
    assert calls == [("compute_finding", g, {0: 4}, {0: 1, 1: 1}),
                     ("copies_finding", g, {0: (3, 8), 1: (None, None)}, {0: {"pcie_gen": 4}}, {0: 1, 1: 1})]


def test_p2p_names_and_slowest_link(calls: List[Any]) -> None:
    run = Run({"torch": TWO})
    C.check_p2p(ctx(run, [gpu(0, gen=4, width=16), gpu(1, gen=3, width=16), gpu(2, gen=None)]))
    assert calls == [("p2p_finding", JobResult(name="gpu"), [H100, H100], bandwidth.pcie_expected_gbps(3, 16))]
    calls.clear()
    C.check_p2p(ctx(run, [gpu(0, gen=None), gpu(1, width=None)]))
    assert calls[0][3] is None


def test_nccl_on_nvlink_wants_60_percent_of_it(calls: List[Any]) -> None:
    run = Run({"torch": TWO})
    C.check_nccl(ctx(run, [gpu(0), gpu(1)]))
    nv = bandwidth.nvlink_gbps(H100)
    assert nv
    assert calls == [("allreduce_finding", JobResult(name="allreduce_nccl"), "nccl", nv * 0.6,
                      f"60% of NVLink {nv:.0f} GB/s per GPU ({H100})")]


def test_nccl_on_pcie_wants_40_percent_of_the_slowest_link(calls: List[Any]) -> None:
    run = Run({"torch": info({"index": 0, "name": "NVIDIA L4"}, {"index": 1, "name": "NVIDIA L4"})})
    C.check_nccl(ctx(run, [gpu(0, gen=4, width=16), gpu(1, gen=4, width=8)]))
    slow = bandwidth.pcie_expected_gbps(4, 8)
    assert slow
    assert calls[0][2:] == ("nccl", slow * 0.4, "40% of the slowest PCIe link's realistic rate")
    calls.clear()
    C.check_nccl(ctx(run, [gpu(0, gen=None), gpu(1, gen=None)]))
    assert calls[0][2:] == ("nccl", None, "completes with correct sums")


# ---- CPU -----------------------------------------------------------------------------------------------------------
def test_cores_is_the_budget_or_fewer_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C.cpu_policy, "thread_budget", lambda cpu: 8)
    c = ctx(Run({}))
    assert C._cores(c, None) == 8 and C._cores(c, 4) == 4 and C._cores(c, 16) == 8 and C._cores(c, 0) == 8
    monkeypatch.setattr(C.cpu_policy, "thread_budget", lambda cpu: None)
    assert C._cores(c, None) == 1 and C._cores(c, 3) == 1


def test_cpu_matmul_hands_over_cores_clock_and_flags(calls: List[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C.cpu_policy, "thread_budget", lambda cpu: 8)
    monkeypatch.setattr(C.host, "cpu_clock_ghz", lambda io, model: (2.5, "x"))
    cpu = types.SimpleNamespace(model="Xeon", flags=("avx2",), vendor="GenuineIntel", arch="x86_64")
    job = JobResult(name="torch", events=(res("cpu_matmul", threads=6),))
    C.check_cpu_matmul(ctx(Run({"torch": job}), cpu=cpu))
    assert calls == [("cpu_matmul_finding", job, 6, 2.5, ("avx2",), "GenuineIntel", "x86_64")]
    calls.clear()
    C.check_cpu_matmul(ctx(Run({"torch": JobResult(name="torch")}), cpu=cpu))
    assert calls[0][2] == 8


def test_membw_bf16_shm_read_their_jobs(calls: List[Any]) -> None:
    cpu = types.SimpleNamespace(flags=("amx_bf16",))
    run = Run({})
    c = ctx(run, cpu=cpu)
    C.check_membw(c)
    C.check_bf16(c)
    C.check_shm_speed(c)
    assert calls == [("membw_finding", JobResult(name="torch")), ("bf16_finding", JobResult(name="torch"),
                                                                   ("amx_bf16",)),
                     ("shm_finding", JobResult(name="shm"))]


def test_gloo_skips_on_a_gpu_host_and_without_torch(calls: List[Any]) -> None:
    f = C.check_gloo(ctx(Run({"torch": TWO})))
    assert (f.status, f.actual, f.expected) == ("skip", "GPU host: see nvidia.deep_allreduce", "")
    f = C.check_gloo(ctx(Run({})))
    assert (f.status, f.actual) == ("skip", "needs a working torch (see torch.deep_cuda)")
    f = C.check_gloo(ctx(Run({"torch": info(gloo=False)})))
    assert (f.status, f.actual, f.expected) == ("fail", "torch.distributed has no gloo backend", "gloo available")
    assert "distributed support" in (f.fix or "") and calls == []


def test_gloo_on_a_cpu_host(calls: List[Any]) -> None:
    run = Run({"torch": info({"index": 0, "error": "E"}, gloo=True)})
    C.check_gloo(ctx(run))
    assert calls == [("allreduce_finding", JobResult(name="allreduce_gloo"), "gloo", None,
                      "2 ranks finish with correct sums (loopback: no rated peak)")]


# ---- nodes ---------------------------------------------------------------------------------------------------------
def path(peer: str, own: bool = False, ifname: Any = "eth0", kind: str = "ethernet", address: str = "10.0.0.1",
         source: str = "10.0.0.9", mtu: int = 9000) -> Any:
    return types.SimpleNamespace(peer=peer, own=own, ifname=ifname, kind=kind, address=address, source=source,
                                 mtu=mtu)


@pytest.mark.parametrize("paths,actual", [
    ([path("a"), path("b")], "this host is not in --nodes: give every node, this one included"),
    ([path("me", own=True)], "--nodes names only this host"),
    ([path("me", own=True), path("b", ifname=None), path("c", kind="loopback"), path("d"),
      path("e", kind="container-bridge")], "no usable route to b, c, e (see os.deep_network)"),
])
def test_nodes_allreduce_skips(paths: Any, actual: str) -> None:
    run = Run({})
    run.paths = paths
    f = C.check_nodes_allreduce(ctx(run))
    assert (f.status, f.actual) == ("skip", actual) and run.nodes_calls == []


def test_nodes_allreduce_rendezvous_on_the_first_node(monkeypatch: pytest.MonkeyPatch) -> None:
    got: List[Any] = []
    monkeypatch.setattr(C.network, "nodes_allreduce_finding",
                        lambda job, n: got.append(n) or Finding(status="pass", actual="x"))
    run = Run({}, port=29555)
    run.paths = [path("n1", address="10.0.0.1"), path("me", own=True, address="10.0.0.2"),
                 path("n3", source="10.0.0.2", ifname="ib0", mtu=2044)]
    C.check_nodes_allreduce(ctx(run))
    tag = json.dumps({"node": "10.0.0.9", "ifname": "eth0", "mtu": 9000})
    assert run.nodes_calls == [("10.0.0.1:29555", 3, "is_host=0,join_timeout=80", "10.0.0.9", "eth0", tag)]
    assert got == [3]
    run.nodes_calls.clear()
    run.paths = [path("me", own=True, address="fd00::1"), path("n2")]
    C.check_nodes_allreduce(ctx(run))
    assert run.nodes_calls[0][:3] == ("[fd00::1]:29555", 2, "is_host=1,join_timeout=80")


def test_network_hands_over_the_gpus_numa_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    got: List[Any] = []
    monkeypatch.setattr(C.network, "nodes_finding", lambda paths, numa: got.append((paths, numa)) or Finding(
        status="pass", actual="x"))
    run = Run({})
    run.paths = [path("a")]
    C.check_network(ctx(run, [gpu(0, numa=1), gpu(1, numa=-1), gpu(2, numa=0)]))
    assert got == [(run.paths, [1, 0])]


def test_node_paths_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import hosttune.detect.netroute as netroute

    made: List[str] = []

    class Routes:
        io = "io"

    monkeypatch.setattr(netroute, "LiveRoutes", Routes)
    monkeypatch.setattr(C.network, "ib_ports", lambda io: {"ports": io})
    monkeypatch.setattr(C.network, "network_path",
                        lambda peer, routes, io, ports: made.append(peer) or (peer, io, ports))
    run = Run({}, nodes=("a", "b"))
    c = ctx(run)
    assert C.node_paths(c) == [("a", "io", {"ports": "io"}), ("b", "io", {"ports": "io"})]
    assert C.node_paths(c) is run.paths and made == ["a", "b"]


# ---- storage, containers, NVLink -----------------------------------------------------------------------------------
def test_disk_read_kinds_by_absolute_path(calls: List[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    mounts = {"/data": types.SimpleNamespace(kind="nvme")}
    monkeypatch.setattr(C, "_mount_for", lambda c, p: mounts.get(p))
    C.check_disk_read(ctx(Run({}), data=["/data", "/elsewhere"]))
    assert calls == [("disk_finding", JobResult(name="disk"), {"/data": "nvme", "/elsewhere": "unknown"})]


def test_container_checks(monkeypatch: pytest.MonkeyPatch, calls: List[Any]) -> None:
    f = C.check_container(ctx(Run({})))
    assert (f.status, f.actual, f.expected) == ("pass", "not in a container", "")
    box = types.SimpleNamespace(detected=True, runtime="docker", evidence=("/.dockerenv",))
    monkeypatch.setattr(C.HostIO, "exists", lambda self, p: p == "/dev/nvidiactl")
    f = C.check_container(ctx(Run({}), [gpu(0)], container=box))
    assert (f.status, f.actual) == ("pass", "inside a docker container (/.dockerenv)")
    monkeypatch.setattr(C.HostIO, "exists", lambda self, p: False)
    f = C.check_container(ctx(Run({}), [gpu(0)], container=box))
    assert (f.status, f.actual) == ("warn", "inside a docker container (/.dockerenv); GPUs on the PCI bus but no "
                                            "/dev/nvidiactl")
    assert f.expected == "the GPUs passed into the container" and "--gpus all" in (f.fix or "")
    f = C.check_container(ctx(Run({}), [], container=types.SimpleNamespace(detected=True, runtime="",
                                                                             evidence=())))
    assert (f.status, f.actual) == ("pass", "inside a unknown container (?)")
    f = C.check_container_toolkit(ctx(Run({}), container=box))
    assert (f.status, f.actual) == ("skip", "inside a container: the toolkit belongs on the host") and calls == []


def test_nvlink_links_per_gpu(monkeypatch: pytest.MonkeyPatch, calls: List[Any]) -> None:
    class Session:
        def __enter__(self) -> "Session":
            return self

        def __exit__(self, *a: Any) -> None:
            return None

        def nvlink_count(self, i: int) -> int:
            return {0: 3, 1: 0}[i]

        def health(self, i: int, count: int) -> Dict[str, Any]:
            return {"nvlink_up": [1, 0, None][:count]}

    monkeypatch.setattr(C.nvmlmod, "Nvml", Session)
    C.check_nvlink(ctx(Run({}), [gpu(0), gpu(1)]))
    assert calls == [("nvlink_finding", {0: [{"link": 0, "up": True}, {"link": 1, "up": False}]})]

    def gone() -> Any:
        raise C.nvmlmod.NvmlUnavailable("no driver", "x")

    monkeypatch.setattr(C.nvmlmod, "Nvml", gone)
    f = C.check_nvlink(ctx(Run({}), [gpu(0)]))
    assert f.status == "skip" and f.actual.startswith("NVML: ")


# ---- the table -----------------------------------------------------------------------------------------------------
def test_needs_of_each_check() -> None:
    by = {c.id: [n.name for n in c.needs] for c in C.DEEP_CHECKS}
    assert by["torch.deep_cuda"] == ["deep", "live"] and by["cpu.deep_allreduce"] == ["deep", "live"]
    assert by["nvidia.deep_compute"] == ["deep", "live", "gpu"]
    assert by["nvidia.deep_nvlink"] == ["deep", "live", "gpu", "nvml"]
    assert by["os.deep_network"] == ["deep", "live", "nodes"] == by["os.deep_nodes_allreduce"]
    assert by["storage.deep_read"] == ["deep", "live", "data"] and by["storage.deep_shm"] == ["deep", "live"]
    assert len(C.DEEP_CHECKS) == 16


def test_need_predicates() -> None:
    assert C.DEEP.met(ctx(None)) is False and C.DEEP.met(ctx(Run({}))) is True
    assert C.NODES.met(ctx(Run({}, nodes=("a",)))) is True and C.NODES.met(ctx(Run({}))) is False
    assert C.DATA.met(ctx(Run({}), data=["/d"])) is True and C.DATA.met(ctx(Run({}))) is False
    assert C.LIVE.met(ctx(Run({}))) is True
    nvml = [n for n in C.DEEP_CHECKS if n.id == "nvidia.deep_nvlink"][0].needs[-1]
    c = ctx(Run({}))
    assert nvml.met(c) is True
    c.facts.nvidia.nvml = "absent"
    assert nvml.met(c) is False
