"""doctor's os checks (hosttune/doctor/checks/os.py): distro, NUMA balancing, THP, swappiness, tuned, governor and SMT
pass on a good host and warn on a bad one, each warning with a fix; the container report says what it sees."""


from _doctorhelp import R, cpu_host, kern, same, table_test, tuned

from hosttune.facts import Container, Cpu, Distro, Memory, Numa, NumaNode

# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("os.distro", cpu_host, same, {}, "pass", "Debian"),
    ("os.distro", cpu_host, lambda f: R(f, distro=Distro(id="centos", version="7", family="rhel")), {}, "warn",
     "end of standard support"),
    ("os.distro", cpu_host, lambda f: R(f, distro=Distro(id="ubuntu", version="23.10", family="debian")), {},
     "warn", "interim"),
    ("os.distro", cpu_host, lambda f: R(f, distro=Distro(id="rocky", version="9", family="rhel")), {}, "pass", ""),
    ("os.numa_balancing", cpu_host, same, {}, "pass", "0"),
    ("os.numa_balancing", cpu_host, kern(numa_balancing=1), {}, "warn", "sysctl -w kernel.numa_balancing=0"),
    ("os.numa_balancing", cpu_host, lambda f: R(kern(numa_balancing=1)(f), numa=Numa(nodes=(NumaNode(0),))), {},
     "pass", "not relevant"),
    ("os.thp", cpu_host, same, {}, "pass", "madvise"),
    ("os.thp", cpu_host, kern(thp="never"), {}, "pass", "never"),
    ("os.thp", cpu_host, kern(thp="always"), {}, "warn", "echo madvise > /sys/kernel/mm/transparent_hugepage"),
    ("os.swappiness", cpu_host, same, {}, "pass", "10"),
    ("os.swappiness", cpu_host, kern(swappiness=60), {}, "warn", "90-hosttune.conf"),
    ("os.swappiness", cpu_host, lambda f: R(kern(swappiness=60)(f), memory=Memory(swap_total_mb=0)), {}, "pass",
     "no swap"),
    ("os.tuned", cpu_host, same, {}, "pass", "tuned not installed"),
    ("os.tuned", cpu_host, tuned("throughput-performance", ("swappiness", "sysctl.vm.swappiness", "10", "t-p"),
                                 ("governor", "cpu.governor", "performance", "t-p")), {}, "pass", "throughput"),
    ("os.tuned", cpu_host, tuned("hpc-compute", ("thp", "vm.transparent_hugepages", "always", "hpc-compute")), {},
     "warn", "vm.transparent_hugepages=always (hpc-compute)"),
    ("os.tuned", cpu_host, tuned("powersave", ("governor", "cpu.governor", "ondemand|powersave", "powersave")), {},
     "warn", "hosttune tune apply"),
    ("os.governor", cpu_host, same, {}, "pass", "performance"),
    ("os.governor", cpu_host, kern(governors=("powersave",)), {}, "warn", "/etc/tmpfiles.d/90-hosttune-governor"),
    ("os.governor", cpu_host, lambda f: R(kern(governors=("powersave", "performance"))(f),
                                          distro=Distro(id="rocky", version="9", family="rhel")), {}, "warn",
     "tuned-adm profile throughput-performance"),
    ("os.governor", cpu_host, kern(governors=()), {}, "skip", "VMs"),
    ("os.smt", cpu_host, same, {}, "pass", "off"),
    ("os.smt", cpu_host, lambda f: R(f, cpu=Cpu()), {}, "skip", "not readable"),
    ("os.container", cpu_host, same, {}, "pass", "not a container"),
    ("os.container", cpu_host, lambda f: R(f, container=Container(detected=True, runtime="docker",
                                                                   evidence=("/.dockerenv exists",),
                                                                   proc_sys_readonly=True, sys_readonly=True)), {},
     "pass", "/proc/sys and /sys read-only"),
]


test_check = table_test(CASES)  # one case per row: status, and the text in actual/fix/expected
