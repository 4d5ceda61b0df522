"""Pins for hosttune/trust.py (issue 21, practice round HTOP8): the fix line of every `problem()` answer, word for
word, and the private-directory refusals whole.

`fix_for` is what a root user reads after "refusing ...; fix:"; earlier tests held only a phrase of two of its
branches. `owners` is passed explicitly: {root, me} makes every directory above a tmp_path trusted (root owns / and
/tmp, the test user its own tmp dirs); an owners set holding neither makes / itself a foreign ancestor."""

import os
import stat
from pathlib import Path

import pytest

from hosttune import trust

MOVE = "move it (after checking its contents) to a directory only root can write, such as /etc/hosttune"


@pytest.fixture
def tree(tmp_path: Path):
    f = tmp_path / "file.yaml"
    f.write_text("")
    d = tmp_path / "dir"
    d.mkdir()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    inside = shared / "lib.so"
    inside.write_text("")
    return str(f), str(d), str(shared), str(inside), str(tmp_path / "missing")


def test_fix_for_every_branch_word_for_word(tree) -> None:
    f, d, shared, inside, missing = tree
    ours = frozenset({0, os.geteuid()})
    foreign = frozenset({max(ours) + 4242})  # owns nothing: / is then a foreign ancestor of everything
    cases = [
        (("is not a directory (it is a regular file)", f, ours),
         f"a directory is needed at {f}, not a regular file: move it aside and create the directory "
         f"(mkdir -m 755 {f})"),
        (("is not a directory (it is a symbolic link)", f, ours),
         f"a directory is needed at {f}, not a symbolic link: move it aside and create the directory "
         f"(mkdir -m 755 {f})"),
        (("is not a regular file (it is a directory)", d, ours),
         f"a regular file is needed at {d}, not a directory: name a file owned by root that only root can write"),
        ((f"{f} is owned by bob", f, foreign), MOVE),
        ((f"{d} is owned by bob", d, foreign),
         f"use a directory only root can write instead of {d} (another user owns a directory above it and can put "
         f"another one in its place)"),
        ((f"{shared} is writable by others", shared, ours),
         f"use a directory only root can write, not {shared} (everybody may create entries there)"),
        ((f"its directory {shared} is writable by others", inside, ours), f"{MOVE} (not {shared})"),
        ((f"its directory {d} is owned by bob", f, ours), f"chown root: {d} && chmod go-w {d}"),
        ((f"its directory {d} is writable by its group", f, ours), f"chmod go-w {d}"),
        ((f"{f} is owned by bob", f, ours), f"check its contents, then: chown root: {f} && chmod go-w {f}"),
        ((f"{d} is owned by bob", d, ours), f"chown root: {d} && chmod go-w {d}"),
        ((f"{f} is writable by group and others", f, ours), f"chmod go-w {f}"),
        ((f"{d} is writable by its group", d, ours), f"chmod go-w {d}"),
        (("something else", f, ours), f"use a root-owned file instead of {f}"),
        (("something else", d, ours), f"use a root-owned directory instead of {d}"),
        (("does not exist", missing, foreign), f"use a root-owned file instead of {missing}"),
    ]
    got = [trust.fix_for(*args) for args, _ in cases]
    assert got == [want for _, want in cases]


def test_private_dir_refusals_whole(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("")
    with pytest.raises(trust.Untrusted) as exc:
        trust.private_dir(f)
    assert str(exc.value) == (f"refusing {f}: expected a private directory, found something else (a link or a file)")
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o755)
    with pytest.raises(trust.Untrusted) as exc:
        trust.private_dir(d)
    me = trust._owner_name(os.geteuid())
    assert str(exc.value) == (f"refusing {d}: owned by {me} with mode 755; expected owned by {me} with mode 700")
    d.chmod(0o700)
    assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700
    assert trust.private_dir(d) == str(d)
    with pytest.raises(trust.Untrusted) as exc:
        trust.private_dir(tmp_path / "gone", create=False)
    assert str(exc.value) == f"private directory {tmp_path / 'gone'}: No such file or directory"


_EMPTY = "as root: an empty entry means the current directory; remove it"
_CODE = "while running as root: its value is code or changes how programs load code; remove it from the profile"


@pytest.mark.skipif(os.geteuid() != 0, reason="the root trust rule applies when running as root")
@pytest.mark.parametrize("name,value,want", [
    ("PYTHONPATH", "/usr::/var", f"p.yaml: refusing env PYTHONPATH='/usr::/var' {_EMPTY}"),
    ("PATH", ":/usr/bin", f"p.yaml: refusing env PATH=':/usr/bin' {_EMPTY}"),
    ("LD_LIBRARY_PATH", "/usr:", f"p.yaml: refusing env LD_LIBRARY_PATH='/usr:' {_EMPTY}"),
    ("TMPDIR", "/usr::/var", "= /usr:/var"),
    ("OMP_NUM_THREADS", "4", "= 4"),
    ("NCCL_DEBUG", "INFO", "= INFO"),
    ("NCCL_NET_PLUGIN", " None ", "=  None "),
    ("PYTHONSTARTUP", "/usr", "= /usr"),
    ("FOO", "/tmp/x", "p.yaml: refusing env FOO='/tmp/x' as root: the value names a path, and hosttune does not know "
                      "what FOO does with it (another user's file there could run as root); remove it from the "
                      "profile"),
    ("LD_PRELOAD", "libjemalloc.so.2", "p.yaml: refusing env LD_PRELOAD entry 'libjemalloc.so.2' as root: not an "
                                       "absolute path (a bare name is looked up wherever the loader searches: name "
                                       "the library itself)"),
    ("TMPDIR", "tmp", "p.yaml: refusing env TMPDIR entry 'tmp' as root: not an absolute path"),
    ("PYTHONINSPECT", "1", f"p.yaml: refusing env PYTHONINSPECT {_CODE}"),
    ("LD_BIND_NOW", "1", f"p.yaml: refusing env LD_BIND_NOW {_CODE}"),
    ("PATH", "/usr:/nonexistent-htop8", "p.yaml: env PATH entry /nonexistent-htop8 does not exist (No such file or "
                                        "directory)"),
])
def test_check_env_value_as_root_whole(name: str, value: str, want: str) -> None:
    try:
        got = "= " + trust.check_env_value(name, value, "p.yaml")
    except trust.Untrusted as exc:
        got = str(exc)
    assert got == want
