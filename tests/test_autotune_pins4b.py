"""Pin for mutation round 4's autotune survivor (issue 21): an engine command is recognised when the session is
prepared, so the dry plan promises (and the trials get) a scratch run directory each."""
from hosttune.autotune import metric, report, session


def test_the_dry_plan_of_an_engine_command_gives_each_trial_its_own_run_directory() -> None:
    s = session.prepare(["hosttune", "train", "--preset", "gpt-tiny"], metric.compile_metric(metric.ENGINE_REGEX),
                        600.0, engine=True)
    try:
        text = report.plan_text(s)
    finally:
        s.close()
    assert "run directories: each trial of the engine gets --run-dir in a fresh scratch directory" in text, text
    assert "no scratch --run-dir is added" not in text, text
