"""Pins (issue 21, round 7 practice) for hosttune/tune/tunables.py: every tunable's want() (expected value and the
reason shown beside it) and targets() on whole synthetic trees (policyN and pre-4.3 cpuN/cpufreq layouts, a driver
that lacks the profile's governor, a bare tree), and the static table (persisted file, lines, boot, sysctl)."""

from pathlib import Path
from typing import Any, Callable, Dict

import pytest

from hosttune.profile.settings import Tune
from hosttune.tune import tunables
from hosttune.tune.rootfs import Tree

THP = "sys/kernel/mm/transparent_hugepage"


def _w(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _rich(root: Path) -> None:
    """Two NUMA nodes, swap, an InfiniBand device, an NVIDIA GPU; policy1's driver lacks `performance`."""
    _w(root, f"{THP}/enabled", "always [madvise] never\n")
    _w(root, f"{THP}/defrag", "[always] defer madvise never\n")
    _w(root, "proc/sys/kernel/numa_balancing", "1\n")
    _w(root, "proc/sys/vm/swappiness", "60\n")
    for n in (0, 1):
        _w(root, f"sys/devices/system/node/node{n}/meminfo", "")
    _w(root, "proc/meminfo", "MemTotal: 16384000 kB\nSwapTotal: 2048000 kB\n")
    (root / "sys/class/infiniband/mlx5_0").mkdir(parents=True)
    for p, govs in (("policy0", "performance powersave"), ("policy1", "conservative ondemand userspace powersave")):
        d = f"sys/devices/system/cpu/cpufreq/{p}"
        _w(root, f"{d}/scaling_governor", "powersave\n")
        _w(root, f"{d}/scaling_available_governors", govs + "\n")
        _w(root, f"{d}/energy_performance_preference", "balance_power\n")
        _w(root, f"{d}/energy_performance_available_preferences", "default performance balance_power power\n")
    _w(root, "sys/bus/pci/devices/0000:3b:00.0/vendor", "0x10de\n")
    _w(root, "sys/bus/pci/devices/0000:3b:00.0/class", "0x030200\n")


def _old(root: Path) -> None:
    """A kernel before 4.3: each CPU's own cpufreq directory (and a governor's tunables directory beside them);
    no swap, an NVIDIA audio function only."""
    for c in (0, 1):
        d = f"sys/devices/system/cpu/cpu{c}/cpufreq"
        _w(root, f"{d}/scaling_governor", "ondemand\n")
        _w(root, f"{d}/scaling_available_governors", "ondemand performance\n")
    _w(root, "sys/devices/system/cpu/cpufreq/ondemand/up_threshold", "95\n")
    _w(root, "proc/meminfo", "MemTotal: 16384000 kB\nSwapTotal: 0 kB\n")
    _w(root, "sys/bus/pci/devices/0000:3b:00.1/vendor", "0x10de\n")
    _w(root, "sys/bus/pci/devices/0000:3b:00.1/class", "0x040300\n")


def _bare(root: Path) -> None:
    pass


def _vga(root: Path) -> None:
    """An NVIDIA GPU of PCI class VGA (0x0300: a workstation card driving a display), beside an NVIDIA non-GPU."""
    _w(root, "sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n")
    _w(root, "sys/bus/pci/devices/0000:01:00.0/class", "0x030000\n")
    _w(root, "sys/bus/pci/devices/0000:01:00.1/vendor", "0x10de\n")
    _w(root, "sys/bus/pci/devices/0000:01:00.1/class", "0x068000\n")


TREES: Dict[str, Callable[[Path], None]] = {"rich": _rich, "old": _old, "bare": _bare, "vga": _vga}
TUNES: Dict[str, Tune] = {"default": Tune(),
                          "site": Tune(governor="powersave", epp="power", persistence=False, thp="never")}


def snapshot(root: Path, tune: Tune) -> str:
    """One line a tunable: its id, the value wanted here or None, the reason, the files it writes."""
    tree = Tree(root)
    lines = []
    for t in tunables.TUNABLES:
        value, why = t.want(tree, tune)
        lines.append(f"{t.id}: {value} ({why}) -> {' '.join(t.targets(tree)) or '-'}")
    return "\n".join(lines) + "\n"


EXPECTED: Dict[Any, str] = {
    ('rich', 'default'): (
        'thp: madvise (`always` makes khugepaged compact in the background and faults stall on direct '
        'compaction; madvise keeps huge pages for code that asks) -> '
        'sys/kernel/mm/transparent_hugepage/enabled\n'
        'thp_defrag: madvise (direct compaction only for regions that ask for huge pages) -> '
        'sys/kernel/mm/transparent_hugepage/defrag\n'
        "numa_balancing: 0 (ranks are pinned to their GPU's node, balancing only adds page faults and "
        'migrations) -> proc/sys/kernel/numa_balancing\n'
        'swappiness: 10 (the default 60 swaps out page cache and pinned buffers; the next step stalls) -> '
        'proc/sys/vm/swappiness\n'
        "governor: None (the cpufreq driver offers no 'performance' governor (policy1 offers conservative "
        'ondemand userspace powersave)) -> sys/devices/system/cpu/cpufreq/policy0/scaling_governor '
        'sys/devices/system/cpu/cpufreq/policy1/scaling_governor\n'
        'epp: performance (the hardware favours speed over power saving, as the performance governor does) '
        '-> sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference '
        'sys/devices/system/cpu/cpufreq/policy1/energy_performance_preference\n'
        'nofile: 65536 (DataLoader workers and NCCL open many files and sockets; 1024 runs out) -> -\n'
        'memlock: unlimited (RDMA (NCCL over InfiniBand/RoCE) pins its buffers) -> -\n'
        'shm: size=50% (DataLoader workers hand every batch over in /dev/shm) -> -\n'
        'persistence: None (--root: enabling a service needs systemctl on the host itself) -> -\n'
    ),
    ('rich', 'site'): (
        'thp: never (`always` makes khugepaged compact in the background and faults stall on direct '
        'compaction; madvise keeps huge pages for code that asks) -> '
        'sys/kernel/mm/transparent_hugepage/enabled\n'
        'thp_defrag: madvise (direct compaction only for regions that ask for huge pages) -> '
        'sys/kernel/mm/transparent_hugepage/defrag\n'
        "numa_balancing: 0 (ranks are pinned to their GPU's node, balancing only adds page faults and "
        'migrations) -> proc/sys/kernel/numa_balancing\n'
        'swappiness: 10 (the default 60 swaps out page cache and pinned buffers; the next step stalls) -> '
        'proc/sys/vm/swappiness\n'
        'governor: powersave (clocks ramp up only after load appears; the threads feeding GPUs pay the ramp '
        'each burst) -> sys/devices/system/cpu/cpufreq/policy0/scaling_governor '
        'sys/devices/system/cpu/cpufreq/policy1/scaling_governor\n'
        'epp: power (the hardware favours speed over power saving, as the performance governor does) -> '
        'sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference '
        'sys/devices/system/cpu/cpufreq/policy1/energy_performance_preference\n'
        'nofile: 65536 (DataLoader workers and NCCL open many files and sockets; 1024 runs out) -> -\n'
        'memlock: unlimited (RDMA (NCCL over InfiniBand/RoCE) pins its buffers) -> -\n'
        'shm: size=50% (DataLoader workers hand every batch over in /dev/shm) -> -\n'
        'persistence: None (tune.persistence is off in the profile) -> -\n'
    ),
    ('old', 'default'): (
        'thp: madvise (`always` makes khugepaged compact in the background and faults stall on direct '
        'compaction; madvise keeps huge pages for code that asks) -> -\n'
        'thp_defrag: madvise (direct compaction only for regions that ask for huge pages) -> -\n'
        'numa_balancing: None (1 NUMA node: nothing to balance) -> -\n'
        'swappiness: None (no swap configured: swappiness has no effect) -> -\n'
        'governor: performance (clocks ramp up only after load appears; the threads feeding GPUs pay the '
        'ramp each burst) -> sys/devices/system/cpu/cpu0/cpufreq/scaling_governor '
        'sys/devices/system/cpu/cpu1/cpufreq/scaling_governor\n'
        'epp: None (the cpufreq driver has no energy_performance_preference) -> -\n'
        'nofile: 65536 (DataLoader workers and NCCL open many files and sockets; 1024 runs out) -> -\n'
        'memlock: None (no RDMA devices: only RDMA pins memory) -> -\n'
        'shm: size=50% (DataLoader workers hand every batch over in /dev/shm) -> -\n'
        'persistence: None (no NVIDIA GPU) -> -\n'
    ),
    ('old', 'site'): (
        'thp: never (`always` makes khugepaged compact in the background and faults stall on direct '
        'compaction; madvise keeps huge pages for code that asks) -> -\n'
        'thp_defrag: madvise (direct compaction only for regions that ask for huge pages) -> -\n'
        'numa_balancing: None (1 NUMA node: nothing to balance) -> -\n'
        'swappiness: None (no swap configured: swappiness has no effect) -> -\n'
        "governor: None (the cpufreq driver offers no 'powersave' governor (cpufreq offers ondemand "
        'performance)) -> sys/devices/system/cpu/cpu0/cpufreq/scaling_governor '
        'sys/devices/system/cpu/cpu1/cpufreq/scaling_governor\n'
        'epp: None (the cpufreq driver has no energy_performance_preference) -> -\n'
        'nofile: 65536 (DataLoader workers and NCCL open many files and sockets; 1024 runs out) -> -\n'
        'memlock: None (no RDMA devices: only RDMA pins memory) -> -\n'
        'shm: size=50% (DataLoader workers hand every batch over in /dev/shm) -> -\n'
        'persistence: None (tune.persistence is off in the profile) -> -\n'
    ),
    ('bare', 'default'): (
        'thp: madvise (`always` makes khugepaged compact in the background and faults stall on direct '
        'compaction; madvise keeps huge pages for code that asks) -> -\n'
        'thp_defrag: madvise (direct compaction only for regions that ask for huge pages) -> -\n'
        'numa_balancing: None (1 NUMA node: nothing to balance) -> -\n'
        'swappiness: 10 (the default 60 swaps out page cache and pinned buffers; the next step stalls) -> '
        '-\n'
        'governor: None (no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)) -> -\n'
        'epp: None (the cpufreq driver has no energy_performance_preference) -> -\n'
        'nofile: 65536 (DataLoader workers and NCCL open many files and sockets; 1024 runs out) -> -\n'
        'memlock: None (no RDMA devices: only RDMA pins memory) -> -\n'
        'shm: size=50% (DataLoader workers hand every batch over in /dev/shm) -> -\n'
        'persistence: None (no NVIDIA GPU) -> -\n'
    ),
    ('bare', 'site'): (
        'thp: never (`always` makes khugepaged compact in the background and faults stall on direct '
        'compaction; madvise keeps huge pages for code that asks) -> -\n'
        'thp_defrag: madvise (direct compaction only for regions that ask for huge pages) -> -\n'
        'numa_balancing: None (1 NUMA node: nothing to balance) -> -\n'
        'swappiness: 10 (the default 60 swaps out page cache and pinned buffers; the next step stalls) -> '
        '-\n'
        'governor: None (no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)) -> -\n'
        'epp: None (the cpufreq driver has no energy_performance_preference) -> -\n'
        'nofile: 65536 (DataLoader workers and NCCL open many files and sockets; 1024 runs out) -> -\n'
        'memlock: None (no RDMA devices: only RDMA pins memory) -> -\n'
        'shm: size=50% (DataLoader workers hand every batch over in /dev/shm) -> -\n'
        'persistence: None (tune.persistence is off in the profile) -> -\n'
    ),
    ('vga', 'default'): (
        'thp: madvise (`always` makes khugepaged compact in the background and faults stall on direct '
        'compaction; madvise keeps huge pages for code that asks) -> -\n'
        'thp_defrag: madvise (direct compaction only for regions that ask for huge pages) -> -\n'
        'numa_balancing: None (1 NUMA node: nothing to balance) -> -\n'
        'swappiness: 10 (the default 60 swaps out page cache and pinned buffers; the next step stalls) -> '
        '-\n'
        'governor: None (no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)) -> -\n'
        'epp: None (the cpufreq driver has no energy_performance_preference) -> -\n'
        'nofile: 65536 (DataLoader workers and NCCL open many files and sockets; 1024 runs out) -> -\n'
        'memlock: None (no RDMA devices: only RDMA pins memory) -> -\n'
        'shm: size=50% (DataLoader workers hand every batch over in /dev/shm) -> -\n'
        'persistence: None (--root: enabling a service needs systemctl on the host itself) -> -\n'
    ),
}


@pytest.mark.parametrize("tree_name,tune_name", sorted(EXPECTED))
def test_every_tunables_want_and_targets_on_whole_trees(tmp_path: Path, tree_name: str, tune_name: str) -> None:
    TREES[tree_name](tmp_path)
    assert snapshot(tmp_path, TUNES[tune_name]) == EXPECTED[(tree_name, tune_name)]


def test_the_static_table_of_every_tunable() -> None:
    table = {t.id: (t.title, t.check, t.kind, t.persist, t.lines("4096") if t.persist else [], t.boot, t.sysctl)
             for t in tunables.TUNABLES}
    assert table == {'epp': ('Energy/performance preference', 'os.governor', 'attr', None, [], True, False),
     'governor': ('CPU frequency governor', 'os.governor', 'attr', None, [], True, False),
     'memlock': ('Locked memory limit for new logins',
                 'cpu.memlock',
                 'file',
                 'etc/security/limits.d/90-hosttune.conf',
                 ['* soft memlock 4096', '* hard memlock 4096'],
                 False,
                 False),
     'nofile': ('Open files limit for new logins',
                'cpu.nofile',
                'file',
                'etc/security/limits.d/90-hosttune.conf',
                ['* soft nofile 4096', '* hard nofile 1048576'],
                False,
                False),
     'numa_balancing': ('Automatic NUMA balancing',
                        'os.numa_balancing',
                        'attr',
                        'etc/sysctl.d/90-hosttune.conf',
                        ['kernel.numa_balancing = 4096'],
                        False,
                        True),
     'persistence': ('NVIDIA persistence mode', 'nvidia.persistence', 'service', None, [], False, False),
     'shm': ('/dev/shm size',
             'storage.shm',
             'shm',
             'etc/systemd/system/dev-shm.mount.d/hosttune.conf',
             ['[Mount]', 'Options=mode=1777,strict,nosuid,nodev,4096'],
             True,
             False),
     'swappiness': ('Swappiness',
                    'os.swappiness',
                    'attr',
                    'etc/sysctl.d/90-hosttune.conf',
                    ['vm.swappiness = 4096'],
                    False,
                    True),
     'thp': ('Transparent huge pages', 'os.thp', 'attr', None, [], True, False),
     'thp_defrag': ('Transparent huge page defrag', 'os.thp', 'attr', None, [], True, False)}
