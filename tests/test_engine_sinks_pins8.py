"""Pins (issue 21, session 10 practice round HENG8) on hosttune/engine/sinks.py's open_sinks: each setting alone and
both together give exactly their sinks, in order (CSV, TensorBoard), at their paths."""

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from hosttune.engine import sinks  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402


@pytest.mark.parametrize("csv,tb", [(True, False), (False, True), (True, True), (False, False)])
def test_open_sinks_gives_each_configured_sink(tmp_path: Path, csv: bool, tb: bool) -> None:
    run = tmp_path / "run"
    run.mkdir()
    got = sinks.open_sinks(Config(metrics_csv=csv, tensorboard=tb), run, 0)
    try:
        assert [type(s).__name__ for s in got] == ["CsvSink"] * csv + ["TensorBoardSink"] * tb
        assert sorted(p.name for p in run.iterdir()) == ["metrics.csv"] * csv + ["tensorboard"] * tb
        if csv:
            assert got[0].path == run / "metrics.csv"
    finally:
        for s in got:
            s.close()
