"""The allocator the plan preloads (hosttune/plan/env.py, issue 11 item 4): LD_PRELOAD gets the resolved library,
and only one that is root's alone and an ELF file, for everyone (it runs inside every rank)."""

import json
import os
import stat
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from _profilehelp import ELF_SO, IS_ROOT, JEMALLOC, needs_jemalloc, needs_root, root_dir, small_facts, write_profile
from _synthhost import hosttune
from conftest import OtherUser

from hosttune import plan, profile


def preload_of(lib: str) -> Tuple[Optional[str], List[str]]:
    prof = profile.load_text(f"base: throughput\nallocator: jemalloc\nallocator_path: {lib}\n")
    rp = plan.resolve(small_facts(), prof, 0, 1, environ={})
    return rp.env.get("LD_PRELOAD"), list(rp.reasons)


@needs_root
@needs_jemalloc
def test_preload_link_in_a_world_writable_directory_is_refused(tmp_path: Path) -> None:
    d = root_dir(tmp_path, "ww")
    os.chmod(d, 0o777)  # world-writable, no sticky bit: anyone may re-point or replace the link
    (d / "libjemalloc.so.2").symlink_to(JEMALLOC)
    got, reasons = preload_of(str(d / "libjemalloc.so.2"))
    assert got is None
    assert any("jemalloc refused" in r and f"link {d}/libjemalloc.so.2" in r and "writable by" in r for r in reasons)


@needs_root
@needs_jemalloc
def test_preload_link_in_another_users_directory_is_refused(other_user: OtherUser) -> None:
    link = other_user.home / "libjemalloc.so.2"
    os.symlink(JEMALLOC, link)  # root's own link, in their directory
    got, reasons = preload_of(str(link))
    assert got is None and any("jemalloc refused" in r and "owned by nobody" in r for r in reasons)


@needs_root
def test_preload_of_a_file_that_is_not_elf_is_refused(tmp_path: Path) -> None:
    d = root_dir(tmp_path, "lib")
    fake = d / "libjemalloc.so.2"
    fake.write_text("#!/bin/sh\necho not a library\n")
    os.chmod(fake, 0o644)
    got, reasons = preload_of(str(fake))
    assert got is None and any("not an ELF shared library" in r for r in reasons)


@needs_jemalloc
def test_plan_preloads_the_resolved_library_not_the_link(tmp_path: Path) -> None:
    d = root_dir(tmp_path, "lib")
    (d / "libjemalloc.so").symlink_to(JEMALLOC)
    got, reasons = preload_of(str(d / "libjemalloc.so"))
    assert got == os.path.realpath(JEMALLOC)
    assert any(f"(resolved: {os.path.realpath(JEMALLOC)})" in r for r in reasons)
    # re-pointing the link after planning changes nothing in the plan already made
    (d / "libjemalloc.so").unlink()
    (d / "libjemalloc.so").symlink_to("/etc/passwd")
    assert got == os.path.realpath(JEMALLOC)


def test_an_ordinary_users_own_library_is_refused_for_preload_too(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """LD_PRELOAD entries must be root's for everyone: it runs inside every rank."""
    lib = root_dir(tmp_path, "lib") / "libjemalloc.so.2"
    lib.write_bytes(b"\x7fELF" + b"\0" * 60)
    os.chmod(lib, 0o644)
    if IS_ROOT:
        os.chown(lib, 1000, 1000)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    got, reasons = preload_of(str(lib))
    assert got is None and any("jemalloc refused" in r for r in reasons)


# ---- pinned before the issue-17 rebuild: through `hosttune env` ------------------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="as another user the library is refused for its owner already")
def test_preload_library_in_a_world_writable_non_sticky_directory_is_refused(tmp_path: Path) -> None:
    """Anyone can replace a file in such a directory between the check and the rank's exec: never preload it."""
    lib_dir = tmp_path / "shared-libs"
    lib_dir.mkdir()
    lib = lib_dir / "libjemalloc.so.2"
    lib.write_bytes(ELF_SO)
    lib.chmod(0o755)
    lib_dir.chmod(0o777)  # world-writable, no sticky bit
    assert not lib_dir.stat().st_mode & stat.S_ISVTX
    profile = write_profile(tmp_path / "conf" / "p.yaml",
                            f"allocator: jemalloc\nallocator_path: {lib}\n")
    done = hosttune("env", "--profile", str(profile), "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert str(lib) not in plan["env"].get("LD_PRELOAD", "")
    assert "shared-libs" not in plan["env"].get("LD_PRELOAD", "")

    # control: the same library in a directory only its owner can write is preloaded (so the refusal above is
    # about the directory, not about the file)
    lib_dir.chmod(0o755)
    done = hosttune("env", "--profile", str(profile), "--json")
    assert done.returncode == 0, done.stderr
    assert str(lib) in json.loads(done.stdout)["env"].get("LD_PRELOAD", ""), done.stdout
