"""Root safety of profiles, plans and `hosttune env`/`profile` (issue 11): another local user must not steer what
hosttune does as root through a profile, a `base:`, a profile's `env:` or an allocator library; YAML costs are
bounded; text output never carries raw control characters and is the same bytes whether piped or not."""

import dataclasses
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conftest import REPO, OtherUser, Result
from conftest import run_cli as run

from hosttune import fsio, plan, profile, trust
from hosttune.commands.env import shell_quote
from hosttune.errors import UserError
from hosttune.facts import Allocators, Cpu, Facts, Numa, NumaNode

IS_ROOT = os.geteuid() == 0
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
needs_root = pytest.mark.skipif(not IS_ROOT, reason="the root trust rule applies when running as root")
needs_jemalloc = pytest.mark.skipif(not os.path.exists(JEMALLOC), reason="libjemalloc2 not installed")


def one_error_line(res: Result) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune: error: "), res.stderr
    return lines[0]


def small_facts(**over: Any) -> Facts:
    kw: Any = dict(
        hostname="box",
        cpu=Cpu(online=(0, 1, 2, 3), logical=4, physical=4, cores=((0,), (1,), (2,), (3,)), allowed_cpus=(0, 1, 2, 3)),
        numa=Numa(nodes=(NumaNode(0, (0, 1), 1000), NumaNode(1, (2, 3), 1000)), allowed_mems=(0, 1)),
        allocators=Allocators(),
    )
    kw.update(over)
    return Facts(**kw)


def payload(other: OtherUser) -> str:
    """What a hostile profile carries: their own directory on PYTHONPATH and their own library as the allocator."""
    return (f"base: throughput\nallocator: jemalloc\nallocator_path: {other.home}/lib/libjemalloc.so.2\n"
            f"env:\n  PYTHONPATH: {other.home}/py\n")


def root_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    return d


# ---- item 2: profiles written by another user, reached every way ---------------------------------------------

WAYS = ["HOSTTUNE_PROFILE", "HOSTTUNE_PROFILE_PATH", "XDG_CONFIG_HOME", "HOSTTUNE_ETC_DIR", "--profile",
        "base-by-path", "base-by-name"]


def plant(way: str, other: OtherUser, tmp_path: Path) -> Tuple[Dict[str, str], List[str], Path]:
    """(environment, extra arguments, the other user's file) that make root's hosttune reach their profile."""
    text = payload(other)
    if way == "HOSTTUNE_PROFILE":
        f = other.write("evil.yaml", text)
        return {"HOSTTUNE_PROFILE": str(f)}, [], f
    if way == "HOSTTUNE_PROFILE_PATH":  # their `throughput` overrides the packaged one
        f = other.write("profiles/throughput.yaml", text)
        return {"HOSTTUNE_PROFILE_PATH": str(f.parent)}, ["--profile", "throughput"], f
    if way == "XDG_CONFIG_HOME":  # kept by `sudo -E`/`su`: their generated profile would be the one in use
        f = other.write(".config/hosttune/profile.yaml", text)
        return {"XDG_CONFIG_HOME": str(other.home / ".config")}, [], f
    if way == "HOSTTUNE_ETC_DIR":
        f = other.write("etc/profile.yaml", text)
        return {"HOSTTUNE_ETC_DIR": str(f.parent)}, [], f
    if way == "--profile":
        f = other.write("evil.yaml", text)
        return {}, ["--profile", str(f)], f
    mine = root_dir(tmp_path, "mine")
    if way == "base-by-path":  # root's own profile, whose base is the user's file
        f = other.write("evil.yaml", text)
        (mine / "top.yaml").write_text(f"base: {f}\n")
        return {}, ["--profile", str(mine / "top.yaml")], f
    assert way == "base-by-name"
    f = other.write("profiles/evilbase.yaml", text)
    (mine / "top.yaml").write_text("base: evilbase\n")
    return {"HOSTTUNE_PROFILE_PATH": str(f.parent)}, ["--profile", str(mine / "top.yaml")], f


