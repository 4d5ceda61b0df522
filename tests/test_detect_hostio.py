"""The detector's reads and programs as root (hosttune/detect/hostio.py, issue 11): a --root tree is read without a
hang, a crash or a read outside it; live reads are bounded; programs are looked up in trusted PATH directories
only and get no code-valued variable.

The other user is played by `nobody` (conftest `other_user`); hosttune runs as root in a subprocess
(tests/_detecthelp.py)."""

import os
from pathlib import Path
from typing import Any

import pytest
from _detecthelp import ELF, SECRET, facts_json, hostile_tree, hosttune

from hosttune.detect import HostIO
from hosttune.detect.hostio import READ_LIMIT, child_env


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


def test_as_root_child_env_drops_every_code_valued_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The detector's programs get no variable whose value is code (the one rule, trust.is_code_env): bash's exported
    functions and git's config injection included, which a caller's environment keeps through `sudo -E`."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    env, dropped = child_env({"PATH": "/usr/bin", "BASH_FUNC_ls%%": "() { touch /tmp/x; }", "GIT_CONFIG_KEY_0":
                              "core.sshCommand", "PERL5OPT": "-Mx", "LD_AUDIT": "/tmp/a.so", "LANG": "C.UTF-8"})
    assert {"BASH_FUNC_ls%%", "GIT_CONFIG_KEY_0", "PERL5OPT", "LD_AUDIT"} <= set(dropped), dropped
    assert env.get("LANG") == "C.UTF-8" and not {"BASH_FUNC_ls%%", "GIT_CONFIG_KEY_0"} & set(env)


# ---- item 6: --root trees: no hang, no memory blow-up, nothing read outside the tree ---------------------------------
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


def test_live_is_elf_checks_the_magic(tmp_path: Path) -> None:
    (tmp_path / "lib.so").write_bytes(ELF)
    (tmp_path / "text.so").write_text("INPUT(-lfoo)\n")
    os.mkfifo(tmp_path / "fifo.so")
    io = HostIO()
    assert io.is_elf(str(tmp_path / "lib.so"))
    assert not io.is_elf(str(tmp_path / "text.so")) and not io.is_elf(str(tmp_path / "fifo.so"))
