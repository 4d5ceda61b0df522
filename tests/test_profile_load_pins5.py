"""Pins for hosttune/profile/load.py (issue 21, round 5): where a message points (file:line of the key, of its
section, or the file), unknown keys and names with and without a suggestion, the size, read and UTF-8 refusals,
the parse cache, how names and paths are told apart, the `base:` chain (cycles, depth 32, missing bases, a profile
extending its own name) and how the chain merges (name, summary, provenance with its reasons)."""

import importlib
import os
from pathlib import Path
from typing import List

import pytest

from hosttune.errors import UserError

pload = importlib.import_module("hosttune.profile.load")  # the package's `load` is the function


@pytest.fixture()
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "profiles"
    d.mkdir()
    monkeypatch.setenv("HOSTTUNE_PROFILE_PATH", str(d))
    return d


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o644)
    return path


def test_where_points_at_the_key_its_section_or_the_file() -> None:
    p = Path("/x/p.yaml")
    raw = pload.parse_text("env:\n  A: x\nthreads: 2\n", p)
    assert raw.where("A", "env") == "/x/p.yaml:2"
    assert raw.where("B", "env") == "/x/p.yaml:1"  # not in the section: the section's line
    assert raw.where("threads") == "/x/p.yaml:3"
    assert raw.where("nope") == "/x/p.yaml" and raw.where("B", "tune") == "/x/p.yaml"


def test_a_bad_value_names_file_line_and_key() -> None:
    with pytest.raises(UserError) as e:
        pload.parse_text("summary: s\nthreads: lots\n", Path("/x/p.yaml"))
    assert str(e.value).startswith("/x/p.yaml:2: threads: ")
    with pytest.raises(UserError) as e:
        pload.parse_text("dataloader:\n  num_workers: -3\n", Path("/x/p.yaml"))
    assert str(e.value).startswith("/x/p.yaml:2: dataloader.num_workers: ")


def test_unknown_keys_get_a_suggestion_or_the_known_list() -> None:
    with pytest.raises(UserError) as e:
        pload.parse_text("thredas: 2\n", Path("/x/p.yaml"))
    assert str(e.value) == "/x/p.yaml:1: thredas: unknown key (did you mean 'threads'?)"
    with pytest.raises(UserError) as e:
        pload.parse_text("zzzzqqq: 2\n", Path("/x/p.yaml"))
    assert str(e.value).startswith("/x/p.yaml:1: zzzzqqq: unknown key (known: ") and "threads" in str(e.value)
    with pytest.raises(UserError) as e:
        pload.parse_text("dataloader:\n  num_workerz: 2\n", Path("/x/p.yaml"))
    assert str(e.value) == "/x/p.yaml:2: dataloader.num_workerz: unknown key (did you mean 'num_workers'?)"
    long = "threads" + "s" * 94  # 101 characters: no suggestion, however close
    with pytest.raises(UserError) as e:
        pload.parse_text(f"{long}: 2\n", Path("/x/p.yaml"))
    assert "(known: " in str(e.value) and "did you mean" not in str(e.value)


def test_a_key_is_shown_whole_up_to_60_characters() -> None:
    k60, k61 = "k" * 60, "k" * 61
    with pytest.raises(UserError) as e:
        pload.parse_text(f"{k60}: 1\n", Path("/p.yaml"))
    assert f": {k60}: unknown key" in str(e.value)
    with pytest.raises(UserError) as e:
        pload.parse_text(f"{k61}: 1\n", Path("/p.yaml"))
    assert k61 not in str(e.value)


def test_size_read_and_encoding_refusals_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pload, "MAX_PROFILE_BYTES", 16)
    ok = write(tmp_path / "ok.yaml", "threads: 2 #xxxx")  # 16 bytes: at the limit
    assert pload.read_file(ok).data == {"threads": 2}
    big = write(tmp_path / "big.yaml", "threads: 2 #xxxxx")  # 17 bytes
    with pytest.raises(UserError) as e:
        pload.read_file(big)
    assert str(e.value) == f"{big}: profile is larger than 16 bytes"
    with pytest.raises(UserError) as e:
        pload.read_file(tmp_path / "none.yaml")
    assert str(tmp_path / "none.yaml") in str(e.value) and "No such file or directory" in str(e.value)
    monkeypatch.setattr(pload.trust, "is_root", lambda: False)  # as a user: no trust check first, the read says it
    with pytest.raises(UserError) as e:
        pload.read_file(tmp_path / "none.yaml")
    assert str(e.value) == f"{tmp_path / 'none.yaml'}: cannot read profile: No such file or directory"
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"summary: \xff\n")
    bad.chmod(0o644)
    with pytest.raises(UserError) as e:
        pload.read_file(bad)
    assert str(e.value) == f"{bad}: not UTF-8 text (byte 9)"