@needs_root
@pytest.mark.parametrize("command", ["env", "exec"])
@pytest.mark.parametrize("way", WAYS)
def test_root_refuses_another_users_profile_reached_any_way(way: str, command: str, other_user: OtherUser,
                                                            tmp_path: Path, hwloc_tree: Any) -> None:
    env, extra, planted = plant(way, other_user, tmp_path)
    root = str(hwloc_tree("16amd64-8n2c"))
    args = (["env", "--root", root] + extra if command == "env"
            else ["exec", "--dry-run", "--root", root] + extra + ["--", "python", "x.py"])
    res = run(args, env=env)
    line = one_error_line(res)
    assert f"refusing profile {planted}" in line
    assert "owned by nobody" in line and "fix: move it (after checking its contents) to a directory only root" in line
    assert str(other_user.home / "py") not in res.stdout  # nothing of theirs was planned


@needs_root
def test_root_refuses_another_users_profile_through_the_real_command(other_user: OtherUser, tmp_path: Path,
                                                                      hwloc_tree: Any) -> None:
    evil = other_user.write("evil.yaml", payload(other_user))
    env = dict(os.environ, HOSTTUNE_PROFILE=str(evil), PYTHONPATH=str(REPO))
    root = str(hwloc_tree("16amd64-8n2c"))
    for argv in (["env", "--root", root], ["exec", "--dry-run", "--json", "--root", root, "--", "python", "x.py"]):
        proc = subprocess.run([sys.executable, "-m", "hosttune", *argv], capture_output=True, text=True, env=env,
                              timeout=120, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and f"refusing profile {evil}" in lines[0] and "Traceback" not in proc.stderr


@needs_root
def test_root_refuses_a_root_owned_profile_in_a_directory_the_other_user_owns(other_user: OtherUser) -> None:
    # The file is root's, but its directory is theirs: they can swap it for another file at any time.
    d = other_user.home / "sub"
    other_user.run(["mkdir", "-m", "755", str(d)])
    f = d / "p.yaml"
    f.write_text("base: throughput\n")
    os.chmod(f, 0o644)
    with pytest.raises(trust.Untrusted) as exc:
        profile.load(str(f))
    assert f"its directory {other_user.home}" in str(exc.value) and "owned by nobody" in str(exc.value)


@needs_root
def test_root_refuses_a_profile_reached_through_another_users_link(other_user: OtherUser, tmp_path: Path) -> None:
    good = root_dir(tmp_path, "good") / "p.yaml"
    good.write_text("base: throughput\n")
    os.chmod(good, 0o644)
    link = other_user.home / "link.yaml"
    other_user.run(["ln", "-s", str(good), str(link)])
    assert profile.load(str(link)).name == "link"  # resolved, the file and its directories are root's: fine
    # their directory holding the real file is what matters: a profile that resolves into it is refused
    theirs = other_user.write("real.yaml", "base: throughput\n")
    mylink = root_dir(tmp_path, "links") / "p.yaml"
    mylink.symlink_to(theirs)
    assert f"(-> {theirs})" in str(pytest.raises(UserError, profile.load, str(mylink)).value)


@needs_root
def test_profile_is_read_by_the_resolved_name_that_was_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    real = root_dir(tmp_path, "real") / "p.yaml"
    real.write_text("base: throughput\nthreads: 3\n")
    os.chmod(real, 0o644)
    link = root_dir(tmp_path, "links") / "p.yaml"
    link.symlink_to(real)
    reads: List[Tuple[str, bool]] = []
    orig = fsio.read_bounded

    def spy(path: Any, limit: int, *, nofollow: bool = False) -> bytes:
        reads.append((os.fspath(path), nofollow))
        return orig(path, limit, nofollow=nofollow)

    monkeypatch.setattr(fsio, "read_bounded", spy)
    assert profile.load(str(link)).threads == 3
    assert (str(real), True) in reads and not any(p == str(link) for p, _n in reads)


@needs_root
def test_refusal_for_a_profile_in_tmp_says_move_it_not_chmod_tmp(tmp_path: Path) -> None:
    f = Path("/tmp") / f"hosttune-test-{os.getpid()}-{tmp_path.name}.yaml"
    f.write_text("base: throughput\n")
    os.chmod(f, 0o644)
    try:
        msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    finally:
        f.unlink()
    assert "chmod go-w /tmp" not in msg
    assert "to a directory only root can write" in msg and str(f) in msg


def test_an_ordinary_users_own_profile_and_env_load_unchanged(other_user: OtherUser,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """As an ordinary user nothing changes: their own files, their own PYTHONPATH (they can only hurt themselves)."""
    f = other_user.write("mine.yaml", f"base: throughput\nenv:\n  PYTHONPATH: {other_user.home}/py\n"
                                      "  BASH_ENV: ./rc\n")
    monkeypatch.setattr(os, "geteuid", lambda: other_user.uid)
    p = profile.load(str(f))
    assert p.env["PYTHONPATH"] == f"{other_user.home}/py" and p.env["BASH_ENV"] == "./rc"


# ---- item 11: a profile's env: as root -------------------------------------------------------------------------


def env_profile(tmp_path: Path, entries: str) -> Path:
    d = root_dir(tmp_path, "profiles")
    f = d / "p.yaml"
    f.write_text("base: throughput\nenv:\n" + entries)
    os.chmod(f, 0o644)
    return f


@needs_root
@pytest.mark.parametrize("name", ["PYTHONPATH", "LD_LIBRARY_PATH", "GCONV_PATH", "PATH", "PYTHONSTARTUP", "BASH_ENV"])
def test_root_refuses_path_valued_env_naming_another_users_files(name: str, other_user: OtherUser,
                                                                  tmp_path: Path) -> None:
    target = other_user.write("payload/x.py", "import os\n")
    f = env_profile(tmp_path, f"  {name}: {target.parent}\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert f"{f}:3" in msg and f"env {name} entry" in msg and "owned by nobody" in msg and "\n" not in msg


@needs_root
@pytest.mark.parametrize("value", ["relative/dir", "/usr/lib::/usr/bin", "r" * 100000, "/usr/lib::" + "x" * 100000])
def test_root_refuses_relative_and_empty_path_entries(value: str, tmp_path: Path) -> None:
    f = env_profile(tmp_path, f"  PYTHONPATH: '{value}'\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert "refusing env PYTHONPATH" in msg and len(msg) < 300 + len(str(f))


@needs_root
@pytest.mark.parametrize("name", ["PYTHONBREAKPOINT", "NODE_OPTIONS", "PERL5OPT", "LD_BIND_NOT"])
def test_root_refuses_code_valued_env(name: str, tmp_path: Path) -> None:
    f = env_profile(tmp_path, f"  {name}: 'os.system'\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert f"{f}:3" in msg and f"refusing env {name} while running as root" in msg


@needs_root
def test_root_keeps_path_valued_env_of_roots_own_directories_resolved(tmp_path: Path) -> None:
    f = env_profile(tmp_path, "  PATH: /usr/bin:/bin\n  PYTHONHASHSEED: '0'\n")
    p = profile.load(str(f))
    assert p.env["PATH"] == ":".join(os.path.realpath(x) for x in ("/usr/bin", "/bin"))
    assert p.env["PYTHONHASHSEED"] == "0"


# ---- issue 22 item 8: the env: rule is an allow-list as root --------------------------------------------------


def code_loading_value(name: str, other: OtherUser) -> str:
    """What the other user would set `name` to: a library, a command or a directory of their own."""
    if name == "GIT_SSH_COMMAND":
        key = other.write("ssh/key", "not a key\n")
        return f"ssh -i {key} -o ProxyCommand={other.home}/ssh/run"
    if name == "TMPDIR":
        other.write("tmp/torchinductor_root/.keep", "")
        return str(other.home / "tmp")
    return str(other.write(f"lib/lib{name.lower()}.so", "\x7fELF not really\n", 0o755))


@needs_root
@pytest.mark.parametrize("name", ["CUDA_INJECTION64_PATH", "OMP_TOOL_LIBRARIES", "KMP_TOOL_LIBRARIES",
                                  "NCCL_NET_PLUGIN", "GIT_SSH_COMMAND", "TMPDIR"])
def test_root_refuses_code_loading_env_naming_another_users_files(name: str, other_user: OtherUser,
                                                                  tmp_path: Path) -> None:
    """Each of these passed the old deny-list unchanged as root: a library, a command or a cache directory (torch's
    inductor and Triton kernels live under $TMPDIR) of the other user's would run as root. Refused when the profile
    is loaded, and again by the shim/hook before a rank starts (a plan that did not come from a checked profile)."""
    from hosttune.shim import checked_env

    value = code_loading_value(name, other_user)
    f = env_profile(tmp_path, f"  {name}: {json.dumps(value)}\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert f"{f}:3" in msg and f"env {name}" in msg and "\n" not in msg, msg
    assert ("while running as root" if name == "GIT_SSH_COMMAND" else "owned by nobody") in msg, msg
    with pytest.raises(trust.Untrusted, match=f"the launcher's plan: (refusing )?env {name}"):
        checked_env({name: value, "OMP_NUM_THREADS": "4"}, {})


@needs_root
def test_root_refuses_an_unknown_env_value_that_names_a_path(tmp_path: Path) -> None:
    f = env_profile(tmp_path, "  SOME_TOOL_PLUGIN: 'mode=fast,path=/usr/lib/x.so'\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert f"{f}:3: refusing env SOME_TOOL_PLUGIN=" in msg and "names a path" in msg and "\n" not in msg


@needs_root
def test_root_refuses_a_library_variable_given_a_bare_name(tmp_path: Path) -> None:
    """A bare name is found wherever the loader searches: the library itself must be named."""
    f = env_profile(tmp_path, "  NCCL_NET_PLUGIN: aws-ofi\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert "refusing env NCCL_NET_PLUGIN entry 'aws-ofi' as root: not an absolute path" in msg


@needs_root
def test_root_keeps_benign_env_and_roots_own_libraries_and_directories(tmp_path: Path) -> None:
    libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    if not os.path.exists(libc):
        pytest.skip("no x86_64 libc at the Debian path")
    tmp = root_dir(tmp_path, "roots-tmp")
    f = env_profile(tmp_path, f"  OMP_NUM_THREADS: '4'\n  NCCL_DEBUG: INFO\n  CUBLAS_WORKSPACE_CONFIG: ':4096:8'\n"
                              f"  HF_ENDPOINT: https://hf.example/models\n  TMPDIR: {tmp}\n"
                              f"  CUDA_INJECTION64_PATH: {libc}\n  NCCL_NET_PLUGIN: none\n")
    env = profile.load(str(f)).env
    assert env["OMP_NUM_THREADS"] == "4" and env["NCCL_DEBUG"] == "INFO" and env["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert env["HF_ENDPOINT"] == "https://hf.example/models" and env["TMPDIR"] == os.path.realpath(tmp)
    assert env["CUDA_INJECTION64_PATH"] == libc and env["NCCL_NET_PLUGIN"] == "none"


@pytest.mark.parametrize("euid", [0, 1000])
def test_ld_audit_in_a_profile_is_refused_always(euid: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "audit.yaml"
    f.write_text(f"base: throughput\nenv:\n  LD_AUDIT: {JEMALLOC}\n")
    os.chmod(f, 0o644)
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert f"{f}:3: env.LD_AUDIT: LD_AUDIT is managed by hosttune" in msg


# ---- item 4: LD_PRELOAD libraries --------------------------------------------------------------------------------


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


# ---- item 8 and duplicate keys: YAML through yamlio --------------------------------------------------------------

LAUGHS = "\n".join(
    ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    + ["threads: *i", ""]
)


def test_billion_laughs_under_threads_is_one_short_line(tmp_path: Path) -> None:
    f = tmp_path / "laughs.yaml"
    f.write_text(LAUGHS)
    assert len(LAUGHS) < 1000
    res = run(["profile", "show", str(f)])
    line = one_error_line(res)
    assert len(line) < 400 and "alias" in line and f"{f}:" in line


def test_duplicate_key_is_refused_naming_both_lines(tmp_path: Path) -> None:
    f = tmp_path / "dup.yaml"
    f.write_text("base: throughput\nthreads: 2\nbinding: numa\nthreads: 8\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert f"{f}:4: duplicate key 'threads' (first at line 2)" in msg


@pytest.mark.parametrize("text", [
    "threads: '" + "x" * 100000 + "'\n",
    "allocator: " + "y" * 100000 + "\n",
    "env:\n  " + "K" * 100000 + ": v\n",
    "base: " + "b" * 100000 + "\n",
    "dataloader:\n  num_workers: [" + ", ".join(["1"] * 20000) + "]\n",
])
def test_error_messages_are_bounded_whatever_the_value(text: str, tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    f.write_text(text)
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert len(msg) < 400 + len(str(f)) * 2 and "\n" not in msg


# ---- Low items: terminal output, pipes, umask, many ranks ------------------------------------------------------


def test_profile_show_never_prints_raw_control_characters(tmp_path: Path) -> None:
    f = tmp_path / "esc.yaml"
    f.write_text('base: throughput\nname: "x\\e[2J\\e]0;pwned\\a"\nsummary: "s\\x9b31m \\u202egnp"\n'
                 'env:\n  A: "\\e[31mred"\n')
    res = run(["profile", "show", str(f)])
    assert res.returncode == 0, res.stderr
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", res.stdout)
    assert "x\\x1b[2J" in res.stdout and "\\u202e" in res.stdout


def test_env_export_quotes_control_characters_and_round_trips_in_bash(tmp_path: Path) -> None:
    values = {"ESC": "\x1b[31mred\x1b[0m", "BEL": "a\x07b", "NL": "one\ntwo\n", "CR": "x\ry", "C1": "\x9bX",
              "BIDI": "abc\u202edef", "TAB": "a\tb", "QUOTE": "it's \\ $x `id`", "PLAIN": "caf\u00e9"}
    for v in values.values():
        q = shell_quote(v)
        assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", q), q
    f = tmp_path / "ctl.yaml"
    f.write_text(json.dumps({"base": "throughput", "env": values}))  # JSON is YAML
    out = run(["env", "--profile", str(f)])
    assert out.returncode == 0, out.stderr
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out.stdout)
    script = 'eval "$1" || exit 9; for k in ' + " ".join(values) + '; do printf "%s=%s\\0" "$k" "${!k}"; done'
    proc = subprocess.run(["bash", "-c", script, "bash", out.stdout], capture_output=True, timeout=60,
                          env=dict(os.environ, LC_ALL="C"))
    assert proc.returncode == 0, proc.stderr
    got = dict(item.split("=", 1) for item in proc.stdout.decode("utf-8").split("\0") if item)
    assert got == values


def test_piped_env_output_is_the_plan_byte_for_byte(tmp_path: Path) -> None:
    """Through a real pipe (click would strip ANSI there): every export evaluates to the plan's value."""
    f = tmp_path / "ansi.yaml"
    f.write_text(json.dumps({"base": "throughput", "env": {"COLOR": "\x1b[1mbold\x1b[0m", "PLAIN": "x"}}))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "hosttune", "env", "--profile", str(f), "--local-rank", "0",
            "--local-world-size", "2"]
    text = subprocess.run(base, capture_output=True, timeout=120, env=env)
    js = subprocess.run(base + ["--json"], capture_output=True, timeout=120, env=env)
    assert text.returncode == 0 and js.returncode == 0, (text.stderr, js.stderr)
    planned = json.loads(js.stdout)["env"]
    exports = [ln for ln in text.stdout.decode().splitlines() if ln.startswith("export ")]
    assert [ln.split("=", 1)[0][len("export "):] for ln in exports] == sorted(planned)
    for ln in exports:
        key, quoted = ln[len("export "):].split("=", 1)
        assert quoted == shell_quote(planned[key])
    back = subprocess.run(["bash", "-c", 'eval "$1"; printf %s "$COLOR"', "b", text.stdout.decode()],
                          capture_output=True, timeout=60)
    assert back.stdout.decode() == planned["COLOR"] == "\x1b[1mbold\x1b[0m"
    # the in-process runner (not a terminal either) gives the same bytes as the real pipe
    assert run(base[3:]).stdout == text.stdout.decode()


def test_profile_generate_under_umask_000_makes_private_parents(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "profile.yaml"
    code = ("import os; os.umask(0); from hosttune.cli import main; "
            f"main(['profile', 'generate', '-o', {str(out)!r}])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    for d in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o755, d
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert [p.name for p in out.parent.iterdir()] == ["profile.yaml"]


def test_many_ranks_share_one_node_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher resolving each of N ranks in turn lays the node out once, not N times (4,000 ranks planned
    in quadratic time took 24 s)."""
    calls = []
    orig = plan._layout

    def counting(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return orig(*a, **k)

    monkeypatch.setattr(plan, "_layout", counting)
    facts, prof = small_facts(), profile.load("throughput")
    n = 300
    plans = [plan.resolve(facts, prof, r, n, environ={}) for r in range(n)]
    assert len(calls) == 1
    assert [p.local_rank for p in plans] == list(range(n))
    # the same answer a separate process (a rank's shim) gets when it plans only its own rank
    assert plan.resolve(dataclasses.replace(facts), prof, 7, n, environ={}).to_dict() == plans[7].to_dict()
    # another rank count or environment is laid out afresh
    assert plan.resolve(facts, prof, 0, 2, environ={}).cpus == (0, 1)
    assert len(calls) == 3
