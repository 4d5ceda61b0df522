"""hosttune.doctor.fixes pinned whole per distro (issue 21): the install, kernel-argument, driver and container
toolkit commands for Debian, Ubuntu, RHEL 8/9/10, Rocky and an unknown family, and the rule that keeps a host value
out of a fix unless it matches its pattern (then shell-quoted).

To regenerate after a deliberate change of wording: `python3 tests/test_doctor_fixes_pins4.py` prints GOLDEN;
review the diff row by row before pasting it back."""

import re
from typing import Any, Callable, Dict, List, Tuple

import pytest

from hosttune.doctor import Context
from hosttune.doctor import fixes as X
from hosttune.facts import Distro, Facts


def ctx(id_: str, version: str, family: str) -> Context:
    return Context(facts=Facts(distro=Distro(id=id_, version=version, family=family)), env={}, live=False)


DISTROS: Dict[str, Context] = {
    "debian12": ctx("debian", "12", "debian"), "ubuntu2204": ctx("ubuntu", "22.04", "debian"),
    "rhel9": ctx("rhel", "9.3", "rhel"), "rhel10": ctx("rhel", "10", "rhel"), "rhel-noversion": ctx("rhel", "", "rhel"),
    "rhel-badversion": ctx("rhel", "9;reboot", "rhel"), "rhel-letters": ctx("rhel", "9a", "rhel"),
    "rocky8": ctx("rocky", "8.10", "rhel"), "alma10": ctx("almalinux", "10.0", "rhel"),
    "arch": ctx("arch", "", "unknown"),
}
FUNCS: List[Tuple[str, Callable[[Context], Any]]] = [
    ("install", lambda c: X.install(c, "numactl libnuma1", "numactl")),
    ("install-epel", lambda c: X.install(c, "libjemalloc2", "jemalloc", epel=True)),
    ("install-glob", lambda c: X.install(c, "nvidia-fabricmanager-550", "nvidia-fabric-manager-550*")),
    ("kernel-arg", lambda c: X.kernel_arg_fix(c, "iommu=pt")),
    ("driver", X.driver_install),
    ("toolkit", X.container_toolkit_install),
    ("major", X.distro_major),
]

