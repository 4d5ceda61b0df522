"""Pins for the exec start-up cache's key and entry checks, in process (issue 21's mutation run): each input of the
digest changed alone from the same call changes the digest, an edited or re-quota'd input is stale, and the entry
loader refuses what someone else could have planted. tests/test_exec_speed.py proves the same end to end through real
runs; these fail within a second on the exact line that broke."""

import marshal
import os
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from hosttune import execcache
from hosttune.execcache import key as keymod
from hosttune.execcache import recorder as recmod

PAST = 1_000_000_000  # a file written long ago: any edit changes its times


def _digest(args: Any = ("--", "true"), env: Optional[Dict[str, str]] = None) -> bytes:
    return execcache.digest(list(args), {"PATH": "/usr/bin:/bin", "HT_A": "one"} if env is None else env)


def test_the_same_call_has_the_same_digest() -> None:
    assert _digest() == _digest()


def test_argv_is_in_the_digest() -> None:
    assert _digest(("--", "true")) != _digest(("--", "false"))


def test_an_environment_value_is_in_the_digest_not_only_its_name() -> None:
    base = {"PATH": "/usr/bin:/bin", "HT_A": "one"}
    assert _digest(env=base) != _digest(env=dict(base, HT_A="two"))
    assert _digest(env=base) != _digest(env=dict(base, HT_B="one"))


def test_the_boot_id_bytes_are_in_the_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    boot = tmp_path / "boot_id"
    boot.write_text("2f1d6c3e-9a41-4b8e-8f0c-5d2a7e9b1c40\n")
    files = list(execcache._HOST_FILES)
    assert files[0].endswith("/boot_id")
    monkeypatch.setattr(execcache, "_HOST_FILES", (str(boot), *files[1:]))
    before = _digest()
    boot.write_text("7c0e9b2a-41d3-4f6a-9e8b-0a1c2d3e4f50\n")  # a reboot: same length
    assert _digest() != before


def test_the_cpuset_lines_of_proc_self_status_are_in_the_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    real = keymod._read
    status = (b"Name:\tpython3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\nVmRSS:\t1 kB\n")
    monkeypatch.setattr(keymod, "_read", lambda path, limit=65536: status if path == "/proc/self/status"
                        else real(path, limit))
    before = _digest()
    status = status.replace(b"Mems_allowed_list:\t0", b"Mems_allowed_list:\t1")
    assert _digest() != before
    vm = _digest()
    status = status.replace(b"VmRSS:\t1 kB", b"VmRSS:\t2 kB")  # not the cpuset: the same key
    assert _digest() == vm


def test_a_cgroup_file_is_recorded_by_its_bytes_and_a_changed_quota_is_stale(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    quota = tmp_path / "cpu.max"
    quota.write_text("max 100000\n")
    monkeypatch.setattr(execcache, "_CONTENT_ROOTS", (str(tmp_path) + "/",))
    rec = recmod.Recorder(["--", "true"], str(tmp_path / "entry"), b"d")
    rec.saw(str(quota))
    assert rec.contents == {str(quota)} and str(quota) not in rec.paths
    entry = (execcache.VERSION, b"d", (), ((str(quota), quota.read_bytes()),))
    assert execcache._stale(entry) is None
    quota.write_text("50000 100000\n")  # half a CPU: only its bytes tell
    assert execcache._stale(entry) == str(quota)


def test_an_edited_file_of_the_same_size_is_stale(tmp_path: Path) -> None:
    prof = tmp_path / "p.yaml"
    prof.write_text("env:\n  HT_MARK: one\n")
    os.utime(prof, (PAST, PAST))
    key = execcache._stat_key(str(prof))
    entry = (execcache.VERSION, b"d", ((str(prof), False, key),), ())
    assert execcache._stale(entry) is None
    prof.write_text("env:\n  HT_MARK: two\n")  # same size, same inode: only the times tell
    assert execcache._stat_key(str(prof)) != key
    assert execcache._stale(entry) == str(prof)


def test_no_bind_is_parsed_on_the_fast_path() -> None:
    assert execcache.parse_args(["--no-bind", "--", "true"]) == (None, True, ["true"])
    assert execcache.parse_args(["--profile", "p", "true"]) == ("p", False, ["true"])
    assert execcache.parse_args(["--dry-run", "--", "true"]) is None


def _entry_file(path: Path) -> Path:
    entry = (execcache.VERSION, b"d" * 32, (), (), "/bin/true", ("true",), (), (), None, None, "", False)
    path.write_bytes(marshal.dumps(entry))
    os.chmod(path, 0o600)
    return path


def test_a_private_single_link_entry_loads(tmp_path: Path) -> None:
    assert execcache.load(str(_entry_file(tmp_path / "e"))) is not None


def test_a_hard_linked_entry_is_refused(tmp_path: Path) -> None:
    entry = _entry_file(tmp_path / "e")
    os.link(entry, tmp_path / "planted")
    assert execcache.load(str(entry)) is None


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_an_entry_others_may_read_or_write_is_refused(tmp_path: Path, mode: int) -> None:
    entry = _entry_file(tmp_path / "e")
    os.chmod(entry, mode)
    assert execcache.load(str(entry)) is None


def test_a_link_to_an_entry_is_refused(tmp_path: Path) -> None:
    entry = _entry_file(tmp_path / "e")
    (tmp_path / "link").symlink_to(entry)
    assert execcache.load(str(tmp_path / "link")) is None


@pytest.mark.parametrize("mode,ok", [(0o700, True), (0o750, False), (0o705, False), (0o770, False)])
def test_only_a_private_cache_directory_is_used(tmp_path: Path, mode: int, ok: bool) -> None:
    d = tmp_path / "cache"
    d.mkdir()
    os.chmod(d, mode)
    assert execcache._private_dir_ok(str(d)) is ok


def test_the_keys_bounded_read_never_follows_a_link(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.write_text("x\n")
    (tmp_path / "l").symlink_to(target)
    assert execcache._read(str(target)) == b"x\n"
    assert execcache._read(str(tmp_path / "l")) is None


def test_the_cache_is_pruned_to_exactly_max_entries_newest_kept(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execcache, "MAX_ENTRIES", 2)
    folder = tmp_path / "runtime" / "cache"
    entry = (execcache.VERSION, b"d" * 32, (), (), "/bin/true", ("true",), (), (), None, None, "", False)
    names = [f"{i:032x}" for i in range(4)]
    for i, name in enumerate(names):
        execcache._store(str(folder / name), entry)
        os.utime(folder / name, (PAST + i, PAST + i))  # entry i is older than entry i + 1
    assert sorted(os.listdir(folder)) == names[2:]
