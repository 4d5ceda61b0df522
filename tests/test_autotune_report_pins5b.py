"""Pin for mutation round 5's survivor in hosttune/autotune/report.py (issue 21): the dry-run plan's first line says
"(lower is better)" exactly when --lower-is-better was given (a time metric), and never for a rate."""

import pytest

from hosttune.autotune import candidates as cands
from hosttune.autotune import metric, report, session
from hosttune.profile.settings import Profile


def first_line(lower_is_better: bool) -> str:
    default = Profile("default", "the default", "built-in")
    found, notes = cands.generate(default, cands.Host(jemalloc=True, threads=2, logical_per_rank=2), {})
    spec = metric.compile_metric(r"step ([0-9.]+) s", lower_is_better=lower_is_better)
    s = session.Session(["python3", "train.py"], spec, 1200.0, None, default, found, notes)
    return report.plan_text(s).splitlines()[0]


@pytest.mark.parametrize("lower", [True, False])
def test_the_plan_says_lower_is_better_only_for_a_lower_is_better_metric(lower: bool) -> None:
    line = first_line(lower)
    assert line.startswith("autotune: ") and "against the default plan (default), metric 'step ([0-9.]+) s'" in line
    assert line.endswith("metric 'step ([0-9.]+) s' (lower is better)" if lower else "metric 'step ([0-9.]+) s'"), line
    assert ("(lower is better)" in line) is lower, line
