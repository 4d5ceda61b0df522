"""hosttune/doctor/deep/session.py in-process (issue 21): which interpreter measures, the probe copied into a fresh
private directory (and removed), the environment and common options every job gets, the exact command line and time
limit of each job (run_job replaced by a recorder: the processes themselves run in test_doctor_deep.py), the time
budget and when a cut is the budget's, the /dev/shm size, and NVML sampling during the GPU job (clock events OR-ed,
PCIe link maxima, cuda:i mapped to NVML's index by PCI bus id)."""

import os
import stat
import sys
import types
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from hosttune.doctor.deep import session as S
from hosttune.doctor.deep.runner import JobResult

MiB = 1 << 20


def ctx(python: Any = None, torch_python: Any = None, gpus: Any = (), data: Any = (), nvml: str = "absent") -> Any:
    torch = None if torch_python is None else types.SimpleNamespace(python=torch_python)
    facts = types.SimpleNamespace(torch=torch, gpus=list(gpus), nvidia=types.SimpleNamespace(nvml=nvml))
    return types.SimpleNamespace(python=python, facts=facts, data=list(data))


def gpu(index: int, bus: str) -> Any:
    return types.SimpleNamespace(index=index, pci_bus_id=bus)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> List[Dict[str, Any]]:
    calls: List[Dict[str, Any]] = []

    def run_job(name: str, argv: Any, **kw: Any) -> JobResult:
        calls.append(dict(kw, name=name, argv=list(argv)))
        return JobResult(name=name, timeout_s=kw["timeout"])

    monkeypatch.setattr(S, "run_job", run_job)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return calls


def deep(c: Any = None, **opts: Any) -> S.DeepRun:
    run = S.DeepRun(c if c is not None else ctx(python="/opt/py/bin/python3"), S.DeepOptions(**opts))
    return run


def at(monkeypatch: pytest.MonkeyPatch, run: S.DeepRun, seconds: float) -> None:
    """The clock `seconds` after `run` started. The start is put at 1024 s, a time that makes the test's sums exact:
    the machine's own monotonic clock (its uptime) would round (start + 12.5) - start to 12.499999999999943 or to
    12.500000000000057 depending on the machine, and a budget spent exactly would leave 5.7e-14 s (seen in a quiet
    make test, session 8)."""
    run.started = 1024.0
    monkeypatch.setattr(S.time, "monotonic", lambda: 1024.0 + seconds)


# ---- small rules ---------------------------------------------------------------------------------------------------
def test_measure_limit() -> None:
    assert S.measure_limit("info") == 60.0 and S.measure_limit("allreduce nccl") == 60.0
    assert S.measure_limit("gpu_compute gpu0 bf16") == 20.0 and S.measure_limit("disk /data") == 20.0
    assert S.measure_limit("information") == 20.0


def test_defaults() -> None:
    o = S.DeepOptions()
    assert (o.budget_s, o.seconds, o.small, o.timeouts, o.progress, o.python, o.nodes, o.rdzv_port) == (
        180.0, 0.3, False, {}, None, None, (), 29400)
    assert S.JOB_TIMEOUTS == {"torch": 90.0, "gpu": 30.0, "gpu_per_device": 8.0, "allreduce": 90.0, "disk": 20.0,
                              "shm": 20.0}


def test_python_option_then_context_then_facts_then_path(monkeypatch: pytest.MonkeyPatch) -> None:
    assert deep(ctx(python="/c", torch_python="/f"), python="/o").python() == "/o"
    assert deep(ctx(python="/c", torch_python="/f")).python() == "/c"
    assert deep(ctx(torch_python="/f")).python() == "/f"
    monkeypatch.setattr(S.torchenv, "default_python", lambda io: "/usr/bin/python3")
    assert deep(ctx(torch_python="")).python() == "/usr/bin/python3"
    assert deep(ctx()).python() == "/usr/bin/python3"


