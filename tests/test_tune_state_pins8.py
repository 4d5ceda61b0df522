"""Pins (issue 21, round 8 practice) for hosttune/tune/state.py: check_state() judges every saved target of a
tunable (not only the first) and refuses a `tuned` entry that is not a mapping, whatever it is; `ours` wants the
marker as the whole first line; parse_blocks keeps the first reason it meets and never one the caller gave;
save_state refuses what the next run would refuse; and (txn.py) edit_blocks sets, replaces and drops blocks."""

from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from hosttune.errors import UserError
from hosttune.tune.model import MARKER
from hosttune.tune.rootfs import Tree
from hosttune.tune.state import check_state, ours, parse_blocks

GOV0 = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor"
GOV1 = "sys/devices/system/cpu/cpufreq/policy1/scaling_governor"


def st(**kw: Any) -> Dict[str, Any]:
    d: Dict[str, Any] = {"schema": "hosttune.tune-state/1", "before": {}, "applied": {}, "made_dirs": [],
                         "tuned": None}
    d.update(kw)
    return d


@pytest.mark.parametrize("data,why", [
    (st(before={"governor": {GOV0: "powersave", GOV1: "ondemand"}}), None),
    (st(before={"governor": {GOV0: "powersave", "etc/shadow": "x"}}),
     "before.governor: 'etc/shadow' is not one of governor's own paths"),
    (st(before={"governor": {GOV0: "powersave", GOV1: "a\nb"}}), "before.governor is not a one-line value"),
    (st(before={"governor": {GOV0: "powersave", GOV1: 5}}), "before.governor is not a one-line value"),
    (st(applied={"thp": "madvise", "governor": "x\ty"}), "applied.governor is not a one-line value"),
    (st(tuned="throughput-performance"), "tuned must be a mapping of previous and files"),
    (st(tuned=0), "tuned must be a mapping of previous and files"),
    (st(tuned=False), "tuned must be a mapping of previous and files"),
    (st(tuned={}), None),
], ids=["two-targets", "second-foreign", "second-two-lines", "second-not-text", "applied-tab", "tuned-string",
        "tuned-zero", "tuned-false", "tuned-empty"])
def test_check_state_judges_every_target_and_the_tuned_entry(tmp_path: Path, data: Any, why: Optional[str]) -> None:
    if why is None:
        assert check_state(data, Tree(tmp_path)) is data
        return
    with pytest.raises(UserError) as info:
        check_state(data, Tree(tmp_path))
    assert str(info.value) == (f"{tmp_path}/var/lib/hosttune/tune-state.json: not hosttune's tune state ({why}); "
                               "`hosttune tune apply` wrote none like it")


def test_ours_is_the_marker_as_the_whole_first_line() -> None:
    assert ours(MARKER + "\n# thp: x\n") and ours(MARKER)
    assert not ours(MARKER + " (edited)\n") and not ours(MARKER + "x")
    assert not ours("# " + MARKER + "\n") and not ours("") and not ours(None)


def test_parse_blocks_keeps_the_first_reason_and_the_last_block() -> None:
    text = (f"{MARKER}\n# thp: first reason\nalways\n# nosuch: not a tunable\nignored? no: kept under thp\n"
            "# swappiness:   low swap   \nvm.swappiness = 10\n\n# a comment\n# thp: second reason\nnever\n")
    mine: Dict[str, str] = {}
    assert parse_blocks(text, mine) == {"thp": ["never"], "swappiness": ["vm.swappiness = 10"]}
    assert mine == {"thp": "first reason", "swappiness": "low swap"}
    given = {"thp": "the caller's"}
    parse_blocks(text, given)
    assert given == {"thp": "the caller's", "swappiness": "low swap"}
    assert parse_blocks("# thp: x\nalways\n") == {}  # the first line is the marker's place, never a block


def test_save_state_refuses_what_the_next_run_would_refuse_and_writes_nothing(tmp_path: Path) -> None:
    from hosttune.tune.state import save_state
    from hosttune.tune.txn import Txn

    root = tmp_path / "r"
    root.mkdir()
    txn = Txn(Tree(root))
    with pytest.raises(UserError) as info:
        save_state(txn, st(applied={"thp": "never\nalways"}))
    assert str(info.value) == (f"{root}/var/lib/hosttune/tune-state.json: not hosttune's tune state "
                               "(applied.thp is not a one-line value); `hosttune tune apply` wrote none like it")
    assert list(root.iterdir()) == [] and txn.undo == []
    save_state(txn, st(applied={"thp": "never"}))
    assert (root / "var/lib/hosttune/tune-state.json").read_text() == (
        '{\n "applied": {\n  "thp": "never"\n },\n "before": {},\n "made_dirs": [],\n "schema": '
        '"hosttune.tune-state/1",\n "tuned": null\n}\n')


def test_edit_blocks_sets_replaces_and_drops_a_block_and_the_file_goes_with_the_last(tmp_path: Path) -> None:
    from hosttune.tune.txn import Txn, edit_blocks

    root = tmp_path / "r"
    root.mkdir()
    txn = Txn(Tree(root))
    rel = "etc/sysctl.d/90-hosttune.conf"
    edit_blocks(txn, rel, {"swappiness": ["vm.swappiness = 10"]}, {"swappiness": "low"})
    edit_blocks(txn, rel, {"numa_balancing": ["kernel.numa_balancing = 0"]}, {"numa_balancing": "pinned"})
    edit_blocks(txn, rel, {"swappiness": ["vm.swappiness = 5"]}, {"swappiness": "lower"})
    assert (root / rel).read_text() == "\n".join([MARKER, "# numa_balancing: pinned", "kernel.numa_balancing = 0",
                                                  "# swappiness: lower", "vm.swappiness = 5", ""])  # the new reason
    edit_blocks(txn, rel, {"numa_balancing": None, "swappiness": None}, {})
    assert not (root / rel).exists()
    assert txn.rollback() == [] and not (root / rel).exists() and not (root / "etc").exists()
