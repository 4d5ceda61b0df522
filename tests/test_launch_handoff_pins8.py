"""Pins for hosttune/launch/handoff.py's _bases (issue 21, round-8 practice, HLAU8): where a handoff directory may go,
in order, as a whole list: $XDG_RUNTIME_DIR only when absolute and passing the rule (never a group-writable one or a
relative name), then (as root) the runtime directory, made private here, then the temp directories; with
shared=False no sticky temp directory but the caller's cache directory. Every directory is a temporary one."""

import os
import tempfile
from pathlib import Path
from typing import Dict

import pytest

from hosttune.launch import handoff

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the runtime directory is root's")


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    os.chmod(tmp_path, 0o755)
    tmp_path = tmp_path / "b"
    tmp_path.mkdir(mode=0o755)
    for name in ("xdg", "run", "tmp", "home"):
        (tmp_path / name).mkdir(mode=0o700)
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o775)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path


def _env(b: Path, **extra: str) -> Dict[str, str]:
    return {"HOSTTUNE_RUNTIME_DIR": str(b / "run" / "hosttune"), "HOME": str(b / "home"), **extra}


@as_root
def test_bases_in_order(base: Path) -> None:
    b = base
    got = list(handoff._bases(_env(b, XDG_RUNTIME_DIR=str(b / "xdg"))))
    assert got == [str(b / "xdg"), str(b / "run" / "hosttune"), str(b / "tmp"), "/tmp"]
    assert oct(os.stat(b / "run" / "hosttune").st_mode & 0o777) == "0o700"


@as_root
@pytest.mark.parametrize("xdg", ["open", "relative", "missing", ""])
def test_an_unusable_xdg_runtime_dir_is_skipped(base: Path, xdg: str) -> None:
    b = base
    value = {"open": str(b / "open"), "relative": "xdg", "missing": str(b / "missing"), "": ""}[xdg]
    assert list(handoff._bases(_env(b, XDG_RUNTIME_DIR=value))) == [str(b / "run" / "hosttune"), str(b / "tmp"),
                                                                     "/tmp"]


@as_root
def test_unshared_bases_skip_sticky_temp_dirs_and_end_with_the_cache(base: Path, monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:
    b = base
    monkeypatch.setattr(tempfile, "tempdir", str(b / "sticky"))
    got = list(handoff._bases(_env(b, XDG_RUNTIME_DIR=str(b / "sticky")), shared=False))
    assert got == [str(b / "run" / "hosttune"), str(b / "home" / ".cache" / "hosttune")]
    assert list(handoff._bases(_env(b, XDG_RUNTIME_DIR=str(b / "sticky")))) == [
        str(b / "sticky"), str(b / "run" / "hosttune"), str(b / "sticky"), "/tmp"]


@as_root
def test_a_runtime_dir_under_a_sticky_dir_is_used_only_when_it_exists(base: Path) -> None:
    b = base
    env = _env(b, HOSTTUNE_RUNTIME_DIR=str(b / "sticky" / "hosttune"))
    assert list(handoff._bases(env)) == [str(b / "tmp"), "/tmp"]  # a predictable name others could create: not made
    assert not (b / "sticky" / "hosttune").exists()
    (b / "sticky" / "hosttune").mkdir(mode=0o700)
    assert list(handoff._bases(env)) == [str(b / "sticky" / "hosttune"), str(b / "tmp"), "/tmp"]


def test_shared_base_table(base: Path) -> None:
    b = base
    assert [handoff._shared_base(str(b / n)) for n in ("xdg", "sticky", "open", "missing")] == [False, True, True, True]
