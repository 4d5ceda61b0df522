"""Pins for hosttune.doctor.checks.nvidia (issue 21, practice round HDOC8): check_fabric_manager whole on every branch,
the install command per distro family (dnf takes the driver's major version as a glob)."""

from typing import Any, Optional

import pytest
from _doctorhelp import R, gpu_host

from hosttune.doctor.checks import nvidia
from hosttune.doctor.context import Context
from hosttune.doctor.model import Finding
from hosttune.facts import Distro

START = "systemctl enable --now nvidia-fabricmanager"
ROCKY = Distro(id="rocky", version="9.3", name="Rocky", family="rhel")
OTHER = Distro(id="x", family="other")
GONE = dict(nvswitches=4, fabric_manager_installed=False, fabric_manager_running=False)


def fm(distro: Optional[Distro] = None, **nv: Any) -> Finding:
    facts = R(gpu_host(), nvidia=R(gpu_host().nvidia, **nv))
    if distro is not None:
        facts = R(facts, distro=distro)
    return nvidia.check_fabric_manager(Context(facts=facts, env={}))


@pytest.mark.parametrize("distro,nv,want", [
    (ROCKY, GONE, Finding(status="fail", actual="not installed (4 NVSwitches)", expected="running",
                          fix=f"dnf install -y 'nvidia-fabric-manager-550*'   # same version as the driver\n{START}")),
    (None, GONE, Finding(status="fail", actual="not installed (4 NVSwitches)", expected="running",
                         fix=f"apt-get install -y nvidia-fabricmanager-550   # same version as the driver\n{START}")),
    (OTHER, GONE, Finding(status="fail", actual="not installed (4 NVSwitches)", expected="running",
                          fix="apt-get install -y nvidia-fabricmanager-550   # Debian/Ubuntu\n"
                              "dnf install -y 'nvidia-fabric-manager-550*'   # RHEL/Rocky/Alma   # same version as the "
                              f"driver\n{START}")),
    (None, dict(GONE, driver="550\n54"), Finding(
        status="fail", actual="not installed (4 NVSwitches)", expected="running",
        fix="install nvidia-fabricmanager-<major> (Debian/Ubuntu) or nvidia-fabric-manager (RHEL family) for the "
            f"driver's major version (nvidia-smi shows it)\n{START}")),
    (None, dict(GONE, fabric_manager_installed=True), Finding(
        status="fail", actual="installed but not running (4 NVSwitches)", expected="running", fix=START)),
    (None, dict(GONE, fabric_manager_installed=True, fabric_manager_running=None), Finding(
        status="skip", actual="4 NVSwitches; service state unknown on a captured host", expected="running")),
    (None, dict(nvswitches=6, fabric_manager_installed=True, fabric_manager_running=True), Finding(
        status="pass", actual="running (6 NVSwitches)", expected="running")),
    (None, dict(nvswitches=0), Finding(status="pass", actual="no NVSwitch: not needed",
                                       expected="running on NVSwitch hosts")),
])
def test_fabric_manager_whole(distro: Optional[Distro], nv: Any, want: Finding) -> None:
    assert fm(distro, **nv) == want