GOLDEN: Dict[str, Dict[str, Any]] = {
    'debian12': {'install': 'apt-get install -y numactl libnuma1',
              'install-epel': 'apt-get install -y libjemalloc2',
              'install-glob': 'apt-get install -y nvidia-fabricmanager-550',
              'kernel-arg': 'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&iommu=pt /\' /etc/default/grub && update-grub '
                            '&& reboot',
              'driver': 'apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs contrib non-free',
              'toolkit': 'curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | gpg --dearmor -o '
                         '/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg && curl -fsSL '
                         'https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | '
                         "sed 's#deb https://#deb "
                         "[signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' > "
                         '/etc/apt/sources.list.d/nvidia-container-toolkit.list && apt-get update && apt-get install '
                         '-y nvidia-container-toolkit',
              'major': '12'},
 'ubuntu2204': {'install': 'apt-get install -y numactl libnuma1',
                'install-epel': 'apt-get install -y libjemalloc2',
                'install-glob': 'apt-get install -y nvidia-fabricmanager-550',
                'kernel-arg': 'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&iommu=pt /\' /etc/default/grub && '
                              'update-grub && reboot',
                'driver': 'ubuntu-drivers install --gpgpu && reboot   # or apt-get install -y '
                          'nvidia-driver-570-server',
                'toolkit': 'curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | gpg --dearmor -o '
                           '/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg && curl -fsSL '
                           'https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | '
                           "sed 's#deb https://#deb "
                           "[signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' > "
                           '/etc/apt/sources.list.d/nvidia-container-toolkit.list && apt-get update && apt-get '
                           'install -y nvidia-container-toolkit',
                'major': '22'},
 'rhel9': {'install': 'dnf install -y numactl',
           'install-epel': 'subscription-manager repos --enable codeready-builder-for-rhel-9-$(arch)-rpms && dnf '
                           'install -y https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm && dnf '
                           'install -y jemalloc',
           'install-glob': "dnf install -y 'nvidia-fabric-manager-550*'",
           'kernel-arg': "grubby --update-kernel=ALL --args='iommu=pt' && reboot",
           'driver': 'dnf config-manager --add-repo '
                     'https://developer.download.nvidia.com/compute/cuda/repos/rhel9/$(arch)/cuda-rhel9.repo && dnf '
                     'module install -y nvidia-driver:open-dkms && reboot',
           'toolkit': 'curl -fsSL '
                      'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo > '
                      '/etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y nvidia-container-toolkit',
           'major': '9'},
 'rhel10': {'install': 'dnf install -y numactl',
            'install-epel': 'subscription-manager repos --enable codeready-builder-for-rhel-10-$(arch)-rpms && dnf '
                            'install -y https://dl.fedoraproject.org/pub/epel/epel-release-latest-10.noarch.rpm && '
                            'dnf install -y jemalloc',
            'install-glob': "dnf install -y 'nvidia-fabric-manager-550*'",
            'kernel-arg': "grubby --update-kernel=ALL --args='iommu=pt' && reboot",
            'driver': 'dnf config-manager --add-repo '
                      'https://developer.download.nvidia.com/compute/cuda/repos/rhel10/$(arch)/cuda-rhel10.repo && '
                      'dnf install -y nvidia-open && reboot',
            'toolkit': 'curl -fsSL '
                       'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo > '
                       '/etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y nvidia-container-toolkit',
            'major': '10'},
 'rhel-noversion': {'install': 'dnf install -y numactl',
                    'install-epel': 'subscription-manager repos --enable codeready-builder-for-rhel-9-$(arch)-rpms '
                                    '&& dnf install -y '
                                    'https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm && dnf '
                                    'install -y jemalloc',
                    'install-glob': "dnf install -y 'nvidia-fabric-manager-550*'",
                    'kernel-arg': "grubby --update-kernel=ALL --args='iommu=pt' && reboot",
                    'driver': 'dnf config-manager --add-repo '
                              'https://developer.download.nvidia.com/compute/cuda/repos/rhel9/$(arch)/cuda-rhel9.repo '
                              '&& dnf module install -y nvidia-driver:open-dkms && reboot',
                    'toolkit': 'curl -fsSL '
                               'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo '
                               '> /etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y '
                               'nvidia-container-toolkit',
                    'major': '9'},
 'rhel-badversion': {'install': 'dnf install -y numactl',
                     'install-epel': 'subscription-manager repos --enable codeready-builder-for-rhel-$(rpm -E '
                                     '%rhel)-$(arch)-rpms && dnf install -y '
                                     'https://dl.fedoraproject.org/pub/epel/epel-release-latest-$(rpm -E '
                                     '%rhel).noarch.rpm && dnf install -y jemalloc',
                     'install-glob': "dnf install -y 'nvidia-fabric-manager-550*'",
                     'kernel-arg': "grubby --update-kernel=ALL --args='iommu=pt' && reboot",
                     'driver': 'install the NVIDIA driver from your distribution or https://www.nvidia.com/Download, '
                               'then reboot',
                     'toolkit': 'curl -fsSL '
                                'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo '
                                '> /etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y '
                                'nvidia-container-toolkit',
                     'major': None},
 'rhel-letters': {'install': 'dnf install -y numactl',
                  'install-epel': 'subscription-manager repos --enable codeready-builder-for-rhel-$(rpm -E '
                                  '%rhel)-$(arch)-rpms && dnf install -y '
                                  'https://dl.fedoraproject.org/pub/epel/epel-release-latest-$(rpm -E '
                                  '%rhel).noarch.rpm && dnf install -y jemalloc',
                  'install-glob': "dnf install -y 'nvidia-fabric-manager-550*'",
                  'kernel-arg': "grubby --update-kernel=ALL --args='iommu=pt' && reboot",
                  'driver': 'install the NVIDIA driver from your distribution or https://www.nvidia.com/Download, '
                            'then reboot',
                  'toolkit': 'curl -fsSL '
                             'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo '
                             '> /etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y '
                             'nvidia-container-toolkit',
                  'major': None},
 'rocky8': {'install': 'dnf install -y numactl',
            'install-epel': 'dnf install -y epel-release && dnf install -y jemalloc',
            'install-glob': "dnf install -y 'nvidia-fabric-manager-550*'",
            'kernel-arg': "grubby --update-kernel=ALL --args='iommu=pt' && reboot",
            'driver': 'dnf config-manager --add-repo '
                      'https://developer.download.nvidia.com/compute/cuda/repos/rhel8/$(arch)/cuda-rhel8.repo && dnf '
                      'module install -y nvidia-driver:open-dkms && reboot',
            'toolkit': 'curl -fsSL '
                       'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo > '
                       '/etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y nvidia-container-toolkit',
            'major': '8'},
 'alma10': {'install': 'dnf install -y numactl',
            'install-epel': 'dnf install -y epel-release && dnf install -y jemalloc',
            'install-glob': "dnf install -y 'nvidia-fabric-manager-550*'",
            'kernel-arg': "grubby --update-kernel=ALL --args='iommu=pt' && reboot",
            'driver': 'dnf config-manager --add-repo '
                      'https://developer.download.nvidia.com/compute/cuda/repos/rhel10/$(arch)/cuda-rhel10.repo && '
                      'dnf install -y nvidia-open && reboot',
            'toolkit': 'curl -fsSL '
                       'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo > '
                       '/etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y nvidia-container-toolkit',
            'major': '10'},
 'arch': {'install': 'apt-get install -y numactl libnuma1   # Debian/Ubuntu\n'
                     'dnf install -y numactl   # RHEL/Rocky/Alma',
          'install-epel': 'apt-get install -y libjemalloc2   # Debian/Ubuntu\n'
                          'dnf install -y epel-release && dnf install -y jemalloc   # RHEL/Rocky/Alma',
          'install-glob': 'apt-get install -y nvidia-fabricmanager-550   # Debian/Ubuntu\n'
                          "dnf install -y 'nvidia-fabric-manager-550*'   # RHEL/Rocky/Alma",
          'kernel-arg': 'sed -i \'s/^GRUB_CMDLINE_LINUX_DEFAULT="/&iommu=pt /\' /etc/default/grub && update-grub && '
                        'reboot   # Debian/Ubuntu\n'
                        "grubby --update-kernel=ALL --args='iommu=pt' && reboot   # RHEL family",
          'driver': 'install the NVIDIA driver from your distribution or https://www.nvidia.com/Download, then '
                    'reboot',
          'toolkit': 'curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | gpg --dearmor -o '
                     '/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg && curl -fsSL '
                     'https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | sed '
                     "'s#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] "
                     "https://#g' > /etc/apt/sources.list.d/nvidia-container-toolkit.list && apt-get update && "
                     'apt-get install -y nvidia-container-toolkit   # Debian/Ubuntu\n'
                     'curl -fsSL '
                     'https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo > '
                     '/etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y nvidia-container-toolkit   # '
                     'RHEL family',
          'major': '9'}}


