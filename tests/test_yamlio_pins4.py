"""Pins of mutation round 4 (issue 21) on hosttune/yamlio.py: brief()'s exact cut, each kind of refusal as its one
`FILE:LINE: problem` line, what load_mapping accepts, and the key-line maps error messages point with."""

import pytest

from hosttune import yamlio as Y
from hosttune.errors import UserError


def test_brief_cuts_at_the_limit_and_never_walks_containers() -> None:
    assert Y.brief("a" * 58) == repr("a" * 58) and len(Y.brief("a" * 58)) == 60
    assert Y.brief("a" * 59) == "'" + "a" * 56 + "..." and len(Y.brief("a" * 59)) == 60
    assert Y.brief("x\ny") == "'x\\ny'"
    assert Y.brief("x\u202ey") == "'x\\u202ey'"

    class Odd:
        def __repr__(self) -> str:
            return "a\x1b[31mb\u202ec"
    assert Y.brief(Odd()) == "a?[31mb?c"  # what repr leaves unprintable is shown as ?
    assert Y.brief([1, 2]) == "<list of 2 item(s)>" and Y.brief({}) == "<dict of 0 item(s)>"
    assert Y.brief({1}) == "<set of 1 item(s)>" and Y.brief((1,)) == "<tuple of 1 item(s)>"
    assert Y.brief(12) == "12" and Y.brief(None) == "None"
    assert Y.brief("abcdef", 5) == "'a..."
    assert Y.brief("a" * 10_000, 1000) == repr("a" * 4000)[:997] + "..."  # only 4 x limit characters are shown
    assert Y.brief("a" * 400, 1000) == repr("a" * 400)


@pytest.mark.parametrize("text, message", [
    ("a: [1, 2\nb: 3\n", "f.yaml:1: not valid YAML: while parsing a flow sequence: did not find expected ',' or ']' "
                         "(line 2)"),
    ("a: b: c\n", "f.yaml:1: not valid YAML: mapping values are not allowed in this context"),
    ("- a\nb: 1\n", "f.yaml:1: not valid YAML: while parsing a block collection: did not find expected '-' "
                    "indicator (line 2)"),
    ("a: !!python/object:os.system x\n", "f.yaml:1: not valid YAML: could not determine a constructor for the tag "
                                         "'tag:yaml.org,2002:python/object:os.system'"),
    ("a: 2001-13-45\n", "f.yaml: not valid YAML: month must be in 1..12"),
    ("x: &a [1]\ny: *a\n", "f.yaml:1: a YAML anchor of a list or mapping is used again by an alias; write the "
                           "values out (aliases of lists/mappings are refused: they can expand without bound)"),
    ("a: 1\nb: 2\na: 3\n", "f.yaml:3: duplicate key 'a' (first at line 1)"),
    ("[1]\n", "f.yaml:1: a profile must be a YAML mapping of settings, not list"),
    ("5\n", "f.yaml:1: a profile must be a YAML mapping of settings, not int"),
])
def test_each_refusal_is_one_line(text: str, message: str) -> None:
    with pytest.raises(UserError) as exc:
        Y.load_mapping(text, "f.yaml", "a profile")
    assert str(exc.value) == message


def test_what_loads() -> None:
    assert Y.load_mapping("", "f", "x") == ({}, None)
    data, node = Y.load_mapping("# only a comment\n", "f", "x")
    assert data == {} and node is None
    assert Y.load_mapping("x: &a 1\ny: *a\n", "f", "x")[0] == {"x": 1, "y": 1}  # an alias of a scalar is fine
    assert Y.load_mapping("1: a\n'1': b\n", "f", "x")[0] == {1: "a", "1": "b"}  # different tags: not duplicates
    assert Y.load("- 1\n- [2, {a: 3}]\n", "f")[0] == [1, [2, {"a": 3}]]
    assert Y.load("", "f") == (None, None)


def test_depth_limit_counts_sequences_and_mappings() -> None:
    ok = "[" * Y.MAX_DEPTH + "]" * Y.MAX_DEPTH
    assert Y.load(ok, "f")[0] is not None
    with pytest.raises(UserError, match=r"^f:1: nested deeper than 32 levels$"):
        Y.load("[" * (Y.MAX_DEPTH + 1) + "]" * (Y.MAX_DEPTH + 1), "f")
    deep_map = "".join("  " * i + f"k{i}:\n" for i in range(Y.MAX_DEPTH + 1)) + "  " * (Y.MAX_DEPTH + 1) + "v\n"
    with pytest.raises(UserError, match="nested deeper than 32 levels"):
        Y.load(deep_map, "f")
    fits = "".join("  " * i + f"k{i}:\n" for i in range(Y.MAX_DEPTH)) + "  " * Y.MAX_DEPTH + "v\n"
    assert Y.load(fits, "f")[0] is not None


def test_key_lines_and_sub_lines() -> None:
    _, node = Y.load("a: 1\nb:\n  c: 2\n  d: 3\n", "f")
    assert Y.key_lines(node) == {"a": 1, "b": 2}
    assert Y.sub_lines(node, "b") == {"c": 3, "d": 4}
    assert Y.sub_lines(node, "a") == {} and Y.sub_lines(node, "z") == {}
    assert Y.key_lines(None) == {} and Y.sub_lines(None, "b") == {}
    _, seq = Y.load("- a: 1\n", "f")
    assert Y.key_lines(seq) == {} and Y.sub_lines(seq, "a") == {}
