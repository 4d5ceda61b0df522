"""hosttune.detect.tuned pinned on captured trees (issue 21): tuned.conf parsing, include order and depth, the
directory that wins, replace=, disabled and conditional units, aliases, the daemon's state and the whole Tuned."""

from pathlib import Path
from typing import Dict

import pytest
from conftest import build_tree

from hosttune.detect import tuned as T
from hosttune.detect.hostio import HostIO
from hosttune.facts import Tuned, TunedSetting


def test_parse_conf() -> None:
    text = ("top=1\n# c\n; c\n[main]\nsummary = a = b \ninclude=x, y;z\n\n[vm]\ntransparent_hugepages=always\n"
            "noequals\n[ sysctl ]\nvm.swappiness = 10\n")
    conf = T.parse_conf(text)
    assert conf == {"": {"top": "1"}, "main": {"summary": "a = b", "include": "x, y;z"},
                    "vm": {"transparent_hugepages": "always"}, "sysctl": {"vm.swappiness": "10"}}
    assert list(conf) == ["", "main", "vm", "sysctl"]
    assert T.parse_conf("[main]\n") == {"main": {}}
    assert T.includes(conf) == ["x", "y", "z"]
    assert T.includes({"main": {"include": " , a ;; "}}) == ["a"]
    assert T.includes({}) == []


def prof(name: str, body: str, where: str = "usr/lib/tuned") -> Dict[str, str]:
    return {f"{where}/{name}/tuned.conf": body}


def io_of(tmp_path: Path, *profiles: Dict[str, str], extra: Dict[str, str] = {}) -> HostIO:  # noqa: B006
    files: Dict[str, str] = {}
    for p in profiles:
        files.update(p)
    files.update(extra)
    return HostIO(build_tree(tmp_path / "root", files))


def test_profile_path_later_directory_wins(tmp_path: Path) -> None:
    io = io_of(tmp_path, prof("p", "[main]\n"), prof("p", "[main]\n", "etc/tuned"),
               prof("q", "", "usr/lib/tuned/profiles"), {"usr/lib/tuned.conf": "", "etc/tuned.conf": "",
                                                         "usr/lib/tuned/tuned.conf": ""})
    assert T.profile_path(io, "p") == "/etc/tuned/p/tuned.conf"
    assert T.profile_path(io, "q") == "/usr/lib/tuned/profiles/q/tuned.conf"
    assert T.profile_path(io, "none") is None
    for bad in ("", ".", "..", "a/b"):
        assert T.profile_path(io, bad) is None


def test_merge_includes_in_order_and_replace(tmp_path: Path) -> None:
    io = io_of(tmp_path,
               prof("base", "[vm]\ntransparent_hugepages=always\n[sysctl]\nvm.swappiness=60\n"
                            "kernel.numa_balancing=1\n"),
               prof("mid", "[main]\ninclude=base\n[sysctl]\nvm.swappiness=30\n"),
               prof("other", "[cpu]\ngovernor=powersave\n"),
               prof("top", "[main]\ninclude=mid,other\n[sysctl]\nreplace=1\nvm.swappiness=10\n[vm]\n"
                           "transparent_hugepage=madvise\n"))
    units, problems = T.merged(io, ["top"])
    assert problems == []
    assert units["sysctl"] == {"replace": ("1", "top"), "vm.swappiness": ("10", "top")}  # numa_balancing dropped
    assert units["vm"] == {"transparent_hugepages": ("always", "base"), "transparent_hugepage": ("madvise", "top")}
    settings = T.effective(units)
    assert settings == (TunedSetting("thp", "vm.transparent_hugepages", "madvise", "top"),
                        TunedSetting("swappiness", "sysctl.vm.swappiness", "10", "top"),
                        TunedSetting("governor", "cpu.governor", "powersave", "other"))


def test_disabled_conditional_and_typed_units(tmp_path: Path) -> None:
    units = {"cpu": {"governor": ("powersave", "p"), "enabled": ("false", "p")},
             "cpu_thunder": {"type": ("cpu", "p"), "governor": ("ondemand", "p"), "uname_regex": ("x", "p")},
             "my_cpu": {"type": ("cpu", "p"), "energy_performance_preference": ("power", "p")},
             "sysctl": {"kernel.numa_balancing": ("0", "p"), "enabled": ("1", "p")},
             "vm": {"transparent_hugepage.defrag": ("never", "p"), "enabled": ("OFF", "p")},
             "disk": {"devices_udev_regex": ("x", "p"), "readahead": ("4096", "p")}}
    assert T.effective(units) == (TunedSetting("numa_balancing", "sysctl.kernel.numa_balancing", "0", "p"),
                                  TunedSetting("epp", "cpu.energy_performance_preference", "power", "p"))


