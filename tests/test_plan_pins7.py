"""Pins for hosttune/plan/rank.py (issue 21, practice round HTOP).

tests/test_plan_rank_pins6.py pins every step of plan/rank.py, but reaches the module as `hosttune.plan._rank`, a
name bench/mutation_sample.py's rule does not read as naming hosttune.plan.rank: by the rule, its tests never ran
against a change in plan/rank.py (whose rule was one file; round-7 practice plants on `if intel:` and on the CPU
list of a core binding survived there and are caught by pins6). This file names the module and collects pins6's
tests again under it (they are in-process and take milliseconds)."""

import test_plan_rank_pins6 as pins6

from hosttune import plan
from hosttune.plan import rank

globals().update({name: fn for name, fn in vars(pins6).items() if name.startswith("test_") and callable(fn)})


def test_the_plans_rank_steps_are_this_module() -> None:
    assert plan._rank is rank and pins6.rank is rank


def test_kept_lines_are_one_per_kept_variable_by_name_with_values_made_printable() -> None:
    from hosttune.rankplan import RankPlan

    p = RankPlan(0, 1, (), (), "none", {"ZED": "1", "ALPHA": "a b", "MID": "\x1b[2J", "OTHER": "o"},
                 kept={"ZED": "4", "ALPHA": "", "MID": "x"})
    assert p.kept_lines() == [
        "ALPHA=a b kept: set by you (profile: ''; --override to use the profile)",
        "MID=\\x1b[2J kept: set by you (profile: x; --override to use the profile)",
        "ZED=1 kept: set by you (profile: 4; --override to use the profile)",
    ]
    assert RankPlan(0, 1, (), (), "none", {}).kept_lines() == []
