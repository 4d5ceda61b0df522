"""The doctor checks on a captured host (--root: live=False), where limits, /dev/shm and the EPP come from the
tree's files as `hosttune tune verify --root` reads them (issue 21): each finding pinned whole.

To regenerate after a deliberate change of wording: `python3 tests/test_doctor_tree_pins4.py` prints GOLDEN; review
the diff row by row before pasting it back."""

from pathlib import Path
from typing import Dict, Tuple

import pytest
from _doctorhelp import cpu_host, run_one
from conftest import build_tree

from hosttune.facts import Container, Limits, Memory

Row = Tuple[str, str, str, str]
IB = {"sys/class/infiniband/mlx5_0/node_type": "1: CA\n"}
TREES: Dict[str, Dict[str, str]] = {
    "empty": {},
    "nofile_low": {"etc/security/limits.conf": "* soft nofile 1024\n* hard nofile 4096\n"},
    "nofile_unmarked_d": {"etc/security/limits.d/90-hosttune.conf": "* soft nofile 65536\n* hard nofile 1048576\n"},
    "memlock_low": dict(IB, **{"etc/security/limits.conf": "* soft memlock 64\n* hard memlock 64\n"}),
    "memlock_ok": dict(IB, **{"etc/security/limits.conf": "* soft memlock unlimited\n* hard memlock unlimited\n"}),
    "shm_64m": {"proc/self/mountinfo": "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n"},
    "shm_255m": {"proc/self/mountinfo": "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=261120k\n"},
    "shm_256m": {"proc/self/mountinfo": "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=262144k\n"},
    "shm_half": {"proc/self/mountinfo": "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=32768000k\n"},
    "epp_drift": {"sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference": "power\n",
                  "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n"},
    "epp_ok": {"sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference": "performance\n",
               "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n"},
}
CHECKS = ("cpu.nofile", "cpu.memlock", "storage.shm", "os.governor")


def findings(tmp: Path, name: str, container: bool = False) -> Dict[str, Row]:
    root = build_tree(tmp / name, TREES[name])
    root.mkdir(parents=True, exist_ok=True)
    facts = cpu_host(limits=Limits(rdma_devices=1 if "memlock" in name else 0), memory=Memory(total_mb=64000),
                     root=str(root), container=Container(detected=container, runtime="docker" if container else None))
    out = {}
    for cid in CHECKS:
        f = run_one(cid, facts, live=False)
        out[cid] = (f.status, f.actual.replace(str(root), "ROOT"), f.expected, f.fix)
    return out


