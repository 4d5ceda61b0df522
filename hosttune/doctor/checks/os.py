"""Checks of the operating system: distro support, NUMA balancing, transparent huge pages, swappiness, CPU
frequency governor, SMT, tuned's active profile."""

from typing import List

from hosttune.detect.hostio import small_int
from hosttune.doctor.checks.tunables import host, in_tree, want
from hosttune.doctor.context import Context, host_setting_fix, version_tuple
from hosttune.doctor.fixes import kernel_arg_fix, sysctl_fix, tune_fix
from hosttune.doctor.model import Finding
from hosttune.tune import rules

SUPPORTED = {  # distro id -> (minimum major, what we say)
    "debian": (11, "Debian 11, 12, 13"),
    "ubuntu": (22, "Ubuntu 22.04, 24.04, 26.04 LTS"),
    "rhel": (8, "RHEL 8, 9, 10"),
    "rocky": (8, "Rocky 8, 9, 10"),
    "almalinux": (8, "AlmaLinux 8, 9, 10"),
    "centos": (9, "CentOS Stream 9, 10"),
}


def check_distro(ctx: Context) -> Finding:
    """The distribution is one hosttune targets and that still gets security updates.

    Targets: Debian 11+, Ubuntu LTS 22.04+, RHEL/Rocky/AlmaLinux 8+, CentOS Stream 9+. Older releases (CentOS 7,
    CentOS Stream 8, Debian 10, Ubuntu 20.04 and earlier) are past their standard support and NVIDIA's current
    drivers and CUDA 12/13 repositories no longer build for several of them. Ubuntu interim (non-LTS) releases
    and Fedora work but are not targets: a warning, not a failure.
    """
    d = ctx.facts.distro
    actual = f"{d.name or d.id} {d.version_best or d.version}".strip()
    if d.id not in SUPPORTED:
        if d.family in ("debian", "rhel"):
            return Finding(status="warn", actual=actual, expected="Debian/Ubuntu LTS or RHEL-family",
                           fix="not a target distro: fixes below "
                           f"use the {'apt' if d.family == 'debian' else 'dnf'} forms; check them before use")
        return Finding(status="warn", actual=actual or "unknown", expected="Debian/Ubuntu LTS or RHEL-family",
                       fix="unknown distro family: fixes show both apt and dnf forms")
    minimum, say = SUPPORTED[d.id]
    ver = version_tuple(d.version)
    if not ver:
        return Finding(status="warn", actual=actual, expected=say,
                       fix="could not read the distro version (/etc/os-release)")
    if ver[0] < minimum:
        return Finding(status="warn", actual=f"{actual} (end of standard support)", expected=say,
                       fix="upgrade the OS to a supported release; drivers and CUDA repos no longer target it")
    if d.id == "ubuntu" and (len(ver) < 2 or ver[0] % 2 or ver[1] != 4):
        return Finding(status="warn", actual=f"{actual} (interim release, 9 months of support)", expected=say,
                       fix="use an LTS release (xx.04 in even years)")
    return Finding(status="pass", actual=actual, expected=say)


def check_numa_balancing(ctx: Context) -> Finding:
    """Automatic NUMA balancing is as the profile's `tune.numa_balancing` says (off by default) on multi-node hosts.

    kernel.numa_balancing=1 makes the kernel unmap pages periodically to see who touches them and migrate them:
    with ranks pinned to their GPU's node (what hosttune does) this only adds page faults and migrations in the
    training loop. On a single-node host there is nothing to balance and the setting does not matter.
    """
    k = ctx.facts.kernel
    nodes = len(ctx.facts.numa.nodes)
    need = want(ctx, "numa_balancing")  # the profile's tune.numa_balancing (off: 0)
    if rules.not_here("numa_balancing", host(ctx)) is not None:
        return Finding(status="pass", actual=f"{nodes or 1} NUMA node: not relevant",
                       expected=f"{need} on multi-node hosts")
    if k.numa_balancing is None:
        return Finding(status="skip", actual="kernel.numa_balancing not readable", expected=need)
    if rules.ok("numa_balancing", str(k.numa_balancing), need):
        return Finding(status="pass", actual=f"{k.numa_balancing} ({nodes} nodes)", expected=need)
    fix = tune_fix("numa_balancing", sysctl_fix("kernel.numa_balancing", need))
    return Finding(status="warn", actual=f"{k.numa_balancing} ({nodes} nodes)", expected=need,
                   fix=host_setting_fix(ctx, "/proc/sys", fix, "kernel.numa_balancing"))


