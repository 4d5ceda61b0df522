"""Loading a profile as root (hosttune/profile/load.py, issue 11 and 22): another local user must not steer what
hosttune does as root through a profile, a `base:` or a profile's `env:`, however the profile is reached; YAML
costs and error messages are bounded."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from _profilehelp import ELF_SO, JEMALLOC, needs_root, one_error_line, root_dir, write_profile
from _synthhost import hosttune
from conftest import REPO, OtherUser
from conftest import run_cli as run

from hosttune import fsio, profile, trust
from hosttune.errors import UserError


def payload(other: OtherUser) -> str:
    """What a hostile profile carries: their own directory on PYTHONPATH and their own library as the allocator."""
    return (f"base: throughput\nallocator: jemalloc\nallocator_path: {other.home}/lib/libjemalloc.so.2\n"
            f"env:\n  PYTHONPATH: {other.home}/py\n")


# ---- item 2: profiles written by another user, reached every way -----------------------------------------------------

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
    """A directory like /tmp (sticky, everyone's): made here, so the test does not depend on the host's /tmp (a
    practice mutant once left it 0755)."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    f = shared / "p.yaml"
    f.write_text("base: throughput\n")
    os.chmod(f, 0o644)
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert "chmod" not in msg  # not "chmod go-w" on a directory everyone shares
    assert "to a directory only root can write" in msg and str(f) in msg


def test_an_ordinary_users_own_profile_and_env_load_unchanged(other_user: OtherUser,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """As an ordinary user nothing changes: their own files, their own PYTHONPATH (they can only hurt themselves)."""
    f = other_user.write("mine.yaml", f"base: throughput\nenv:\n  PYTHONPATH: {other_user.home}/py\n"
                                      "  BASH_ENV: ./rc\n")
    monkeypatch.setattr(os, "geteuid", lambda: other_user.uid)
    p = profile.load(str(f))
    assert p.env["PYTHONPATH"] == f"{other_user.home}/py" and p.env["BASH_ENV"] == "./rc"


# ---- item 11: a profile's env: as root -------------------------------------------------------------------------------
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


# ---- issue 22 item 8: the env: rule is an allow-list as root ---------------------------------------------------------
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
    from hosttune.launch.rank import checked_env

    value = code_loading_value(name, other_user)
    f = env_profile(tmp_path, f"  {name}: {json.dumps(value)}\n")
    msg = str(pytest.raises(UserError, profile.load, str(f)).value)
    assert f"{f}:3" in msg and f"env {name}" in msg and "\n" not in msg, msg
    assert ("while running as root" if name == "GIT_SSH_COMMAND" else "owned by nobody") in msg, msg
    with pytest.raises(trust.Untrusted, match=f"the launcher's plan: (refusing )?env {name}"):
        checked_env({name: value, "OMP_NUM_THREADS": "4"}, {}, {})


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


def test_ld_audit_in_a_profile_env_is_refused(tmp_path: Path) -> None:
    """LD_AUDIT loads code into every rank like LD_PRELOAD, outside the allocator check: a profile may not set it."""
    lib = tmp_path / "libaudit.so"
    lib.write_bytes(ELF_SO)
    profile = write_profile(tmp_path / "conf" / "p.yaml", f"env:\n  LD_AUDIT: {lib}\n")
    done = hosttune("env", "--profile", str(profile), "--json")
    assert done.returncode == 2, done.stdout
    assert "LD_AUDIT" in done.stderr and "Traceback" not in done.stderr
    assert str(lib) not in done.stdout


# ---- item 8 and duplicate keys: YAML through yamlio ------------------------------------------------------------------

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
