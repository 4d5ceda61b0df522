"""Pins for hosttune/profile/*.py (issue 21, practice round HTOP)."""

import importlib
from pathlib import Path
from typing import Any

import pytest

from hosttune.errors import UserError
from hosttune.facts import Facts
from hosttune.profile.load import parse_text

generate = importlib.import_module("hosttune.profile.generate")  # the package's `generate` is the function


def test_a_file_that_appears_after_the_check_is_not_clobbered_and_the_refusal_names_force(
        tmp_path: Path, monkeypatch: Any) -> None:
    """The race write() guards with an exclusive link(2): another process creates the file between the exists()
    check and the write (here: while the text is read back)."""
    prof = generate.generate(Facts())
    path = tmp_path / "sub" / "profile.yaml"

    def parse_then_race(text: str, where: Any) -> Any:
        got = parse_text(text, where)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("theirs\n")
        return got

    monkeypatch.setattr(generate, "parse_text", parse_then_race)
    with pytest.raises(UserError) as info:
        generate.write(prof, path, force=False)
    assert str(info.value) == f"{path} exists; use --force to replace it"
    assert path.read_text() == "theirs\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["profile.yaml"]  # no temporary file left behind
    assert generate.write(prof, path, force=True) == path
    assert path.read_text() == generate.to_yaml(prof)


def test_write_takes_a_path_as_text_and_returns_it_as_a_path(tmp_path: Path) -> None:
    prof = generate.generate(Facts())
    target = tmp_path / "new" / "p.yaml"
    assert generate.write(prof, str(target), force=False) == target  # type: ignore[arg-type]
    assert target.read_text() == generate.to_yaml(prof)
    with pytest.raises(UserError) as info:
        generate.write(prof, str(target), force=False)  # type: ignore[arg-type]
    assert str(info.value) == f"{target} exists; use --force to replace it"
    with pytest.raises(UserError) as info:
        generate.write(prof, str(tmp_path), force=True)  # type: ignore[arg-type]
    assert str(info.value) == f"{tmp_path} is a directory"


def test_the_measured_key_keeps_single_dash_options_and_spells_double_dash_ones_one_way() -> None:
    from hosttune.profile.measured import normalise

    assert normalise(["/usr/bin/python3", "-Wignore", "-u", "train.py", "-lr=0.1", "--batch_size=64",
                      "--master_port", "29500", "--rdzv-endpoint=h:1", "-", "--", "---x", "-vvv"]) == [
        "python3", "-Wignore", "-u", "train.py", "-lr=0.1", "--batch-size", "64", "-", "--", "---x", "-vvv"]
