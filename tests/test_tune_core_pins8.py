"""Pins (issue 21, round 8 practice) for hosttune/tune/core.py: the boot re-apply reports, for each change, the
files its own step wrote (the sysctl.d file of a sysctl tunable is not rewritten at boot, so its change names no
file), not the files a full apply would name."""

from pathlib import Path

from test_tune_core_pins5 import CPUFREQ, STATE, THP, host

from hosttune.profile.settings import Tune
from hosttune.tune import core


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
