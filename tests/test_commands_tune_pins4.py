"""Pins of mutation round 4 (issue 21) on hosttune/commands/tune.py: what `tune apply | verify | revert` print and
exit with, line for line, on a --root tree under tmp_path (in-process CLI)."""

import json
from pathlib import Path

from conftest import run_cli
from test_tune import host_tree

SWAP_WHY = "the default 60 swaps out page cache and pinned buffers; the next step stalls"
NUMA_WHY = "ranks are pinned to their GPU's node, balancing only adds page faults and migrations"


def test_apply_dry_run_then_apply_then_nothing_to_change(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    sysctl = f"{root}/etc/sysctl.d/90-hosttune.conf"
    r = run_cli(["tune", "apply", "--dry-run", "--only", "swappiness", "--root", str(root)])
    assert (r.returncode, r.stdout) == (0, f"would change swappiness: 60 -> 10  # {SWAP_WHY}  (kept in {sysctl})\n")
    r = run_cli(["tune", "apply", "--only", "swappiness", "--root", str(root)])
    assert (r.returncode, r.stdout) == (0, f"changed swappiness: 60 -> 10  # {SWAP_WHY}  (kept in {sysctl})\n")
    r = run_cli(["tune", "apply", "--only", "swappiness", "--root", str(root)])
    assert r.stdout == "nothing to change: swappiness is already right\n"
    run_cli(["tune", "apply", "--only", "numa_balancing", "--root", str(root)])
    r = run_cli(["tune", "apply", "--only", "swappiness", "--only", "numa_balancing", "--root", str(root)])
    assert r.stdout == "nothing to change: swappiness, numa_balancing are already right\n"
    r = run_cli(["tune", "apply", "--only", "persistence", "--root", str(root)])
    assert r.stdout == "skipped persistence: no NVIDIA GPU\nnothing to change\n"


def test_apply_everything_then_every_other_tunable_is_right(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    r = run_cli(["tune", "apply", "--dry-run", "--root", str(root)])
    lines = r.stdout.splitlines()
    assert lines[0] == "skipped persistence: no NVIDIA GPU"
    assert [ln.split(":")[0] for ln in lines[1:]] == [f"would change {t}" for t in (
        "thp", "thp_defrag", "numa_balancing", "swappiness", "governor", "epp", "nofile", "memlock", "shm")]
    assert f"would change memlock: not set -> unlimited  # RDMA (NCCL over InfiniBand/RoCE) pins its buffers  (kept " \
           f"in {root}/etc/security/limits.d/90-hosttune.conf)" in lines
    assert lines[-1].endswith(f"(kept in {root}/etc/systemd/system/dev-shm.mount.d/hosttune.conf, "
                              f"{root}/var/lib/hosttune/tune-state.json)")
    assert run_cli(["tune", "apply", "--root", str(root)]).returncode == 0
    r = run_cli(["tune", "apply", "--root", str(root)])
    assert r.stdout == "skipped persistence: no NVIDIA GPU\nnothing to change: every other tunable is already right\n"


def test_apply_json(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    r = run_cli(["tune", "apply", "--dry-run", "--json", "--only", "swappiness", "--only", "persistence",
                 "--root", str(root)])
    data = json.loads(r.stdout)
    assert data["dry_run"] is True
    assert data["skipped"] == [{"id": "persistence", "reason": "no NVIDIA GPU"}]
    assert [(c["id"], c["before"], c["after"]) for c in data["changes"]] == [("swappiness", "60", "10")]
    assert (root / "proc/sys/vm/swappiness").read_text() == "60\n"  # a dry run changes nothing
    data = json.loads(run_cli(["tune", "apply", "--json", "--only", "swappiness", "--root", str(root)]).stdout)
    assert data["dry_run"] is False and data["changes"][0]["after"] == "10"
    assert (root / "proc/sys/vm/swappiness").read_text().strip() == "10"


def test_verify_table_json_and_exit_codes(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    run_cli(["tune", "apply", "--only", "swappiness", "--root", str(root)])
    r = run_cli(["tune", "verify", "--root", str(root)])
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0] == "ID              STATE  EXPECTED     ACTUAL         WHY"
    assert f"swappiness      ok     10           10             {SWAP_WHY}" in lines
    assert f"numa_balancing  drift  0            1              {NUMA_WHY}" in lines
    assert lines[-1] == "persistence     skip   -            -              no NVIDIA GPU"
    data = json.loads(run_cli(["tune", "verify", "--json", "--root", str(root)]).stdout)
    assert data["drift"] is True
    assert {t["id"]: t["state"] for t in data["tunables"]}["swappiness"] == "ok"
    run_cli(["tune", "apply", "--root", str(root)])
    r = run_cli(["tune", "verify", "--root", str(root)])
    assert r.returncode == 0 and " drift " not in r.stdout
    assert json.loads(run_cli(["tune", "verify", "--json", "--root", str(root)]).stdout)["drift"] is False


def test_revert_says_what_it_restored_and_removed(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    r = run_cli(["tune", "revert", "--root", str(root)])
    assert (r.returncode, r.stdout) == (0, "nothing to revert\n")
    run_cli(["tune", "apply", "--only", "swappiness", "--root", str(root)])
    r = run_cli(["tune", "revert", "--root", str(root)])
    assert (r.returncode, r.stdout) == (0, f"restored swappiness: 10 -> 60\nremoved {root}/etc/sysctl.d/"
                                           "90-hosttune.conf\n")
    assert (root / "proc/sys/vm/swappiness").read_text().strip() == "60"


def test_boot_and_unknown_ids(tmp_path: Path) -> None:
    root = host_tree(tmp_path / "host")
    r = run_cli(["tune", "apply", "--boot", "--root", str(root)])
    assert (r.returncode, r.stdout) == (0, "nothing to re-apply\n")
    r = run_cli(["tune", "apply", "--only", "nope", "--root", str(root)])
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("hosttune: error: no tunable 'nope'; did you mean 'nofile'?")
