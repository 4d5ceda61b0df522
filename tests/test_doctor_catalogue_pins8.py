"""Pins for hosttune.doctor.catalogue (issue 21, practice round HDOC8): diagnose()'s one-line usage errors whole, and
what reaches detect.collect (replaced by a fixed host: no process starts)."""

import os
from pathlib import Path
from typing import Any, List

import pytest
from _doctorhelp import cpu_host

import hosttune.detect
from hosttune.doctor import catalogue
from hosttune.errors import UserError

GROUPS = "(groups: os, cpu, storage, tools, nvidia, torch, hosttune)"


@pytest.fixture
def fixed_host(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    asked: List[Any] = []
    monkeypatch.setattr(hosttune.detect, "collect", lambda *a, **kw: asked.append((a, kw)) or cpu_host())
    return asked


@pytest.mark.parametrize("only,message", [
    ("tool", f"--only: no group 'tool'; did you mean tools? {GROUPS}"),
    ("nvida", f"--only: no group 'nvida'; did you mean nvidia? {GROUPS}"),
    ("zzzz", f"--only: no group 'zzzz' {GROUPS}"),
])
def test_unknown_group_message_whole(fixed_host: List[Any], only: str, message: str) -> None:
    with pytest.raises(UserError) as exc:
        catalogue.diagnose(only=only, env={})
    assert str(exc.value) == message
    assert fixed_host == []  # refused before anything is detected


def test_root_is_read_through_its_real_path(fixed_host: List[Any], tmp_path: Path) -> None:
    """--root LINK: the host tree read is the link's target (trust.host_tree), as one resolved path."""
    tree = tmp_path / "captured"
    tree.mkdir()
    link = tmp_path / "link"
    link.symlink_to(tree)
    report = catalogue.diagnose(root=str(link), only="tools", env={})
    assert report.results
    ((args, kw),) = fixed_host
    assert args == (Path(os.path.realpath(tree)), None)
    assert kw == {"probe_torch": False, "use_nvml": False}


def test_root_that_is_a_file_is_refused(fixed_host: List[Any], tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(UserError) as exc:
        catalogue.diagnose(root=str(f), env={})
    assert str(exc.value) == f"--root {f}: not a directory (it is a regular file)"
    assert fixed_host == []


def test_skip_holds_with_deep_too(fixed_host: List[Any]) -> None:
    """--skip ID with --deep: the check is still left out and reported as a skip (only "tools": no measurement runs)."""
    from hosttune.doctor.deep.session import DeepOptions

    deep = catalogue.diagnose(only="tools", env={}, skip=["tools.numactl"], deep=DeepOptions(progress=False))
    plain = catalogue.diagnose(only="tools", env={}, skip=["tools.numactl"])
    got = [(r.id, r.status, r.actual) for r in deep.results]
    assert got == [(r.id, r.status, r.actual) for r in plain.results]
    assert ("tools.numactl", "skip", catalogue.SKIPPED) in got
