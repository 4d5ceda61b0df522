"""Pins for hosttune.doctor.checks.tunables (issue 21, practice round HDOC8): the nofile finding whole for each hard
limit (unlimited -1, too low, none, enough) and in a container."""

from pathlib import Path
from typing import Optional

import pytest
from _doctorhelp import NO_PROFILE, R, cpu_host

from hosttune.doctor.checks import tunables
from hosttune.doctor.context import Context
from hosttune.doctor.model import Finding
from hosttune.facts import Container, Limits

HEAD = "hosttune tune apply --only nofile   # applies it and keeps it; by hand:\n"
SHELL = "ulimit -n 65536   # this shell\n"
PERSIST = ("printf '* soft nofile 65536\\n* hard nofile 1048576\\n' > /etc/security/limits.d/90-hosttune.conf   # "
           "new logins; systemd services: LimitNOFILE=65536; docker: --ulimit nofile=65536:1048576")


@pytest.mark.parametrize("hard,fix", [
    (-1, HEAD + SHELL + PERSIST),  # an unlimited hard limit lets this shell raise its soft one
    (None, HEAD + SHELL + PERSIST),
    (1048576, HEAD + SHELL + PERSIST),
    (4096, HEAD + PERSIST + "\n# this shell's hard limit is 4096: only a new login (or root) gets more"),
])
def test_nofile_fix_by_hard_limit(hard: Optional[int], fix: str) -> None:
    facts = R(cpu_host(), limits=R(cpu_host().limits, nofile_soft=1024, nofile_hard=hard))
    f = tunables.check_nofile(Context(facts=facts, env={}, profile=NO_PROFILE))
    assert f == Finding(status="warn", actual="1024", expected=">= 65536", fix=fix)


def test_nofile_in_a_container_and_unlimited() -> None:
    facts = R(cpu_host(), limits=R(cpu_host().limits, nofile_soft=1024, nofile_hard=-1),
              container=Container(detected=True, runtime="docker"))
    assert tunables.check_nofile(Context(facts=facts, env={}, profile=NO_PROFILE)) == Finding(
        status="warn", actual="1024", expected=">= 65536",
        fix=SHELL + "in a container the runtime sets it: docker/podman run --ulimit nofile=65536:1048576; "
            "Kubernetes: the node's container runtime (LimitNOFILE of containerd's or cri-o's unit)")
    free = R(cpu_host(), limits=R(cpu_host().limits, nofile_soft=-1, nofile_hard=-1))
    assert tunables.check_nofile(Context(facts=free, env={}, profile=NO_PROFILE)) == Finding(
        status="pass", actual="unlimited", expected=">= 65536")


@pytest.mark.parametrize("limits,want", [
    ("* soft memlock 64\n* hard memlock 64\n", Finding(
        status="warn", actual="64 (limits files) with 2 RDMA devices", expected="unlimited",
        fix="hosttune tune apply --only memlock   # applies it and keeps it; by hand:\nprintf '* soft memlock "
            "unlimited\\n* hard memlock unlimited\\n' > /etc/security/limits.d/90-hosttune.conf   # then log in again; "
            "systemd services: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1")),
    ("* soft memlock unlimited\n* hard memlock unlimited\n", Finding(
        status="pass", actual="unlimited (limits files) with 2 RDMA devices", expected="unlimited")),
])
def test_memlock_of_a_captured_host_whole(tmp_path: Path, limits: str, want: Finding) -> None:
    files = {"etc/security/limits.conf": limits, "etc/os-release": "ID=debian\n",
             "sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n"}  # tune's own reader looks for RDMA here
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    facts = cpu_host(root=str(tmp_path), limits=Limits(rdma_devices=2))
    assert tunables.check_memlock(Context(facts=facts, env={}, profile=NO_PROFILE, live=False)) == want
