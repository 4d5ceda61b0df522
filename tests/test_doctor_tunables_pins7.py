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


def test_memlock_findings_whole() -> None:
    from _doctorhelp import R, cpu_host, run_one

    from hosttune.doctor.model import Finding

    base = cpu_host()

    def limits(**kw: object) -> object:
        return R(base, limits=R(base.limits, **kw))

    assert run_one("cpu.memlock", limits(memlock_soft=None, memlock_hard=None, rdma_devices=2)) == Finding(
        status="skip", actual="2 RDMA devices; RLIMIT_MEMLOCK not readable", expected="unlimited")
    assert run_one("cpu.memlock", limits(memlock_soft=8 << 20, memlock_hard=8 << 20, rdma_devices=2)) == Finding(
        status="warn", actual="8192 KiB with 2 RDMA devices", expected="unlimited",
        fix="hosttune tune apply --only memlock   # applies it and keeps it; by hand:\n"
            "printf '* soft memlock unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/90-hosttune.conf"
            "   # then log in again; systemd services: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1")
    assert run_one("cpu.memlock", limits(rdma_devices=4)) == Finding(
        status="pass", actual="unlimited (4 RDMA devices)", expected="unlimited")
    assert run_one("cpu.memlock", base) == Finding(
        status="pass", actual="no RDMA devices: not relevant", expected="unlimited on RDMA hosts")
