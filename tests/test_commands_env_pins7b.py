"""Pins of mutation round 7 (issue 21) on hosttune/commands/env.py: `hosttune env` writes the plan's exports as the
same UTF-8 bytes whatever text encoding its stdout has (a latin-1 locale, a pipe), not through click.echo's text
layer, which would re-encode a value (or fail on a character the locale cannot hold)."""

import json
from pathlib import Path
from typing import List

from click.testing import CliRunner

from hosttune.cli import cli
from hosttune.commands import env as E

VALUES = {"UNI": "caf\u00e9 \u2603", "LATIN": "na\u00efve", "ESC": "\x1b[1mbold\x1b[0m"}


def _exports(out: bytes) -> List[bytes]:
    return [ln for ln in out.splitlines() if ln.startswith(b"export ")]


def test_exports_are_the_plans_utf8_bytes_whatever_the_stdout_encoding(tmp_path: Path) -> None:
    f = tmp_path / "uni.yaml"
    f.write_text(json.dumps({"base": "throughput", "env": VALUES}))  # JSON is YAML
    args = ["env", "--profile", str(f), "--local-rank", "0", "--local-world-size", "1"]
    runs = {cs: CliRunner(charset=cs).invoke(cli, args) for cs in ("utf-8", "latin-1")}
    for cs, res in runs.items():
        assert res.exit_code == 0, (cs, res.exception, res.output)
        lines = _exports(res.stdout_bytes)
        for key, value in VALUES.items():
            want = f"export {key}={E.shell_quote(value)}".encode()
            assert want in lines, (cs, lines)
    assert runs["latin-1"].stdout_bytes == runs["utf-8"].stdout_bytes
