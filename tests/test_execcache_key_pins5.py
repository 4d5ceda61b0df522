"""hosttune/execcache/key.py and the refusals of hosttune/execcache/replay.py in-process (issue 21): the bounded
no-follow read of a small file, what a path's stat key holds (a directory nobody listed by identity only; a link and
its target, except into /proc, /sys, /dev), the times a key carries, the argument forms the cache serves, the bounded
tree of names, what the call digest depends on, and a replay that gives up before doing anything (an exe gone, a
node out of range, an affinity the kernel refuses)."""

import os
from pathlib import Path
from typing import Any, List

import pytest

from hosttune import execcache
from hosttune.execcache import key as K
from hosttune.execcache import replay as RP


# ---- _read ---------------------------------------------------------------------------------------------------------
def test_read_is_bounded_with_the_limit_inclusive(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 100)
    assert K._read(str(f), 100) == b"x" * 100
    assert K._read(str(f), 99) is None
    assert K._read(str(f)) == b"x" * 100
    big = tmp_path / "big"
    big.write_bytes(b"y" * 70000)
    assert K._read(str(big)) is None and K._read(str(big), 70000) == b"y" * 70000


def test_read_refuses_links_dirs_fifos_and_missing(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"data")
    os.symlink(f, tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert K._read(str(tmp_path / "link")) is None
    assert K._read(str(tmp_path)) is None
    assert K._read(str(tmp_path / "fifo")) is None  # O_NONBLOCK: no writer, no wait
    assert K._read(str(tmp_path / "none")) is None
    assert K._read(str(f)) == b"data"


def test_read_of_an_empty_file_is_empty(tmp_path: Path) -> None:
    (tmp_path / "e").write_bytes(b"")
    assert K._read(str(tmp_path / "e")) == b""


def test_read_a_kernel_file_that_comes_in_pieces() -> None:
    text = K._read("/proc/self/status", 1 << 20)  # procfs says size 0: read until the end
    assert text is not None and text.startswith(b"Name:") and text.endswith(b"\n") and b"Cpus_allowed_list:" in text
    assert K._read("/proc/self/status", 10) is None


# ---- _stat_key -----------------------------------------------------------------------------------------------------
def test_stat_key_of_a_file(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    st = os.lstat(f)
    assert K._stat_key(str(f)) == (st.st_dev, st.st_ino, 3, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid,
                                   st.st_gid)
    assert K._stat_key(str(f), False) == K._stat_key(str(f))  # only a directory is keyed by identity
    assert K._stat_key(str(tmp_path / "none")) is None


def test_stat_key_of_an_unlisted_directory_is_its_identity(tmp_path: Path) -> None:
    st = os.lstat(tmp_path)
    assert K._stat_key(str(tmp_path), False) == (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid)
    assert len(K._stat_key(str(tmp_path), True) or ()) == 8


def test_stat_key_of_a_link_holds_its_target(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    os.symlink(f, tmp_path / "l")
    own = os.lstat(tmp_path / "l")
    k = K._stat_key(str(tmp_path / "l"))
    assert k is not None and len(k) == 16 and k[:2] == (own.st_dev, own.st_ino) and k[8:] == K._stat_key(str(f))
    os.symlink(tmp_path / "none", tmp_path / "dangling")
    d = K._stat_key(str(tmp_path / "dangling"))
    assert d is not None and len(d) == 9 and d[-1] == -1
    os.symlink("/proc/self/mounts", tmp_path / "mtab")
    assert len(K._stat_key(str(tmp_path / "mtab")) or ()) == 8  # into /proc: the link only
    os.symlink(tmp_path, tmp_path / "dl")
    assert len(K._stat_key(str(tmp_path / "dl"), False) or ()) == 8 + 5  # a link to an unlisted directory


def test_times_of_each_key_shape() -> None:
    assert K._times((1, 2, 3, 40, 50, 6, 7, 8)) == [40, 50]
    assert K._times((1, 2, 3, 40, 50, 6, 7, 8, 9, 10, 11, 120, 130, 14, 15, 16)) == [40, 50, 120, 130]
    assert K._times((1, 2, 3, 40, 50, 6, 7, 8, -1)) == [40, 50]
    assert K._times((1, 2, 3, 4, 5)) == [0]  # a directory's identity: no times


# ---- parse_args ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,want", [
    (["--", "true"], (None, False, ["true"])),
    (["true", "--no-bind"], (None, False, ["true", "--no-bind"])),
    (["--no-bind", "--", "-x"], (None, True, ["-x"])),
    (["--profile", "p", "run", "a"], ("p", False, ["run", "a"])),
    (["--profile=q", "--no-bind", "run"], ("q", True, ["run"])),
    (["-", "x"], (None, False, ["-", "x"])),
    (["--profile"], None), (["--profile", "p"], None), (["--"], None), ([], None),
    (["--dry-run", "true"], None), (["--verify", "--", "true"], None), (["-h"], None), (["--no-bindx", "t"], None),
])
def test_parse_args(args: List[str], want: Any) -> None:
    assert K.parse_args(args) == want


# ---- _tree ---------------------------------------------------------------------------------------------------------
def test_tree_is_sorted_bounded_in_depth_and_does_not_follow_links(tmp_path: Path) -> None:
    tmp_path = tmp_path / "t"
    (tmp_path / "b" / "c" / "d" / "e" / "f").mkdir(parents=True)
    (tmp_path / "a").write_text("")
    os.symlink(tmp_path / "b", tmp_path / "link")
    assert K._tree(str(tmp_path)) == ["a", "b", "b/c", "b/c/d", "b/c/d/e", "link"]
    assert K._tree(str(tmp_path), depth=1) == ["a", "b", "link"]
    assert K._tree(str(tmp_path / "none")) == ["\0missing"]


def test_tree_budget_counts_every_name(tmp_path: Path) -> None:
    tmp_path = tmp_path / "t"
    tmp_path.mkdir()
    for n in "abcde":
        (tmp_path / n).mkdir()
        (tmp_path / n / "x").write_text("")
    assert K._tree(str(tmp_path), budget=[3]) == ["a", "a/x", "b"]
    budget = [100]
    K._tree(str(tmp_path), budget=budget)
    assert budget == [90]


# ---- digest --------------------------------------------------------------------------------------------------------
def test_digest_depends_on_args_env_and_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"A": "1", "B": "2"}
    base = K.digest(["--", "true"], env)
    assert len(base) == 32 and K.digest(["--", "true"], dict(env)) == base
    assert K.digest(["--", "false"], env) != base
    assert K.digest(["--", "true"], {"A": "1", "B": "3"}) != base
    assert K.digest(["--", "true"], {"A": "1"}) != base
    assert K.digest(["--", "true"], {"A": "1", "B": "2", "C": ""}) != base
    assert K.digest(["--", "true"], {"A": "1=B", "B": "2"}) != K.digest(["--", "true"], {"A": "1", "B=B": "2"})
    assert K.digest(["--", "true"], {b"A": b"1", b"B": b"2"}) == base  # bytes and str keys alike
    assert K.digest(["--", "true"], {"A": "9", "B": "2"}) != base  # the first variable counts too
    # the separators: a value that spells the next variable, or a name that swallows the "=", is another call
    assert K.digest(["--", "true"], {"A": "1B=2"}) != K.digest(["--", "true"], {"A": "1", "B": "2"})
    assert K.digest(["--", "true"], {"AB": "1"}) != K.digest(["--", "true"], {"A": "B1"})
    monkeypatch.chdir(tmp_path)
    assert K.digest(["--", "true"], env) != base


