"""Root safety of `hosttune env`'s text output (issue 11), left here for commands/env.py's test file
(tests/test_env_cli.py): exports never carry raw control characters and are the same bytes whether piped or
not. The profile's and the plan's own tests are in tests/test_profile_load.py, test_plan_env.py,
test_plan_layout.py and test_profile.py."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from conftest import run_cli as run

from hosttune.commands.env import shell_quote


def test_env_export_quotes_control_characters_and_round_trips_in_bash(tmp_path: Path) -> None:
    values = {"ESC": "\x1b[31mred\x1b[0m", "BEL": "a\x07b", "NL": "one\ntwo\n", "CR": "x\ry", "C1": "\x9bX",
              "BIDI": "abc\u202edef", "TAB": "a\tb", "QUOTE": "it's \\ $x `id`", "PLAIN": "caf\u00e9"}
    for v in values.values():
        q = shell_quote(v)
        assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", q), q
    f = tmp_path / "ctl.yaml"
    f.write_text(json.dumps({"base": "throughput", "env": values}))  # JSON is YAML
    out = run(["env", "--profile", str(f)])
    assert out.returncode == 0, out.stderr
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out.stdout)
    script = 'eval "$1" || exit 9; for k in ' + " ".join(values) + '; do printf "%s=%s\\0" "$k" "${!k}"; done'
    proc = subprocess.run(["bash", "-c", script, "bash", out.stdout], capture_output=True, timeout=60,
                          env=dict(os.environ, LC_ALL="C"))
    assert proc.returncode == 0, proc.stderr
    got = dict(item.split("=", 1) for item in proc.stdout.decode("utf-8").split("\0") if item)
    assert got == values


def test_piped_env_output_is_the_plan_byte_for_byte(tmp_path: Path) -> None:
    """Through a real pipe (click would strip ANSI there): every export evaluates to the plan's value."""
    f = tmp_path / "ansi.yaml"
    f.write_text(json.dumps({"base": "throughput", "env": {"COLOR": "\x1b[1mbold\x1b[0m", "PLAIN": "x"}}))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "hosttune", "env", "--profile", str(f), "--local-rank", "0",
            "--local-world-size", "2"]
    text = subprocess.run(base, capture_output=True, timeout=120, env=env)
    js = subprocess.run(base + ["--json"], capture_output=True, timeout=120, env=env)
    assert text.returncode == 0 and js.returncode == 0, (text.stderr, js.stderr)
    planned = json.loads(js.stdout)["env"]
    exports = [ln for ln in text.stdout.decode().splitlines() if ln.startswith("export ")]
    assert [ln.split("=", 1)[0][len("export "):] for ln in exports] == sorted(planned)
    for ln in exports:
        key, quoted = ln[len("export "):].split("=", 1)
        assert quoted == shell_quote(planned[key])
    back = subprocess.run(["bash", "-c", 'eval "$1"; printf %s "$COLOR"', "b", text.stdout.decode()],
                          capture_output=True, timeout=60)
    assert back.stdout.decode() == planned["COLOR"] == "\x1b[1mbold\x1b[0m"
    # the in-process runner (not a terminal either) gives the same bytes as the real pipe
    assert run(base[3:]).stdout == text.stdout.decode()