def test_the_same_bytes_are_parsed_once_new_bytes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache: dict = {}
    monkeypatch.setattr(pload, "_CACHE", cache)
    p = write(tmp_path / "a.yaml", "threads: 2\n")
    first = pload.read_file(p)
    assert pload.read_file(p) is first and list(cache) == [(str(p), b"threads: 2\n")]
    write(p, "threads: 3\n")
    assert pload.read_file(p).data == {"threads": 3} and len(cache) == 2
    for i in range(255):
        cache[(f"/fake/{i}", b"")] = first
    assert len(cache) == 257
    write(p, "threads: 4\n")
    pload.read_file(p)
    assert len(cache) == 1 and pload.read_file(p).data == {"threads": 4}


@pytest.mark.parametrize("s, expected", [
    ("a/b", True), ("x.yaml", True), ("x.yml", True), ("throughput", False), ("x.yamlx", False), ("yaml", False),
])
def test_looks_like_path(s: str, expected: bool) -> None:
    assert pload._looks_like_path(s) is expected


@pytest.mark.parametrize("name", ["", ".hidden", "a b", "a/b", "x" * 201, "é"])
def test_not_a_profile_name(name: str) -> None:
    with pytest.raises(UserError, match="is not a profile name"):
        pload._find(name)


def test_unknown_names_suggest_the_closest(user_dir: Path) -> None:
    with pytest.raises(UserError) as e:
        pload._find("throughputt")
    assert str(e.value) == "unknown profile 'throughputt'; did you mean 'throughput'?"
    with pytest.raises(UserError) as e:
        pload._find("q" * 200)  # a valid name of the longest length: looked up, unknown
    assert str(e.value).startswith("unknown profile ") and "; known: " in str(e.value) and "throughput" in str(e.value)


def test_a_profile_extending_its_own_name_gets_the_one_below(user_dir: Path) -> None:
    mine = write(user_dir / "throughput.yaml", "base: throughput\nthreads: 3\n")
    assert pload._find("throughput") == mine
    below = pload._find("throughput", before=mine.resolve())
    assert below != mine and below.name == "throughput.yaml"
    p = pload.load("throughput")
    assert p.threads == 3 and p.chain == (str(below), str(mine)) and p.name == "throughput"
    # `before` that is not a candidate: every candidate but one resolving to it
    other = write(user_dir / "x.yaml", "threads: 1\n")
    assert pload._find("throughput", before=other.resolve()) == mine


def test_a_base_cycle_names_the_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", "base: ./b.yaml\n")
    b = write(tmp_path / "b.yaml", "summary: b\nbase: ./a.yaml\n")
    with pytest.raises(UserError) as e:
        pload.load(str(a))
    assert str(e.value) == f"{b}:2: base: inheritance cycle: {a} -> {b} -> {a}"


def chain_of(tmp_path: Path, n: int) -> Path:
    for i in range(n):
        write(tmp_path / f"p{i}.yaml", f"base: ./p{i + 1}.yaml\n" if i < n - 1 else "threads: 7\n")
    return tmp_path / "p0.yaml"


def test_a_chain_of_33_files_loads_34_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert pload.load(str(chain_of(a, 33))).threads == 7
    with pytest.raises(UserError) as e:
        pload.load(str(chain_of(b, 34)))
    assert str(e.value) == f"{b / 'p32.yaml'}:1: base: inheritance chain deeper than 32"


