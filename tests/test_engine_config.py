"""hosttune/engine/config.py, issue 11's part: config files that cannot hang, blow up or flood a message, through
the engine and through `hosttune train`; a misspelt setting next to a Config object."""

import os
from pathlib import Path
from typing import Any, Iterator, List

import pytest
from conftest import cli_runner

from hosttune.engine.config import Config, ConfigError

torch = pytest.importorskip("torch")

from _enginehelp import _Recorded, _Toy, assert_one_line_error, engine  # noqa: E402

from hosttune.engine.api import fit  # noqa: E402

# ---- item 9 / 8: config files ----

def _laughs() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    lines.append("steps: [" + ", ".join(["*i"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _config_cases(tmp: Path) -> Iterator[Any]:
    yield "non-utf8.yaml", b"steps: 10\nlr: \xff\xfe\n", "not UTF-8"
    yield "non-utf8.json", b'{"steps": "\xff"}', "not UTF-8"
    yield "laughs.yaml", _laughs().encode(), "alias"
    yield "big.yaml", b"# padding\n" * 200_000, "larger than"
    yield "deep.json", b"[" * 200_000 + b"]" * 200_000, "not valid JSON"
    yield "dup.json", b'{"steps": 1, "steps": 2}', "duplicate key 'steps'"
    yield "dup.yaml", b"steps: 1\nsteps: 2\n", "duplicate key 'steps'"
    yield "long.yaml", b"steps: " + b"x" * 500_000 + b"\n", "steps must be an integer, got 'xxx"
    yield "list.json", b"[1, 2]", "must be a JSON object"


@pytest.fixture
def bad_configs(tmp_path: Path) -> List[Any]:
    out = []
    for name, blob, needle in _config_cases(tmp_path):
        p = tmp_path / name
        p.write_bytes(blob)
        out.append((str(p), needle))
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    out.append((str(fifo), "not a regular file"))
    out.append(("/dev/zero", "not a regular file"))
    return out


def test_hostile_config_files_are_one_line_through_the_engine(bad_configs: List[Any], tmp_path: Path) -> None:
    for path, needle in bad_configs:
        r = engine("--config", path, cwd=tmp_path)
        assert_one_line_error(r, needle)
        assert len(r.stderr) < 400, r.stderr[:400]  # bounded, whatever the file holds


def test_hostile_config_files_are_one_line_through_hosttune_train(bad_configs: List[Any]) -> None:
    from hosttune.cli import cli

    runner = cli_runner()
    for path, needle in bad_configs:
        r = runner.invoke(cli, ["train", "--dry-run", "--config", path])
        assert r.exit_code == 2 and r.exception is not None and isinstance(r.exception, SystemExit), (path, r)
        err = r.stderr.strip().splitlines()
        assert len(err) == 1 and needle in err[0] and len(err[0]) < 400, (path, err)


def test_fit_with_a_config_object_and_a_misspelt_setting_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key 'setps'"):
        fit(_Toy(), _Recorded(), torch.nn.functional.cross_entropy, config=Config(run_dir=str(tmp_path)), setps=3)
