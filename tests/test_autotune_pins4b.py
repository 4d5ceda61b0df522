"""Pin for mutation round 4's autotune survivor (issue 21): an engine command is recognised when the session is
prepared, so the dry plan promises (and the trials get) a scratch run directory each. No candidate is asked for
(`only=[]`): the command is recognised before the candidates are chosen, and each candidate costs a `hosttune exec
--dry-run` process (issue 21: 14 dry runs here, 3.5 s of make check, for a line that does not depend on them; now 1)."""
from hosttune.autotune import metric, report, session


def test_the_dry_plan_of_an_engine_command_gives_each_trial_its_own_run_directory() -> None:
    s = session.prepare(["hosttune", "train", "--preset", "gpt-tiny"], metric.compile_metric(metric.ENGINE_REGEX),
                        600.0, engine=True, only=[])
    try:
        text = report.plan_text(s)
    finally:
        s.close()
    assert "run directories: each trial of the engine gets --run-dir in a fresh scratch directory" in text, text
    assert "no scratch --run-dir is added" not in text, text
