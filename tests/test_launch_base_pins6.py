"""Pins for hosttune/launch/launchers/base.py (issue 21, round 6): the option scanner every launcher's parser uses
(where the program starts, `--`, `--opt=value`, attached short values, abbreviations, unknown options, how many
values an option takes and the one-line errors), `_last`, the count check and KnownLauncher's dict."""

from typing import Dict, Tuple

import pytest

from hosttune.errors import UserError
from hosttune.launch.launchers import base
from hosttune.launch.launchers.base import KnownLauncher, _count, _last, _scan

TABLE: Dict[str, Tuple[str, int]] = {
    "-n": ("nproc", 1), "--nproc": ("nproc", 1), "--flag": ("flag", 0), "-f": ("flag", 0),
    "--pair": ("pair", 2), "--node-rank": ("node_rank", 1), "--nodes": ("nodes", 1),
}


def scan(*argv: str, unknown: str = "error", **kw: object) -> base._Scan:
    return _scan("tool", ["tool", *argv], 1, TABLE, unknown=unknown, **kw)  # type: ignore[arg-type]


def test_values_flags_and_the_program_index() -> None:
    s = scan("-n", "2", "--flag", "--nproc=3", "train.py", "--nproc", "9")
    assert s.values == {"nproc": ["2", "3"]} and s.flags == {"flag"} and s.program == 5
    assert _last(s, "nproc") == "3" and _last(s, "nodes") is None


def test_no_program_is_len_argv() -> None:
    s = scan("-n", "2")
    assert s.program == 3 and s.values == {"nproc": ["2"]}
    assert scan().program == 1


def test_double_dash_ends_the_options_and_the_program_follows() -> None:
    s = scan("-f", "--", "--flag", "x")
    assert s.program == 3 and s.flags == {"flag"}
    assert scan("--").program == 2


def test_a_lone_dash_is_the_program() -> None:
    s = scan("-f", "-", "-n", "2")
    assert s.program == 2 and s.values == {}


def test_a_value_may_start_with_a_dash() -> None:
    s = scan("--nproc", "-1", "p")
    assert s.values == {"nproc": ["-1"]} and s.program == 3


def test_two_valued_options_join_their_values_with_nul() -> None:
    s = scan("--pair", "a", "b", "p")
    assert s.values == {"pair": ["a\0b"]} and s.program == 4
    s = scan("--pair=a", "b", "p")
    assert s.values == {"pair": ["a\0b"]} and s.program == 3


def test_missing_values_are_one_line() -> None:
    with pytest.raises(UserError) as e:
        scan("-n")
    assert str(e.value) == "tool: option -n needs a value"
    with pytest.raises(UserError) as e:
        scan("--pair", "a")
    assert str(e.value) == "tool: option --pair needs 2 values"


def test_a_flag_given_a_value_is_refused() -> None:
    with pytest.raises(UserError) as e:
        scan("--flag=1", "p")
    assert str(e.value) == "tool: option --flag takes no value"


def test_an_empty_inline_value_is_a_value() -> None:
    s = scan("--nproc=", "p")
    assert s.values == {"nproc": [""]} and s.program == 2


def test_unknown_options() -> None:
    with pytest.raises(UserError) as e:
        scan("--what", "p")
    assert str(e.value) == "tool: unknown option --what"
    s = scan("--what", "p", unknown="flag")
    assert s.flags == {"what"} and s.program == 2
    s = scan("--what=1", "p", unknown="flag")
    assert s.values == {"what": ["1"]} and s.program == 2
    s = scan("--what", "v", "p", unknown="value")
    assert s.values == {"what": ["v"]} and s.program == 3
    s = scan("-z", "v", "p", unknown="value")
    assert s.values == {"z": ["v"]} and s.program == 3


def test_short_options_never_take_an_inline_equals() -> None:
    # `-n=2` is not `-n 2`: only long options split at "="
    with pytest.raises(UserError) as e:
        scan("-n=2", "p")
    assert str(e.value) == "tool: unknown option -n=2"


