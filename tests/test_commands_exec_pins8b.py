"""Pin (issue 21, mutation round 8's survivor r8a-exec-dry-run-needs-json) on hosttune/commands/exec.py: `hosttune
exec --dry-run` without --json prints the plan as text and starts nothing; --json prints the same plan as JSON. In
process (click's runner): a job that started would write its marker file (or exec the pytest process, which
conftest refuses)."""

import json
import sys
from pathlib import Path

from conftest import run_cli

from hosttune.commands import exec as exec_cmd  # noqa: F401 - the module pinned (the rule finds it by this name)


def test_a_dry_run_prints_the_plan_as_text_and_starts_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    job = ["--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    text = run_cli(["exec", "--dry-run", *job])
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "# plain job" and lines[1].startswith("argv: ") and sys.executable in lines[1]
    assert lines[2].startswith("rank 0/1: cpus ")
    as_json = run_cli(["exec", "--dry-run", "--json", *job])
    assert as_json.returncode == 0, as_json.stderr
    plan = json.loads(as_json.stdout)
    assert (plan["kind"], plan["argv"][0], len(plan["ranks"])) == ("plain", sys.executable, 1)
    assert not marker.exists()
