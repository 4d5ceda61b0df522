"""Pins (issue 21, second mutation round) for the exec start-up cache's places (hosttune/execcache/store.py): an
entry another user owns is never loaded, a user's XDG_RUNTIME_DIR holds the cache only when it is private to them,
root's runtime directory must be private to root, and one that HOSTTUNE_RUNTIME_DIR moved passes the trust rule
with every directory above it."""

import marshal
import os
from pathlib import Path

import pytest

from hosttune import execcache
from hosttune.execcache import store

ENTRY = (execcache.VERSION, b"d" * 32, (), (), "/bin/true", ("true",), (), (), None, None, "", False)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


def _entry(path: Path) -> Path:
    path.write_bytes(marshal.dumps(ENTRY))
    os.chmod(path, 0o600)
    return path


@needs_root
def test_an_entry_another_user_owns_is_refused(tmp_path: Path) -> None:
    mine = _entry(tmp_path / "mine")
    assert execcache.load(str(mine)) is not None
    theirs = _entry(tmp_path / "theirs")
    os.chown(theirs, 64123, 64123)
    assert execcache.load(str(theirs)) is None


def test_a_users_runtime_dir_holds_the_cache_only_when_private_to_them(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    uid = 64124
    xdg = tmp_path / "run-user"
    xdg.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(xdg, uid, uid)
    else:
        uid = os.geteuid()
    env = {"XDG_RUNTIME_DIR": str(xdg), "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    monkeypatch.setattr(store.os, "geteuid", lambda: uid)  # the cache as that (non-root) user sees it
    assert execcache.cache_dir(env) == str(xdg / "hosttune")
    os.chmod(xdg, 0o777)  # anyone may plant entries there now
    assert execcache.cache_dir(env) != str(xdg / "hosttune")


@needs_root
def test_roots_runtime_directory_must_be_private_to_root(tmp_path: Path) -> None:
    runtime = tmp_path / "run-hosttune"
    (runtime / "cache").mkdir(parents=True, mode=0o700)
    os.chmod(runtime / "cache", 0o700)
    os.chmod(runtime, 0o700)
    os.chmod(tmp_path, 0o755)
    assert execcache._usable_dir(str(runtime / "cache")) is None
    os.chmod(runtime, 0o755)  # root's own, but not private: a service's directory, not the cache's
    assert "not private to root" in (execcache._usable_dir(str(runtime / "cache")) or "")


@needs_root
def test_a_moved_runtime_directory_passes_the_trust_rule_above_it(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    runtime = shared / "run-hosttune"
    (runtime / "cache").mkdir(parents=True)
    for d in (runtime / "cache", runtime):
        os.chmod(d, 0o700)
    os.chmod(tmp_path, 0o755)
    os.chmod(shared, 0o777)  # another user could swap run-hosttune for their own
    assert execcache._usable_dir(str(runtime / "cache"))
