"""os.tuned judging the active tuned profile's settings one by one (issue 21): tuned's `<`/`>` modifiers, variables
and empty values are not judged, numbers are read as numbers, a governor list by its first choice, settings that
do not apply on this host are skipped, and the daemon's state in words (hosttune.doctor.checks.os)."""

from typing import Any, Optional, Sequence

import pytest
from _doctorhelp import R, cpu_host, kern, run_one

from hosttune.doctor.checks import os as os_checks
from hosttune.facts import Numa, NumaNode, Tuned
from hosttune.facts import TunedSetting as S

FIX = ("hosttune tune apply   # writes a hosttune tuned profile on top of p with the training settings and switches "
       "tuned to it")
THP = "vm.transparent_hugepages"


def _tuned(settings: Sequence[S], running: Optional[bool] = True, host: Any = None) -> Any:
    f = host if host is not None else cpu_host()
    return run_one("os.tuned", R(f, tuned=Tuned(installed=True, running=running, profile="p",
                                                settings=tuple(settings))))


@pytest.mark.parametrize("value", ["<always", ">always", "${f:thp}", "", "  "])
def test_values_tuned_decides_at_run_time_are_not_judged(value: str) -> None:
    f = _tuned([S("thp", THP, value, "p")])
    assert (f.status, f.actual, f.fix) == ("pass", "profile p (running)", "")


@pytest.mark.parametrize("setting,actual", [
    (S("thp", THP, "always", "p"), "profile p (running) sets vm.transparent_hugepages=always (p)"),
    (S("swappiness", "sysctl.vm.swappiness", " 60 ", "q"), "profile p (running) sets sysctl.vm.swappiness=60 (q)"),
    (S("numa_balancing", "sysctl.kernel.numa_balancing", "1", "q"),
     "profile p (running) sets sysctl.kernel.numa_balancing=1 (q)"),
    (S("governor", "cpu.governor", "powersave|performance", "q"),
     "profile p (running) sets cpu.governor=powersave|performance (q)"),
])
def test_a_contradicting_setting_warns(setting: S, actual: str) -> None:
    f = _tuned([setting])
    assert (f.status, f.actual, f.fix) == ("warn", actual, FIX)


@pytest.mark.parametrize("setting", [
    S("swappiness", "sysctl.vm.swappiness", "abc", "q"), S("swappiness", "sysctl.vm.swappiness", "10", "q"),
    S("epp", "cpu.energy_performance_preference", "power", "q"),
    S("governor", "cpu.governor", "performance|powersave", "q"), S("thp", THP, "madvise", "q"),
])
def test_settings_that_agree_or_are_not_judged_pass(setting: S) -> None:
    assert _tuned([setting]).status == "pass"


def test_settings_that_do_not_apply_on_this_host_pass() -> None:
    one = R(cpu_host(), numa=Numa(nodes=(NumaNode(0, tuple(range(8)), 2000),), allowed_mems=(0,)))
    assert _tuned([S("numa_balancing", "sysctl.kernel.numa_balancing", "1", "q")], host=one).status == "pass"
    no_cpufreq = kern(governors=())(cpu_host())
    assert _tuned([S("governor", "cpu.governor", "powersave", "q")], host=no_cpufreq).status == "pass"


def test_daemon_state_and_several_conflicts_in_words() -> None:
    f = _tuned([S("thp", THP, "always", "a"), S("swappiness", "sysctl.vm.swappiness", "60", "b")], running=None)
    assert f.actual == "profile p (state unknown) sets vm.transparent_hugepages=always (a); sysctl.vm.swappiness=60 (b)"
    f = _tuned([S("thp", THP, "always", "a")], running=False)
    assert f.actual == "profile p (not running now, applies it when started) sets vm.transparent_hugepages=always (a)"
    assert _tuned([], running=False).actual == "profile p (not running now, applies it when started)"
    f = run_one("os.tuned", R(cpu_host(), tuned=Tuned(installed=True, running=True, profile=None)))
    assert (f.status, f.actual, f.expected) == (
        "pass", "tuned has no active profile",
        "no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor")
    f = run_one("os.tuned", R(cpu_host(), tuned=Tuned(installed=False, profile="p")))
    assert (f.status, f.actual) == ("pass", "tuned not installed")
    assert os_checks._JUDGED == ("thp", "swappiness", "numa_balancing", "governor")


def test_container_gpu_nodes_against_the_drivers_count() -> None:
    from hosttune.facts import Container

    def actual(**kw: Any) -> str:
        c = Container(detected=True, runtime="docker", evidence=("/.dockerenv exists",), **kw)
        return run_one("os.container", R(cpu_host(), container=c)).actual

    assert actual(gpu_nodes=1, driver_gpus=0).endswith("; 1 GPU device nodes passed in of the driver's 0")
    assert actual(gpu_nodes=0, driver_gpus=4).endswith("; 0 GPU device nodes passed in of the driver's 4")
    assert actual(gpu_nodes=2, driver_gpus=None).endswith("; 2 GPU device nodes passed in")
    assert actual(gpu_nodes=0, driver_gpus=None).endswith("limits from its cgroup: none")


@pytest.mark.parametrize("epp,status", [("power", "warn"), ("performance", "pass"), (None, "pass")])
def test_governor_of_a_captured_host_with_its_energy_preference(tmp_path: Any, epp: Optional[str],
                                                                status: str) -> None:
    files = {"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
             "sys/devices/system/cpu/online": "0\n"}
    if epp:
        files["sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference"] = epp + "\n"
        files["sys/devices/system/cpu/cpu0/cpufreq/energy_performance_preference"] = epp + "\n"
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    f = run_one("os.governor", cpu_host(root=str(tmp_path)), live=False)
    assert f.status == status
    if status == "warn":
        assert (f.actual, f.expected) == ("performance, energy_performance_preference power",
                                          "performance, energy_performance_preference performance")
        assert f.fix == ("hosttune tune apply --only epp   # applies it and keeps it; by hand:\necho performance | tee "
                         "/sys/devices/system/cpu/cpufreq/policy*/energy_performance_preference")
    else:
        assert (f.actual, f.expected, f.fix) == ("performance", "performance", "")
