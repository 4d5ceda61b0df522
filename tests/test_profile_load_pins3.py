"""Pins of mutation round 3 (issue 21) on hosttune/profile/load.py: how a `base:` chain is found and merged
(bench/mutants.py r3-profile-*). Profile files under this test's tmp_path, loaded by path."""

from pathlib import Path

import pytest

from hosttune import profile


def test_a_child_that_sets_one_key_of_a_section_or_map_keeps_the_others_its_base_set(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(
        "dataloader:\n  num_workers: 2\n  pin_memory: false\n"
        "tcmalloc:\n  TCMALLOC_RELEASE_RATE: '0'\n  TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD: '1'\n"
        "env:\n  A: one\n")
    (tmp_path / "child.yaml").write_text(
        "base: ./base.yaml\ndataloader:\n  persistent_workers: true\ntcmalloc:\n  TCMALLOC_RELEASE_RATE: '2'\n"
        "env:\n  B: two\n")
    p = profile.load(str(tmp_path / "child.yaml"))
    assert (p.dataloader.num_workers, p.dataloader.pin_memory, p.dataloader.persistent_workers) == (2, False, True)
    assert dict(p.tcmalloc) == {"TCMALLOC_RELEASE_RATE": "2", "TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD": "1"}
    assert dict(p.env) == {"A": "one", "B": "two"}
    assert p.provenance["dataloader.num_workers"].startswith(str(tmp_path / "base.yaml"))
    assert p.provenance["dataloader.persistent_workers"].startswith(str(tmp_path / "child.yaml"))


def test_a_relative_base_path_is_the_profiles_own_directory_whatever_the_current_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "profiles"
    d.mkdir()
    (d / "base.yaml").write_text("threads: 3\n")
    (d / "child.yaml").write_text("base: ./base.yaml\nbinding: none\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "base.yaml").write_text("threads: 5\n")  # a file of that name beside the caller is not it
    monkeypatch.chdir(elsewhere)
    p = profile.load(str(d / "child.yaml"))
    assert p.threads == 3 and p.binding == "none"
    assert p.chain == (str(d / "base.yaml"), str(d / "child.yaml"))
