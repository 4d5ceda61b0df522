"""Root safety of the detector (issue 11): what `hosttune facts` (and doctor, which reads through it) runs, reads
and prints when root runs it on a box another user shares, or on a captured tree anybody could have made.

The other user is played by `nobody` (conftest `other_user`); hosttune runs as root in a subprocess, started the way
the installed entry point starts (its own sys.path holds its package, not the caller's directory; -E: the
environment we give is for the detector, not for hosttune's own interpreter)."""

import ast
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from conftest import REPO

from hosttune.cpulist import MAX_CPUS, parse_cpulist, parse_cpulist_checked, parse_cpumask, parse_cpumask_checked
from hosttune.detect import HostIO, collect, torchenv
from hosttune.detect.hostio import READ_LIMIT, child_env, trusted_path_dirs

ENTRY = f"import sys; sys.path[0] = {str(REPO)!r}; from hosttune.cli import main; main(sys.argv[1:])"
ELF = b"\x7fELF\x02\x01\x01" + b"\0" * 57
SECRET = "TOP-SECRET-0123456789-abcdefghijklmnopqrstuvwxyz"


def hosttune(*args: str, cwd: Optional[Path] = None, env: Optional[Dict[str, str]] = None,
             timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-E", "-c", ENTRY, *args], cwd=str(cwd) if cwd else None, env=env,
                          capture_output=True, text=True, timeout=timeout)


def facts_json(done: "subprocess.CompletedProcess[str]") -> Dict[str, Any]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    data: Dict[str, Any] = json.loads(done.stdout)
    return data


def planted(marker: Path, name: str) -> str:
    """Python that, if it ever runs, appends `name` to `marker` (a root-only file: only root could write it)."""
    return f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n"


def fake_torch_site(site: Path, version: str) -> Path:
    (site / "torch").mkdir(parents=True)
    (site / "torch/__init__.py").write_text("raise RuntimeError('the probe imported torch')\n")
    (site / "torch/version.py").write_text(f"__version__ = '{version}'\ncuda = None\n")
    return site


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    d = tmp_path / "markers"
    d.mkdir(mode=0o700)
    return d / "ran"


# ---- item 1: no interpreter started as root sees the caller's directory or a user's PYTHONPATH ----------------
def test_facts_as_root_in_another_users_directory_runs_none_of_their_modules(
        other_user: Any, tmp_path: Path, marker: Path) -> None:
    for name in ("json.py", "re.py", "os.py", "importlib/__init__.py", "importlib/util.py", "sitecustomize.py",
                 "usercustomize.py", "encodings/__init__.py", "torch/__init__.py"):
        other_user.write(name, planted(marker, name))
    other_user.write("torch/version.py", "__version__ = '6.6.6+planted'\ncuda = None\n")
    site = fake_torch_site(tmp_path / "site", "2.4.1+cpu")  # root's own, installed through PYTHONPATH
    env = dict(os.environ, PYTHONPATH=str(site))
    data = facts_json(hosttune("facts", "--json", "--python", sys.executable, cwd=other_user.home, env=env))
    assert not marker.exists(), marker.read_text()
    assert data["torch"] is not None and data["torch"]["error"] is None
    assert data["torch"]["version"] == "2.4.1+cpu"  # still found through (trusted) PYTHONPATH
    # The default interpreter (python3 on PATH) gets the same isolation.
    done = hosttune("facts", "--json", cwd=other_user.home, env=env)
    facts_json(done)
    assert not marker.exists(), marker.read_text()


def test_pythonpath_naming_another_users_directory_is_dropped_as_root(
        other_user: Any, marker: Path) -> None:
    for name in ("json.py", "re.py", "os.py", "sitecustomize.py", "torch/__init__.py"):
        other_user.write(f"site/{name}", planted(marker, name))
    other_user.write("site/torch/version.py", "__version__ = '6.6.6+planted'\ncuda = None\n")
    env = dict(os.environ, PYTHONPATH=str(other_user.home / "site"), PYTHONSTARTUP=str(other_user.home / "site/os.py"))
    data = facts_json(hosttune("facts", "--json", "--python", sys.executable, cwd=Path("/"), env=env))
    assert not marker.exists(), marker.read_text()
    assert data["torch"] is None or data["torch"]["version"] != "6.6.6+planted"
    assert any(m.startswith("torch: PYTHONPATH not searched as root") for m in data["missing"]), data["missing"]


