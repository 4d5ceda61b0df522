"""hosttune.detect.distro pins (issue 21, practice round HDET8): the family comes from ID first, then ID_LIKE in
order."""

import pytest

from hosttune.detect import distro


@pytest.mark.parametrize("dist_id,like,fam", [
    ("ubuntu", "debian", "debian"),
    ("rocky", "rhel centos fedora", "rhel"),
    ("ubuntu", "rhel", "debian"),  # ID decides before ID_LIKE
    ("fedora", "debian", "rhel"),
    ("neon", "ubuntu debian", "debian"),
    ("virtuozzo", "rhel fedora", "rhel"),
    ("mystery", "arch fedora debian", "rhel"),  # the first known word of ID_LIKE
    ("mystery", "arch debian fedora", "debian"),
    ("arch", "", "unknown"),
    ("unknown", "", "unknown"),
])
def test_family(dist_id: str, like: str, fam: str) -> None:
    assert distro.family(dist_id, like) == fam
