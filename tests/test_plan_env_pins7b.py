"""Pins of mutation round 7 (issue 21) on hosttune/plan/env.py: --override reaches the allocator choice, so the
profile's malloc goes first in LD_PRELOAD (with its own settings) even when the caller already preloads another;
without --override theirs is kept and ours is not added."""

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
    return {n: elf_lib(d, f"lib{n}.so.2") for n in ("jemalloc", "tcmalloc")}


def facts(**alloc: str) -> Facts:
    return Facts(cpu=Cpu(online=(0, 1), logical=2, physical=2, cores=((0,), (1,)), allowed_cpus=(0, 1)),
                 numa=Numa(nodes=(NumaNode(0, (0, 1), 1000),)), allocators=Allocators(**alloc))  # type: ignore[arg-type]


def prof(**kw: object) -> Profile:
    return Profile(name="t", summary="", source="<test>", **kw)  # type: ignore[arg-type]


def test_override_puts_the_profiles_malloc_before_the_callers(libs: Dict[str, str]) -> None:
    jem, theirs = libs["jemalloc"], libs["tcmalloc"]
    environ = {"LD_PRELOAD": theirs}
    p = prof(allocator="jemalloc", malloc_conf="narenas:2")
    env = penv.common_env(facts(jemalloc=jem), p, environ, override=True)
    assert env["LD_PRELOAD"] == f"{jem}:{theirs}"
    assert env["MALLOC_CONF"] == "narenas:2"
    # without --override the caller's malloc stays theirs: nothing of ours is preloaded, nor configured
    kept = penv.common_env(facts(jemalloc=jem), p, environ, override=False)
    assert kept.get("LD_PRELOAD", theirs) == theirs and "MALLOC_CONF" not in kept


def test_override_says_the_profiles_allocator_not_yours_kept(libs: Dict[str, str]) -> None:
    jem, theirs = libs["jemalloc"], libs["tcmalloc"]
    p = prof(allocator="jemalloc")
    _, why = penv._common(facts(jemalloc=jem), p, {"LD_PRELOAD": theirs}, override=True)
    assert f"allocator: jemalloc preloaded from {jem}" in why
    assert not any("from your LD_PRELOAD kept" in w for w in why)
    _, why = penv._common(facts(jemalloc=jem), p, {"LD_PRELOAD": theirs}, override=False)
    assert f"allocator: {theirs} from your LD_PRELOAD kept, the profile's jemalloc not added " \
           "(--override to put the profile's first)" in why