def test_missing_profiles_and_include_loops(tmp_path: Path) -> None:
    io = io_of(tmp_path, prof("loop", "[main]\ninclude=loop\n[vm]\ntransparent_hugepages=never\n"),
               prof("a", "[main]\ninclude=gone\n"))
    units, problems = T.merged(io, ["a"])
    assert units == {} and problems == ["profile gone: not found in /usr/lib/tuned, /usr/lib/tuned/profiles, "
                                        "/etc/tuned, /etc/tuned/profiles"]
    units, problems = T.merged(io, ["loop"])
    assert problems == ["includes nested deeper than 32"]
    assert units["vm"] == {"transparent_hugepages": ("never", "loop")}


def chain(n: int) -> Dict[str, str]:
    files = prof("p0", "[vm]\ntransparent_hugepages=never\n")
    for i in range(1, n + 1):
        files.update(prof(f"p{i}", f"[main]\ninclude=p{i - 1}\n"))
    return files


def test_include_depth_limit_is_exact(tmp_path: Path) -> None:
    io = io_of(tmp_path, chain(33))
    assert T.merged(io, ["p32"])[1] == []  # 32 levels of includes
    assert T.merged(io, ["p33"])[1] == ["includes nested deeper than 32"]


@pytest.mark.parametrize("files,state", [
    ({"run/tuned/tuned.pid": "123\n", "proc/123/comm": "tuned\n"}, True),
    ({"run/tuned/tuned.pid": "123\n", "proc/123/comm": "bash\n"}, False),
    ({"run/tuned/tuned.pid": "123\n"}, True),  # a capture without proc: the pid file says so
    ({"run/tuned/tuned.pid": "0\n", "etc/tuned/x": ""}, False),
    ({"run/tuned/tuned.pid": "junk\n"}, None),
    ({"etc/tuned/active_profile": "x\n"}, False),
    ({}, None),
])
def test_running_on_a_captured_tree(tmp_path: Path, files: Dict[str, str], state: object) -> None:
    assert T.running(HostIO(build_tree(tmp_path / "r", files))) is state


def test_probe_whole(tmp_path: Path) -> None:
    io = io_of(tmp_path, prof("throughput-performance", "[cpu]\ngovernor=performance\n[sysctl]\nvm.swappiness=10\n"),
               prof("extra", "[vm]\ntransparent_hugepages=always\n", "etc/tuned"),
               extra={"etc/tuned/active_profile": "  throughput-performance   extra \n",
                      "etc/tuned/profile_mode": "manual\n", "run/tuned/tuned.pid": "77\n",
                      "proc/77/comm": "tuned\n"})
    assert T.probe(io) == Tuned(installed=True, running=True, profile="throughput-performance extra", mode="manual",
                                settings=(TunedSetting("thp", "vm.transparent_hugepages", "always", "extra"),
                                          TunedSetting("swappiness", "sysctl.vm.swappiness", "10",
                                                       "throughput-performance"),
                                          TunedSetting("governor", "cpu.governor", "performance",
                                                       "throughput-performance")))
    assert io.missing == []


def test_probe_not_installed_and_no_profile(tmp_path: Path) -> None:
    assert T.probe(HostIO(build_tree(tmp_path / "a", {"etc/x": ""}))) == Tuned()
    io = HostIO(build_tree(tmp_path / "b", {"usr/lib/tuned/functions": "", "etc/tuned/active_profile": "\n",
                                            "etc/tuned/profile_mode": "\n"}))
    assert T.probe(io) == Tuned(installed=True, running=False, profile=None, mode=None)
    io = HostIO(build_tree(tmp_path / "c", {"etc/tuned/active_profile": "gone\n"}))
    assert T.probe(io).settings == ()
    assert io.missing == ["tuned: profile gone: not found in /usr/lib/tuned, /usr/lib/tuned/profiles, /etc/tuned, "
                          "/etc/tuned/profiles"]
