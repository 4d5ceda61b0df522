"""The tunables as data: what each one reads, expects (from the profile's `tune:` section), writes and persists.

Kinds, each an object in `hosttune.tune.kinds.KINDS` (read, apply, verify, revert):
- `attr`: kernel attributes written in place (sysfs, /proc/sys). Kept across reboots by a sysctl.d file (`persist`)
  or, for sysfs, by `hosttune-tune.service` re-applying the choices saved in the state file at boot (`boot`).
- `file`: a configuration file only (limits.d: the limit applies to new logins; nothing runtime to change).
- `shm`: /dev/shm's size: a systemd drop-in for the mount and, on the live host only, `mount -o remount`.
- `service`: NVIDIA persistence through `systemctl enable --now nvidia-persistenced` (live host with GPUs only).
"""

import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from hosttune.profile.settings import Tune
from hosttune.tune import rules
from hosttune.tune.rootfs import Tree, iter_lines

SYSCTL_FILE = "etc/sysctl.d/90-hosttune.conf"
LIMITS_FILE = "etc/security/limits.d/90-hosttune.conf"
SHM_DROPIN = "etc/systemd/system/dev-shm.mount.d/hosttune.conf"
THP_DIR = "sys/kernel/mm/transparent_hugepage"
CPU_DIR = "sys/devices/system/cpu"
CPUFREQ = CPU_DIR + "/cpufreq"
# the files a cpufreq tunable writes: policyN's (kernel 4.3 and later) or, before, each CPU's own
_CPUFREQ_OWN = f"(?:{re.escape(CPUFREQ)}/policy[0-9]{{1,5}}|{re.escape(CPU_DIR)}/cpu[0-9]{{1,5}}/cpufreq)/"
NOFILE_HARD = 1048576  # systemd's default hard limit since v240: what doctor's fix writes

# (expected value or None when the tunable does not apply here, the reason shown beside it)
Want = Tuple[Optional[str], str]


@dataclass(frozen=True)
class Tunable:
    id: str
    title: str
    check: str  # the doctor check it satisfies
    kind: str  # a key of hosttune.tune.kinds.KINDS: attr | file | shm | service
    want: Callable[[Tree, Tune], Want]
    targets: Callable[[Tree], List[str]] = lambda tree: []  # attr: the files written
    persist: Optional[str] = None  # attr/file/shm: the file holding it (shared files hold one block per tunable)
    lines: Callable[[str], List[str]] = lambda value: []  # the persisted lines for a value
    boot: bool = False  # attr: re-applied at boot by hosttune-tune.service
    sysctl: bool = False  # attr under /proc/sys: skipped when it is read-only (a container)
    # the keys its entry in the state file's `before` may have (a regular expression matched whole): the targets an
    # attr writes, "/dev/shm", "nvidia-persistenced". revert writes nothing else, whatever the state file says.
    own: str = ""

    def ok(self, actual: str, expected: str) -> bool:
        """`actual` satisfies `expected` (hosttune.tune.rules: the comparison doctor makes too)."""
        return rules.ok(self.id, actual, expected)


def _rule(tid: str, reason: str) -> Callable[[Tree, Tune], Want]:
    """The profile's value for `tid`, unless hosttune.tune.rules says it does not apply on this host."""
    def want(tree: Tree, tune: Tune) -> Want:
        why = rules.not_here(tid, rules.host_of_tree(tree.root))
        if why is not None:
            return None, why
        return rules.expected(tid, tune), reason
    return want


def _policies(tree: Tree, name: str) -> List[str]:
    """`name` in each cpufreq policy directory; on kernels before 4.3 (no policyN directories) in each CPU's own
    cpufreq directory, as the detector reads the governors (links, cpuN/cpufreq on newer kernels, never entered)."""
    files = tree.glob(f"{CPUFREQ}/policy*/{name}")
    if files:
        return files
    return [p for p in tree.glob(f"{CPU_DIR}/cpu*/cpufreq/{name}") if p.split("/")[4][3:].isdigit()]


def _not_offered(tree: Tree, files: List[str], listing: str, value: str) -> Optional[str]:
    """The first policy whose `listing` (what its driver offers) lacks `value`, with the list; None when every
    policy that has the listing offers it (the value is also pattern-checked by the profile's settings table, and
    the kernel refuses a name its driver does not have)."""
    for f in files:
        where = f.rsplit("/", 1)[0]
        avail = (tree.read(f"{where}/{listing}") or "").split()
        if avail and value not in avail:
            return f"{where.rsplit('/', 1)[-1]} offers {' '.join(avail)}"
    return None


def _want_governor(tree: Tree, tune: Tune) -> Want:
    files = _policies(tree, "scaling_governor")
    if not files:
        return None, "no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)"
    missing = _not_offered(tree, files, "scaling_available_governors", tune.governor)
    if missing:
        return None, f"the cpufreq driver offers no {tune.governor!r} governor ({missing})"
    return rules.expected("governor", tune), \
        "clocks ramp up only after load appears; the threads feeding GPUs pay the ramp each burst"


def _want_epp(tree: Tree, tune: Tune) -> Want:
    files = _policies(tree, "energy_performance_preference")
    if not files:
        return None, "the cpufreq driver has no energy_performance_preference"
    missing = _not_offered(tree, files, "energy_performance_available_preferences", tune.epp)
    if missing:
        return None, f"the driver offers no {tune.epp!r} preference ({missing})"
    return rules.expected("epp", tune), "the hardware favours speed over power saving, as the performance governor does"


