"""`hosttune doctor` (hosttune/commands/doctor.py): the table, the JSON, --root, --only, --explain, --python, --data
and bad usage, on this host, on captured hosts and with the fake NVML."""

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import pytest
from _doctorhelp import NO_PROFILE, R, cpu_host, healthy_scenario, hosttune, synthetic_root
from conftest import run_cli

from hosttune import doctor
from hosttune.commands.doctor import render_table
from hosttune.doctor import Context, run_checks


def test_table_has_no_colour_off_a_tty_and_puts_fixes_below() -> None:
    report = run_checks(Context(facts=cpu_host(kernel=R(cpu_host().kernel, thp="always")), env={},
                                profile=NO_PROFILE), only="os")
    text = render_table(report, colour=False)
    assert "\x1b[" not in text
    lines = text.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith("WARN  os.thp"))
    assert "fix: hosttune tune apply --only thp" in lines[i + 1]
    assert "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled" in lines[i + 2]  # by hand, beside it
    assert "\x1b[" in render_table(report, colour=True)
    assert {r.group for r in report.results} == {"os"}


def test_table_shows_host_text_without_terminal_escapes(tmp_path: Path) -> None:
    root = synthetic_root(tmp_path / "host", {
        "etc/os-release": 'ID=ubuntu\nVERSION_ID="23.10"\nNAME="\x1b]0;owned\x07Ubuntu\x1b[2J\u202e"\n',
        "etc/debian_version": None,
    })
    table = run_cli(["doctor", "--root", str(root), "--only", "os"])  # a captured tree: in-process (issue 21)
    assert "os.distro" in table.stdout and "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\u202e" not in table.stdout and "\\x1b]0;owned" in table.stdout


# ---- the command line ------------------------------------------------------------------------------------------------
def test_cli_on_this_cpu_host_is_truthful_and_json_complete() -> None:
    done = hosttune("doctor", "--json")
    data = json.loads(done.stdout)
    ids = [f["id"] for f in data["findings"]]
    assert sorted(ids) == sorted(doctor.BY_ID) and len(ids) == len(set(ids))
    assert data["schema"] == doctor.SCHEMA
    assert sum(data["summary"].values()) == len(ids)
    for f in data["findings"]:
        assert set(f) == {"id", "group", "status", "title", "expected", "actual", "fix"}
        assert f["status"] in doctor.STATUSES
    by = {f["id"]: f for f in data["findings"]}
    if not os.path.isdir("/proc/driver/nvidia"):  # this CI machine: no GPU, which is not a failure
        assert by["nvidia.driver"]["status"] == "pass" and "no NVIDIA GPU" in by["nvidia.driver"]["actual"]
        assert by["nvidia.persistence"]["status"] == "skip"
    assert done.returncode == (1 if data["summary"]["fail"] else 0)
    again = json.loads(hosttune("doctor", "--json").stdout)
    assert [f["id"] for f in again["findings"]] == ids  # stable order


def test_cli_bad_host_root(tmp_path: Path) -> None:
    bad: Dict[str, Optional[str]] = {
        "etc/os-release": 'ID=centos\nVERSION_ID="7"\nNAME="CentOS Linux"\nID_LIKE="rhel fedora"\n',
        "etc/debian_version": None,
        "proc/modules": "nouveau 1 0 - Live 0x0\n",
        "proc/sys/kernel/numa_balancing": "1\n",
        "proc/sys/vm/swappiness": "60\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz intel_iommu=on\n",
        "proc/self/mountinfo": "22 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n"
                               "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "proc/self/cgroup": "0::/docker/abc\n",
        "sys/fs/cgroup/docker/abc/cpu.max": "100000 100000\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
        "sys/bus/pci/devices/0000:1c:00.0/numa_node": "-1\n",
        "sys/bus/pci/devices/0000:1c:00.0/local_cpulist": None,
        "sys/bus/pci/devices/0000:3a:00.0/vendor": "0x10de\n",  # an NVSwitch
        "sys/bus/pci/devices/0000:3a:00.0/class": "0x068000\n",
        "usr/lib/x86_64-linux-gnu/libjemalloc.so.2": None,
        "usr/bin/numactl": None,
    }
    bad.update({f"sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor": "powersave\n" for i in range(4)})
    root = synthetic_root(tmp_path / "bad", bad)

    # a captured tree, nothing of this host's: in-process (issue 21: two interpreter starts less)
    done = run_cli(["doctor", "--root", str(root), "--json"])
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    got = {f["id"]: f["status"] for f in data["findings"] if f["status"] in ("warn", "fail")}
    assert got == {
        "os.distro": "warn", "os.numa_balancing": "warn", "os.thp": "warn", "os.swappiness": "warn",
        "os.governor": "warn", "cpu.cgroup_limit": "warn", "storage.shm": "fail", "tools.allocator": "warn",
        "cpu.nofile": "warn",  # no limits file raises it (read from the tree since 835395b, as tune verify does)
        "tools.numactl": "warn", "nvidia.driver": "fail", "nvidia.nouveau": "fail", "nvidia.fabric_manager": "fail",
        "nvidia.gpu_numa": "warn", "nvidia.iommu": "warn",
    }, json.dumps(data["findings"], indent=1)
    fixes = "\n".join(f["fix"] for f in data["findings"])
    assert "dnf install -y epel-release && dnf install -y jemalloc" in fixes  # CentOS: the dnf forms
    assert "grubby --update-kernel=ALL --args='iommu=pt'" in fixes
    assert "apt-get" not in fixes
    skipped = {f["id"]: f["actual"] for f in data["findings"] if f["status"] == "skip"}
    assert "captured" in skipped["torch.debug_env"] and "--root" in skipped["storage.free_space"]
    table = run_cli(["doctor", "--root", str(root)])
    assert table.returncode == 1 and "FAIL  storage.shm" in table.stdout and "\x1b[" not in table.stdout


