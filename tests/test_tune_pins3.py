"""Pins of mutation round 3 (issue 21) on hosttune/tune (txn.py, core.py): what a failed apply puts back, what
verify counts as kept, what revert removes (bench/mutants.py r3-tune-*). --root trees under tmp_path only."""

import os
import stat
from pathlib import Path

import pytest
from conftest import run_cli
from test_tune import host_tree, snapshot

import hosttune.tune as tune
from hosttune.errors import UserError
from hosttune.tune.model import MARKER

SYSCTL = "etc/sysctl.d/90-hosttune.conf"


def test_a_failed_apply_puts_hosttunes_own_file_back_with_its_bytes_and_mode(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    conf = root / SYSCTL
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(f"{MARKER}\n# swappiness\nvm.swappiness = 20\n")
    conf.chmod(0o600)  # an admin narrowed hosttune's own file
    (root / "etc/security/limits.d").write_text("not a directory\n")  # the nofile step fails after swappiness's
    before = snapshot(root)
    with pytest.raises(UserError, match="undone"):
        tune.apply(root)
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o600
    assert snapshot(root) == before


def test_a_value_right_now_that_hosttunes_file_would_not_keep_is_drift(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    tune.apply(root, only=["swappiness"])
    conf = root / SYSCTL
    conf.write_text(conf.read_text().replace("vm.swappiness = 10", "vm.swappiness = 30"))  # a hand edit
    assert (root / "proc/sys/vm/swappiness").read_text() == "10\n"  # right until the next boot
    (st,) = [s for s in tune.verify(root) if s.id == "swappiness"]
    assert st.state == "drift" and "keeps another value" in st.reason
    assert {c.id for c in tune.apply(root, only=["swappiness"])} == {"swappiness"}
    assert "vm.swappiness = 10\n" in conf.read_text()


def test_the_boot_reapply_writes_no_file(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    tune.apply(root)
    (root / SYSCTL).unlink()  # an admin removed hosttune's sysctl file since
    (root / "proc/sys/vm/swappiness").write_text("60\n")  # a reboot: the runtime values are the kernel's again
    (root / "proc/sys/kernel/numa_balancing").write_text("1\n")
    res = run_cli(["tune", "apply", "--boot", "--root", str(root)])
    assert res.returncode == 0, res.stderr
    assert "changed swappiness: 60 -> 10" in res.stdout and "changed numa_balancing: 1 -> 0" in res.stdout
    assert (root / "proc/sys/vm/swappiness").read_text() == "10\n"
    assert not (root / SYSCTL).exists()  # hosttune-tune.service restores runtime values only, never /etc


def test_revert_never_writes_a_value_it_did_not_save(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    epp = root / "sys/devices/system/cpu/cpufreq/policy2/energy_performance_preference"
    epp.write_text("\n")  # read back empty before the first apply: no value to restore
    tune.apply(root, only=["epp"])
    assert epp.read_text() == "performance\n"
    tune.revert(root)
    assert epp.read_text() == "performance\n"  # left as applied, never the text "None"
    assert (root / "sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference").read_text() == \
        "balance_power\n"
