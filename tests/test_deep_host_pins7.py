"""Pins for hosttune.doctor.deep.host (issue 21, practice round HDOC): the CPU clock's sources in order, docker's
daemon.json, and the whole Toolkit read from a tree."""

from pathlib import Path
from typing import Dict

import pytest
from test_doctor_deep import tree

from hosttune.detect.hostio import HostIO
from hosttune.doctor.deep import host
from hosttune.doctor.deep.host import Toolkit

XEON = "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"
CPUINFO = "processor\t: 0\ncpu MHz\t\t: 2445.426\nprocessor\t: 1\ncpu MHz\t\t: 3100.000\nbogomips : 5000\n"
MAXFREQ = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"


@pytest.mark.parametrize("files,model,want", [
    ({MAXFREQ: "3900000\n", "/proc/cpuinfo": CPUINFO}, XEON, (3.9, "cpufreq cpuinfo_max_freq")),
    ({MAXFREQ: "0\n", "/proc/cpuinfo": CPUINFO}, XEON, (2.5, "model name")),
    ({MAXFREQ: "junk\n", "/proc/cpuinfo": CPUINFO}, "AMD EPYC 7763 64-Core Processor", (3.1, "/proc/cpuinfo cpu MHz")),
    ({"/proc/cpuinfo": CPUINFO}, None, (3.1, "/proc/cpuinfo cpu MHz")),
    ({"/proc/cpuinfo": "processor : 0\n"}, "AMD EPYC", (None, "unknown")),
    ({}, None, (None, "unknown")),
])
def test_cpu_clock_sources_in_order(tmp_path: Path, files: Dict[str, str], model: str, want: object) -> None:
    assert host.cpu_clock_ghz(HostIO(tree(tmp_path / "r", files)), model) == want


def test_parsers() -> None:
    assert host.parse_model_ghz(XEON) == 2.5
    assert host.parse_model_ghz("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2GHz") == 2.0
    assert host.parse_model_ghz("X @ 2.5 MHz") is None and host.parse_model_ghz(None) is None
    assert host.parse_cpuinfo_mhz(CPUINFO) == 3100.0
    assert host.parse_cpuinfo_mhz("cpu MHz : 1200\ncpu MHz : 800.5\n") == 1200.0
    assert host.parse_cpuinfo_mhz("x cpu MHz : 9999\ncpu MHz : fast\n") is None and host.parse_cpuinfo_mhz(None) is None


@pytest.mark.parametrize("text,want", [
    ('{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}', (True, False)),
    ('{"default-runtime": "nvidia"}', (True, False)),
    ('{"default-runtime": "runc", "runtimes": {"crun": {}}}', (False, False)),
    ('{"features": {"cdi": true}, "runtimes": []}', (False, True)),
    ('{"features": {"cdi": false}}', (False, False)),
    ('{"features": ["cdi"], "runtimes": {"nvidia": 1}}', (True, False)),
    ("[1]", (False, False)),
    ("not json", (False, False)),
    (None, (False, False)),
    ("", (False, False)),
])
def test_parse_daemon_json(text: str, want: object) -> None:
    assert host.parse_daemon_json(text) == want


SPEC = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n"


def test_toolkit_whole(tmp_path: Path) -> None:
    root = tree(tmp_path / "r", {
        "/usr/bin/docker": "", "/usr/bin/nvidia-ctk": "", "/usr/sbin/podman": "",
        "/etc/cdi/b.yaml": SPEC, "/etc/cdi/a.json": '{"kind": "nvidia.com/gpu"}', "/etc/cdi/c.yml": SPEC,
        "/etc/cdi/amd.yaml": "kind: amd.com/gpu\n", "/etc/cdi/nvidia.yaml.bak": SPEC, "/var/run/cdi/x.yaml": SPEC,
        "/etc/docker/daemon.json": '{"default-runtime": "nvidia", "features": {"cdi": true}}'})
    assert host.toolkit(HostIO(root)) == Toolkit(
        nvidia_ctk="/usr/bin/nvidia-ctk", docker="/usr/bin/docker", podman="/usr/sbin/podman",
        cdi_specs=("/etc/cdi/a.json", "/etc/cdi/b.yaml", "/etc/cdi/c.yml", "/var/run/cdi/x.yaml"),
        docker_nvidia_runtime=True, docker_cdi=True)
    bare = tree(tmp_path / "bare", {"/etc/hostname": "h\n", "/etc/docker/daemon.yaml": "{}"})
    assert host.toolkit(HostIO(bare)) == Toolkit(nvidia_ctk=None, docker=None, podman=None, cdi_specs=(),
                                                 docker_nvidia_runtime=False, docker_cdi=False)
