"""hosttune/execcache/store.py, the cache's trust boundary (issue 21): which entry files load (the caller's own private
single-link regular file, not a link, fifo or oversized file, of exactly the shape written), which recorded input
makes an entry stale, where the entries live and which directories are trusted, and how an entry is written
(mode 0600, nothing in a directory that fails the rule, the oldest pruned beyond MAX_ENTRIES)."""

import marshal
import os
import stat
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from hosttune import execcache
from hosttune.execcache import store

ENTRY: Tuple[Any, ...] = (execcache.VERSION, b"d" * 32, (("/etc/x", True, (1, 2)), ("/etc/y", False, None)),
                          (("/sys/fs/cgroup/cpu.max", b"max 100000\n"), ("/sys/fs/cgroup/none", None)),
                          "/bin/true", ("true", "-x"), (("A", "1"),), ("B",), (0, 2), (2, 1, 0), "err", True)
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


def write(path: Path, entry: Any = ENTRY, mode: int = 0o600) -> str:
    path.write_bytes(marshal.dumps(entry))
    os.chmod(path, mode)
    return str(path)


# ---- load ----------------------------------------------------------------------------------------------------------
def test_a_private_entry_loads_whole(tmp_path: Path) -> None:
    assert store.load(write(tmp_path / "e")) == ENTRY


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o610, 0o601])
def test_any_group_or_other_bit_refuses_the_entry(tmp_path: Path, mode: int) -> None:
    assert store.load(write(tmp_path / "e", mode=mode)) is None
    assert store.load(write(tmp_path / "f", mode=0o400)) == ENTRY  # owner bits alone are fine


def test_a_link_to_an_entry_is_refused(tmp_path: Path) -> None:
    real = write(tmp_path / "e")
    os.symlink(real, tmp_path / "link")
    assert store.load(str(tmp_path / "link")) is None


def test_a_hard_linked_entry_is_refused(tmp_path: Path) -> None:
    real = write(tmp_path / "e")
    os.link(real, tmp_path / "second")
    assert store.load(real) is None


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    assert store.load(str(fifo)) is None  # O_NONBLOCK: no writer, and the open does not wait for one


def test_a_directory_or_missing_file_is_none(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    assert store.load(str(d)) is None
    assert store.load(str(tmp_path / "missing")) is None


@as_root
def test_an_entry_of_another_owner_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path / "e")
    os.chown(p, 64130, os.getegid())
    assert store.load(p) is None


def test_the_size_limit_is_inclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path / "e")
    size = os.path.getsize(p)
    monkeypatch.setattr(execcache, "MAX_ENTRY_BYTES", size)
    assert store.load(p) == ENTRY
    monkeypatch.setattr(execcache, "MAX_ENTRY_BYTES", size - 1)
    assert store.load(p) is None


def test_garbage_or_truncated_bytes_are_none(tmp_path: Path) -> None:
    p = tmp_path / "e"
    p.write_bytes(b"\xff\x00garbage")
    os.chmod(p, 0o600)
    assert store.load(str(p)) is None
    p.write_bytes(marshal.dumps(ENTRY)[:-3])
    assert store.load(str(p)) is None


def test_a_code_object_is_never_loaded(tmp_path: Path) -> None:
    code = compile("1", "x", "eval")
    bad = ENTRY[:4] + (code,) + ENTRY[5:]
    assert store.load(write(tmp_path / "e", bad)) is None


# ---- _valid: the exact shape ---------------------------------------------------------------------------------------
def replace(i: int, value: Any) -> Tuple[Any, ...]:
    return ENTRY[:i] + (value,) + ENTRY[i + 1:]


def test_the_written_shape_is_valid_with_its_optional_fields() -> None:
    assert store._valid(ENTRY)
    assert store._valid(replace(8, None)) and store._valid(replace(9, None)) and store._valid(replace(11, False))
    assert store._valid(replace(2, ())) and store._valid(replace(3, ())) and store._valid(replace(6, ()))
    assert store._valid(replace(7, ()))


@pytest.mark.parametrize("i,value", [
    (0, "hosttune-exec-cache/0"), (1, "d" * 32), (2, [("/etc/x", True, None)]), (2, ((b"/etc/x", True, None),)),
    (2, (("/etc/x", 1, None),)), (2, (("/etc/x", True, ("1",)),)), (2, (("/etc/x", True, [1]),)),
    (3, [("/x", None)]), (3, ((b"/x", None),)), (3, (("/x", "text"),)),
    (4, b"/bin/true"), (5, ()), (5, ["true"]), (5, ("true", 1)),
    (6, [("A", "1")]), (6, (("A", "1", "2"),)), (6, (("A",),)), (6, (("A", 1),)),
    (7, ("B", 2)), (7, ["B"]), (8, (0, "1")), (8, [0]), (9, ()), (9, ("2",)), (10, None), (11, 1), (11, None),
])
def test_every_field_of_another_shape_is_refused(i: int, value: Any) -> None:
    assert not store._valid(replace(i, value))