def test_planted_programs_in_a_user_owned_path_dir_are_not_run_as_root(other_user: Any, marker: Path) -> None:
    shell = f"#!/bin/sh\necho \"$0\" >> {marker}\n"
    for prog in ("python3", "nvidia-smi", "lspci", "ldconfig", "numactl", "nvcc", "torchrun"):
        other_user.write(f"bin/{prog}", shell, 0o755)
    bad = str(other_user.home / "bin")
    env = dict(os.environ, PATH=f"{bad}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    data = facts_json(hosttune("facts", "--json", cwd=Path("/"), env=env))
    assert not marker.exists(), marker.read_text()
    assert f"PATH: not searched as root: {bad}: {bad} is owned by nobody" in data["missing"]
    paths = [data["tools"][k] for k in ("numactl", "nvidia_smi", "torchrun")]
    paths.append((data["torch"] or {}).get("python"))
    assert not any(p and p.startswith(bad) for p in paths), paths
    # --python NAME is looked up the same way.
    done = hosttune("facts", "--json", "--python", "nvidia-smi", cwd=Path("/"), env=env)
    assert done.returncode == 2 and not marker.exists()


def test_probe_starts_in_root_dir_with_the_callers_code_variables_dropped(
        other_user: Any, tmp_path: Path, marker: Path) -> None:
    """A --python wrapper (root's own, trusted) records where and with what environment it was started."""
    seen = tmp_path / "seen"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f"#!/bin/bash\npwd > {seen}.cwd\nenv > {seen}.env\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    bash_env = other_user.write("bashrc", f"echo BASH_ENV >> {marker}\n")
    env = dict(os.environ, BASH_ENV=str(bash_env), ENV=str(bash_env), PYTHONINSPECT="1",
               LD_LIBRARY_PATH=str(other_user.home), PYTHONPATH=str(other_user.home))
    data = facts_json(hosttune("facts", "--json", "--python", str(wrapper), cwd=other_user.home, env=env))
    assert not marker.exists(), marker.read_text()
    assert Path(f"{seen}.cwd").read_text().strip() == "/"
    names = {line.split("=", 1)[0] for line in Path(f"{seen}.env").read_text().splitlines()}
    assert not names & {"BASH_ENV", "ENV", "PYTHONINSPECT", "LD_LIBRARY_PATH", "PYTHONPATH"}
    assert data["torch"] is None or data["torch"]["error"] is None


def test_probe_imports_only_what_it_needs() -> None:
    imported = set()
    for node in ast.walk(ast.parse(torchenv.PROBE)):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported == {"json", "os", "re", "sys", "importlib.util"}


def test_pythonpath_for_the_probe_is_the_users_own_as_a_normal_user(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    theirs = "/home/alice/site:/opt/x"
    if os.geteuid() == 0:  # as root a path that fails the trust rule is dropped
        assert torchenv.probe_path({"PYTHONPATH": "/proc/nonexistent-dir"})[1] == ["PYTHONPATH"]
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert torchenv.probe_path({"PYTHONPATH": theirs}) == (["/home/alice/site", "/opt/x"], [])
    env, dropped = child_env({"PATH": "/x:/y", "BASH_ENV": "/home/alice/.bashrc"})
    assert env == {"PATH": "/x:/y", "BASH_ENV": "/home/alice/.bashrc"} and dropped == []
    assert trusted_path_dirs("/x::/y") == (["/x", "/y"], [])


def test_probe_finds_torch_through_a_trusted_pythonpath_in_process(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    site = fake_torch_site(tmp_path / "site", "2.4.1+cpu")
    monkeypatch.setenv("PYTHONPATH", str(site))
    data = torchenv.run_probe(HostIO(), sys.executable)
    assert data["torch"]["__version__"] == "2.4.1+cpu"


# ---- item 6: --root trees: no hang, no memory blow-up, nothing read outside the tree ------------------------
def hostile_tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for d in ("proc", "etc", "dev", "usr/lib", "sys/devices/system/cpu/cpu0", "sys/devices/system/node/node0",
              "sys/bus/pci", "usr/lib/x86_64-linux-gnu"):
        (root / d).mkdir(parents=True, exist_ok=True)
    secret = tmp_path / "secret"
    secret.write_text(f'NAME="{SECRET}"\nID={SECRET}\nMemTotal: 1 kB\n{SECRET}\n')
    secret.chmod(0o600)
    os.mkfifo(root / "proc/cpuinfo")  # a read would block forever
    with open(root / "sys/devices/system/cpu/online", "wb") as fh:  # 3 GiB, sparse
        fh.truncate(3 << 30)
    try:
        os.mknod(root / "dev/zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    except OSError:
        pass  # not root: the absolute link below then simply dangles inside the tree
    (root / "etc/os-release").symlink_to("/dev/zero")  # root/dev/zero, a device: refused
    (root / "proc/meminfo").symlink_to(secret)  # absolute: means root/<secret path>, which is not there
    (root / "etc/hostname").symlink_to(secret)
    (root / "usr/lib/os-release").symlink_to("../../" * 12 + str(secret).lstrip("/"))  # ".." stops at the root
    (root / "etc/redhat-release").symlink_to("../../../../../../../../" + str(secret).lstrip("/"))
    (root / "sys/bus/pci/devices").symlink_to("/sys/bus/pci/devices")  # listing the host's PCI devices
    (root / "usr/lib/x86_64-linux-gnu/libjemalloc.so.2").symlink_to("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
    (root / "sys/devices/system/node/node0/cpulist").symlink_to("../../../../../../../" + str(secret).lstrip("/"))
    return root


def test_hostile_root_tree_is_read_without_hang_crash_or_escape(tmp_path: Path) -> None:
    root = hostile_tree(tmp_path)
    done = hosttune("facts", "--json", "--root", str(root), timeout=120)
    data = facts_json(done)
    assert SECRET not in done.stdout and SECRET not in done.stderr
    missing = "\n".join(data["missing"])
    assert "/proc/cpuinfo is not a regular file" in missing
    assert "is larger than" in missing  # the sparse cpu/online
    assert data["cpu"]["model"] is None and data["hostname"] is None
    assert data["distro"]["id"] in ("", "unknown") and data["gpus"] == []
    assert data["allocators"]["jemalloc"] is None
    text = hosttune("facts", "--root", str(root), timeout=120)
    assert text.returncode == 0 and SECRET not in text.stdout and "Traceback" not in text.stderr


def test_hostio_resolves_links_inside_the_root_only(tmp_path: Path) -> None:
    root = hostile_tree(tmp_path)
    (root / "etc/inside").write_text("ok\n")
    (root / "etc/abs").symlink_to("/etc/inside")
    (root / "etc/dotdot").symlink_to("../../../../etc/inside")
    (root / "etc/loop").symlink_to("loop")
    io = HostIO(root)
    assert io.read("/etc/abs") == "ok" and io.read("/etc/dotdot") == "ok"
    assert io.realpath("/etc/abs") == "/etc/inside"
    for rel in ("/proc/meminfo", "/etc/hostname", "/usr/lib/os-release", "/etc/os-release", "/proc/cpuinfo",
                "/sys/devices/system/cpu/online", "/etc/loop"):
        assert io.read(rel, "t") is None, rel
    assert io.listdir("/sys/bus/pci/devices") == [] and not io.isdir("/sys/bus/pci/devices")
    assert io.exists("/sys/bus/pci/devices")  # the link itself is there (lexists), its target is not
    assert not io.exists("/proc/meminfo/x")
    assert all(SECRET not in m for m in io.missing)


def test_live_reads_are_bounded_and_never_block(tmp_path: Path) -> None:
    """On the live host /proc and /sys are read normally, but a FIFO or a huge file is refused, not waited on."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(READ_LIMIT + 1)
    io = HostIO()
    assert io.read(str(fifo), "fifo") is None and io.read(str(big), "big") is None
    assert any("is not a regular file" in m for m in io.missing)
    assert any("is larger than" in m for m in io.missing)
    assert io.read("/proc/self/status") and io.read("/sys/devices/system/cpu/online")


# ---- item 7: CPU lists are bounded and parsed in linear time -------------------------------------------------
@pytest.mark.parametrize("text", ["0-99999999", "0-9999999", "0-16383,16384-99999999999999999999999", "9" * 100000])
def test_cpulist_ids_are_capped_at_the_kernel_limit(text: str) -> None:
    cpus, dropped = parse_cpulist_checked(text)
    assert dropped == 1 and all(0 <= c < MAX_CPUS for c in cpus)
    assert len(cpus) in (0, MAX_CPUS)


def test_cpulist_overlapping_and_repeated_ranges_merge() -> None:
    assert parse_cpulist(",".join(["0-16383"] * 20000)) == list(range(MAX_CPUS))
    assert parse_cpulist("0-7:2,1-7:2,4-11:2") == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert parse_cpulist_checked("3-1,x,5,-2,0-") == ([5], 4)
    assert parse_cpulist("0-3,8,10-11\n\0") == [0, 1, 2, 3, 8, 10, 11]


def test_huge_hex_cpumask_is_capped() -> None:
    cpus, over = parse_cpumask_checked("f" * 100000)
    assert cpus == list(range(MAX_CPUS)) and over
    assert parse_cpumask_checked("0" * 100000 + "3") == ([0, 1], False)
    assert parse_cpumask("00000000,0000ffff\n") == list(range(16))
    assert parse_cpumask("zz") == []


def test_facts_on_a_tree_with_huge_cpu_lists(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = {
        "sys/devices/system/cpu/online": "0-99999999\n",
        "sys/devices/system/node/node0/cpulist": "0-9999999\n",
        "sys/devices/system/node/node1/cpumap": "f" * 200000 + "\n",
        "sys/devices/system/node/node0/meminfo": "Node 0 MemTotal: 1024 kB\n",
        "sys/devices/system/node/node1/meminfo": "Node 1 MemTotal: " + "9" * 100000 + " kB\n",
        "proc/self/status": "Cpus_allowed_list:\t0-99999999\n",
    }
    for cpu in range(4):
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"] = "0-99999999\n"
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/core_id"] = "9" * 100000 + "\n"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    data = facts_json(hosttune("facts", "--json", "--root", str(root)))
    assert data["cpu"]["logical"] == 4
    assert [n["cpus"] for n in data["numa"]["nodes"]] == [[0, 1, 2, 3], [0, 1, 2, 3]]
    missing = "\n".join(data["missing"])
    assert f"CPU ids >= {MAX_CPUS}" in missing


# ---- low items: terminal escapes, non-ELF allocators --------------------------------------------------------
def test_facts_text_shows_control_characters_escaped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "proc/cpuinfo").write_text("processor\t: 0\nmodel name\t: Evil\x1b[2J\x1b]0;owned\x07 CPU\n")
    (root / "etc/os-release").write_text('NAME="Bad\x1b[31mOS"\nID=bad\x1b[0m\nVERSION_ID="1"\n')
    (root / "etc/hostname").write_text("host\x1b[1A\u202e\n")
    done = hosttune("facts", "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "Evil\\x1b[2J" in done.stdout and "Bad\\x1b[31mOS" in done.stdout


def _lib_tree(root: Path, content: Optional[bytes]) -> Path:
    libdir = root / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    if content is not None:
        (libdir / "libjemalloc.so.2.0.0").write_bytes(content)
        (libdir / "libjemalloc.so.2").symlink_to("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2.0.0")
    return root


def test_non_elf_allocator_library_is_not_reported(tmp_path: Path) -> None:
    bad = collect(_lib_tree(tmp_path / "bad", b"#!/bin/sh\necho not a library\n"), probe_torch=False,
                  use_nvml=False)
    assert bad.allocators.jemalloc is None
    assert any("libjemalloc.so.2 is not an ELF shared library" in m for m in bad.missing)
    good = collect(_lib_tree(tmp_path / "good", ELF), probe_torch=False, use_nvml=False)
    assert good.allocators.jemalloc == "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def test_live_is_elf_checks_the_magic(tmp_path: Path) -> None:
    (tmp_path / "lib.so").write_bytes(ELF)
    (tmp_path / "text.so").write_text("INPUT(-lfoo)\n")
    os.mkfifo(tmp_path / "fifo.so")
    io = HostIO()
    assert io.is_elf(str(tmp_path / "lib.so"))
    assert not io.is_elf(str(tmp_path / "text.so")) and not io.is_elf(str(tmp_path / "fifo.so"))


# ---- issue 22, Low: `facts --capture X.tar.gz` never replaces a file silently -----------------------------------


@pytest.mark.parametrize("existing", ["file", "link"])
def test_capture_refuses_to_replace_an_existing_archive_in_one_line(existing: str, tmp_path: Path) -> None:
    """Was: the existing file (a support bundle sent earlier, or anything of that name) silently replaced."""
    from conftest import run_cli

    d = tmp_path / "d"
    d.mkdir()
    out = d / "bundle.tar.gz"
    keep = d / "keep"
    keep.write_bytes(b"earlier bundle\n")
    if existing == "file":
        out.write_bytes(b"earlier bundle\n")
    else:
        out.symlink_to(keep)
    done = run_cli(["facts", "--capture", str(out)])  # in-process: refused before anything is read
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"hosttune: error: --capture {out}: exists; name a new file, or add --force to " \
                                  f"replace it", done.stderr
    assert keep.read_bytes() == b"earlier bundle\n" and os.path.lexists(out)
    assert sorted(p.name for p in d.iterdir()) == ["bundle.tar.gz", "keep"]  # no work directory left


def test_capture_force_replaces_the_archive_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--force replaces it (through the atomic writer: a new file, never written through a link at the name);
    the capture itself is the one test_capture.py runs, here a one-file tree."""
    import tarfile

    from hosttune import capture

    def small_tree(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
        dest.mkdir(mode=0o700)
        (dest / "capture.json").write_text("{}\n")
        return {"files": 1, "bytes": 3, "placeholders": 0, "refused": {}}

    monkeypatch.setattr(capture, "capture_tree", small_tree)
    d = tmp_path / "d"
    d.mkdir()
    keep = d / "keep"
    keep.write_bytes(b"earlier bundle\n")
    out = d / "bundle.tgz"
    out.symlink_to(keep)
    with pytest.raises(capture.UserError, match="add --force"):
        capture.capture(str(out))
    capture.capture(str(out), force=True)
    assert not out.is_symlink() and keep.read_bytes() == b"earlier bundle\n"
    with tarfile.open(out) as tar:
        assert tar.getnames() == ["bundle", "bundle/capture.json"]
    assert sorted(p.name for p in d.iterdir()) == ["bundle.tgz", "keep"]


def test_force_without_capture_is_one_line() -> None:
    from conftest import run_cli

    done = run_cli(["facts", "--force"])
    assert done.returncode == 2 and done.stderr.strip() == \
        "hosttune: error: --force goes with --capture DEST.tar.gz (it replaces an existing archive)", done.stderr


def test_capture_never_replaces_an_archive_that_appeared_while_it_ran(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from hosttune import capture

    d = tmp_path / "d"
    d.mkdir()
    out = d / "bundle.tar.gz"

    def tree_then_someone_writes_the_archive(dest: Path, python: Optional[str] = None) -> Dict[str, Any]:
        dest.mkdir(mode=0o700)
        out.write_bytes(b"theirs\n")
        return {"files": 0, "bytes": 0, "placeholders": 0, "refused": {}}

    monkeypatch.setattr(capture, "capture_tree", tree_then_someone_writes_the_archive)
    with pytest.raises(capture.UserError, match="exists; name a new file, or add --force"):
        capture.capture(str(out))
    assert out.read_bytes() == b"theirs\n" and sorted(p.name for p in d.iterdir()) == ["bundle.tar.gz"]


# ---- issue 22 item 2: --python of facts and doctor goes through the program gateway ---------------------------


@pytest.mark.parametrize("command", ["facts", "doctor"])
def test_another_users_python_named_by_option_is_refused_before_it_runs(command: str, other_user: Any,
                                                                         marker: Path) -> None:
    """Was: `facts --python` checked only that the file is executable, `doctor --python` not even that as root;
    the torch probe then ran the other user's program as root."""
    fake = other_user.write("venv/bin/python3", f"#!/bin/sh\necho \"$0\" >> {marker}\n", 0o755)
    done = hosttune(command, "--json", "--python", str(fake), cwd=Path("/"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--python" in lines[0] and "owned by nobody" in lines[0], done.stderr
    assert not marker.exists(), marker.read_text()


def test_as_root_child_env_drops_every_code_valued_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The detector's programs get no variable whose value is code (the one rule, trust.is_code_env): bash's exported
    functions and git's config injection included, which a caller's environment keeps through `sudo -E`."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    env, dropped = child_env({"PATH": "/usr/bin", "BASH_FUNC_ls%%": "() { touch /tmp/x; }", "GIT_CONFIG_KEY_0":
                              "core.sshCommand", "PERL5OPT": "-Mx", "LD_AUDIT": "/tmp/a.so", "LANG": "C.UTF-8"})
    assert {"BASH_FUNC_ls%%", "GIT_CONFIG_KEY_0", "PERL5OPT", "LD_AUDIT"} <= set(dropped), dropped
    assert env.get("LANG") == "C.UTF-8" and not {"BASH_FUNC_ls%%", "GIT_CONFIG_KEY_0"} & set(env)