def test_digest_depends_on_the_host_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    f = tmp_path / "boot_id"
    f.write_text("one")
    monkeypatch.setattr(execcache, "_HOST_FILES", (str(f),))
    one = K.digest(["true"], {})
    f.write_text("two")
    two = K.digest(["true"], {})
    f.unlink()
    gone = K.digest(["true"], {})
    assert len({one, two, gone}) == 3


def test_digest_depends_on_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    base = K.digest(["true"], {})
    monkeypatch.setattr(execcache, "VERSION", "hosttune-exec-cache/0")
    assert K.digest(["true"], {}) != base


def test_blake2b_is_personalised() -> None:
    import hashlib

    h = K._blake2b()
    h.update(b"x")
    assert h.digest() == hashlib.blake2b(b"x", digest_size=32, person=b"hosttune-exec").digest()


# ---- replay's refusals and the memory policy -----------------------------------------------------------------------
ENTRY = (execcache.VERSION, b"d" * 32, (), (), "/bin/true", ("true",), (), (), None, None, "", False)


def entry(**kw: Any) -> Any:
    fields = ["magic", "dig", "stats", "contents", "exe", "argv", "env_set", "env_del", "cpus", "mempol", "err",
              "marker"]
    return tuple(kw.get(f, v) for f, v in zip(fields, ENTRY))


def test_replay_gives_up_on_an_exe_it_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "noexec").write_text("")
    os.chmod(tmp_path / "noexec", 0o644)
    assert RP._replay(entry(exe=str(tmp_path / "noexec")), "/x") is False
    assert RP._replay(entry(exe=str(tmp_path)), "/x") is False  # a directory is X_OK but not a program
    assert RP._replay(entry(exe=str(tmp_path / "none")), "/x") is False


@pytest.mark.skipif(os.uname().machine not in execcache._NR, reason="no syscall numbers for this arch")
def test_memory_policy_round_trip_and_refusals() -> None:
    now = RP.get_mempolicy()
    assert now is not None and now[0] == 0  # MPOL_DEFAULT here
    assert RP._set_mempolicy((0,)) is True and RP.get_mempolicy() == now
    assert RP._set_mempolicy((2, execcache._NODE_BITS)) is False  # a node past the mask
    assert RP._set_mempolicy((2, -1)) is False
    assert RP._replay(entry(mempol=(2, execcache._NODE_BITS)), "/x") is False
    assert RP.get_mempolicy() == now


def test_no_syscall_numbers_no_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execcache, "_NR", {})
    assert RP.get_mempolicy() is None and RP._set_mempolicy((0,)) is False


def test_replay_gives_up_on_an_affinity_the_kernel_refuses() -> None:
    before = os.sched_getaffinity(0)
    assert RP._replay(entry(cpus=(100000,)), "/x") is False
    assert os.sched_getaffinity(0) == before


def test_fast_exec_off_or_other_forms_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    looked: List[Any] = []
    monkeypatch.setattr(RP, "cache_dir", lambda: looked.append(1))
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "0")
    RP.fast_exec(["--", "true"])
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "1")
    RP.fast_exec(["--dry-run", "--", "true"])
    assert looked == []


def test_fast_exec_without_a_place_explains(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    monkeypatch.setattr(RP, "cache_dir", lambda: None)
    if os.uname().machine in execcache._NR:
        RP.fast_exec(["--", "true"])
        assert capfd.readouterr().err == "hosttune: exec cache: no private place for it (no HOME)\n"


def test_explain_only_when_asked(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "1")
    execcache.explain("quiet")
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    execcache.explain("loud")
    assert capfd.readouterr().err == "hosttune: exec cache: loud\n"


def test_the_recorder_names_are_lazy() -> None:
    from hosttune.execcache import recorder

    assert execcache.Recorder is recorder.Recorder and execcache._audit is recorder._audit
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        execcache.nope  # noqa: B018
