"""doctor and `hosttune tune verify` agree on every host (issue 23): for each doctor check a tunable backs, doctor
flags it (warn/fail) exactly when `tune verify --root` finds one of its tunables drifted. Both read the profile's
`tune:` settings and hosttune.tune.rules (swappiness needs swap, memlock needs RDMA, NUMA balancing two nodes)."""

from pathlib import Path
from typing import Dict, Tuple

import pytest
from conftest import HWLOC_NAMES, build_tree, run_cli

import hosttune.tune as tune
from hosttune.doctor.catalogue import diagnose
from hosttune.tune.tunables import FOR_CHECK

THP = "sys/kernel/mm/transparent_hugepage"
CPUFREQ = "sys/devices/system/cpu/cpufreq"
RDMA = {"sys/class/infiniband/mlx5_0/node_type": "1: CA\n"}


def verdicts(root: Path) -> Tuple[Dict[str, bool], Dict[str, bool]]:
    """(doctor: check id -> flagged, tune verify: check id -> one of its tunables drifted)."""
    report = diagnose(str(root), only=None)
    doctor = {r.id: r.status in ("warn", "fail") for r in report.results if r.id in FOR_CHECK}
    states = {s.id: s.state for s in tune.verify(root)}
    tuned = {check: any(states[t] == "drift" for t in ids) for check, ids in FOR_CHECK.items()}
    return doctor, tuned


def cpu_host(root: Path, files: Dict[str, str]) -> Path:
    """A one-node CPU host without swap, RDMA or GPUs, every setting as the default profile asks, plus `files`."""
    base = {
        "etc/os-release": 'ID=debian\nVERSION_ID="12"\nNAME="Debian GNU/Linux"\n',
        "proc/cpuinfo": "".join(f"processor\t: {i}\nmodel name\t: Xeon\n\n" for i in range(4)),
        "proc/meminfo": "MemTotal:       16384000 kB\nSwapTotal:             0 kB\n",
        "proc/self/mountinfo": "22 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=8192000k\n",
        "proc/sys/vm/swappiness": "60\n",
        "proc/sys/kernel/numa_balancing": "1\n",
        f"{THP}/enabled": "always [madvise] never\n",
        f"{THP}/defrag": "always defer defer+madvise [madvise] never\n",
        "sys/devices/system/node/node0/cpulist": "0-3\n",
        "etc/security/limits.conf": "* soft nofile 65536\n* hard nofile 1048576\n",
    }
    for p in ("policy0", "policy2"):
        base[f"{CPUFREQ}/{p}/scaling_governor"] = "performance\n"
        base[f"{CPUFREQ}/{p}/scaling_available_governors"] = "performance powersave\n"
        base[f"{CPUFREQ}/{p}/energy_performance_preference"] = "performance\n"
        base[f"{CPUFREQ}/{p}/energy_performance_available_preferences"] = "default performance power\n"
    base.update(files)
    # as sysfs shows it: each CPU's cpufreq is a link to its policy (the detector reads through it, tune writes the
    # policy's own file)
    return build_tree(root, base, {f"sys/devices/system/cpu/cpu{i}/cpufreq": f"../cpufreq/policy{i // 2 * 2}"
                                   for i in range(4)})


def bad_host(root: Path) -> Path:
    """Two nodes, swap, an RDMA device: every tunable-backed check has something to flag."""
    return cpu_host(root, {
        "proc/meminfo": "MemTotal:       16384000 kB\nSwapTotal:       2097148 kB\n",
        "sys/devices/system/node/node0/cpulist": "0-1\n", "sys/devices/system/node/node1/cpulist": "2-3\n",
        f"{THP}/enabled": "[always] madvise never\n",
        "proc/self/mountinfo": "22 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n",
        "etc/security/limits.conf": "# nothing set\n",
        **{f"{CPUFREQ}/{p}/scaling_governor": "powersave\n" for p in ("policy0", "policy2")},
        **RDMA,
    })


