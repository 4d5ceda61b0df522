"""Pins (issue 21, round 7 practice) for hosttune/autotune/runner.py: the argv of a trial, whole. The child is
`hosttune exec --profile FILE -- COMMAND`; here `hosttune` is replaced by a small python that prints the argv it
got, so the trial (dropped on its exit status 1) says in its reason exactly what would have run: the `--` keeps
an option of the user's command (python's `-c`) from being read as one of exec's."""

import sys
from pathlib import Path

import pytest

from hosttune.autotune import metric, runner
from hosttune.errors import UserError

_ECHO = "import os, sys; print('rate 1'); print('argv', sys.argv[1:], os.environ.get('HMON_PIN')); sys.exit(1)"


def test_a_trial_runs_hosttune_exec_with_the_profile_then_dashdash_then_the_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "hosttune_argv", lambda: [sys.executable, "-c", _ECHO])
    prof = tmp_path / "cand.yaml"
    r = runner.ExecRunner(["python3", "-c", "pass"], {"cand": prof}, metric.compile_metric(r"rate (\d+)"),
                          window_s=600.0, environ={"PATH": "/usr/bin:/bin", "HMON_PIN": "7"})
    trial = r.run("cand")
    argv = ["exec", "--profile", str(prof), "--", "python3", "-c", "pass"]
    assert (trial.name, trial.score) == ("cand", None)
    assert trial.why == f"exit status 1; last line: argv {argv!r} 7"  # and the environment given


_PLAN = ("import sys; print('some output', flush=True); "
         "print('a warning\\nhosttune: error: ' + sys.argv[-1] + ' is not a program\\n', file=sys.stderr); "
         "sys.exit(2)")


@pytest.mark.parametrize("code,want", [
    (_PLAN, "nosuch is not a program"),  # stderr's last line, without exec's prefix
    ("import sys; print('junk'); sys.exit(3)", "exec --dry-run failed (exit 3)"),  # nothing on stderr
    ("import sys; print('[1]')", {}),  # JSON but not an object
    ("import sys, json; print(json.dumps({'argv': sys.argv[1:]}))",
     {"argv": ["exec", "--dry-run", "--json", "--profile", "/p.yaml", "--", "nosuch"]}),
    ("print('not json')", "exec --dry-run --json printed no JSON"),
], ids=["error", "no-stderr", "not-an-object", "argv", "not-json"])
def test_dry_plan_reads_execs_json_or_says_its_error(monkeypatch: pytest.MonkeyPatch, code: str, want: object) -> None:
    monkeypatch.setattr(runner, "hosttune_argv", lambda: [sys.executable, "-c", code])
    if isinstance(want, str):
        with pytest.raises(UserError) as info:
            runner.dry_plan(["nosuch"], Path("/p.yaml"), environ={"PATH": "/usr/bin:/bin"})
        assert str(info.value) == want
    else:
        assert runner.dry_plan(["nosuch"], Path("/p.yaml"), environ={"PATH": "/usr/bin:/bin"}) == want