def check_thp(ctx: Context) -> Finding:
    """Transparent huge pages are the profile's `tune.thp` or fewer (`madvise` by default: `never` is fine too,
    `always` is not), and the defrag mode is `tune.thp_defrag` where the kernel shows it.

    With `always`, khugepaged compacts and collapses memory in the background and page faults may stall on direct
    compaction: a known source of latency spikes in data loading and allocator-heavy training. `madvise` keeps
    huge pages for code that asks for them (jemalloc's metadata_thp:auto, which hosttune's profiles use, works
    with it). `never` is fine too.
    """
    k = ctx.facts.kernel
    need, need_defrag = want(ctx, "thp"), want(ctx, "thp_defrag")  # the profile's tune.thp / tune.thp_defrag
    fine = [m for m in rules.THP_ORDER if rules.ok("thp", m, need)] or [need]
    expected = " or ".join(reversed(fine)) + (f", defrag {need_defrag}" if k.thp_defrag is not None else "")
    if k.thp is None:
        return Finding(status="skip", actual="transparent_hugepage/enabled not readable", expected=expected)
    bad_defrag = k.thp_defrag is not None and not rules.ok("thp_defrag", k.thp_defrag, need_defrag)
    if rules.ok("thp", k.thp, need) and not bad_defrag:
        return Finding(status="pass", actual=k.thp, expected=expected)
    thp_dir = "/sys/kernel/mm/transparent_hugepage"
    shell = []
    if not rules.ok("thp", k.thp, need):
        persist = kernel_arg_fix(ctx, f"transparent_hugepage={need}")
        shell += [f"echo {need} > {thp_dir}/enabled", f"{persist}   # keep it after reboot"]
    if bad_defrag:
        shell.append(f"echo {need_defrag} > {thp_dir}/defrag")
    actual = k.thp + (f", defrag {k.thp_defrag}" if bad_defrag else "")
    return Finding(status="warn", actual=actual, expected=expected,
                   fix=host_setting_fix(ctx, "/sys", tune_fix("thp", "\n".join(shell))))


def check_swappiness(ctx: Context) -> Finding:
    """vm.swappiness is at most the profile's `tune.swappiness` (10 by default) on a host with swap.

    A training host keeps big, cold-looking but essential memory (dataset shards in page cache, pinned staging
    buffers, DataLoader worker heaps). The default 60 lets the kernel swap those out under memory pressure and the
    next step stalls on swap-in. 10 is what tuned's throughput-performance profile sets: swap stays as a safety
    net but is used only when memory is really short. Without swap the setting has no effect.
    """
    k = ctx.facts.kernel
    need = want(ctx, "swappiness")  # the profile's tune.swappiness (auto: 10)
    expected = f"<= {need}"
    if k.swappiness is None:
        return Finding(status="skip", actual="vm.swappiness not readable", expected=expected)
    if rules.not_here("swappiness", host(ctx)) is not None:
        return Finding(status="pass", actual=f"{k.swappiness} (no swap configured)",
                       expected=f"{expected} when swap exists")
    if rules.ok("swappiness", str(k.swappiness), need):
        return Finding(status="pass", actual=str(k.swappiness), expected=expected)
    return Finding(status="warn", actual=str(k.swappiness), expected=expected,
                   fix=host_setting_fix(ctx, "/proc/sys", tune_fix("swappiness", sysctl_fix("vm.swappiness", need)),
                                        "vm.swappiness"))


def check_governor(ctx: Context) -> Finding:
    """The CPU frequency governor is the profile's `tune.governor` (`performance` by default).

    `powersave`/`ondemand`/`schedutil` ramp clocks up only after load appears; the host threads that feed GPUs
    (data loading, kernel launches, NCCL proxies) run in short bursts and pay the ramp-up every time. VMs and some
    clouds expose no cpufreq driver at all: then the hypervisor owns frequency and there is nothing to set (skip).
    """
    govs = ctx.facts.kernel.governors
    need = want(ctx, "governor")  # the profile's tune.governor
    if not govs:
        why = "no cpufreq driver (typical of VMs: the hypervisor controls CPU frequency)"
        return Finding(status="skip", actual=why, expected=need)
    epp = in_tree(ctx, "epp")  # a captured host's energy_performance_preference, as `tune verify --root` reads it
    bad_epp = epp is not None and epp.state == "drift"
    if all(rules.ok("governor", g, need) for g in govs) and not bad_epp:
        return Finding(status="pass", actual=",".join(govs), expected=need)
    if epp is not None and bad_epp and all(rules.ok("governor", g, need) for g in govs):
        return Finding(status="warn", actual=f"{','.join(govs)}, energy_performance_preference {epp.actual}",
                       expected=f"{need}, energy_performance_preference {epp.expected}",
                       fix=host_setting_fix(ctx, "/sys", tune_fix("epp", f"echo {epp.expected} | tee "
                               "/sys/devices/system/cpu/cpufreq/policy*/energy_performance_preference")))
    now = f"echo {need} | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"
    if ctx.family == "rhel":
        keep = "tuned-adm profile throughput-performance   # keeps it after reboot"
    else:
        keep = (f"echo 'w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - {need}' > "
                "/etc/tmpfiles.d/90-hosttune-governor.conf   # keeps it after reboot")
    fix = host_setting_fix(ctx, "/sys", tune_fix("governor", f"{now}\n{keep}"))
    return Finding(status="warn", actual=",".join(govs), expected=need, fix=fix)