@pytest.mark.parametrize("distro", list(DISTROS))
def test_fixes_per_distro(distro: str) -> None:
    got = {name: fn(DISTROS[distro]) for name, fn in FUNCS}
    assert got == GOLDEN[distro]


def test_a_bad_package_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not a package name: 'x;reboot'"):
        X.install(DISTROS["debian12"], "numactl x;reboot", "numactl")
    with pytest.raises(ValueError):
        X.install(DISTROS["rhel9"], "numactl", "-y")
    with pytest.raises(ValueError):
        X.install(DISTROS["rhel9"], "numactl", "a*b")


def test_sysctl_and_tune_fix() -> None:
    assert X.sysctl_fix("vm.swappiness", 10) == ("sysctl -w vm.swappiness=10\necho 'vm.swappiness = 10' >> "
                                                 "/etc/sysctl.d/90-hosttune.conf   # keep it after reboot")
    assert X.tune_fix("thp", "echo x") == ("hosttune tune apply --only thp   # applies it and keeps it; by hand:\n"
                                           "echo x")
    assert X.LIMITS_FILE == "/etc/security/limits.d/90-hosttune.conf"


@pytest.mark.parametrize("pattern,good,bad", [
    (X.VERSION_ID, ["9", "22.04", "12_x-rc.1", "0"], ["", "x9", "9 ", "9\n", "9;x", "9/1"]),
    (X.DRIVER_VERSION, ["550", "550.54.15", "1.2.3.4", "12.4"], ["550.", "1.2.3.4.5", "v550", "550 ", "5a"]),
    (X.PACKAGE, ["numactl", "g++", "libnccl2", "nvidia-550*", "A.b_c+d-e"], ["-y", "*", "a*b", "a b", "", ".x"]),
    (X.PCI_ADDRESS, ["0000:3b:00.0", "3b:00.7", "10000:01:1f.3", "ABCD:EF:01.2"],
     ["3b:00.8", "3b:0.0", "000:3b:00.0", "123456789:3b:00.0", "3b:00.0\n", "3b:00"]),
    (X.COUNT, ["1", "8", "999999"], ["0", "01", "1000000", "-1", "1.5", ""]),
])
def test_value_patterns(pattern: "re.Pattern[str]", good: List[str], bad: List[str]) -> None:
    assert [g for g in good if X.valid(pattern, g) != g] == []
    assert [b for b in bad if X.valid(pattern, b) is not None] == []
    assert X.valid(pattern, None) is None


@pytest.mark.parametrize("path,quoted", [("/opt/venv/bin/python", "/opt/venv/bin/python"),
                                         ("/opt/my venv/python", "'/opt/my venv/python'"),
                                         ("/x;reboot", "'/x;reboot'"), ("relative/python", None), ("", None),
                                         (None, None), ("/a\nb", None), ("/a\x7fb", None), ("/a\x9bb", None),
                                         ("/a\tb", None)])
def test_shell_path(path: Any, quoted: Any) -> None:
    assert X.shell_path(path) == quoted


def _regenerate() -> None:
    import pprint

    golden = {d: {name: fn(c) for name, fn in FUNCS} for d, c in DISTROS.items()}
    print("GOLDEN: Dict[str, Dict[str, Any]] = " + pprint.pformat(golden, width=118, sort_dicts=False))


if __name__ == "__main__":
    _regenerate()
