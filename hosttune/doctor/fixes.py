"""Fix commands for the detected distro family (apt on Debian/Ubuntu, dnf/EPEL on the RHEL family), and the rule
for host-derived values in them.

A user pastes a fix into a root shell, so a value that came from the host (os-release, a driver version, a path, a
device name) is put into a fix only after it matched a strict pattern, and always through `shlex.quote`; a value
that fails gets a fix without it (issue 11 item 12).
"""

import re
import shlex
from typing import Any, Optional

from hosttune.doctor.context import Context

SYSCTL_FILE = "/etc/sysctl.d/90-hosttune.conf"
LIMITS_FILE = "/etc/security/limits.d/90-hosttune.conf"

# What a host-derived value must look like before a fix may contain it (fullmatch: no trailing newline slips by).
VERSION_ID = re.compile(r"[0-9][0-9A-Za-z._-]*")  # os-release(5): VERSION_ID is lower-case letters, digits, . _ -
DRIVER_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+){0,3}")  # 550.54.15, 12.4
PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]*\*?")  # a Debian/RPM package name, or a trailing-glob dnf spec
PCI_ADDRESS = re.compile(r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")  # [domain:]bus:dev.fn
COUNT = re.compile(r"[1-9][0-9]{0,5}")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def valid(pattern: "re.Pattern[str]", value: Optional[str]) -> Optional[str]:
    """`value` when all of it matches `pattern`, else None: the only way a host-derived value reaches a fix."""
    return value if value is not None and pattern.fullmatch(value) else None


def shell_path(path: Optional[str]) -> Optional[str]:
    """An absolute path, shell-quoted for a fix; None when it is relative or holds control characters (a newline
    would split the fix into two commands on the screen, whatever the quoting)."""
    if not path or not path.startswith("/") or _CONTROL.search(path):
        return None
    return shlex.quote(path)


def distro_major(ctx: Context) -> Optional[str]:
    """The distro's major version for a fix: "9" when unknown (the current RHEL), None when os-release holds
    something that is not a version (then the fix must not contain it)."""
    version = ctx.facts.distro.version
    if not version:
        return "9"
    if not valid(VERSION_ID, version):
        return None
    major = version.split(".")[0]
    return major if major.isdigit() else None


def _packages(names: str) -> str:
    """Each package name checked and shell-quoted (a dnf glob such as `foo-550*` comes out as 'foo-550*')."""
    out = []
    for name in names.split():
        if not PACKAGE.fullmatch(name):
            raise ValueError(f"not a package name: {name!r}")
        out.append(shlex.quote(name))
    return " ".join(out)


def install(ctx: Context, apt: str, dnf: str, epel: bool = False) -> str:
    """The install command for this distro family; both forms when the family is unknown."""
    apt, dnf = _packages(apt), _packages(dnf)
    dnf_cmd = f"dnf install -y {dnf}"
    if epel:
        dnf_cmd = f"{_epel(ctx)} && {dnf_cmd}"
    if ctx.family == "debian":
        return f"apt-get install -y {apt}"
    if ctx.family == "rhel":
        return dnf_cmd
    return f"apt-get install -y {apt}   # Debian/Ubuntu\n{dnf_cmd}   # RHEL/Rocky/Alma"


def _epel(ctx: Context) -> str:
    # an os-release version that is not one: let rpm say the major version on the host itself (EPEL's own docs)
    major = distro_major(ctx) or "$(rpm -E %rhel)"
    if ctx.facts.distro.id == "rhel":
        return (f"subscription-manager repos --enable codeready-builder-for-rhel-{major}-$(arch)-rpms && "
                f"dnf install -y https://dl.fedoraproject.org/pub/epel/epel-release-latest-{major}.noarch.rpm")
    return "dnf install -y epel-release"


def tune_fix(tunable: str, shell: str) -> str:
    """`hosttune tune apply --only ID` first (it applies the setting, keeps it across reboots and `hosttune tune
    revert` undoes it), with the shell commands that do it by hand beside it."""
    return f"hosttune tune apply --only {tunable}   # applies it and keeps it; by hand:\n{shell}"


def sysctl_fix(key: str, value: Any) -> str:
    return f"sysctl -w {key}={value}\necho '{key} = {value}' >> {SYSCTL_FILE}   # keep it after reboot"


def kernel_arg_fix(ctx: Context, arg: str) -> str:
    """How to add a kernel command-line argument for good on this family (takes effect after a reboot)."""
    grubby = f"grubby --update-kernel=ALL --args='{arg}' && reboot"
    grub = (f"sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT=\"/&{arg} /' /etc/default/grub && update-grub && reboot")
    if ctx.family == "rhel":
        return grubby
    if ctx.family == "debian":
        return grub
    return f"{grub}   # Debian/Ubuntu\n{grubby}   # RHEL family"


def driver_install(ctx: Context) -> str:
    """How to install the NVIDIA driver on this distro."""
    d = ctx.facts.distro
    major = distro_major(ctx)
    if d.id == "ubuntu":
        return "ubuntu-drivers install --gpgpu && reboot   # or apt-get install -y nvidia-driver-570-server"
    if ctx.family == "debian":
        return "apt-get install -y nvidia-driver firmware-misc-nonfree && reboot   # needs contrib non-free"
    if ctx.family == "rhel" and major is not None:
        repo = (f"dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/"
                f"rhel{major}/$(arch)/cuda-rhel{major}.repo")
        pkg = ("dnf install -y nvidia-open" if int(major) >= 10
               else "dnf module install -y nvidia-driver:open-dkms")
        return f"{repo} && {pkg} && reboot"
    return "install the NVIDIA driver from your distribution or https://www.nvidia.com/Download, then reboot"


def container_toolkit_install(ctx: Context) -> str:
    """Install the NVIDIA Container Toolkit from NVIDIA's repository (its install guide: apt list with a signed-by
    keyring on Debian/Ubuntu, the .repo file on the RHEL family)."""
    base = "https://nvidia.github.io/libnvidia-container"
    apt = (f"curl -fsSL {base}/gpgkey | gpg --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
           f" && curl -fsSL {base}/stable/deb/nvidia-container-toolkit.list | sed 's#deb https://#deb "
           "[signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' > "
           "/etc/apt/sources.list.d/nvidia-container-toolkit.list && apt-get update && "
           "apt-get install -y nvidia-container-toolkit")
    dnf = (f"curl -fsSL {base}/stable/rpm/nvidia-container-toolkit.repo > "
           "/etc/yum.repos.d/nvidia-container-toolkit.repo && dnf install -y nvidia-container-toolkit")
    if ctx.family == "debian":
        return apt
    if ctx.family == "rhel":
        return dnf
    return f"{apt}   # Debian/Ubuntu\n{dnf}   # RHEL family"