@pytest.mark.parametrize("name", HWLOC_NAMES)
def test_doctor_and_tune_verify_agree_on_every_fixture_host(name: str, hwloc_tree: "object") -> None:
    root = hwloc_tree(name)  # type: ignore[operator]
    doctor, tuned = verdicts(root)
    assert doctor == tuned, name


def test_cpu_host_without_swap_or_rdma_is_clean_for_both(tmp_path: Path) -> None:
    """The issue's host: swappiness 60 without swap and no memlock setting without RDMA are not drift for tune
    either (before: `tune verify --root` exited 1 on memlock and swappiness where doctor passed)."""
    root = cpu_host(tmp_path / "host", {})
    doctor, tuned = verdicts(root)
    assert doctor == tuned
    assert not any(tuned.values()), tuned
    states = {s.id: s for s in tune.verify(root)}
    assert states["swappiness"].state == "skip" and "no swap" in states["swappiness"].reason
    assert states["memlock"].state == "skip" and "RDMA" in states["memlock"].reason
    assert run_cli(["tune", "verify", "--root", str(root)]).returncode == 0


def test_a_host_with_swap_and_rdma_is_flagged_by_both_then_clean_after_tune_apply(tmp_path: Path) -> None:
    root = bad_host(tmp_path / "host")
    doctor, tuned = verdicts(root)
    assert doctor == tuned
    assert all(tuned[c] for c in ("os.thp", "os.swappiness", "os.numa_balancing", "os.governor", "cpu.nofile",
                                  "cpu.memlock", "storage.shm")), tuned
    tune.apply(root)
    doctor, tuned = verdicts(root)
    assert doctor == tuned
    assert not any(tuned.values()), tuned


@pytest.mark.parametrize("files,check", [
    ({f"{THP}/enabled": "always madvise [never]\n"}, "os.thp"),  # never is at most madvise: fine for both
    ({f"{THP}/defrag": "[always] defer defer+madvise madvise never\n"}, "os.thp"),  # defrag: both flag it
    ({"proc/meminfo": "MemTotal:       16384000 kB\nSwapTotal:       1048572 kB\n"}, "os.swappiness"),
    ({**RDMA, "etc/security/limits.conf": "* soft nofile 65536\n* soft memlock 64\n"}, "cpu.memlock"),
    ({**RDMA, "etc/security/limits.conf": "* soft nofile 65536\n* soft memlock unlimited\n"}, "cpu.memlock"),
    ({"etc/security/limits.conf": "* soft nofile 1024\n"}, "cpu.nofile"),
    ({"proc/self/mountinfo": "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=16g\n"}, "storage.shm"),  # > 50%
    ({"proc/self/mountinfo": "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=1g\n"}, "storage.shm"),
    ({f"{CPUFREQ}/policy0/energy_performance_preference": "power\n"}, "os.governor"),
    ({"sys/devices/system/node/node1/cpulist": "4-7\n"}, "os.numa_balancing"),
])
def test_doctor_and_tune_verify_agree_on_synthetic_hosts(tmp_path: Path, files: Dict[str, str], check: str) -> None:
    root = cpu_host(tmp_path / "host", files)
    doctor, tuned = verdicts(root)
    assert doctor == tuned, check


def test_both_read_the_profiles_tune_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site's `tune:` values are what doctor expects too: swappiness 10 is fine by default, not under 5."""
    root = cpu_host(tmp_path / "host", {"proc/sys/vm/swappiness": "10\n",
                                        "proc/meminfo": "MemTotal:       16384000 kB\nSwapTotal:    1048572 kB\n"})
    assert verdicts(root)[0]["os.swappiness"] is False
    profile = tmp_path / "profile.yaml"
    profile.write_text("tune:\n  swappiness: 5\n")
    monkeypatch.setenv("HOSTTUNE_PROFILE", str(profile))
    doctor, tuned = verdicts(root)
    assert doctor == tuned and doctor["os.swappiness"] is True
