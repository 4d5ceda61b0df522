"""Pins for hosttune/yamlio.py from issue 21's mutation run: a duplicate key is refused in one line naming both lines
(PyYAML alone keeps the last value silently)."""

import pytest

from hosttune import yamlio
from hosttune.errors import UserError


def test_a_duplicate_key_is_refused_naming_both_lines() -> None:
    with pytest.raises(UserError, match=r"p.yaml:3: duplicate key 'threads' \(first at line 1\)"):
        yamlio.load("threads: 2\nbinding: numa\nthreads: 4\n", "p.yaml")
    with pytest.raises(UserError, match="duplicate key"):
        yamlio.load("env:\n  A: 1\n  A: 2\n", "p.yaml")
    assert yamlio.load("threads: 2\nenv:\n  threads: 4\n", "p.yaml")[0] == {"threads": 2, "env": {"threads": 4}}