def check_smt(ctx: Context) -> Finding:
    """Reports the SMT (hyper-threading) state; it is a choice, not an error.

    hosttune plans one compute thread per physical core and gives SMT siblings to data loading, so SMT on is fine.
    The finding exists so that the admin sees the state (and `smt/control`, e.g. `forceoff` set by a kernel
    argument for a CPU vulnerability) next to the rest. Unknown topology is a skip.
    """
    cpu = ctx.facts.cpu
    if not cpu.logical or not cpu.physical:
        return Finding(status="skip", actual="CPU topology not readable", expected="reported")
    ctrl = f", control={cpu.smt_control}" if cpu.smt_control else ""
    state = "on" if cpu.smt else "off"
    return Finding(status="pass", actual=f"{state}: {cpu.logical} logical CPUs on {cpu.physical} cores{ctrl}",
                   expected="reported")



_JUDGED = ("thp", "swappiness", "numa_balancing", "governor")  # the tuned settings the checks above have


def _tuned_conflicts(ctx: Context) -> List[str]:
    """`option=value (profile)` for each setting of the active tuned profile that the checks above would flag."""
    k, tu = ctx.facts.kernel, ctx.facts.tuned
    here = host(ctx)
    out = []
    for s in tu.settings:
        value = s.value.strip()
        if not value or value[0] in "<>" or "${" in value or s.id not in _JUDGED:
            continue  # tuned's min/max modifiers and variables depend on the host: not judged here
        if rules.not_here(s.id, here) is not None or (s.id == "governor" and not k.governors):
            continue  # the same rule as the checks above: nothing to judge on this host
        if s.id in ("swappiness", "numa_balancing"):
            n = small_int(value)
            if n is None:
                continue
            value = str(n)
        elif s.id == "governor":
            value = value.split("|")[0].strip()  # tuned tries the alternatives in order
        if not rules.ok(s.id, value, want(ctx, s.id)):
            out.append(f"{s.option}={s.value.strip()} ({s.profile})")
    return out


def check_tuned(ctx: Context) -> Finding:
    """The active tuned profile does not undo what the checks above ask for.

    tuned (on by default on RHEL-family hosts, packaged on Debian/Ubuntu) re-applies its profile at every start:
    a profile that sets transparent_hugepages=always (hpc-compute), a swappiness above 10, NUMA balancing on a
    multi-node host or a governor other than performance silently undoes a fix made by hand. `hosttune tune apply`
    writes a `hosttune` tuned profile that includes the active one and overrides only those settings, and switches
    tuned to it. Conditional units (uname/cpuinfo regexes) and values with tuned's `>`/`<` modifiers are not judged.
    """
    tu = ctx.facts.tuned
    expected = "no setting that contradicts os.thp, os.swappiness, os.numa_balancing, os.governor"
    if not tu.installed:
        return Finding(status="pass", actual="tuned not installed", expected=expected)
    if not tu.profile:
        return Finding(status="pass", actual="tuned has no active profile", expected=expected)
    bad = _tuned_conflicts(ctx)
    state = {True: "running", False: "not running now, applies it when started", None: "state unknown"}[tu.running]
    if not bad:
        return Finding(status="pass", actual=f"profile {tu.profile} ({state})", expected=expected)
    fix = ("hosttune tune apply   # writes a hosttune tuned profile on top of "
           f"{tu.profile} with the training settings and switches tuned to it")
    return Finding(status="warn", actual=f"profile {tu.profile} ({state}) sets {'; '.join(bad)}", expected=expected,
                   fix=fix)


def check_container(ctx: Context) -> Finding:
    """Reports whether doctor runs inside a container, and what it can and cannot see from there.

    Inside a container /proc/meminfo, /proc/cpuinfo, the kernel's sysctls, transparent hugepages and cpufreq are the
    host's (usually read-only: the checks above then say to set them on the host), the CPU and memory limits that
    apply are the container's cgroup's, and the GPUs it can use are the /dev/nvidiaN nodes passed in, which may be
    fewer than the driver has. A report, not a judgement: running in a container is fine.
    """
    c = ctx.facts.container
    if not c.detected:
        return Finding(status="pass", actual="not a container", expected="reported")
    ro = [name for name, flag in (("/proc/sys", c.proc_sys_readonly), ("/sys", c.sys_readonly)) if flag]
    parts = [f"{c.runtime or 'unknown runtime'} ({c.evidence[0] if c.evidence else '?'})",
             f"{' and '.join(ro)} read-only: host settings are the host's to change" if ro
             else "/proc/sys and /sys writable (privileged): a change there changes the host",
             "limits from its cgroup: " + (", ".join(c.cgroup_limits) or "none")]
    if c.gpu_nodes or c.driver_gpus:
        of = f" of the driver's {c.driver_gpus}" if c.driver_gpus is not None else ""
        parts.append(f"{c.gpu_nodes} GPU device nodes passed in{of}")
    return Finding(status="pass", actual="; ".join(parts), expected="reported")
