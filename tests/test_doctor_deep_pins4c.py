"""Pins for mutation round 4's last doctor --deep survivors (issue 21), on the probe's own code run in this process
with a stand-in torch module (the probe's CPU group needs only get_num_threads, randn and mm to pick and report its
sizes; no torch outside the engine's tests): the CPU matmul's size follows the thread count, 1024^2 up to 8 threads,
2048^2 up to 32, 4096^2 beyond, and cpu.deep_matmul's finding names it."""
import argparse
import json
import sys
import types
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import run_cli

from hosttune.doctor.deep import findings, probe_torch
from hosttune.doctor.deep.runner import JobResult, parse_events


def fake_torch(threads: int) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.__version__ = "2.5.1"  # type: ignore[attr-defined]
    torch.version = types.SimpleNamespace(cuda=None)  # type: ignore[attr-defined]
    torch.backends = types.SimpleNamespace()  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)  # type: ignore[attr-defined]
    torch.get_num_threads = lambda: threads  # type: ignore[attr-defined]
    torch.randn = lambda *shape: shape  # type: ignore[attr-defined]
    torch.mm = lambda a, b: None  # type: ignore[attr-defined]
    return torch


def cpu_group(threads: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> List[Dict[str, Any]]:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(threads))
    monkeypatch.setattr(probe_torch, "JSON", True)
    probe_torch.run_torch_groups({"info", "cpu"}, argparse.Namespace(small=False, seconds=0.001))
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("threads,n", [(1, 1024), (8, 1024), (9, 2048), (32, 2048), (33, 4096)])
def test_the_cpu_matmul_size_follows_the_thread_count(threads: int, n: int, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture) -> None:
    events = cpu_group(threads, monkeypatch, capsys)
    (row,) = [e for e in events if e["event"] == "result" and e["what"] == "cpu_matmul"]
    assert (row["n"], row["threads"]) == (n, threads)
    job = JobResult(name="torch", events=parse_events("\n".join(json.dumps(e) for e in events)), returncode=0)
    f = findings.cpu_matmul_finding(job, threads, None, (), None, None)
    assert f.status == "pass" and f"({n}x{n} matmul, {threads} threads)" in f.actual, f


# ---- the cross-node all-reduce's rendezvous port, as `doctor --deep --nodes` sets it ----------------------------
def rendezvous_argv(tmp_path: Path, port: Optional[int]) -> List[str]:
    """The argv os.deep_nodes_allreduce starts on the first of two nodes, options as the CLI builds them; the
    training interpreter is a script that writes down its arguments (no torch, no network)."""
    from hosttune.commands.doctor import deep_options
    from hosttune.doctor import Context, run_checks
    from hosttune.doctor.deep import DEEP_CHECKS, DeepRun
    from hosttune.doctor.deep.network import NetPath
    from hosttune.facts import Facts

    seen = tmp_path / "argv"
    python = tmp_path / "python3"
    python.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {seen}\n")
    python.chmod(0o755)
    paths = [NetPath("a", "10.0.0.1", "10.0.0.1", "eth0", "other", own=True, mtu=1500),
             NetPath("b", "10.0.0.2", "10.0.0.1", "eth0", "other", mtu=1500)]
    ctx = Context(facts=Facts(), env={}, python=str(python))
    opts = deep_options(("a", "b")) if port is None else deep_options(("a", "b"), port)
    opts.progress = False
    ctx.deep = DeepRun(ctx, opts)
    ctx.deep.paths = paths
    try:
        run_checks(ctx, [c for c in DEEP_CHECKS if c.id == "os.deep_nodes_allreduce"])
    finally:
        ctx.deep.close()
    return seen.read_text().splitlines()


@pytest.mark.parametrize("port,want", [(None, 29400), (12345, 12345)])
def test_the_cross_node_rendezvous_is_at_the_first_node_on_the_rdzv_port(tmp_path: Path, port: Optional[int],
                                                                           want: int) -> None:
    argv = rendezvous_argv(tmp_path, port)
    assert argv[argv.index("--rdzv-endpoint") + 1] == f"10.0.0.1:{want}"
    assert argv[argv.index("--rdzv-id") + 1] == f"hosttune-doctor-{want}"


def test_the_clis_rdzv_port_default_is_29400_not_torchruns_29500() -> None:
    res = run_cli(["doctor", "--help"])
    assert res.returncode == 0 and "--rdzv-port" in res.stdout, res.stdout
    option = " ".join(res.stdout.split()).split("--rdzv-port", 1)[1].split(" --root", 1)[0]
    assert "default: 29400" in option, option