def test_cli_fake_gpu_host_with_cpu_torch_fails(fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    env = fake_nvml(healthy_scenario())
    done = hosttune("doctor", "--json", "--only", "nvidia", env=env)
    data = json.loads(done.stdout)
    by = {f["id"]: f for f in data["findings"]}
    assert {f["id"].split(".")[0] for f in data["findings"]} == {"nvidia"}
    assert by["nvidia.nvml"]["status"] == "pass"
    assert by["nvidia.persistence"]["status"] == "pass"
    assert by["nvidia.pcie_link"]["status"] == "pass" and "idle: not judged" in by["nvidia.pcie_link"]["actual"]
    assert by["nvidia.torch_build"]["status"] == "fail", by["nvidia.torch_build"]
    assert "download.pytorch.org/whl/cu124" in by["nvidia.torch_build"]["fix"]
    assert done.returncode == 1


def test_cli_version_mismatch(fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    env = fake_nvml({"init_error": "LIB_RM_VERSION_MISMATCH"})
    done = hosttune("doctor", "--only", "nvidia", env=env)
    assert "nvidia.nvml" in done.stdout and "version_mismatch" not in done.stderr
    data = json.loads(hosttune("doctor", "--json", "--only", "nvidia", env=env).stdout)
    by = {f["id"]: f for f in data["findings"]}
    # this host has no NVIDIA PCI device: a broken NVML library on a CPU host is reported, not failed
    if not by["nvidia.driver"]["actual"].startswith("no NVIDIA GPU"):
        assert by["nvidia.nvml"]["status"] == "fail"
    else:
        assert by["nvidia.nvml"]["status"] == "pass" and "version_mismatch" in by["nvidia.nvml"]["actual"]


@pytest.mark.parametrize("args,message,real", [
    (["--explain", "os.thpp"], "did you mean os.thp", False),
    (["--only", "nvida"], "did you mean nvidia", False),
    (["--data", "/no/such/dataset"], "--data: /no/such/dataset: no such file", False),
    (["--root", "/no/such/root"], "--root /no/such/root: no such directory", True),
    (["--python", "/no/such/python"], "--python: /no/such/python", False),
])
def test_cli_bad_usage_exits_2(args: list, message: str, real: bool) -> None:
    # One case as the user sees it, from a real process (nothing else on its stderr); the others run the CLI in this
    # process, where an exception would be raised rather than printed: their message is the subject (issue 21)
    done = hosttune("doctor", *args) if real else run_cli(["doctor", *args])
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_cli_explain() -> None:
    done = run_cli(["doctor", "--explain", "os.thp"])
    assert done.returncode == 0 and "khugepaged" in done.stdout


def test_cli_python_option_probes_that_interpreter() -> None:
    pytest.importorskip("torch")  # the test interpreter stands in for a training venv: it needs torch
    data = json.loads(hosttune("doctor", "--json", "--only", "torch", "--python", sys.executable).stdout)
    by = {f["id"]: f for f in data["findings"]}
    assert sys.executable in by["torch.version"]["actual"]
    assert by["torch.venv"]["status"] in ("pass", "warn") and sys.executable in by["torch.venv"]["actual"]


def test_cli_data_path_kind(tmp_path: Path) -> None:
    done = hosttune("doctor", "--json", "--only", "storage", "--data", str(tmp_path))
    by = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
    assert by["storage.data"]["status"] in ("pass", "warn") and str(tmp_path) in by["storage.data"]["actual"]
    assert str(tmp_path) in by["storage.free_space"]["actual"]