def _limit_lines(item: str) -> Callable[[str], List[str]]:
    def lines(value: str) -> List[str]:
        if item == "nofile":
            hard = value if value == "unlimited" else str(max(int(value), NOFILE_HARD))
            return [f"* soft nofile {value}", f"* hard nofile {hard}"]
        return [f"* soft {item} {value}", f"* hard {item} {value}"]
    return lines


def limit_value(text: Optional[str], item: str) -> Optional[str]:
    """The soft `item` limit set for every user (`*`) in a limits.conf text."""
    value = None
    for line in iter_lines(text):
        f = line.split()
        if len(f) == 4 and f[0] == "*" and f[1] in ("soft", "-") and f[2] == item:
            value = "unlimited" if f[3] in ("unlimited", "infinity", "-1") else f[3]
    return value


def _has_gpus(tree: Tree) -> bool:
    for vendor in tree.glob("sys/bus/pci/devices/*/vendor"):
        if (tree.read(vendor) or "").strip() == "0x10de":
            cls = (tree.read(vendor.rsplit("/", 1)[0] + "/class") or "").strip()
            if cls.startswith(("0x0300", "0x0302")):
                return True
    return False


def _want_persistence(tree: Tree, tune: Tune) -> Want:
    if not tune.persistence:
        return None, "tune.persistence is off in the profile"
    if not _has_gpus(tree):
        return None, "no NVIDIA GPU"
    if not tree.live:
        return None, "--root: enabling a service needs systemctl on the host itself"
    return rules.expected("persistence", tune), "without it the driver tears the GPUs down when the last process exits"


TUNABLES: Tuple[Tunable, ...] = (
    Tunable("thp", "Transparent huge pages", "os.thp", "attr",
            want=_rule("thp", "`always` makes khugepaged compact in the background and faults stall on direct "
                       "compaction; madvise keeps huge pages for code that asks"),
            targets=lambda tree: [f"{THP_DIR}/enabled"] if tree.exists(f"{THP_DIR}/enabled") else [],
            boot=True, own=re.escape(f"{THP_DIR}/enabled")),
    Tunable("thp_defrag", "Transparent huge page defrag", "os.thp", "attr",
            want=_rule("thp_defrag", "direct compaction only for regions that ask for huge pages"),
            targets=lambda tree: [f"{THP_DIR}/defrag"] if tree.exists(f"{THP_DIR}/defrag") else [],
            boot=True, own=re.escape(f"{THP_DIR}/defrag")),
    Tunable("numa_balancing", "Automatic NUMA balancing", "os.numa_balancing", "attr",
            want=_rule("numa_balancing", "ranks are pinned to their GPU's node, balancing only adds page faults "
                       "and migrations"),
            targets=lambda tree: ["proc/sys/kernel/numa_balancing"]
            if tree.exists("proc/sys/kernel/numa_balancing") else [],
            persist=SYSCTL_FILE, lines=lambda v: [f"kernel.numa_balancing = {v}"], sysctl=True,
            own=re.escape("proc/sys/kernel/numa_balancing")),
    Tunable("swappiness", "Swappiness", "os.swappiness", "attr",
            want=_rule("swappiness", "the default 60 swaps out page cache and pinned buffers; the next step stalls"),
            targets=lambda tree: ["proc/sys/vm/swappiness"] if tree.exists("proc/sys/vm/swappiness") else [],
            persist=SYSCTL_FILE, lines=lambda v: [f"vm.swappiness = {v}"], sysctl=True,
            own=re.escape("proc/sys/vm/swappiness")),
    Tunable("governor", "CPU frequency governor", "os.governor", "attr", want=_want_governor,
            targets=lambda tree: _policies(tree, "scaling_governor"), boot=True,
            own=_CPUFREQ_OWN + "scaling_governor"),
    Tunable("epp", "Energy/performance preference", "os.governor", "attr", want=_want_epp,
            targets=lambda tree: _policies(tree, "energy_performance_preference"), boot=True,
            own=_CPUFREQ_OWN + "energy_performance_preference"),
    Tunable("nofile", "Open files limit for new logins", "cpu.nofile", "file",
            want=_rule("nofile", "DataLoader workers and NCCL open many files and sockets; 1024 runs out"),
            persist=LIMITS_FILE, lines=_limit_lines("nofile")),
    Tunable("memlock", "Locked memory limit for new logins", "cpu.memlock", "file",
            want=_rule("memlock", "RDMA (NCCL over InfiniBand/RoCE) pins its buffers"),
            persist=LIMITS_FILE, lines=_limit_lines("memlock")),
    Tunable("shm", "/dev/shm size", "storage.shm", "shm",
            want=_rule("shm", "DataLoader workers hand every batch over in /dev/shm"),
            persist=SHM_DROPIN, lines=lambda v: ["[Mount]", f"Options=mode=1777,strict,nosuid,nodev,{v}"],
            boot=True, own=re.escape("/dev/shm")),
    Tunable("persistence", "NVIDIA persistence mode", "nvidia.persistence", "service", want=_want_persistence,
            own="nvidia-persistenced"),
)
TUNABLE_IDS: Tuple[str, ...] = tuple(t.id for t in TUNABLES)
BY_ID: Dict[str, Tunable] = {t.id: t for t in TUNABLES}
# doctor check id -> the `--only` ids that fix it
FOR_CHECK: Dict[str, Tuple[str, ...]] = {}
for _t in TUNABLES:
    FOR_CHECK[_t.check] = FOR_CHECK.get(_t.check, ()) + (_t.id,)
