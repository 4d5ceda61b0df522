"""Pins of mutation round 4 (issue 21) on hosttune/commands/env.py: the shell word of every kind of value (plain,
needs quotes, control characters at each range edge, non-UTF-8 bytes), comments that cannot end early, and the
rank variables read from the environment."""

import subprocess

import pytest

from hosttune.commands import env as E
from hosttune.errors import UserError


@pytest.mark.parametrize("value, word", [
    ("abc", "abc"), ("a b", "'a b'"), ("it's", "'it'\"'\"'s'"), ("", "''"), ("caf\u00e9", "'caf\u00e9'"),
    ("a\nb", "$'a\\012b'"), ("\x1b[31m", "$'\\033[31m'"), ("\t", "$'\\011'"), ("\x00", "$'\\000'"),
    ("\x1f", "$'\\037'"), ("\x7f", "$'\\177'"), ("\x9f", "$'\\302\\237'"), ("\x80", "$'\\302\\200'"),
    ("\u202a", "$'\\342\\200\\252'"), ("\u202e", "$'\\342\\200\\256'"), ("\u2066", "$'\\342\\201\\246'"),
    ("\u2069", "$'\\342\\201\\251'"), ("\udcff", "$'\\377'"), ("caf\u00e9\n", "$'caf\\303\\251\\012'"),
    ("\\'\n", "$'\\\\\\'\\012'"), (" ~\n", "$' ~\\012'"),
])
def test_shell_quote(value: str, word: str) -> None:
    assert E.shell_quote(value) == word


@pytest.mark.parametrize("value", ["\u00a0", "\u2029", "\u2065", "\u206a", "\u202f", "~"])
def test_just_outside_the_ranges_is_plain_shlex(value: str) -> None:
    assert not E.shell_quote(value).startswith("$'")


def test_bash_reads_every_word_back() -> None:
    values = ["a\nb", "\x1b[31m", "it's", "\\'\n", "caf\u00e9\n", "\u202e", "\x7f"]
    script = "".join(f"v{i}={E.shell_quote(v)}; printf '%s\\0' \"$v{i}\"\n" for i, v in enumerate(values))
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True, env={"LC_ALL": "C"}).stdout
    assert out.split(b"\0")[:-1] == [v.encode() for v in values]


def test_comment_is_one_line() -> None:
    assert E._comment("a\nb\x1b \udcff") == "# a\\nb\\x1b \\udcff"
    assert E._comment("plain") == "# plain"


def test_int_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert E._int_env("LOCAL_RANK") is None
    monkeypatch.setenv("LOCAL_RANK", "")
    assert E._int_env("LOCAL_RANK") is None
    monkeypatch.setenv("LOCAL_RANK", " 3 ")
    assert E._int_env("LOCAL_RANK") == 3
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert E._int_env("LOCAL_RANK") == 0
    for bad in ("-1", "x", "1.5"):
        monkeypatch.setenv("LOCAL_RANK", bad)
        with pytest.raises(UserError, match=rf"^\$LOCAL_RANK='{bad}' is not a number$"):
            E._int_env("LOCAL_RANK")