def test_a_wrong_length_or_type_is_refused() -> None:
    assert not store._valid(ENTRY[:-1]) and not store._valid(ENTRY + (1,)) and not store._valid(None)
    assert not store._valid(5)


# ---- _stale --------------------------------------------------------------------------------------------------------
def test_stale_names_the_first_changed_input(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_text("1")
    b.write_text("2")
    c.write_bytes(b"quota")
    entry = replace(2, ((str(a), True, store._stat_key(str(a))), (str(b), True, store._stat_key(str(b)))))
    entry = entry[:3] + (((str(c), b"quota"), (str(tmp_path / "none"), None)),) + entry[4:]
    assert store._stale(entry) is None
    c.write_bytes(b"quota2")
    assert store._stale(entry) == str(c)
    b.write_text("22")
    assert store._stale(entry) == str(b)
    a.unlink()
    assert store._stale(entry) == str(a)


def test_stale_compares_a_directory_by_identity_when_unlisted(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    unlisted = replace(2, ((str(d), False, store._stat_key(str(d), False)),))[:3] + ((),) + ENTRY[4:]
    listed = replace(2, ((str(d), True, store._stat_key(str(d), True)),))[:3] + ((),) + ENTRY[4:]
    os.utime(d, ns=(1, 1))  # its times move (an entry added), not what it is
    assert store._stale(unlisted) is None and store._stale(listed) == str(d)


# ---- where the entries live ----------------------------------------------------------------------------------------
def test_private_dir_ok_is_mine_a_directory_and_no_group_or_other_bits(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    assert store._private_dir_ok(str(d))
    for mode in (0o710, 0o701, 0o750, 0o705):
        os.chmod(d, mode)
        assert not store._private_dir_ok(str(d)), oct(mode)
    os.chmod(d, 0o700)
    f = tmp_path / "f"
    f.write_text("")
    os.chmod(f, 0o600)
    assert not store._private_dir_ok(str(f)) and not store._private_dir_ok(str(tmp_path / "none"))
    os.symlink(d, tmp_path / "l")
    assert not store._private_dir_ok(str(tmp_path / "l"))  # lstat: a link is not the directory


@as_root
def test_private_dir_ok_refuses_another_owner(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    os.chown(d, 64131, 0)
    assert not store._private_dir_ok(str(d))


@as_root
def test_roots_cache_is_in_its_runtime_dir(tmp_path: Path) -> None:
    env = {"HOSTTUNE_RUNTIME_DIR": str(tmp_path / "rt"), "XDG_RUNTIME_DIR": str(tmp_path)}
    assert store.cache_dir(env) == str(tmp_path / "rt" / "cache")


def test_a_user_takes_a_private_absolute_xdg_runtime_dir_else_the_cache_dir(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    uid = 64132  # a user (as root here, the user branch needs another euid; xdg is made that user's)
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    cache = tmp_path / "cache"
    if os.geteuid() == 0:
        os.chown(xdg, uid, uid)
    else:
        uid = os.geteuid()
    monkeypatch.setattr(store.os, "geteuid", lambda: uid)
    env = {"XDG_RUNTIME_DIR": str(xdg), "XDG_CACHE_HOME": str(cache), "HOME": str(tmp_path)}
    assert store.cache_dir(env) == str(xdg / "hosttune")
    os.chmod(xdg, 0o755)
    assert store.cache_dir(env) == str(cache / "hosttune")
    os.chmod(xdg, 0o700)
    assert store.cache_dir(dict(env, XDG_RUNTIME_DIR="xdg")) == str(cache / "hosttune")  # relative: not taken
    assert store.cache_dir(dict(env, XDG_RUNTIME_DIR="")) == str(cache / "hosttune")


def test_usable_dir_wants_the_folder_private(tmp_path: Path) -> None:
    d = tmp_path / "rt" / "cache"
    d.mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "rt", 0o700)
    os.chmod(d, 0o750)
    assert store._usable_dir(str(d)) == f"{d} is missing or not private to this user"
    assert store._usable_dir(str(tmp_path / "none")) == f"{tmp_path / 'none'} is missing or not private to this user"


@as_root
def test_roots_runtime_dir_must_be_private_too(tmp_path: Path) -> None:
    rt = tmp_path / "rt"
    d = rt / "cache"
    d.mkdir(parents=True)
    os.chmod(d, 0o700)
    os.chmod(rt, 0o755)
    assert store._usable_dir(str(d)) == f"{rt} is not private to root"
    os.chmod(rt, 0o700)
    # a moved runtime directory passes the trust rule with every directory above it: tmp_path's are root's
    assert store._usable_dir(str(d)) is None


@as_root
def test_a_moved_runtime_dir_under_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    top = tmp_path / "open"
    top.mkdir()
    os.chmod(top, 0o777)  # no sticky bit: anyone can swap rt
    d = top / "rt" / "cache"
    d.mkdir(parents=True)
    os.chmod(top / "rt", 0o700)
    os.chmod(d, 0o700)
    why = store._usable_dir(str(d))
    assert why is not None and str(top) in why


@as_root
def test_the_default_runtime_dir_skips_the_trust_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hosttune import trust
    from hosttune.policy import dirs

    rt = tmp_path / "rt"
    d = rt / "cache"
    d.mkdir(parents=True)
    os.chmod(rt, 0o700)
    os.chmod(d, 0o700)
    monkeypatch.setattr(dirs, "RUNTIME", str(rt))
    monkeypatch.setattr(trust, "problem", lambda *a, **k: (None, "walked"))
    assert store._usable_dir(str(d)) is None
    monkeypatch.setattr(dirs, "RUNTIME", "/run/hosttune")
    assert store._usable_dir(str(d)) == "walked"


# ---- _store --------------------------------------------------------------------------------------------------------
def names(folder: Path) -> List[str]:
    return sorted(os.listdir(folder))


def test_store_writes_a_private_entry_load_takes_back(tmp_path: Path) -> None:
    folder = tmp_path / "home" / "cache" / "hosttune"
    folder.parent.mkdir(parents=True, mode=0o700)
    path = str(folder / ("a" * 32))
    store._store(path, ENTRY)
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert store.load(path) == ENTRY


def test_store_writes_nothing_over_the_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "c" / "hosttune"
    folder.parent.mkdir(mode=0o700)
    monkeypatch.setattr(execcache, "MAX_ENTRY_BYTES", len(marshal.dumps(ENTRY)) - 1)
    store._store(str(folder / ("a" * 32)), ENTRY)
    assert names(folder) == []
    monkeypatch.setattr(execcache, "MAX_ENTRY_BYTES", len(marshal.dumps(ENTRY)))
    store._store(str(folder / ("a" * 32)), ENTRY)
    assert names(folder) == ["a" * 32]


def test_store_prunes_the_oldest_beyond_max_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "c" / "hosttune"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent, 0o700)
    monkeypatch.setattr(execcache, "MAX_ENTRIES", 3)
    for i, n in enumerate("bcd"):
        p = write(folder / (n * 32))
        os.utime(p, ns=(10 ** 9 * (i + 1), 10 ** 9 * (i + 1)))  # b oldest
    (folder / "short").write_text("")  # not an entry's name: never counted nor pruned
    store._store(str(folder / ("e" * 32)), ENTRY)  # 4 > 3: b goes
    assert names(folder) == ["c" * 32, "d" * 32, "e" * 32, "short"]
    monkeypatch.setattr(execcache, "MAX_ENTRIES", 4)
    store._store(str(folder / ("f" * 32)), ENTRY)  # 4 == 4: nothing goes
    assert len(names(folder)) == 5


def test_store_refuses_a_folder_others_can_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    folder = tmp_path / "c" / "hosttune"
    folder.mkdir(parents=True)
    os.chmod(folder.parent, 0o700)
    os.chmod(folder, 0o777)
    store._store(str(folder / ("a" * 32)), ENTRY)
    assert names(folder) == []
    assert "hosttune: exec cache: not recorded" in capfd.readouterr().err


def test_store_explains_what_it_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    folder = tmp_path / "c" / "hosttune"
    folder.parent.mkdir(mode=0o700)
    path = str(folder / ("a" * 32))
    store._store(path, ENTRY)
    assert f"hosttune: exec cache: recorded {path}\n" in capfd.readouterr().err


@as_root
def test_root_stores_only_under_a_trusted_runtime_parent(tmp_path: Path) -> None:
    top = tmp_path / "open"
    top.mkdir()
    os.chmod(top, 0o777)
    path = top / "rt" / "cache" / ("a" * 32)
    store._store(str(path), ENTRY)
    assert not (top / "rt").exists()  # nothing made before the rule passed
    good = tmp_path / "rt" / "cache" / ("a" * 32)
    store._store(str(good), ENTRY)
    assert store.load(str(good)) == ENTRY
    assert stat.S_IMODE(os.stat(tmp_path / "rt").st_mode) == 0o700


def test_mtime_of_a_missing_path_is_zero(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("")
    os.utime(f, ns=(5, 7))
    assert store._mtime(str(f)) == 7 and store._mtime(str(tmp_path / "none")) == 0


def test_load_closes_what_it_opened(tmp_path: Path) -> None:
    good = write(tmp_path / "e")
    bad = write(tmp_path / "b", mode=0o644)
    before = sorted(os.listdir("/proc/self/fd"))
    assert store.load(good) == ENTRY and store.load(bad) is None
    assert sorted(os.listdir("/proc/self/fd")) == before
