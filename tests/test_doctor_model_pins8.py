"""Pins for hosttune.doctor.model (issue 21, practice round HDOC8): Check.explain dedents a docstring by its own
indentation (the way inspect.cleandoc does), whatever that indentation is."""

from hosttune.doctor.model import Check, Finding


def _deep() -> Finding:
    """First line.

        Body indented by eight.
          Two more here.
        Back to eight.
    """
    return Finding(status="pass")


def _flat() -> Finding:
    """One line only."""
    return Finding(status="pass")


def _none() -> Finding:
    return Finding(status="pass")


def _two() -> Finding:
    """Head.
  Body by two.

  Again by two."""
    return Finding(status="pass")


def test_explain_dedents_by_the_docstrings_own_indentation() -> None:
    assert Check("x.a", "x", "A", _deep).explain == \
        "First line.\n\nBody indented by eight.\n  Two more here.\nBack to eight."
    assert Check("x.b", "x", "B", _flat).explain == "One line only."
    assert Check("x.c", "x", "C", _none).explain == ""
    assert Check("x.d", "x", "D", _two).explain == "Head.\nBody by two.\n\nAgain by two."
