"""doctor's tools checks (hosttune/doctor/checks/tools.py): an allocator and numactl installed, with the install
command of the host's distro family."""


from _doctorhelp import R, cpu_host, run_one, same, table_test

from hosttune.facts import Allocators, Distro, Numa, NumaNode, Tools

# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("tools.allocator", cpu_host, same, {}, "pass", "libjemalloc"),
    ("tools.allocator", cpu_host, lambda f: R(f, allocators=Allocators()), {}, "warn",
     "apt-get install -y libjemalloc2"),
    ("tools.allocator", cpu_host, lambda f: R(f, allocators=Allocators(),
                                              distro=Distro(id="rocky", version="9", family="rhel")), {}, "warn",
     "dnf install -y epel-release && dnf install -y jemalloc"),
    ("tools.numactl", cpu_host, same, {}, "pass", "numactl"),
    ("tools.numactl", cpu_host, lambda f: R(f, tools=Tools()), {}, "warn", "apt-get install -y numactl"),
    ("tools.numactl", cpu_host, lambda f: R(f, tools=Tools(), numa=Numa(nodes=(NumaNode(0),))), {}, "pass",
     "not needed"),
]


test_check = table_test(CASES)  # one case per row: status, and the text in actual/fix/expected


def test_unknown_family_shows_both_package_managers() -> None:
    f = run_one("tools.allocator", cpu_host(distro=Distro(id="arch", family="unknown"), allocators=Allocators()))
    assert "apt-get install -y libjemalloc2" in f.fix and "dnf install -y jemalloc" in f.fix


def test_rhel_proper_gets_the_epel_url() -> None:
    f = run_one("tools.allocator", cpu_host(distro=Distro(id="rhel", version="9.4", family="rhel"),
                                            allocators=Allocators()))
    assert "epel-release-latest-9.noarch.rpm" in f.fix