def test_env_orders_gpus_by_bus_and_takes_extras() -> None:
    env = deep().env(OMP_NUM_THREADS="1", CUDA_DEVICE_ORDER="x")
    assert env["OMP_NUM_THREADS"] == "1" and env["CUDA_DEVICE_ORDER"] == "x"
    assert deep().env()["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_limit_override_and_remaining(monkeypatch: pytest.MonkeyPatch) -> None:
    run = deep(timeouts={"gpu": 3.0}, budget_s=50.0)
    assert run.limit("gpu", 30.0) == 3.0 and run.limit("torch", 90.0) == 90.0
    at(monkeypatch, run, 20.0)
    assert run.remaining() == 30.0


def test_common_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert deep(seconds=0.25)._common() == ["--json", "--seconds", "0.25"]
    assert deep(small=True)._common() == ["--json", "--seconds", "0.3", "--small"]
    monkeypatch.setattr(S.torchenv, "probe_path", lambda env: (["/a", "/b"], []))
    assert deep()._common() == ["--json", "--seconds", "0.3", "--path", "/a", "--path", "/b"]


# ---- the probe file ------------------------------------------------------------------------------------------------
def test_script_is_a_private_copy_reused_then_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path = tmp_path / "tmp"
    tmp_path.mkdir()
    monkeypatch.setattr(S.tempfile, "tempdir", str(tmp_path))
    run = deep()
    path = run.script()
    folder = os.path.dirname(path)
    assert os.path.dirname(folder) == str(tmp_path) and os.path.basename(folder).startswith("hosttune-deep-")
    assert os.path.basename(path) == "probe_torch.py"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert Path(path).read_bytes() == S.PROBE.read_bytes()
    assert run.script() == path and os.listdir(tmp_path) == [os.path.basename(folder)]
    run.close()
    assert not os.path.exists(folder) and run._dir is None
    run.close()  # twice: nothing to do


@pytest.mark.skipif(os.geteuid() != 0, reason="the root rule")
def test_as_root_an_untrusted_tmpdir_is_replaced_by_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)  # anyone could swap our directory
    monkeypatch.setattr(S.tempfile, "tempdir", str(open_dir))
    run = deep()
    try:
        assert os.path.dirname(os.path.dirname(run.script())) == "/tmp"
    finally:
        run.close()
    assert os.listdir(open_dir) == []
    ok = tmp_path / "ok"
    ok.mkdir()
    monkeypatch.setattr(S.tempfile, "tempdir", str(ok))
    run = deep()
    try:
        assert os.path.dirname(os.path.dirname(run.script())) == str(ok)
    finally:
        run.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the root rule")
def test_as_root_a_probe_someone_else_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S.tempfile, "tempdir", str(tmp_path))
    run = deep()
    try:
        path = run.script()
        os.chmod(path, 0o666)
        with pytest.raises(S.trust.Untrusted):
            run.script()
    finally:
        run.close()


