"""A memory snapshot on CUDA out-of-memory (issue 25, "what trainers expect"; hosttune/engine/oom.py): on CUDA the
run records the allocator's history from the start (memory_history events, Python stacks), and an OOM writes it to
<run>/oom-snapshot.pickle before the report, which names the file and the viewer (https://pytorch.org/memory_viz).

CUDA-only: here through the CPU path, with a stand-in for torch.cuda.memory that records what it is asked (the
real module's calls are the same: _record_memory_history(max_entries=, stacks=), _snapshot()). The last test runs
a real OOM where a GPU is lent (skipped without one)."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import checkout_env

torch = pytest.importorskip("torch")

from _enginehelp import toy_fit  # noqa: E402

from hosttune import unpickle  # noqa: E402
from hosttune.engine import oom  # noqa: E402
from hosttune.engine.config import ConfigError, load_config  # noqa: E402
from hosttune.engine.runtime import setup, teardown  # noqa: E402

CPU = torch.device("cpu")
# What torch.cuda.memory._snapshot() returns, in miniature: plain data (the viewer reads the same keys).
SNAPSHOT = {"segments": [{"address": 1 << 20, "total_size": 2 << 20, "blocks": []}],
            "device_traces": [[{"action": "alloc", "addr": 1 << 20, "size": 512, "frames": [
                {"filename": "model.py", "line": 12, "name": "forward"}]}, {"action": "oom", "size": 1 << 40}]]}


class FakeMemory:
    """torch.cuda.memory's recording calls, recorded."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: List[Dict[str, Any]] = []
        self.fail = fail

    def _record_memory_history(self, enabled: Any = "all", **kwargs: Any) -> None:
        if self.fail:
            raise RuntimeError("Recording memory history is not supported on this build")
        self.calls.append({"enabled": enabled, **kwargs})

    def _snapshot(self) -> Dict[str, Any]:
        if self.fail:
            raise RuntimeError("CUDA error: out of memory")
        return SNAPSHOT


def an_oom() -> BaseException:
    return torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_recording_starts_bounded_with_python_stacks_and_stops() -> None:
    memory = FakeMemory()
    assert oom.start_memory_history(memory, 20000) is memory
    oom.stop_memory_history(memory)
    assert memory.calls == [{"enabled": "all", "max_entries": 20000, "stacks": "python"}, {"enabled": None}]
    assert oom.start_memory_history(FakeMemory(fail=True), 20000) is None  # a torch that cannot: the run goes on
    assert load_config("gpt-tiny").memory_history == 20000  # on by default (it only records on CUDA)
    assert load_config("gpt-tiny", None, ["memory_history=0"]).memory_history == 0
    with pytest.raises(ConfigError, match="memory_history must be >= 0"):
        load_config("gpt-tiny", None, ["memory_history=-1"])


def test_an_oom_writes_the_snapshot_and_the_report_names_it_and_the_viewer(tmp_path: Path) -> None:
    exc = an_oom()
    path = oom.record_oom(exc, FakeMemory(), tmp_path, 0, 1)
    assert path == tmp_path / "oom-snapshot.pickle"
    # What torch.cuda.memory._dump_snapshot writes (a pickle of _snapshot()): plain data, no global to import.
    assert unpickle.load_file(path, unpickle.allow([]), "memory snapshot") == SNAPSHOT
    report = oom.oom_report(exc, load_config("gpt-tiny", None, ["micro_batch_size=32"]), CPU)
    advice = report.split("advice:\n", 1)[1].splitlines()
    assert str(path) in advice[0] and oom.SNAPSHOT_VIEWER in advice[0]  # the first thing to do: look
    assert "--set micro_batch_size=16" in report
    if sys.version_info >= (3, 11):  # a script calling fit() sees it under its traceback
        assert any(str(path) in note and oom.SNAPSHOT_VIEWER in note for note in exc.__notes__)


def test_each_rank_of_a_job_writes_its_own_snapshot(tmp_path: Path) -> None:
    paths = [oom.record_oom(an_oom(), FakeMemory(), tmp_path, rank, 2) for rank in (0, 1)]
    assert [p.name for p in paths if p] == ["oom-snapshot-rank0.pickle", "oom-snapshot-rank1.pickle"]


def test_without_a_recording_or_when_the_dump_fails_the_report_says_nothing_of_a_snapshot(tmp_path: Path) -> None:
    cfg = load_config("gpt-tiny")
    run = tmp_path / "run"
    run.mkdir()
    for memory in (None, FakeMemory(fail=True)):
        exc = an_oom()
        assert oom.record_oom(exc, memory, run, 0, 1) is None
        assert "memory_viz" not in oom.oom_report(exc, cfg, CPU)
    assert list(run.iterdir()) == []  # and nothing half-written


def test_the_advice_follows_the_checkpointing_mode() -> None:
    full = "\n".join(oom.oom_advice(load_config("gpt-tiny", None, ["activation_checkpointing=true"])))
    layer = "\n".join(oom.oom_advice(load_config("gpt-tiny", None, ["activation_checkpointing=true",
                                                                    "ac_mode=selective_layer", "ac_every=2"])))
    assert "ac_mode=full" not in full and "activation_checkpointing=true" not in full
    assert "--set ac_mode=full --set ac_every=1" in layer


def test_a_cpu_run_records_nothing_and_an_oom_in_it_reaches_the_caller(tmp_path: Path) -> None:
    rt = setup(load_config("gpt-tiny", None, ["device=cpu", f"run_dir={tmp_path / 'setup'}"]))
    try:
        assert rt.cuda_memory is None  # torch.cuda.memory is never asked on a CPU run
    finally:
        teardown(rt)

    class Exhausting(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 64

        def __getitem__(self, i: int) -> Any:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (raised by the test)")

    with pytest.raises(torch.cuda.OutOfMemoryError):
        toy_fit(tmp_path / "run", data=Exhausting())
    assert not list((tmp_path / "run").glob("oom-snapshot*"))


OOM_SCRIPT = r'''
import sys
import torch
from hosttune.engine.api import fit
from hosttune.engine.config import load_config
from hosttune.engine.oom import oom_report

class Greedy(torch.nn.Linear):
    def forward(self, x):
        torch.empty(1 << 48, device=x.device)  # 1 PiB of float32: more than any GPU
        return super().forward(x)

x = torch.randn(64, 8)
data = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
cfg = load_config(None, None, None, dict(steps=2, micro_batch_size=8, device="cuda", num_workers=0, model="custom",
                                         warmup_steps=0, run_dir=sys.argv[1]))
try:
    fit(Greedy(8, 2), data, torch.nn.functional.cross_entropy, config=cfg)
except torch.cuda.OutOfMemoryError as exc:
    print(oom_report(exc, cfg, torch.device("cuda", 0)), file=sys.stderr)
    sys.exit(1)
'''


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_real_cuda_oom_writes_a_snapshot_the_report_names(tmp_path: Path) -> None:
    (tmp_path / "oom.py").write_text(OOM_SCRIPT)
    run = tmp_path / "run"
    r = subprocess.run([sys.executable, str(tmp_path / "oom.py"), str(run)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env=checkout_env())
    assert r.returncode == 1, r.stderr[-3000:]
    snapshot = run / "oom-snapshot.pickle"
    assert f"open the memory snapshot {snapshot}" in r.stderr and oom.SNAPSHOT_VIEWER in r.stderr
    data = unpickle.load_file(snapshot, unpickle.allow([]), "memory snapshot")
    assert any(e["action"] == "oom" for trace in data["device_traces"] for e in trace)
    assert os.path.getsize(snapshot) > 0
