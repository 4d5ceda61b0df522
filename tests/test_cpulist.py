"""CPU lists and masks (hosttune/cpulist.py, issue 11 item 7): ids capped at the kernel's limit, parsed in linear
time, on their own and in `hosttune facts --root` on a tree full of huge lists."""

from pathlib import Path

import pytest
from _detecthelp import facts_json, hosttune

from hosttune.cpulist import MAX_CPUS, parse_cpulist, parse_cpulist_checked, parse_cpumask, parse_cpumask_checked


@pytest.mark.parametrize("text", ["0-99999999", "0-9999999", "0-16383,16384-99999999999999999999999", "9" * 100000])
def test_cpulist_ids_are_capped_at_the_kernel_limit(text: str) -> None:
    cpus, dropped = parse_cpulist_checked(text)
    assert dropped == 1 and all(0 <= c < MAX_CPUS for c in cpus)
    assert len(cpus) in (0, MAX_CPUS)


def test_cpulist_overlapping_and_repeated_ranges_merge() -> None:
    assert parse_cpulist(",".join(["0-16383"] * 20000)) == list(range(MAX_CPUS))
    assert parse_cpulist("0-7:2,1-7:2,4-11:2") == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert parse_cpulist_checked("3-1,x,5,-2,0-") == ([5], 4)
    assert parse_cpulist("0-3,8,10-11\n\0") == [0, 1, 2, 3, 8, 10, 11]


def test_huge_hex_cpumask_is_capped() -> None:
    cpus, over = parse_cpumask_checked("f" * 100000)
    assert cpus == list(range(MAX_CPUS)) and over
    assert parse_cpumask_checked("0" * 100000 + "3") == ([0, 1], False)
    assert parse_cpumask("00000000,0000ffff\n") == list(range(16))
    assert parse_cpumask("zz") == []


def test_facts_on_a_tree_with_huge_cpu_lists(tmp_path: Path) -> None:
    root = tmp_path / "root"
    files = {
        "sys/devices/system/cpu/online": "0-99999999\n",
        "sys/devices/system/node/node0/cpulist": "0-9999999\n",
        "sys/devices/system/node/node1/cpumap": "f" * 200000 + "\n",
        "sys/devices/system/node/node0/meminfo": "Node 0 MemTotal: 1024 kB\n",
        "sys/devices/system/node/node1/meminfo": "Node 1 MemTotal: " + "9" * 100000 + " kB\n",
        "proc/self/status": "Cpus_allowed_list:\t0-99999999\n",
    }
    for cpu in range(4):
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"] = "0-99999999\n"
        files[f"sys/devices/system/cpu/cpu{cpu}/topology/core_id"] = "9" * 100000 + "\n"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    data = facts_json(hosttune("facts", "--json", "--root", str(root)))
    assert data["cpu"]["logical"] == 4
    assert [n["cpus"] for n in data["numa"]["nodes"]] == [[0, 1, 2, 3], [0, 1, 2, 3]]
    missing = "\n".join(data["missing"])
    assert f"CPU ids >= {MAX_CPUS}" in missing
