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
