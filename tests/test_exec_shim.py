"""The per-rank shim: same plan on its fast path (handed over) and slow path (re-resolved), and real exec runs."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import REPO

from hosttune.launch import handoff
from hosttune.launch.binding import effective_cpus
from hosttune.launch.job import Launch, prepare
from hosttune.launch.rank import plan_for
from hosttune.launch.torchrun import shim_argv
from hosttune.rankplan import TORCHRUN_PYTHON

PY = sys.executable
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def _torchrun_env(job: Launch, user: Dict[str, str]) -> Dict[str, str]:
    env = dict(user)
    env.update(job.env)  # what the launcher gives torchrun
    env["OMP_NUM_THREADS"] = env.get("OMP_NUM_THREADS", "1")  # and what torchrun itself would add
    return env


@pytest.mark.parametrize("user_preload", [None, TCMALLOC])
def test_fast_and_slow_paths_agree(user_preload: Any) -> None:
    user = dict(os.environ)
    if user_preload:
        if not os.path.exists(user_preload):
            pytest.skip("libtcmalloc-minimal4 not installed")
        user["LD_PRELOAD"] = user_preload
    job = prepare(["torchrun", "--nproc_per_node=2", "t.py"], environ=user)
    payload = json.loads(json.dumps(handoff.payload(job, "m")))
    env = _torchrun_env(job, user)
    for rank in (0, 1):
        fast, *_ = plan_for(payload, rank, 2, env)
        slow, *_ = plan_for(dict(payload, plans={}), rank, 2, env)
        for p in (fast, slow):
            assert tuple(p.cpus) == tuple(job.ranks[rank].cpus)
            assert (p.mem_policy, tuple(p.mems)) == (job.ranks[rank].mem_policy, tuple(job.ranks[rank].mems))
        assert dict(fast.env) == dict(slow.env) == dict(job.ranks[rank].env)
    if user_preload and "LD_PRELOAD" in job.ranks[0].env:
        # the user's preload is kept once, never prepended twice by a re-resolving shim
        assert job.ranks[0].env["LD_PRELOAD"].split(":").count(user_preload) == 1


def test_new_world_size_is_planned_again() -> None:
    job = prepare(["torchrun", "--nproc_per_node=2", "t.py"], environ=dict(os.environ))
    payload = json.loads(json.dumps(handoff.payload(job, "m")))
    plans = [plan_for(payload, r, 3, _torchrun_env(job, dict(os.environ)))[0] for r in range(3)]
    assert [p.local_world_size for p in plans] == [3, 3, 3]
    assert all(set(p.cpus) <= os.sched_getaffinity(0) for p in plans)


def _run_shim(tmp_path: Path, env: Dict[str, str], *cmd: str) -> "subprocess.CompletedProcess[str]":
    """The shim of this checkout (run from tmp_path, `-m` would find whichever checkout pip last installed)."""
    env = dict(env, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p]))
    return subprocess.run([PY, "-m", "hosttune.shim", *cmd], env=env, capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path))


SHOW = "import os, json; print(json.dumps([sorted(os.sched_getaffinity(0)), os.environ.get('OMP_NUM_THREADS'), " \
       "os.environ.get('HOSTTUNE_LOCAL_RANK'), os.environ.get('HOSTTUNE_HANDOFF')]))"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_shim_binds_each_rank_and_execs(tmp_path: Path) -> None:
    job = prepare(["torchrun", "--nproc_per_node=2", "t.py"])
    path = handoff.write(handoff.payload(job, "m"))
    try:
        for rank in (0, 1):
            env = dict(os.environ, HOSTTUNE_HANDOFF=path, LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2")
            r = _run_shim(tmp_path, env, PY, "-c", SHOW)
            assert r.returncode == 0, r.stderr
            cpus, omp, hrank, seen_path = json.loads(r.stdout)
            assert cpus == list(effective_cpus(job.ranks[rank].cpus, os.sched_getaffinity(0)))
            assert omp == job.ranks[rank].env["OMP_NUM_THREADS"] and hrank == str(rank)
            assert seen_path is None  # the rank itself does not see the launcher's file
    finally:
        handoff.remove(path)


def test_shim_without_launcher_detects_and_finds_torchruns_python(tmp_path: Path) -> None:
    # No handoff: the argv printed by --dry-run still works. {torchrun-python} = our parent's interpreter.
    parent = ("import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-m', 'hosttune.shim', "
              f"{TORCHRUN_PYTHON!r}, '-c', 'import sys; print(sys.executable)']))")
    r = subprocess.run([PY, "-c", parent], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1"))
    assert r.returncode == 0, r.stderr
    assert os.path.realpath(r.stdout.strip()) == os.path.realpath(PY)


def test_shim_errors(tmp_path: Path) -> None:
    env = dict(os.environ, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    r = _run_shim(tmp_path, env, "no-such-program-xyz")
    assert r.returncode == 127 and "command not found" in r.stderr
    r = _run_shim(tmp_path, dict(env, LOCAL_RANK="zero"), "true")
    assert r.returncode == 2 and "LOCAL_RANK='zero' is not an integer" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    r = _run_shim(tmp_path, dict(env, HOSTTUNE_HANDOFF=str(bad)), "true")
    assert r.returncode == 2 and "bad.json" in r.stderr and "Traceback" not in r.stderr
    assert _run_shim(tmp_path, env).returncode == 2  # no command


def test_shim_on_the_handoff_path_imports_no_planner_detector_or_yaml(tmp_path: Path) -> None:
    """Every rank start pays for the shim's imports: with the launcher's plan handed over it reads JSON and binds,
    and never loads the planner, the profile, the detector or YAML (see shim.py's import cost)."""
    job = prepare(["torchrun", "--nproc_per_node=2", "t.py"])
    path = handoff.write(handoff.payload(job, "m"))
    try:
        env = dict(os.environ, HOSTTUNE_HANDOFF=path, LOCAL_RANK="1", LOCAL_WORLD_SIZE="2")
        argv = shim_argv(PY)
        r = subprocess.run([argv[0], "-X", "importtime", *argv[1:], "true"], env=env, capture_output=True,
                           text=True, timeout=60, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        loaded = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
        assert "hosttune.shim" in loaded and "hosttune.launch.binding" in loaded
        heavy = {"hosttune.plan", "hosttune.profile", "hosttune.facts", "hosttune.detect", "yaml", "click",
                 "hosttune.launch.job", "hosttune.launch.supervise", "hosttune.launch.torchrun"}
        assert not loaded & heavy, sorted(loaded & heavy)
    finally:
        handoff.remove(path)


@pytest.mark.parametrize("override", [False, True])
def test_a_rank_planned_again_follows_the_launchers_override(override: bool) -> None:
    """An elastic world size re-plans inside the rank: `--override` must reach that plan too (profile wins), and
    without it the caller's own OMP_NUM_THREADS stays."""
    user = dict(os.environ, OMP_NUM_THREADS="7")
    job = prepare(["torchrun", "--nproc_per_node=2", "t.py"], environ=user, override=override)
    assert job.ranks[0].env["OMP_NUM_THREADS"] == ("7" if not override else job.ranks[0].env["OMP_NUM_THREADS"])
    payload = json.loads(json.dumps(handoff.payload(job, "m")))
    again = plan_for(payload, 0, 3, _torchrun_env(job, user))[0]
    assert (again.env["OMP_NUM_THREADS"] == "7") is (not override)