def test_attached_short_values_only_when_asked_and_only_for_valued_options() -> None:
    s = scan("-n4", "p", attached_short=True)
    assert s.values == {"nproc": ["4"]} and s.program == 2
    with pytest.raises(UserError) as e:
        scan("-n4", "p")
    assert str(e.value) == "tool: unknown option -n4"
    with pytest.raises(UserError) as e:
        scan("-fx", "p", attached_short=True)  # -f is a flag: no attached value
    assert str(e.value) == "tool: unknown option -fx"
    with pytest.raises(UserError):
        scan("--nproc4", "p", attached_short=True)  # long options never attach


def test_abbreviations_when_unique() -> None:
    s = scan("--nodes", "2", "--node-r", "1", "--npr=3", "p", abbrev=True)
    assert s.values == {"nodes": ["2"], "node_rank": ["1"], "nproc": ["3"]} and s.program == 6
    with pytest.raises(UserError) as e:
        scan("--node", "1", "p", abbrev=True)
    assert str(e.value) == "tool: ambiguous option --node"
    with pytest.raises(UserError) as e:
        scan("--npr", "3", "p")  # no abbreviations unless asked
    assert str(e.value) == "tool: unknown option --npr"


def test_an_abbreviation_of_two_spellings_of_one_option_is_not_ambiguous() -> None:
    table = {"--nproc-per-node": ("n", 1), "--nproc_per_node": ("n", 1)}
    s = _scan("t", ["t", "--nproc", "2", "p"], 1, table, unknown="error", abbrev=True)
    assert s.values == {"n": ["2"]}


def test_canon_renames_before_the_lookup() -> None:
    s = _scan("t", ["t", "--num-procs=2", "p"], 1, {"--num_procs": ("n", 1)}, unknown="error",
              canon=lambda name: name.replace("-", "_").replace("__", "--", 1))
    assert s.values == {"n": ["2"]} and s.program == 2


def test_scanning_starts_at_start() -> None:
    s = _scan("t", ["t", "launch", "-n", "2", "p"], 2, TABLE, unknown="error")
    assert s.values == {"nproc": ["2"]} and s.program == 4


@pytest.mark.parametrize("raw,n", [("1", 1), (" 8 ", 8), (4, 4), ("256", 256)])
def test_count_accepts_whole_numbers_in_range(raw: object, n: int) -> None:
    assert _count("tool", "-n", raw) == n


def test_count_errors() -> None:
    with pytest.raises(UserError) as e:
        _count("tool", "-n", "2.5")
    assert str(e.value) == "tool: -n must be a whole number, got '2.5'"
    with pytest.raises(UserError) as e:
        _count("tool", "-n", "y" * 60)
    assert str(e.value) == f"tool: -n must be a whole number, got {'y' * 40!r}"
    with pytest.raises(UserError) as e:
        _count("tool", "-n", "0")
    assert str(e.value) == "tool: -n must be at least 1, got 0"
    with pytest.raises(UserError) as e:
        _count("tool", "-n", "-3", low=0)
    assert str(e.value) == "tool: -n must be at least 0, got -3"
    assert _count("tool", "-n", "0", low=0) == 0
    high = base.MAX_NPROC_PER_NODE
    assert _count("tool", "-n", str(high)) == high
    with pytest.raises(UserError) as e:
        _count("tool", "-n", str(high + 1))
    assert str(e.value) == f"tool: -n={high + 1} is more than the {high} local ranks hosttune plans for"
    assert _count("tool", "-n", "10", high=10) == 10
    with pytest.raises(UserError):
        _count("tool", "-n", "11", high=10)


def test_known_launcher_binds_and_dict() -> None:
    k = KnownLauncher("srun", 2, None, None, ("srun", "x"))
    assert not k.binds and k.notes == () and k.rank_arg is None and k.endpoint is None
    assert k.to_dict() == {"name": "srun", "local_ranks": 2, "bound_by": None, "threads": None,
                           "argv": ["srun", "x"], "notes": [], "rank_arg": None}
    b = KnownLauncher("deepspeed", None, "deepspeed --bind_cores_to_rank", 3, ("deepspeed", "t.py"), ("n",),
                      "--local_rank")
    assert b.binds
    assert b.to_dict() == {"name": "deepspeed", "local_ranks": None, "bound_by": "deepspeed --bind_cores_to_rank",
                           "threads": 3, "argv": ["deepspeed", "t.py"], "notes": ["n"], "rank_arg": "--local_rank"}