# ---- each job's command line ---------------------------------------------------------------------------------------
def test_disk_and_shm_run_in_hosttunes_interpreter(runs: List[Dict[str, Any]], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(S.shutil, "disk_usage", lambda p: types.SimpleNamespace(free=10 * MiB))
    run = deep(ctx(python="/opt/py", data=["/d1", "rel"]))
    try:
        script = run.script()
        run.job("disk")
        run.job("shm")
        run.job("disk")  # started once, shared
    finally:
        run.close()
    assert [c["name"] for c in runs] == ["disk", "shm"]
    assert runs[0]["argv"] == [sys.executable, "-I", script, "--json", "--seconds", "0.3", "--measure", "disk",
                               "--file", "/d1", "--file", os.path.abspath("rel")]
    assert runs[0]["timeout"] == 30.0  # 20 + 5 per path
    assert runs[1]["argv"] == [sys.executable, "-I", script, "--json", "--seconds", "0.3", "--measure", "shm",
                               "--bytes", str(5 * MiB)]
    assert runs[1]["timeout"] == 20.0 and runs[0]["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert runs[0]["measure_limit"] is S.measure_limit and runs[0]["progress"] is run.progress


def test_torch_gpu_and_allreduce_jobs(runs: List[Dict[str, Any]], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(S.nvmlmod, "Nvml", FakeNvml)
    run = deep(ctx(python="/opt/py", gpus=[gpu(0, "0000:01:00.0"), gpu(1, "0000:02:00.0")], nvml="ok"), small=True)
    info = {"event": "result", "what": "info", "devices": [{"index": 0}, {"index": 1, "error": "E"}, {"index": 2}]}
    try:
        script = run.script()
        common = ["--json", "--seconds", "0.3", "--small"]
        run.job("torch")
        run.jobs["torch"] = JobResult(name="torch", events=(info,))
        assert run._nvml is None
        run.job("gpu")
        assert isinstance(run._nvml, FakeNvml)  # NVML opened for the GPU job's sampling
        run.job("allreduce_nccl")
        run.job("allreduce_gloo")
        with pytest.raises(ValueError, match="no deep job 'bogus'"):
            run.job("bogus")
    finally:
        run.close()
    torch, g, nccl, gloo = runs
    assert torch["argv"] == ["/opt/py", "-I", script, *common, "--measure", "info,cpu"] and torch["timeout"] == 90.0
    assert g["argv"] == ["/opt/py", "-I", script, *common, "--measure", "info,gpu_compute,gpu_copies,p2p"]
    assert g["timeout"] == 46.0 and g["tick"] == run._sample_nvml  # 30 + 8 per GPU
    assert nccl["argv"] == ["/opt/py", "-I", script, *common, "--torchrun", "2", "--measure", "allreduce",
                            "--backend", "nccl", "--bytes", str(4 * MiB)]
    assert nccl["env"]["OMP_NUM_THREADS"] == "1" and nccl["timeout"] == 90.0
    assert gloo["argv"][4 + len(common):] == ["2", "--measure", "allreduce", "--backend", "gloo",
                                              "--bytes", str(4 * MiB)]


def test_full_size_allreduce_has_no_bytes_option(runs: List[Dict[str, Any]], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S.tempfile, "tempdir", str(tmp_path))
    run = deep()
    try:
        run.job("allreduce_gloo")
    finally:
        run.close()
    assert runs[0]["argv"][-4:] == ["--measure", "allreduce", "--backend", "gloo"]


def test_no_interpreter_is_a_start_error(runs: List[Dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S.torchenv, "default_python", lambda io: None)
    run = deep(ctx())
    res = run.job("torch")
    assert res.start_error == "no training interpreter: no python3 on PATH (use --python)" and runs == []
    res = run.nodes_allreduce("h:1", 2, "", "10.0.0.1", "eth0", "{}")
    assert res.start_error == "no training interpreter: no python3 on PATH" and runs == []


def test_nodes_allreduce_command_line(runs: List[Dict[str, Any]], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S.tempfile, "tempdir", str(tmp_path))
    run = deep(rdzv_port=29555)
    try:
        script = run.script()
        first = run.nodes_allreduce("n1:29555", 3, "join_timeout=30", "10.0.0.2", "ib0", '{"mtu": 9000}')
        again = run.nodes_allreduce("other:1", 9, "", "", "", "")
    finally:
        run.close()
    assert first is again and len(runs) == 1
    assert runs[0]["argv"] == ["/opt/py/bin/python3", "-I", script, "--json", "--seconds", "0.3", "--torchrun", "1",
                               "--nnodes", "3", "--rdzv-endpoint", "n1:29555", "--rdzv-id", "hosttune-doctor-29555",
                               "--rdzv-conf", "join_timeout=30", "--local-addr", "10.0.0.2", "--tag",
                               '{"mtu": 9000}', "--measure", "allreduce", "--backend", "gloo"]
    assert runs[0]["env"]["GLOO_SOCKET_IFNAME"] == "ib0" and runs[0]["env"]["OMP_NUM_THREADS"] == "1"
    assert runs[0]["timeout"] == 90.0 and runs[0]["name"] == "allreduce_nodes"


def test_allreduce_ranks(runs: List[Dict[str, Any]]) -> None:
    run = deep()
    assert run.allreduce_ranks("gloo") == 2
    run.jobs["torch"] = JobResult(name="torch", events=())
    assert run.allreduce_ranks("nccl") == 0


@pytest.mark.parametrize("free,small,want", [
    (10 * 1024 * MiB, False, 256 * MiB), (10 * 1024 * MiB, True, 64 * MiB),
    (100 * MiB, False, 50 * MiB), (MiB, False, MiB), (3 * MiB + 1, False, 3 * MiB // 2),
])
def test_shm_bytes(monkeypatch: pytest.MonkeyPatch, free: int, small: bool, want: int) -> None:
    monkeypatch.setattr(S.shutil, "disk_usage", lambda p: types.SimpleNamespace(free=free))
    assert deep(small=small).shm_bytes() == want


def test_shm_bytes_without_dev_shm(monkeypatch: pytest.MonkeyPatch) -> None:
    def gone(p: str) -> Any:
        raise FileNotFoundError(p)

    monkeypatch.setattr(S.shutil, "disk_usage", gone)
    assert deep().shm_bytes() == 256 * MiB


# ---- the budget ----------------------------------------------------------------------------------------------------
def test_budget_spent_before_a_job_starts_it_not(runs: List[Dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    run = deep(budget_s=12.5)
    at(monkeypatch, run, 12.5)
    res = run._run("gpu", ["x"], 30.0)
    assert res.start_error == "time budget of 12.5 s spent before this measurement started" and runs == []


def test_timeout_is_the_smaller_of_limit_and_budget(runs: List[Dict[str, Any]],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    run = deep(budget_s=100.0)
    at(monkeypatch, run, 90.0)
    run._run("gpu", ["x"], 30.0)
    run._run("disk", ["x"], 5.0)
    assert [c["timeout"] for c in runs] == [10.0, 5.0]


def cut_run(monkeypatch: pytest.MonkeyPatch, left: float, limit: float, timed_out: bool) -> JobResult:
    run = deep(budget_s=100.0)
    at(monkeypatch, run, 100.0 - left)
    monkeypatch.setattr(S, "run_job", lambda name, argv, **kw: JobResult(name=name, timed_out=timed_out,
                                                                         timeout_s=kw["timeout"]))
    return run._run("gpu", ["x"], limit)


def test_a_timeout_set_by_the_budget_is_a_budget_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cut_run(monkeypatch, 10.0, 30.0, True).budget_cut is True
    assert cut_run(monkeypatch, 10.0, 30.0, False).budget_cut is False  # finished in time
    assert cut_run(monkeypatch, 40.0, 30.0, True).budget_cut is False  # its own limit
    assert cut_run(monkeypatch, 30.0, 30.0, True).budget_cut is False  # equal: its own limit too


# ---- NVML during the GPU job ---------------------------------------------------------------------------------------
class FakeNvml:
    def __init__(self, samples: Optional[Dict[int, Dict[str, Any]]] = None) -> None:
        samples = {} if samples is None else samples
        self.samples, self.asked, self.closed = samples, [], False

    def sample(self, index: int) -> Dict[str, Any]:
        self.asked.append(index)
        if index not in self.samples:
            raise IndexError(index)
        return self.samples[index]

    def close(self) -> None:
        self.closed = True


def test_sampling_ors_clock_events_and_keeps_link_maxima() -> None:
    run = deep()
    nv = FakeNvml({0: {"clock_event_reasons": 0x4, "pcie_gen": 3, "pcie_width": 16},
                   1: {"clock_event_reasons": None, "pcie_gen": None, "pcie_width": 8}})
    run._nvml = nv
    run._sample_nvml("gpu_compute gpu0 bf16", [])
    nv.samples[0] = {"clock_event_reasons": 0x20, "pcie_gen": 4, "pcie_width": 8}
    run._sample_nvml("gpu_compute gpu0 fp16", [])
    assert run.clock_events == {0: 0x24}
    run._sample_nvml("gpu_copies gpu0 pinned h2d", [])
    nv.samples[0] = {"pcie_gen": 2, "pcie_width": 16}
    run._sample_nvml("gpu_copies gpu0 pinned d2h", [])
    run._sample_nvml("gpu_copies gpu1 pinned d2h", [])
    run._sample_nvml("gpu_compute gpu1 bf16", [])
    assert run.pcie_seen == {0: {"pcie_gen": 4, "pcie_width": 16}, 1: {"pcie_width": 8}}
    assert run.clock_events == {0: 0x24}
    run.close()
    assert nv.closed and run._nvml is None


@pytest.mark.parametrize("now", [None, "", "info", "p2p matrix", "gpu_compute gpuX bf16", "gpu_compute cpu0",
                                 "gpu_compute gpu9 bf16"])
def test_sampling_ignores_other_lines_and_lost_gpus(now: Any) -> None:
    run = deep()
    run._nvml = FakeNvml({})
    run._sample_nvml(now, [])
    assert run.clock_events == {} and run.pcie_seen == {}
    assert run._nvml.asked == ([9] if now == "gpu_compute gpu9 bf16" else [])


def test_no_nvml_no_sampling() -> None:
    run = deep()
    run._sample_nvml("gpu_compute gpu0 bf16", [])
    assert run.clock_events == {}


def test_sampling_maps_cuda_index_by_bus_id() -> None:
    c = ctx(gpus=[gpu(0, "00000000:01:00.0"), gpu(1, "00000000:41:00.0")])
    run = deep(c)
    run._nvml = FakeNvml({1: {"clock_event_reasons": 1}})
    info = {"event": "result", "what": "info", "devices": [{"index": 0, "pci_bus_id": "0000:41:00.0"}]}
    run._sample_nvml("gpu_compute gpu0 bf16", [info])
    assert run.clock_events == {1: 1}
    run._sample_nvml("gpu_compute gpu0 bf16", [{"event": "start", "what": "info"}, info])
    assert run._nvml.asked == [1, 1]


def test_nvml_index() -> None:
    gpus = [gpu(0, "00000000:01:00.0"), gpu(3, "00000000:C1:00.0"), gpu(5, None)]
    devs = [{"index": 0, "pci_bus_id": "0000:c1:00.0"}, {"index": 1}, {"index": 2, "pci_bus_id": "0000:99:00.0"}]
    assert S.nvml_index(gpus, devs, 0) == 3  # by bus id, case folded
    assert S.nvml_index(gpus, devs, 1) == 1  # no bus id: the same number
    assert S.nvml_index(gpus, devs, 2) == 2  # no GPU with that bus: the same number
    assert S.nvml_index(gpus, devs, 7) == 7
    assert deep(ctx(gpus=gpus))._nvml_index(0, [{"event": "result", "what": "disk"}]) == 0


def test_open_nvml_only_when_the_facts_say_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    made: List[int] = []

    class Nv:
        def __init__(self) -> None:
            made.append(1)

    monkeypatch.setattr(S.nvmlmod, "Nvml", Nv)
    run = deep(ctx(nvml="absent"))
    run._open_nvml()
    assert run._nvml is None and made == []
    run = deep(ctx(nvml="ok"))
    run._open_nvml()
    run._open_nvml()
    assert isinstance(run._nvml, Nv) and made == [1]

    def gone() -> None:
        raise S.nvmlmod.NvmlUnavailable("no driver", "NVML_ERROR_DRIVER_NOT_LOADED")

    monkeypatch.setattr(S.nvmlmod, "Nvml", gone)
    run = deep(ctx(nvml="ok"))
    run._open_nvml()
    assert run._nvml is None
