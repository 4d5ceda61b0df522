"""Pins for hosttune.doctor.deep.findings (issue 21, practice round HDOC8): the container toolkit finding whole, every
branch (each CDI spec named, both engines, each missing piece with its fix)."""

import pytest

from hosttune.doctor.deep.findings import toolkit_finding
from hosttune.doctor.deep.host import Toolkit
from hosttune.doctor.model import Finding

EXPECTED = "nvidia-ctk installed; CDI spec for nvidia.com/gpu; docker: nvidia runtime or CDI"
CTK = "/usr/bin/nvidia-ctk"


@pytest.mark.parametrize("tk,want", [
    (Toolkit(CTK, "/usr/bin/docker", None, ("/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.json"), False, True),
     Finding(status="pass", actual=f"nvidia-ctk {CTK}; /etc/cdi/nvidia.yaml, /var/run/cdi/nvidia.json",
             expected=EXPECTED)),
    (Toolkit(CTK, None, "/usr/bin/podman", ("/etc/cdi/a.yaml", "/etc/cdi/b.yaml"), False, False),
     Finding(status="pass", actual=f"nvidia-ctk {CTK}; /etc/cdi/a.yaml, /etc/cdi/b.yaml", expected=EXPECTED)),
    (Toolkit(CTK, "/usr/bin/docker", "/usr/bin/podman", (), False, False),
     Finding(status="warn", actual=f"nvidia-ctk {CTK}; no CDI spec; no CDI spec for nvidia.com/gpu in /etc/cdi or "
             "/var/run/cdi; docker's daemon.json has no nvidia runtime", expected=EXPECTED,
             fix="nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml\n"
                 "nvidia-ctk runtime configure --runtime=docker && systemctl restart docker")),
    (Toolkit(CTK, "/usr/bin/docker", None, ("/etc/cdi/nvidia.yaml",), True, False),
     Finding(status="pass", actual=f"nvidia-ctk {CTK}; /etc/cdi/nvidia.yaml", expected=EXPECTED)),
    (Toolkit(CTK, "/usr/bin/docker", None, ("/etc/cdi/nvidia.yaml",), False, False),
     Finding(status="warn", actual=f"nvidia-ctk {CTK}; /etc/cdi/nvidia.yaml; docker's daemon.json has no nvidia "
             "runtime", expected=EXPECTED,
             fix="nvidia-ctk runtime configure --runtime=docker && systemctl restart docker")),
    (Toolkit(None, "/usr/bin/docker", "/usr/bin/podman", (), False, False),
     Finding(status="warn", actual="docker and podman installed, nvidia-ctk missing", expected=EXPECTED,
             fix="INSTALL")),
    (Toolkit(CTK, None, None, (), False, False),
     Finding(status="skip", actual="no docker or podman on this host")),
])
def test_toolkit_finding_whole(tk: Toolkit, want: Finding) -> None:
    assert toolkit_finding(tk, "INSTALL") == want


def test_copies_rows_without_a_time_are_left_out() -> None:
    """A copy row with 0 s (nothing timed) is not a rate: GPU1's only row and GPU0's pageable d2h are left out."""
    from hosttune.doctor.deep.findings import copies_finding
    from hosttune.doctor.deep.runner import JobResult

    def row(gpu: int, kind: str, direction: str, nbytes: float, secs: float) -> dict:
        return {"event": "result", "what": f"gpu_copies gpu{gpu} {kind} {direction}", "gpu": gpu, "kind": kind,
                "direction": direction, "bytes": nbytes, "seconds": secs}

    job = JobResult(name="gpu", returncode=0, events=(
        row(0, "pinned", "h2d", 50e9, 2.0), row(0, "pinned", "d2h", 48e9, 2.0), row(0, "pageable", "h2d", 20e9, 2.0),
        row(0, "pageable", "d2h", 0.0, 0.0), row(1, "pinned", "h2d", 1e9, 0.0)))
    got = copies_finding(job, {0: (4, 16), 1: (4, 16)}, {0: {"pcie_gen": 4, "pcie_width": 16}}, {0: 0, 1: 1})
    assert got == Finding(
        status="pass", actual="H2D/D2H GPU0 pinned 25.0/24.0, pageable 10.0/0.0 GB/s (link gen4 x16 while copying)",
        expected="pinned H2D/D2H >= 75% of GPU0 gen4 x16: 25.2 GB/s (PCIe coded rate x 80%)")


def test_cpuinfo_mhz_is_the_highest_with_its_fraction() -> None:
    from hosttune.doctor.deep.host import parse_cpuinfo_mhz

    text = ("processor\t: 0\ncpu MHz\t\t: 2400.123\nprocessor\t: 1\ncpu MHz\t\t: 3100.5\n"
            "processor\t: 2\ncpu MHz\t: 3100\n")
    assert parse_cpuinfo_mhz(text) == 3100.5
    assert parse_cpuinfo_mhz("cpu MHz : 1800\n") == 1800.0
    assert parse_cpuinfo_mhz("cpu MHz : 2400.1 GHz\n") is None  # not a bare number: not read
    assert parse_cpuinfo_mhz(None) is None
