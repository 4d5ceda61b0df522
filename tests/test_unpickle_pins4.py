"""Pins (issue 21, round 4) for hosttune/unpickle.py: each check of the gateway on its own."""

import collections
import pickle
from pathlib import Path

import pytest

from hosttune import unpickle


def _stack_global(module: str, name: str) -> bytes:
    def text(s: str) -> bytes:
        b = s.encode()
        return b"\x8c" + bytes([len(b)]) + b

    return b"\x80\x04" + text(module) + text(name) + b"\x93."  # protocol 4: STACK_GLOBAL, the global itself


@pytest.mark.parametrize("pair", [("", "OrderedDict"), ("collections", ""), ("os", "path.join")])
def test_an_allow_list_entry_needs_a_module_and_a_plain_name(pair: tuple) -> None:
    with pytest.raises(ValueError, match="exact module and attribute name only"):
        unpickle.allow([pair, ("collections", "OrderedDict")])


def test_an_allow_list_is_the_exact_pairs_as_strings() -> None:
    assert unpickle.allow([("collections", "OrderedDict"), ("collections", "OrderedDict")]) == frozenset(
        {("collections", "OrderedDict")})


def test_the_unpickler_refuses_a_dotted_name_even_when_its_own_list_holds_it() -> None:
    """allow() refuses dotted names; the unpickler checks again, so a list built by hand cannot walk attributes."""
    allowed = frozenset({("os", "path.join")})
    with pytest.raises(unpickle.Refused, match=r"os\.path\.join is not allowed in my data"):
        unpickle.loads(_stack_global("os", "path.join"), allowed, "my data")


def test_only_the_exact_pair_loads_not_the_module_nor_the_name_elsewhere() -> None:
    allowed = unpickle.allow([("collections", "OrderedDict")])
    assert unpickle.loads(_stack_global("collections", "OrderedDict"), allowed, "x") is collections.OrderedDict
    with pytest.raises(unpickle.Refused, match="collections.deque is not allowed in x"):
        unpickle.loads(_stack_global("collections", "deque"), allowed, "x")
    with pytest.raises(unpickle.Refused, match="typing.OrderedDict is not allowed in x"):
        unpickle.loads(_stack_global("typing", "OrderedDict"), allowed, "x")
    assert issubclass(unpickle.Refused, pickle.UnpicklingError)


def test_a_plain_pickle_needs_no_allow_list() -> None:
    data = pickle.dumps({"a": [1, 2.5, "x", None, True, (1, 2)]}, protocol=4)
    assert unpickle.loads(data, frozenset(), "x") == {"a": [1, 2.5, "x", None, True, (1, 2)]}


def test_the_default_limit_is_256_mib_and_a_file_at_the_limit_loads(tmp_path: Path) -> None:
    assert unpickle.DEFAULT_LIMIT == 256 * 1024 * 1024
    f = tmp_path / "p.pkl"
    data = pickle.dumps([1, 2, 3], protocol=4)
    f.write_bytes(data)
    assert unpickle.load_file(f, frozenset(), "x", limit=len(data)) == [1, 2, 3]
    with pytest.raises(OSError):
        unpickle.load_file(f, frozenset(), "x", limit=len(data) - 1)


def test_a_link_is_followed_unless_nofollow(tmp_path: Path) -> None:
    f = tmp_path / "p.pkl"
    f.write_bytes(pickle.dumps({"k": 1}, protocol=4))
    link = tmp_path / "link.pkl"
    link.symlink_to(f)
    assert unpickle.load_file(link, frozenset(), "x") == {"k": 1}
    assert unpickle.load_file(str(link), frozenset(), "x", nofollow=False) == {"k": 1}
    with pytest.raises(OSError):
        unpickle.load_file(link, frozenset(), "x", nofollow=True)
    assert unpickle.load_file(f, frozenset(), "x", nofollow=True) == {"k": 1}


def test_a_checked_file_is_refused_by_its_globals_too(tmp_path: Path) -> None:
    f = tmp_path / "p.pkl"
    f.write_bytes(_stack_global("os", "system"))
    with pytest.raises(unpickle.Refused, match="os.system is not allowed in the state file"):
        unpickle.load_file(f, unpickle.allow([("os", "getcwd")]), "the state file")
