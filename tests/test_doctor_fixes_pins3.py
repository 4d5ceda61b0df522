"""Pins of mutation round 3 (issue 21) on hosttune/doctor/fixes.py: the fix command each distro family gets
(bench/mutants.py r3-fixes-*). Pure: Contexts over synthetic Facts, nothing run."""

import pytest
from _doctorhelp import R, cpu_host

from hosttune.doctor import fixes
from hosttune.doctor.context import Context
from hosttune.facts import Distro


def ctx_of(distro_id: str, version: str, family: str) -> Context:
    return Context(facts=R(cpu_host(), distro=Distro(id=distro_id, version=version, family=family)), env={})


def test_the_nvidia_driver_on_each_rhel_major() -> None:
    # RHEL 10 has no nvidia-driver module stream: NVIDIA's repo installs nvidia-open; 8 and 9 use the module
    ten = fixes.driver_install(ctx_of("rhel", "10.0", "rhel"))
    assert "cuda-rhel10.repo" in ten and "dnf install -y nvidia-open" in ten and "dnf module" not in ten
    nine = fixes.driver_install(ctx_of("rocky", "9.4", "rhel"))
    assert "cuda-rhel9.repo" in nine and "dnf module install -y nvidia-driver:open-dkms" in nine


def test_an_unknown_rhel_version_is_the_current_major() -> None:
    # os-release without VERSION_ID (a stripped image): the fix names the current RHEL (9), not an older one
    ctx = ctx_of("rhel", "", "rhel")
    assert fixes.distro_major(ctx) == "9"
    assert "cuda-rhel9.repo" in fixes.driver_install(ctx)
    assert "epel-release-latest-9.noarch.rpm" in fixes.install(ctx, "libjemalloc2", "jemalloc", epel=True)


@pytest.mark.parametrize("bad", ["jemalloc; reboot", "$(reboot)", "nvidia-driver-550`id`", "-y"])
def test_a_package_name_that_is_not_one_never_reaches_a_fix(bad: str) -> None:
    # install() is called with names from the checks' tables and from the host (a driver branch): a name with shell
    # syntax in it is refused, never quoted into a command a user pastes into a root shell
    for family in ("debian", "rhel", "unknown"):
        with pytest.raises(ValueError, match="not a package name"):
            fixes.install(ctx_of("x", "1", family), bad, "jemalloc")
        with pytest.raises(ValueError, match="not a package name"):
            fixes.install(ctx_of("x", "1", family), "libjemalloc2", bad)


def test_each_family_gets_its_own_package_manager_and_boot_loader() -> None:
    deb, rhel = ctx_of("debian", "12", "debian"), ctx_of("rocky", "9.4", "rhel")
    assert fixes.install(deb, "libturbojpeg0", "turbojpeg") == "apt-get install -y libturbojpeg0"
    assert fixes.install(rhel, "libturbojpeg0", "turbojpeg") == "dnf install -y turbojpeg"
    assert fixes.install(rhel, "libjemalloc2", "jemalloc", epel=True) == \
        "dnf install -y epel-release && dnf install -y jemalloc"
    assert fixes.kernel_arg_fix(rhel, "iommu=pt").startswith("grubby --update-kernel=ALL --args='iommu=pt'")
    assert "update-grub" not in fixes.kernel_arg_fix(rhel, "iommu=pt")
    assert "update-grub" in fixes.kernel_arg_fix(deb, "iommu=pt") and "grubby" not in fixes.kernel_arg_fix(deb, "x=1")
