"""Pins for hosttune/plan/env.py's pure parts: torch version parsing, which allocator-config name(s) a torch reads,
the caller's own allocator config, LD_PRELOAD lists and the preload checks that refuse a path (issue 21)."""

import pytest

from hosttune.plan import env as penv

A, C = "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"


@pytest.mark.parametrize("text, expected", [
    ("2.10.0+cu128", (2, 10, True)), ("2.10.0a0+git1234", (2, 10, False)), ("2.9", (2, 9, True)),
    ("2.11.0rc1", (2, 11, False)), ("2.12.0.dev20250101", (2, 12, False)), ("2.10.0b1", (2, 10, False)),
    ("2.8.0+rc", (2, 8, True)), (" 3.0.1", (3, 0, True)), ("x2.1", None), ("", None), (None, None), ("2", None),
])
def test_version(text: object, expected: object) -> None:
    assert penv._version(text) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("version, expected", [
    ("2.10.0", (A,)), ("2.11.0+cu130", (A,)), ("3.0.0", (A,)), ("2.9.1", (C,)), ("1.13.1", (C,)),
    ("2.10.0a0+git1", (A, C)), ("2.11.0a0", (A,)), ("2.9.0a0", (C,)), (None, (A, C)), ("nightly", (A, C)),
])
def test_alloc_conf_names(version: object, expected: tuple) -> None:
    assert penv.alloc_conf_names(version) == expected  # type: ignore[arg-type]
    assert penv.ALLOC_CONF_NAMES == (A, C)


def test_alloc_conf_env_without_the_callers() -> None:
    env, why = penv._alloc_conf_env("expandable_segments:True", "2.9.1", {}, False)
    assert env == {C: "expandable_segments:True"}
    assert why == [f"allocator config: {C}=expandable_segments:True (torch 2.9.1)"]
    env, why = penv._alloc_conf_env("x", None, {}, False)
    assert env == {A: "x", C: "x"} and why == [f"allocator config: {A}, {C}=x (torch version unknown: both names, "
                                               "same value)"]


def test_alloc_conf_env_the_caller_keeps_the_name_they_used() -> None:
    env, why = penv._alloc_conf_env("x", "2.11.0", {C: "mine"}, False)
    assert env == {C: "x"} and why == []
    env, why = penv._alloc_conf_env("x", "2.9.1", {A: "mine"}, False)
    assert env == {A: "x"} and len(why) == 1 and f"from {C} only, so your {A} may have no effect" in why[0]
    env, why = penv._alloc_conf_env("x", "2.11.0", {A: "mine"}, False)
    assert env == {A: "x"} and why == []


def test_alloc_conf_env_override_sets_torchs_name_and_every_name_the_caller_set() -> None:
    env, why = penv._alloc_conf_env("x", "2.11.0", {C: "mine"}, True)
    assert env == {A: "x", C: "x"} and list(env) == [A, C]
    env, _ = penv._alloc_conf_env("x", "2.11.0", {}, True)
    assert env == {A: "x"}


@pytest.mark.parametrize("value, expected", [
    ("/a.so:/b.so", ["/a.so", "/b.so"]), ("/a.so /b.so\t/c", ["/a.so", "/b.so", "/c"]), ("::/a::", ["/a"]),
    ("", []), (None, []),
])
def test_preload_list(value: object, expected: list) -> None:
    assert penv._preload_list(value) == expected  # type: ignore[arg-type]


def test_users_malloc_is_the_first_malloc_library_by_base_name() -> None:
    assert penv._users_malloc(["/x/libfoo.so", "/usr/lib/libtcmalloc.so.4", "/y/libjemalloc.so.2"]) == \
        "/usr/lib/libtcmalloc.so.4"
    assert penv._users_malloc(["/libjemalloc/libfoo.so"]) is None and penv._users_malloc([]) is None


def test_same_library(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    real = tmp_path / "lib.so"
    real.write_bytes(b"")
    (tmp_path / "link.so").symlink_to(real)
    assert penv._same_library("libx.so", "libx.so", "/")
    assert penv._same_library(str(real), str(tmp_path / "link.so"), "/")
    assert penv._same_library(str(real), str(tmp_path / "link.so"), "")
    assert not penv._same_library(str(real), str(tmp_path / "link.so"), "/captured")  # never resolved in a root
    assert not penv._same_library("lib.so", str(real), "/")
    monkeypatch.chdir(tmp_path)  # a bare name is a search, never this directory's file of that name
    assert not penv._same_library("lib.so", str(real), "/") and not penv._same_library(str(real), "lib.so", "/")


@pytest.mark.parametrize("path, why", [
    ("", "is not an absolute path"), ("lib/x.so", "is not an absolute path"),
    ("/a b.so", "contains a separator LD_PRELOAD cannot carry"), ("/a:b.so", "contains a separator"),
    ("/a\tb.so", "contains a separator"),
])
def test_preload_library_refuses_what_ld_preload_cannot_carry(path: str, why: str) -> None:
    got, reason = penv._preload_library(path, "/")
    assert got is None and why in (reason or "")


def test_preload_library_under_a_root_must_stay_inside_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    got, reason = penv._preload_library("/usr/lib/nothing-here.so", str(tmp_path))
    assert got is None and reason
