"""Pins (issue 21, round 6) for hosttune/profile/generate.py's to_yaml: the whole file of a profile with both maps
(env and tcmalloc in their own order, not sorted), a reason on a key inside a section, inside a map and at the top,
the reasons block sorted, every section opened once; a name with a control character is one line; and the file
reads back as the same profile (hosttune.profile.load)."""

import dataclasses
import importlib
from pathlib import Path

from hosttune.profile.load import parse_text
from hosttune.profile.settings import Profile

G = importlib.import_module("hosttune.profile.generate")

PROFILE = Profile(name="b", summary="s", source="/b.yaml", env={"B": "2", "A": "1"},
                  tcmalloc={"TCMALLOC_Z": "1", "TCMALLOC_A": "2"}, allocator="tcmalloc",
                  reasons={"env.B": "bee", "tcmalloc.TCMALLOC_A": "tc", "tune.swappiness": "sw",
                           "dataloader.num_workers": "dl"})
EXPECTED = [
    '# hosttune profile b',
    '# s',
    '# Policy for `hosttune exec` / `hosttune env`; host numbers (cores, nodes, paths) are decided per run.',
    '',
    'name: b',
    'summary: s',
    'allocator: tcmalloc',
    'threads: auto',
    'binding: auto',
    'memory_policy: bind',
    'deterministic: false',
    'debug: false',
    "hang_timeout: 'off'",
    'device: auto',
    'openmp: auto',
    'dataloader:',
    '  num_workers: auto  # dl',
    '  pin_memory: auto',
    '  prefetch_factor: auto',
    '  persistent_workers: auto',
    'tcmalloc:',
    "  TCMALLOC_Z: '1'",
    "  TCMALLOC_A: '2'  # tc",
    'tune:',
    '  thp: madvise',
    '  thp_defrag: madvise',
    '  numa_balancing: false',
    '  swappiness: 10  # sw',
    '  governor: performance',
    '  epp: performance',
    '  nofile: 65536',
    '  memlock: unlimited',
    '  shm_size: 50%',
    '  persistence: true',
    'env:',
    "  B: '2'  # bee",
    "  A: '1'",
    'reasons:',
    '  dataloader.num_workers: dl',
    '  env.B: bee',
    '  tcmalloc.TCMALLOC_A: tc',
    '  tune.swappiness: sw',
]


def test_the_whole_file() -> None:
    assert G.to_yaml(PROFILE).splitlines() == EXPECTED
    assert G.to_yaml(PROFILE).endswith("\n  tune.swappiness: sw\n")


def test_it_reads_back_as_the_same_settings() -> None:
    data = parse_text(G.to_yaml(PROFILE), Path("/x.yaml")).data
    assert data["env"] == {"B": "2", "A": "1"} and list(data["env"]) == ["B", "A"]
    assert data["tcmalloc"] == {"TCMALLOC_Z": "1", "TCMALLOC_A": "2"} and data["tune"]["swappiness"] == 10
    assert data["reasons"] == dict(PROFILE.reasons) and data["allocator"] == "tcmalloc"


def test_a_name_and_summary_with_control_characters_stay_one_comment_line() -> None:
    p = dataclasses.replace(PROFILE, name="a\nb\x1bc", summary="x\r\ny")
    lines = G.to_yaml(p).splitlines()
    assert lines[0] == "# hosttune profile a b c" and lines[1] == "# x y"


def test_a_multi_line_value_gets_no_comment() -> None:
    p = dataclasses.replace(PROFILE, env={"M": "one\ntwo"}, reasons={"env.M": "why"})
    text = G.to_yaml(p)
    assert "# why" not in text.split("reasons:")[0]
    assert parse_text(text, Path("/x.yaml")).data["env"] == {"M": "one\ntwo"}
