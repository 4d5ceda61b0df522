"""Pins (issue 21, round 7 practice) for hosttune/tune/state.py: check_state() on a table of state files, each
accepted or refused with its exact reason (what revert will trust: a saved tuned file is {text, mode} or null, never
an empty mapping, a string, 0 or false)."""

from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from hosttune.errors import UserError
from hosttune.tune.rootfs import Tree
from hosttune.tune.state import check_state

S = "hosttune.tune-state/1"
A = "etc/tuned/active_profile"
M = "etc/tuned/profile_mode"


def st(**kw: Any) -> Dict[str, Any]:
    d: Dict[str, Any] = {"schema": S, "before": {}, "applied": {}, "made_dirs": [], "tuned": None}
    d.update(kw)
    return d


CASES: Dict[str, Any] = dict([
    ("new", st()),
    ("full", st(before={"thp": {"sys/kernel/mm/transparent_hugepage/enabled": "always"},
                        "governor": {"sys/devices/system/cpu/cpufreq/policy0/scaling_governor": "powersave",
                                     "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor": None}},
                applied={"thp": "madvise", "shm": "size=50%"}, made_dirs=["etc/sysctl.d", "var/lib/hosttune"],
                unit_enabled=True,
                tuned={"previous": "throughput-performance",
                       "files": {A: {"text": "throughput-performance\n", "mode": 0o644}, M: None}})),
    ("no tuned files", st(tuned={"previous": None})),
    ("not a dict", ["x"]),
    ("old schema", st(schema="hosttune.tune-state/0")),
    ("unknown key", st(extra=1)),
    ("before not a dict", st(before=[])),
    ("before unknown tunable", st(before={"nosuch": {}})),
    ("before foreign path", st(before={"thp": {"etc/passwd": "x"}})),
    ("before persistence path", st(before={"persistence": {"nvidia-persistenced": "enabled"}})),
    ("before two lines", st(before={"thp": {"sys/kernel/mm/transparent_hugepage/enabled": "a\nb"}})),
    ("applied unknown", st(applied={"nosuch": "1"})),
    ("applied none", st(applied={"thp": None})),
    ("applied long", st(applied={"thp": "x" * 257})),
    ("made_dirs foreign", st(made_dirs=["etc"] + ["root"])),
    ("made_dirs not a list", st(made_dirs="etc")),
    ("unit_enabled string", st(unit_enabled="yes")),
    ("tuned not a dict", st(tuned=[])),
    ("tuned extra key", st(tuned={"previous": None, "x": 1})),
    ("tuned previous bad", st(tuned={"previous": "a b/c"})),
    ("tuned previous empty", st(tuned={"previous": ""})),
    ("tuned files list", st(tuned={"files": []})),
    ("tuned files foreign", st(tuned={"files": {"etc/passwd": None}})),
    ("tuned file empty dict", st(tuned={"files": {A: {}}})),
    ("tuned file empty string", st(tuned={"files": {A: ""}})),
    ("tuned file zero", st(tuned={"files": {M: 0}})),
    ("tuned file false", st(tuned={"files": {M: False}})),
    ("tuned file mode bool", st(tuned={"files": {A: {"text": "x\n", "mode": True}}})),
    ("tuned file mode big", st(tuned={"files": {A: {"text": "x\n", "mode": 0o1000}}})),
    ("tuned file text ctl", st(tuned={"files": {A: {"text": "x\x1b\n", "mode": 0o644}}})),
    ("tuned file extra", st(tuned={"files": {A: {"text": "x\n", "mode": 0o644, "uid": 0}}})),
])

WANT = [
    ('new', None),
    ('full', None),
    ('no tuned files', None),
    ('not a dict', 'schema hosttune.tune-state/1 expected'),
    ('old schema', 'schema hosttune.tune-state/1 expected'),
    ('unknown key', "unknown key 'extra'"),
    ('before not a dict', 'before and applied must be mappings'),
    ('before unknown tunable', "before: 'nosuch' is not a tunable with saved values"),
    ('before foreign path', "before.thp: 'etc/passwd' is not one of thp's own paths"),
    ('before persistence path', None),
    ('before two lines', 'before.thp is not a one-line value'),
    ('applied unknown', "applied: 'nosuch' is not a tunable"),
    ('applied none', 'applied.thp is empty'),
    ('applied long', 'applied.thp is not a one-line value'),
    ('made_dirs foreign', 'made_dirs names a directory hosttune does not make'),
    ('made_dirs not a list', 'made_dirs names a directory hosttune does not make'),
    ('unit_enabled string', 'unit_enabled must be true or false'),
    ('tuned not a dict', 'tuned must be a mapping of previous and files'),
    ('tuned extra key', 'tuned must be a mapping of previous and files'),
    ('tuned previous bad', 'tuned.previous is not a tuned profile name'),
    ('tuned previous empty', 'tuned.previous is not a tuned profile name'),
    ('tuned files list', 'tuned.files may name only etc/tuned/active_profile and etc/tuned/profile_mode'),
    ('tuned files foreign', 'tuned.files may name only etc/tuned/active_profile and etc/tuned/profile_mode'),
    ('tuned file empty dict', 'tuned.files: each saved file is {text, mode}'),
    ('tuned file empty string', 'tuned.files: each saved file is {text, mode}'),
    ('tuned file zero', 'tuned.files: each saved file is {text, mode}'),
    ('tuned file false', 'tuned.files: each saved file is {text, mode}'),
    ('tuned file mode bool', 'tuned.files: each saved file is {text, mode}'),
    ('tuned file mode big', 'tuned.files: each saved file is {text, mode}'),
    ('tuned file text ctl', 'tuned.files: each saved file is {text, mode}'),
    ('tuned file extra', 'tuned.files: each saved file is {text, mode}'),
]


def test_every_case_has_its_answer() -> None:
    assert [name for name, _ in WANT] == list(CASES)


@pytest.mark.parametrize("name,why", WANT)
def test_check_state(tmp_path: Path, name: str, why: Optional[str]) -> None:
    data = CASES[name]
    tree = Tree(tmp_path)
    if why is None:
        assert check_state(data, tree) is data
        return
    with pytest.raises(UserError) as info:
        check_state(data, tree)
    assert str(info.value) == (f"{tmp_path}/var/lib/hosttune/tune-state.json: not hosttune's tune state ({why}); "
                               "`hosttune tune apply` wrote none like it")
