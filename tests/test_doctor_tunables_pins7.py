"""Pins for hosttune.doctor.checks.tunables (issue 21, practice round HDOC): the container runtime's own option for
an rlimit, "-1" as systemd-nspawn's "infinity"."""

import types

import pytest

from hosttune.doctor.checks import tunables


def ctx(runtime: str) -> object:
    return types.SimpleNamespace(facts=types.SimpleNamespace(container=types.SimpleNamespace(runtime=runtime)))


@pytest.mark.parametrize("runtime,name,value,want", [
    ("systemd-nspawn", "memlock", "-1", "systemd-nspawn --rlimit=RLIMIT_MEMLOCK=infinity"),
    ("systemd-nspawn", "nofile", "65536:1048576", "systemd-nspawn --rlimit=RLIMIT_NOFILE=65536:1048576"),
    ("docker", "memlock", "-1", "docker/podman run --ulimit memlock=-1"),
    ("podman", "nofile", "65536:1048576", "docker/podman run --ulimit nofile=65536:1048576"),
    ("", "memlock", "-1", "docker/podman run --ulimit memlock=-1"),
])
def test_runtime_limit(runtime: str, name: str, value: str, want: str) -> None:
    assert tunables._runtime_limit(ctx(runtime), name, value) == want  # type: ignore[arg-type]
