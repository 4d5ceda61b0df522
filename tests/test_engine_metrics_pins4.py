"""Pins (issue 21, round 4) for hosttune/engine/metrics.py: json_safe, the peak/MIG arithmetic, and the Metrics file
(rank 0 only, stamped, mode 0644, sinks get the raw record, the progress line off a terminal). CPU only."""

import json
import math
from pathlib import Path
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import metrics  # noqa: E402
from hosttune.policy.gpu_peak import dense_peak_tflops  # noqa: E402

CPU = torch.device("cpu")


def test_json_safe_nulls_nonfinite_floats_and_names_them() -> None:
    rec = {"loss": math.nan, "lr": 0.1, "gn": math.inf, "step": 3, "neg": -math.inf}
    assert metrics.json_safe(rec) == {"loss": None, "lr": 0.1, "gn": None, "step": 3, "neg": None,
                                      "nonfinite": ["loss", "gn", "neg"]}
    clean = {"loss": 1.5, "step": 2}
    assert metrics.json_safe(clean) is clean


def test_the_configured_peak_wins_and_a_cpu_has_none() -> None:
    assert metrics.peak_tflops(123.0, CPU, "bf16") == 123.0
    assert metrics.peak_tflops(0.0, CPU, "bf16") is None
    h100 = dense_peak_tflops("NVIDIA H100 80GB HBM3", "bf16")
    assert h100 is not None
    assert metrics.peak_tflops(0.0, CPU, "bf16", "NVIDIA H100 80GB HBM3", 132) == pytest.approx(h100)
    assert metrics.peak_tflops(0.0, CPU, "bf16", "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 60) == pytest.approx(
        h100 * 60 / 132)
    assert metrics.peak_tflops(0.0, CPU, "bf16", "Some Unknown Accelerator", 10) is None


def test_gpu_fraction() -> None:
    assert metrics.gpu_fraction("NVIDIA A100-SXM4-80GB", 108) == 1.0
    assert metrics.gpu_fraction("NVIDIA A100-SXM4-80GB MIG 1g.10gb", 14) == pytest.approx(14 / 108)
    assert metrics.gpu_fraction("NVIDIA A100-SXM4-80GB", 200) == 1.0  # never more than the whole GPU
    assert metrics.gpu_fraction("NVIDIA A100-SXM4-80GB", None) == 1.0
    assert metrics.gpu_fraction("NVIDIA A100-SXM4-80GB MIG 1g.10gb", None) is None
    assert metrics.gpu_fraction("Tesla V100-SXM2-16GB", 80) == 1.0  # no MIG on it: a whole GPU
    assert metrics.gpu_fraction("Unknown MIG 1g", 10) is None


class Sink:
    def __init__(self) -> None:
        self.records: List[Dict[str, Any]] = []
        self.closed = 0

    def write(self, record: Dict[str, Any]) -> None:
        self.records.append(record)

    def close(self) -> None:
        self.closed += 1


def test_rank0_writes_stamped_lines_and_hands_the_raw_record_to_sinks(tmp_path: Path) -> None:
    m = metrics.Metrics(tmp_path, True, 10, 0)
    sink = Sink()
    m.sinks.append(sink)
    m.write({"step": 1, "loss": math.nan})
    m.write({"step": 2, "loss": 2.0})
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2]
    assert list(lines[0]) == ["time", "step", "loss", "nonfinite"] and lines[0]["loss"] is None
    assert isinstance(lines[1]["time"], float) and lines[1]["loss"] == 2.0
    assert math.isnan(sink.records[0]["loss"]) and "time" in sink.records[0]  # the sinks keep NaN
    assert ((tmp_path / "metrics.jsonl").stat().st_mode & 0o777) == 0o644
    m.close()
    assert sink.closed == 1 and m.sinks == [] and m._f is None
    m.close()  # twice is harmless
    assert sink.closed == 1


def test_other_ranks_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    m = metrics.Metrics(tmp_path, False, 10, 0)
    sink = Sink()
    m.sinks.append(sink)
    m.write({"step": 1})
    m.progress(1, 0.5)
    m.say("hello")
    m.close()
    assert not (tmp_path / "metrics.jsonl").exists() and sink.records == []
    assert capsys.readouterr().err == ""


def test_an_existing_file_is_appended_to(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"step": 0}\n')
    m = metrics.Metrics(tmp_path, True, 10, 5)
    m.write({"step": 6})
    m.close()
    assert [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [0, 6]


def test_progress_off_a_terminal_is_one_line_per_call_with_the_loss(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    m = metrics.Metrics(tmp_path, True, 100, 20)
    assert m.bar is None  # stderr is captured: no terminal
    m.progress(10, 1.23456)
    m.progress(5)
    m.progress(10, 0.5)
    m.say("a line")
    m.close()
    assert capsys.readouterr().err.splitlines() == [
        "hosttune.engine: step 30/100 loss 1.2346", "hosttune.engine: step 45/100 loss 0.5000", "a line"]
    assert m.step == 45


def test_peak_memory_on_cpu_is_the_resident_peak_in_mib() -> None:
    import resource

    got = metrics.peak_memory_mb(CPU)
    assert got == pytest.approx(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, rel=0.05)
    assert got > 10
