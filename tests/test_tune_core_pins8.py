"""Pins (issue 21, round 8 practice) for hosttune/tune/core.py: the boot re-apply reports, for each change, the
files its own step wrote (the sysctl.d file of a sysctl tunable is not rewritten at boot, so its change names no
file), not the files a full apply would name; verify judges against the profile given (whole); and (kinds.py) a
login limit on the live host without hosttune's limits.d file is the limit this process runs with ("unlimited",
open files as a count, locked memory in KiB); a second apply of another value rewrites its block in place."""

import resource
from pathlib import Path

import pytest
from test_tune_core_pins5 import CPUFREQ, STATE, THP, host

from hosttune.profile.settings import Tune
from hosttune.tune import core, kinds
from hosttune.tune.model import MARKER
from hosttune.tune.rootfs import Tree
from hosttune.tune.tunables import BY_ID


def test_boot_changes_name_only_what_the_boot_step_wrote(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    full = {c.id: c.persist for c in core.apply(root, profile=Tune(thp="never"))}
    assert full["swappiness"] == (str(root / "etc/sysctl.d/90-hosttune.conf"),)
    for rel, text in ((f"{THP}/enabled", "[always] madvise never\n"),
                      (f"{CPUFREQ}/policy0/scaling_governor", "powersave\n"),
                      ("proc/sys/vm/swappiness", "30\n")):
        (root / rel).write_text(text)
    changes = core.apply(root, boot=True)
    state = str(root / STATE)
    assert [(c.id, c.before, c.after, c.persist) for c in changes] == [
        ("thp", "always", "never", (state,)), ("swappiness", "30", "10", ()),
        ("governor", "powersave,performance", "performance", (state,))]


def test_verify_judges_against_the_profile_given(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    tune = Tune(thp="always", swappiness=80, nofile=1024, shm_size="64m", governor="powersave")
    got = {s.id: (s.expected, s.actual, s.state) for s in core.verify(root, profile=tune)}
    assert got == {
        "thp": ("always", "always", "ok"), "thp_defrag": ("madvise", "always", "drift"),
        "numa_balancing": ("0", "1", "drift"), "swappiness": ("80", "60", "ok"),
        "governor": ("powersave", "powersave", "ok"), "epp": ("performance", "balance_power", "drift"),
        "nofile": ("1024", "1024", "ok"), "memlock": ("unlimited", "not set", "drift"),
        "shm": ("size=64m", "size=64m", "ok"), "persistence": (None, None, "skip")}


@pytest.mark.parametrize("tid,soft,want", [
    ("nofile", resource.RLIM_INFINITY, "unlimited"), ("memlock", resource.RLIM_INFINITY, "unlimited"),
    ("nofile", 1024, "1024"), ("memlock", 65536 * 1024, "65536"),  # memlock in KiB, as limits.conf writes it
])
def test_a_limit_on_the_live_host_without_hosttunes_file_is_this_process_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tid: str, soft: int, want: str) -> None:
    tree = Tree(tmp_path)  # no hosttune limits.d file in it
    tree.live = True  # read as the live host reads it: the limit this process runs with
    which = resource.RLIMIT_NOFILE if tid == "nofile" else resource.RLIMIT_MEMLOCK
    real = resource.getrlimit
    monkeypatch.setattr(resource, "getrlimit", lambda r: (soft, soft) if r == which else real(r))
    assert kinds.LimitFile().actual(tree, BY_ID[tid], Tune()) == want


def test_a_second_apply_of_another_value_rewrites_its_block_in_place(tmp_path: Path) -> None:
    root = host(tmp_path / "h")
    core.apply(root)
    changes = core.apply(root, profile=Tune(swappiness=5, nofile=131072))
    assert [(c.id, c.before, c.after) for c in changes] == [("swappiness", "10", "5"), ("nofile", "65536", "131072")]
    assert (root / "etc/sysctl.d/90-hosttune.conf").read_text() == "\n".join([
        MARKER,
        "# numa_balancing: ranks are pinned to their GPU's node, balancing only adds page faults and migrations",
        "kernel.numa_balancing = 0",
        "# swappiness: the default 60 swaps out page cache and pinned buffers; the next step stalls",
        "vm.swappiness = 5", ""])
    assert (root / "etc/security/limits.d/90-hosttune.conf").read_text() == "\n".join([
        MARKER, "# nofile: DataLoader workers and NCCL open many files and sockets; 1024 runs out",
        "* soft nofile 131072", "* hard nofile 1048576", "# memlock: RDMA (NCCL over InfiniBand/RoCE) pins its buffers",
        "* soft memlock unlimited", "* hard memlock unlimited", ""])