def test_missing_bases_are_named(tmp_path: Path, user_dir: Path) -> None:
    p = write(tmp_path / "c.yaml", "summary: c\nbase: ./nope.yaml\n")
    with pytest.raises(UserError) as e:
        pload.load(str(p))
    assert str(e.value) == f"{p}:2: base: unknown base './nope.yaml': no such file"
    p = write(tmp_path / "d.yaml", "base: nosuchprofile\n")
    with pytest.raises(UserError) as e:
        pload.load(str(p))
    assert str(e.value).startswith(f"{p}:1: base: unknown base 'nosuchprofile' (unknown profile 'nosuchprofile'")
    base = write(tmp_path / "abs.yaml", "threads: 5\n")
    assert pload.load(str(write(tmp_path / "e.yaml", f"base: {base}\n"))).threads == 5
    with pytest.raises(UserError) as e:
        pload.load_text("base: nosuchprofile\n", "/x/t.yaml")
    assert str(e.value).startswith("/x/t.yaml:1: base: unknown base 'nosuchprofile' (")


def test_merge_name_summary_and_provenance(tmp_path: Path) -> None:
    base = write(tmp_path / "base.yaml", "summary: from base\nthreads: 2\nmemory_policy: false\n"
                                         "reasons:\n  threads: two is enough\n")
    child = write(tmp_path / "child.yaml", "base: ./base.yaml\nbinding: none\n")
    p = pload.load(str(child))
    assert p.name == "child" and p.summary == "from base" and p.memory_policy == "none"
    assert p.provenance["threads"] == f"{base}:2: two is enough"
    assert p.provenance["binding"] == f"{child}:2" and "base" not in p.provenance and "reasons" not in p.provenance
    assert dict(p.reasons) == {"threads": "two is enough"} and p.source == str(child)
    named = write(tmp_path / "n.yaml", "name: other\nsummary: mine\nbase: ./base.yaml\n")
    p = pload.load(str(named))
    assert p.name == "other" and p.summary == "mine"
    assert pload.load_text("threads: 4\n", "/x/given.yaml").name == "given"
    assert pload.load_text("base: throughput\nthreads: 4\n").chain[-1] == "<string>"


def test_load_names_and_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_dir: Path) -> None:
    with pytest.raises(UserError, match="^empty profile name$"):
        pload.load("")
    with pytest.raises(UserError) as e:
        pload.load(str(tmp_path / "none.yaml"))
    assert str(e.value) == f"{tmp_path / 'none.yaml'}: no such profile file"
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "plainfile", "threads: 6\n")
    assert pload.load("plainfile").threads == 6  # a file here that no profile is named
    write(tmp_path / "debug", "threads: 6\n")
    assert pload.load("debug").debug is True  # a profile of that name wins over the file


def test_active_loads_the_configured_profile_and_needs_facts_for_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTTUNE_ETC_DIR", str(tmp_path / "etc"))
    monkeypatch.delenv("HOSTTUNE_PROFILE", raising=False)
    calls: List[int] = []
    assert pload.active("debug", lambda: calls.append(1)).name == "debug" and calls == []  # type: ignore
    with pytest.raises(TypeError):
        pload.active(None, None, environ={})


def test_active_generates_the_default_for_the_facts_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hosttune.facts import Cpu, Facts

    monkeypatch.setenv("HOSTTUNE_ETC_DIR", str(tmp_path / "etc"))
    monkeypatch.delenv("HOSTTUNE_PROFILE", raising=False)
    f = Facts(hostname="h1", cpu=Cpu(online=(0, 1), logical=2, physical=2, cores=((0,), (1,)), allowed_cpus=(0, 1)))
    calls: List[int] = []

    def detect() -> Facts:
        calls.append(1)
        return f

    p = pload.active(None, detect, environ={})
    assert p.source == "<generated>" and p.name.endswith("@h1") and calls == [1]
    assert pload.active(None, f, environ={}).fingerprint == f.hardware_fingerprint()


IS_ROOT = os.geteuid() == 0


@pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")
def test_as_root_a_profile_others_can_write_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path / "gw.yaml", "threads: 2\n")
    p.chmod(0o664)
    with pytest.raises(UserError):
        pload.read_file(p)
    p.chmod(0o644)
    assert pload.read_file(p).data == {"threads": 2}


@pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")
def test_as_root_every_env_entry_of_the_merged_profile_is_checked(tmp_path: Path) -> None:
    p = write(tmp_path / "e.yaml", "env:\n  A: plain\n  PYTHONPATH: relative/dir\n")
    with pytest.raises(UserError, match="refusing env PYTHONPATH"):
        pload.load(str(p))
    p = write(tmp_path / "f.yaml", "env:\n  PYTHONPATH: relative/dir\n  A: plain\n")
    with pytest.raises(UserError, match="refusing env PYTHONPATH"):
        pload.load(str(p))
