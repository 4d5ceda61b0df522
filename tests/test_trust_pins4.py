"""Pins of mutation round 4 (issue 21) on hosttune/trust.py's pure rules: what counts as a value naming a path,
which variables are code, the message cut, and the two meanings of "mine" at each mode bit."""

import os
import stat

import pytest

from hosttune import trust as T


@pytest.mark.parametrize("value, names", [
    ("4", False), ("INFO", False), (":4096:8", False), ("a/b", False), ("1/2", False), ("a.b/c", False),
    ("~", False), ("-/x", False), ("http://h/x", False), ("HTTPS://h/x", False),
    ("/x", True), ("x=/y", True), ("~/a", True), ("./a", True), ("../a", True), ("~bob/a", True), (" /x", True),
    ('"/x', True), ("a:/b", True), ("a,/b", True), ("see https://a/b and /etc", True), ("x.../a", False),
])
def test_names_a_path(value: str, names: bool) -> None:
    assert T.names_a_path(value) is names


@pytest.mark.parametrize("name, code", [
    ("LD_BIND_NOW", True), ("LD_FOO", True), ("LD_PRELOAD", False), ("LD_LIBRARY_PATH", False), ("LD_AUDIT", False),
    ("PYTHONBREAKPOINT", True), ("NODE_OPTIONS", True), ("GIT_CONFIG_KEY_0", True), ("GIT_CONFIG_VALUE_3", True),
    ("BASH_FUNC_ls%%", True), ("PS4", True), ("IFS", True), ("PAGER", True), ("LESSOPEN", True),
    ("OMP_NUM_THREADS", False), ("PATH", False), ("PYTHONPATH", False), ("BASH_ENV", False), ("GIT_CONFIG", False),
])
def test_is_code_env(name: str, code: bool) -> None:
    assert T.is_code_env(name) is code


def test_tables_overlap_as_documented() -> None:
    assert T.LIBRARY_ENV <= T.PATH_LIST_ENV
    assert not (T.CODE_ENV & T.PATH_LIST_ENV)
    assert T._PLUGIN_OFF <= T.LIBRARY_ENV
    assert {"LD_PRELOAD", "LD_AUDIT", "CUDA_INJECTION64_PATH", "NCCL_NET_PLUGIN"} <= T.LIBRARY_ENV
    assert {"TMPDIR", "HOME", "CC", "CXX", "TORCHINDUCTOR_CACHE_DIR", "PYTHONSTARTUP"} <= T.PATH_LIST_ENV
    assert "PYTHONPATH" in T.PYTHON_START_ENV and "PYTHONINSPECT" in T.PYTHON_START_ENV


def test_short() -> None:
    assert T._short("a" * 58) == repr("a" * 58)
    assert T._short("a" * 59) == "'" + "a" * 56 + "..."
    assert T._short("x\ny") == "'x\\ny'"
    assert T._short("abcdef", 5) == "'a..."
    assert T._short("b" * 10_000, 1000) == repr("b" * 4000)[:997] + "..."


def _st(uid: int, mode: int) -> os.stat_result:
    return os.stat_result((stat.S_IFREG | mode, 1, 1, 1, uid, 0, 0, 0, 0, 0))


def test_private_to_me_and_written_by_me_alone() -> None:
    me, other = os.geteuid(), os.geteuid() + 1
    assert T.private_to_me(_st(me, 0o700)) and T.private_to_me(_st(me, 0o600))
    for bit in (0o040, 0o020, 0o010, 0o004, 0o002, 0o001):
        assert not T.private_to_me(_st(me, 0o700 | bit)), oct(bit)
    assert not T.private_to_me(_st(other, 0o700))
    assert T.written_by_me_alone(_st(me, 0o755)) and T.written_by_me_alone(_st(me, 0o644))
    assert not T.written_by_me_alone(_st(me, 0o775)) and not T.written_by_me_alone(_st(me, 0o757))
    assert not T.written_by_me_alone(_st(other, 0o755))
