"""metrics.jsonl is opened like every file hosttune writes: no-follow, regular files only (a link planted at its
name in a shared run directory is refused in one line, and nothing is written through it)."""

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from _enginehelp import TINY, assert_one_line_error  # noqa: E402
from _enginemainhelp import engine_here  # noqa: E402

from hosttune.engine.errors import EngineError  # noqa: E402
from hosttune.engine.metrics import Metrics  # noqa: E402


def test_a_link_at_metrics_jsonl_is_refused_and_nothing_is_written_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(victim, run / "metrics.jsonl")
    with pytest.raises(EngineError, match="cannot write the metrics"):
        Metrics(run, True, 10, 0)
    os.unlink(run / "metrics.jsonl")
    os.mkfifo(run / "metrics.jsonl")
    with pytest.raises(EngineError, match="cannot write the metrics"):  # a FIFO: refused, no hang
        Metrics(run, True, 10, 0)
    assert victim.read_text() == "precious\n"


def test_a_regular_metrics_file_is_appended_line_by_line(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"event": "earlier"}\n')
    m = Metrics(tmp_path, True, 10, 0)
    m.write({"event": "start"})
    m.close()
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert lines[0] == '{"event": "earlier"}' and json.loads(lines[1])["event"] == "start" and len(lines) == 2


@pytest.mark.slow
def test_the_cli_says_one_line_for_a_linked_metrics_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "run").mkdir()
    os.symlink(victim, tmp_path / "run" / "metrics.jsonl")
    # The CLI in this process (tests/_enginemainhelp.py: exit status and stderr, warnings included, as the process
    # shows them): the refusal is the subject, not the interpreter around it (issue 21: make check runs this).
    r = engine_here(*TINY, "--run-dir", "run", cwd=tmp_path)
    assert_one_line_error(r, "metrics.jsonl: cannot write the metrics")
    assert victim.read_text() == "precious\n"
