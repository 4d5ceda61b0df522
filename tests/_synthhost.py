"""A synthetic host's files (n CPUs, one package, one NUMA node, no SMT) for conftest's build_tree, and the CLI in a
child process run from the checkout: shared by tests/test_detect_cgroup.py, test_detect_storage.py,
test_policy_cpu.py, test_plan_env.py and test_profile_load.py."""

import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

REPO = Path(__file__).resolve().parents[1]


def cpu_files(n: int) -> Dict[str, str]:
    """n online CPUs, one package, one NUMA node, no SMT."""
    files = {"/sys/devices/system/cpu/online": f"0-{n - 1}\n",
             "/sys/devices/system/node/online": "0\n",
             "/sys/devices/system/node/node0/cpulist": f"0-{n - 1}\n",
             "/sys/devices/system/node/node0/meminfo": f"Node 0 MemTotal:       {16 << 20} kB\n",
             "/proc/cpuinfo": "".join(f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Test Xeon\n"
                                      "flags\t\t: fpu lm sse2 avx2\n\n" for i in range(n)),
             "/proc/meminfo": "MemTotal:       16777216 kB\nMemAvailable:   16000000 kB\nSwapTotal:  0 kB\n",
             "/etc/os-release": 'ID=debian\nVERSION_ID="12"\n'}
    for c in range(n):
        t = f"/sys/devices/system/cpu/cpu{c}/topology"
        files.update({f"{t}/physical_package_id": "0\n", f"{t}/core_id": f"{c}\n",
                      f"{t}/thread_siblings_list": f"{c}\n", f"{t}/core_siblings_list": f"0-{n - 1}\n"})
    return files


def hosttune(*args: str, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=str(REPO))
