"""What the profile and plan root-safety tests share (tests/test_profile_load.py, test_plan_env.py,
test_plan_layout.py): the root/jemalloc skips, the one error line, a small host's
facts, root's own directories, and a profile file written with the modes a profile needs."""

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Result

from hosttune.facts import Allocators, Cpu, Facts, Numa, NumaNode

IS_ROOT = os.geteuid() == 0

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

needs_root = pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")

needs_jemalloc = pytest.mark.skipif(not os.path.exists(JEMALLOC), reason="libjemalloc2 not installed")


def one_error_line(res: Result) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune: error: "), res.stderr
    return lines[0]


def small_facts(**over: Any) -> Facts:
    kw: Any = dict(
        hostname="box",
        cpu=Cpu(online=(0, 1, 2, 3), logical=4, physical=4, cores=((0,), (1,), (2,), (3,)), allowed_cpus=(0, 1, 2, 3)),
        numa=Numa(nodes=(NumaNode(0, (0, 1), 1000), NumaNode(1, (2, 3), 1000)), allowed_mems=(0, 1)),
        allocators=Allocators(),
    )
    kw.update(over)
    return Facts(**kw)


def root_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    return d


ELF_SO = b"\x7fELF\x02\x01\x01" + b"\0" * 57


def elf_lib(d: Path, name: str) -> str:
    """A shared library as a preload check sees one: ELF magic, mode 0644, in `d` (root_dir)."""
    p = d / name
    p.write_bytes(ELF_SO)
    os.chmod(p, 0o644)
    return str(p)


def write_profile(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o644)
    return path