GOLDEN: Dict[str, Dict[str, Row]] = {
    'empty': {'cpu.nofile': ('warn',
                          'not set (limits files)',
                          '65536',
                          'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                          "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                          '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                          'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
           'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
           'storage.shm': ('skip', 'not readable', 'size=50%', ''),
           'os.governor': ('pass', 'performance', 'performance', '')},
 'nofile_low': {'cpu.nofile': ('warn',
                               '1024 (limits files)',
                               '65536',
                               'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                               "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                               '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                               'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
                'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
                'storage.shm': ('skip', 'not readable', 'size=50%', ''),
                'os.governor': ('pass', 'performance', 'performance', '')},
 'nofile_unmarked_d': {'cpu.nofile': ('warn',
                                'not set (limits files)',
                                '65536',
                                'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                                "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                                '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                                'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
                 'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
                 'storage.shm': ('skip', 'not readable', 'size=50%', ''),
                 'os.governor': ('pass', 'performance', 'performance', '')},
 'memlock_low': {'cpu.nofile': ('warn',
                                'not set (limits files)',
                                '65536',
                                'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                                "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                                '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                                'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
                 'cpu.memlock': ('warn',
                                 '64 (limits files) with 1 RDMA devices',
                                 'unlimited',
                                 'hosttune tune apply --only memlock   # applies it and keeps it; by hand:\n'
                                 "printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > "
                                 '/etc/security/limits.d/90-hosttune.conf   # then log in again; systemd services: '
                                 'LimitMEMLOCK=infinity; docker: --ulimit memlock=-1'),
                 'storage.shm': ('skip', 'not readable', 'size=50%', ''),
                 'os.governor': ('pass', 'performance', 'performance', '')},
 'memlock_ok': {'cpu.nofile': ('warn',
                               'not set (limits files)',
                               '65536',
                               'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                               "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                               '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                               'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
                'cpu.memlock': ('pass', 'unlimited (limits files) with 1 RDMA devices', 'unlimited', ''),
                'storage.shm': ('skip', 'not readable', 'size=50%', ''),
                'os.governor': ('pass', 'performance', 'performance', '')},
 'shm_64m': {'cpu.nofile': ('warn',
                            'not set (limits files)',
                            '65536',
                            'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                            "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                            '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                            'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
             'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
             'storage.shm': ('fail',
                             '64 MiB',
                             '>= 50% (32000 MiB)',
                             'hosttune tune apply --only shm   # applies it and keeps it; by hand:\n'
                             'docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: '
                             'Memory on /dev/shm\n'
                             "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                             "defaults,size=50% 0 0' >> /etc/fstab"),
             'os.governor': ('pass', 'performance', 'performance', '')},
 'shm_255m': {'cpu.nofile': ('warn',
                             'not set (limits files)',
                             '65536',
                             'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                             "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                             '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                             'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
              'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
              'storage.shm': ('fail',
                              '255 MiB',
                              '>= 50% (32000 MiB)',
                              'hosttune tune apply --only shm   # applies it and keeps it; by hand:\n'
                              'docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: '
                              'Memory on /dev/shm\n'
                              "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                              "defaults,size=50% 0 0' >> /etc/fstab"),
              'os.governor': ('pass', 'performance', 'performance', '')},
 'shm_256m': {'cpu.nofile': ('warn',
                             'not set (limits files)',
                             '65536',
                             'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                             "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                             '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                             'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
              'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
              'storage.shm': ('warn',
                              'size=262144k',
                              'size=50%',
                              'hosttune tune apply --only shm   # applies it and keeps it; by hand:\n'
                              'docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: '
                              'Memory on /dev/shm\n'
                              "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                              "defaults,size=50% 0 0' >> /etc/fstab"),
              'os.governor': ('pass', 'performance', 'performance', '')},
 'shm_half': {'cpu.nofile': ('warn',
                             'not set (limits files)',
                             '65536',
                             'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                             "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                             '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                             'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
              'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
              'storage.shm': ('warn',
                              'size=32768000k',
                              'size=50%',
                              'hosttune tune apply --only shm   # applies it and keeps it; by hand:\n'
                              'docker run --shm-size=16g ... (or --ipc=host); Kubernetes: an emptyDir with medium: '
                              'Memory on /dev/shm\n'
                              "host: mount -o remount,size=50% /dev/shm && echo 'tmpfs /dev/shm tmpfs "
                              "defaults,size=50% 0 0' >> /etc/fstab"),
              'os.governor': ('pass', 'performance', 'performance', '')},
 'epp_drift': {'cpu.nofile': ('warn',
                              'not set (limits files)',
                              '65536',
                              'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                              "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                              '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                              'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
               'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
               'storage.shm': ('skip', 'not readable', 'size=50%', ''),
               'os.governor': ('warn',
                               'performance, energy_performance_preference power',
                               'performance, energy_performance_preference performance',
                               'hosttune tune apply --only epp   # applies it and keeps it; by hand:\n'
                               'echo performance | tee '
                               '/sys/devices/system/cpu/cpufreq/policy*/energy_performance_preference')},
 'epp_ok': {'cpu.nofile': ('warn',
                           'not set (limits files)',
                           '65536',
                           'hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n'
                           "printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > "
                           '/etc/security/limits.d/90-hosttune.conf   # new logins; systemd services: '
                           'LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576'),
            'cpu.memlock': ('pass', 'no RDMA devices: not relevant', 'unlimited on RDMA hosts', ''),
            'storage.shm': ('skip', 'not readable', 'size=50%', ''),
            'os.governor': ('pass', 'performance', 'performance', '')}}
GOLDEN_CONTAINER_NOFILE: Row = ('warn',
 '1024 (limits files)',
 '65536',
 "in a container the runtime sets it: docker/podman run --ulimit nofile=65536:1048576; Kubernetes: the node's "
 "container runtime (LimitNOFILE of containerd's or cri-o's unit)")
GOLDEN_CONTAINER_MEMLOCK: Row = ('warn',
 '64 (limits files) with 1 RDMA devices',
 'unlimited',
 "in a container the runtime sets it: docker/podman run --ulimit memlock=-1; Kubernetes: the node's container "
 "runtime (LimitMEMLOCK=infinity in containerd's or cri-o's unit)")


@pytest.mark.parametrize("name", list(TREES))
def test_checks_on_a_captured_tree(tmp_path: Path, name: str) -> None:
    assert findings(tmp_path, name) == GOLDEN[name]


def test_in_a_container_the_runtime_sets_the_limits(tmp_path: Path) -> None:
    assert findings(tmp_path, "nofile_low", container=True)["cpu.nofile"] == GOLDEN_CONTAINER_NOFILE
    assert findings(tmp_path, "memlock_low", container=True)["cpu.memlock"] == GOLDEN_CONTAINER_MEMLOCK


def _regenerate() -> None:
    import pprint
    import sys
    import tempfile

    sys.path[:0] = [str(Path(__file__).parent)]
    tmp = Path(tempfile.mkdtemp())
    print("GOLDEN: Dict[str, Dict[str, Row]] = " + pprint.pformat({n: findings(tmp, n) for n in TREES}, width=118,
                                                                  sort_dicts=False))
    print("GOLDEN_CONTAINER_NOFILE: Row = " + pprint.pformat(
        findings(tmp / "c", "nofile_low", container=True)["cpu.nofile"], width=118))
    print("GOLDEN_CONTAINER_MEMLOCK: Row = " + pprint.pformat(
        findings(tmp / "c", "memlock_low", container=True)["cpu.memlock"], width=118))


if __name__ == "__main__":
    _regenerate()
