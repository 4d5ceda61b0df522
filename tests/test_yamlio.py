"""yamlio's limits, at their edges: aliases of lists/mappings are refused wherever they sit (a complex key
included, which PyYAML would build before it finds the key unhashable), and the nesting limit is exactly
MAX_DEPTH = 32 levels (SECURITY.md: "nesting deeper than 32 are refused"): 32 loads, 33 is one line."""

import pytest

from hosttune import yamlio
from hosttune.errors import UserError

ALIAS = "anchor of a list or mapping is used again by an alias"


def refused(text: str) -> str:
    with pytest.raises(UserError) as info:
        yamlio.load(text, "f.yaml")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("f.yaml:")
    return msg


@pytest.mark.parametrize("text", [
    "a: &a [x, y]\n? [*a, *a]\n: 1\n",  # aliases inside a complex (sequence) key
    "a: &a {k: v}\n? {x: *a}\n: 1\n",  # inside a mapping key
    "? &a [x]\n: 1\n? [*a]\n: 2\n",  # the anchor itself is a key
    "? [&a [x], *a]\n: 1\n",  # anchor and alias both inside one key
    "a: &a [x]\n? [[[*a]]]\n: 1\n",  # deep inside a key
])
def test_aliases_inside_a_complex_key_are_refused_as_aliases(text: str) -> None:
    assert ALIAS in refused(text)


def test_laughs_inside_a_key_are_refused_before_anything_is_built() -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))
    assert ALIAS in refused(laughs + "? [*i]\n: boom\n")


def test_the_documented_limit_is_32() -> None:
    assert yamlio.MAX_DEPTH == 32


def _flow(depth: int) -> str:
    return "[" * depth + "]" * depth


def _block(depth: int) -> str:
    # `depth` nested mappings: k: {k: {... {k: 1}}}
    return "".join("  " * i + "k:\n" for i in range(depth - 1)) + "  " * (depth - 1) + "k: 1\n"


@pytest.mark.parametrize("make", [_flow, _block])
def test_exactly_32_levels_load_and_33_are_refused(make) -> None:  # type: ignore[no-untyped-def]
    data, _ = yamlio.load(make(32), "f.yaml")
    levels = 0
    while isinstance(data, (list, dict)):
        levels += 1
        data = data[0] if isinstance(data, list) and data else (data.get("k") if isinstance(data, dict) else None)
    assert levels == 32
    assert "nested deeper than 32 levels" in refused(make(33))


def test_depth_counts_inside_complex_keys_too() -> None:
    # the key is 32 levels below the top mapping: 33 in all
    assert "nested deeper than 32 levels" in refused("? " + _flow(32) + "\n: 1\n")
    # 31 below the top: within the limit (then refused only because a list cannot be a key)
    assert "nested deeper" not in refused("? " + _flow(31) + "\n: 1\n")
