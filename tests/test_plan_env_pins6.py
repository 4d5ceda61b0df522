"""Pins for hosttune/plan/env.py (issue 21, round 6): the LD_PRELOAD line a user reads when the profile's libraries
go before theirs (word for word, long lists shortened), the caller's entries kept once even when two spellings name
one file, and the allocator-config warning for a torch that reads only the old name."""

from pathlib import Path
from typing import Dict

import pytest
from _profilehelp import elf_lib, needs_root, root_dir

from hosttune.facts import Allocators, Cpu, Facts, Numa, NumaNode
from hosttune.plan import env as penv
from hosttune.profile.settings import Profile

pytestmark = needs_root  # a preload library must be root's: as root, a tmp_path file is


@pytest.fixture()
def libs(tmp_path: Path) -> Dict[str, str]:
    d = root_dir(tmp_path, "lib")
    return {n: elf_lib(d, f"lib{n}.so.2") for n in ("jemalloc", "iomp5", "other", "more")}


def facts(**alloc: str) -> Facts:
    return Facts(cpu=Cpu(online=(0, 1), logical=2, physical=2, cores=((0,), (1,)), allowed_cpus=(0, 1)),
                 numa=Numa(nodes=(NumaNode(0, (0, 1), 1000),)), allocators=Allocators(**alloc))  # type: ignore[arg-type]


def prof(**kw: object) -> Profile:
    return Profile(name="t", summary="", source="<test>", **kw)  # type: ignore[arg-type]


def shown(yours: str) -> str:
    """The caller's LD_PRELOAD as the line shows it: whole up to 80 characters, else its first 77 and "..." (the
    libraries live under tmp_path, whose length is the machine's: pytest's run number, the worker, the test's name)."""
    return yours if len(yours) <= 80 else yours[:77] + "..."


def test_the_ld_preload_line_names_ours_then_yours(libs: Dict[str, str]) -> None:
    jem, other = libs["jemalloc"], libs["other"]
    env, why = penv._preload_env(facts(jemalloc=jem), prof(), {"LD_PRELOAD": other}, False)
    assert env == {"LD_PRELOAD": f"{jem}:{other}"}
    assert why == [f"allocator: jemalloc preloaded from {jem}",
                   f"LD_PRELOAD: the profile's {jem} first, yours after ({shown(other)})"]


def test_the_ld_preload_line_with_intel_openmp_and_two_of_yours(libs: Dict[str, str]) -> None:
    jem, iomp, other, more = libs["jemalloc"], libs["iomp5"], libs["other"], libs["more"]
    env, why = penv._preload_env(facts(jemalloc=jem, iomp5=iomp), prof(openmp="intel"),
                                 {"LD_PRELOAD": f"{other} {more}"}, False)
    assert env == {"LD_PRELOAD": f"{jem}:{iomp}:{other}:{more}"}
    assert why[-1] == f"LD_PRELOAD: the profile's {jem}, {iomp} first, yours after ({shown(f'{other}:{more}')})"
    assert why[-2] == f"openmp: Intel OpenMP preloaded from {iomp}"


def test_a_long_list_of_yours_is_shortened_in_the_line(libs: Dict[str, str]) -> None:
    jem = libs["jemalloc"]
    yours = ":".join(f"/opt/lib/libextra{i:02d}.so" for i in range(8))
    _, why = penv._preload_env(facts(jemalloc=jem), prof(), {"LD_PRELOAD": yours}, False)
    assert why[-1] == f"LD_PRELOAD: the profile's {jem} first, yours after ({yours[:77]}...)"


def test_two_spellings_of_one_library_are_one_entry(libs: Dict[str, str], tmp_path: Path) -> None:
    other = libs["other"]
    link = tmp_path / "libother-link.so"
    link.symlink_to(other)
    env, why = penv._preload_env(facts(jemalloc=libs["jemalloc"]), prof(), {"LD_PRELOAD": f"{link}:{other}"}, False)
    assert env == {"LD_PRELOAD": f"{libs['jemalloc']}:{link}"}
    assert why[-1].endswith(f"yours after ({shown(str(link))})")


def test_the_callers_malloc_named_with_the_profiles_allocator(libs: Dict[str, str], tmp_path: Path) -> None:
    theirs = str(tmp_path / "libmimalloc.so.2")
    env, why = penv._preload_env(facts(jemalloc=libs["jemalloc"]), prof(allocator="jemalloc"),
                                 {"LD_PRELOAD": f"{libs['other']}:{theirs}"}, False)
    assert env == {}
    assert why == [f"allocator: {theirs} from your LD_PRELOAD kept, the profile's jemalloc not added (--override to "
                   "put the profile's first)"]


def test_the_old_name_only_warning_word_for_word() -> None:
    env, why = penv._alloc_conf_env("x", "2.9.1", {"PYTORCH_ALLOC_CONF": "mine"}, False)
    assert env == {"PYTORCH_ALLOC_CONF": "x"}
    assert why == ["allocator config: torch 2.9.1 takes CUDA allocator options from PYTORCH_CUDA_ALLOC_CONF only, so "
                   "your PYTORCH_ALLOC_CONF may have no effect there"]
    env, why = penv._alloc_conf_env("x", "2.9.1", {"PYTORCH_ALLOC_CONF": "a", "PYTORCH_CUDA_ALLOC_CONF": "b"}, False)
    assert env == {"PYTORCH_ALLOC_CONF": "x", "PYTORCH_CUDA_ALLOC_CONF": "x"} and why == []
