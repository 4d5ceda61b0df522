"""Pins (issue 21, session 9 practice rounds) on hosttune/engine/export.py: a preset that cannot be built is an
ExportError (the CLI's one-line error, exit 2), not the engine's own error. In-process."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine.config import Config  # noqa: E402
from hosttune.engine.export import ExportError, build_model, main  # noqa: E402


def test_a_preset_that_cannot_be_built_is_an_export_error() -> None:
    with pytest.raises(ExportError) as got:
        build_model(Config(model="custom"))
    assert type(got.value) is ExportError
    assert str(got.value) == "model=custom needs the Python API (hosttune.engine.api.fit) with your own model"


def test_the_cli_says_a_missing_run_directory_in_one_line(tmp_path: Path, capsys) -> None:
    assert main(str(tmp_path / "nope"), str(tmp_path / "out")) == 2
    assert capsys.readouterr().err == f"hosttune.engine: error: {tmp_path / 'nope'}: no such run directory\n"
    assert not (tmp_path / "out").exists()

