"""Pins for the per-rank entry point hosttune/shim.py (`python -m hosttune.shim COMMAND...`, issue 21, practice
round HTOP): what the rank's environment, its numactl prefix and its stderr are after the binding."""

from typing import Any

from hosttune import shim
from hosttune.launch.binding import Binding


def test_every_binding_note_is_said_and_the_numactl_prefix_returned(handed: str, monkeypatch: Any,
                                                                     capsys: Any) -> None:
    """bind_self stands in for the syscalls (binding the test process itself would pin pytest); it answers as it
    does when the plan's CPUs were narrowed and libnuma was unusable but numactl was found."""
    calls = []

    def bind(plan: Any, libnuma: Any, numactl: Any) -> Binding:
        calls.append(plan.cpus)
        return Binding(tuple(plan.cpus), "bind", (0,), ("/usr/bin/numactl", "--membind=0"),
                       ("plan CPUs 0-3 narrowed to the allowed 0-1", "memory bound by numactl"))

    monkeypatch.setattr(shim, "bind_self", bind)
    environ = {"HOSTTUNE_HANDOFF": handed, "PATH": "/usr/bin", "LOCAL_RANK": "0"}
    got = shim._planned_env(environ, 0, 1)
    assert got is not None and len(calls) == 1
    env, prefix = got
    assert prefix == ["/usr/bin/numactl", "--membind=0"]
    assert capsys.readouterr().err == (
        "hosttune.shim: rank 0: plan CPUs 0-3 narrowed to the allowed 0-1\n"
        "hosttune.shim: rank 0: memory bound by numactl\n")
    assert "HOSTTUNE_HANDOFF" not in env
    assert (env["PATH"], env["LOCAL_RANK"], env["HOSTTUNE_LOCAL_RANK"], env["HOSTTUNE_LOCAL_WORLD_SIZE"]) == (
        "/usr/bin", "0", "0", "1")
    assert environ["HOSTTUNE_HANDOFF"] == handed  # the caller's mapping is not changed
