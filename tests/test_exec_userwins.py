"""The user wins, and is told: a variable the caller already set keeps its value (with a reason line in the dry run,
`env` and once on stderr at run), LD_PRELOAD is prepended to, `--override` forces the profile, the allocator setting
goes under the name the job's torch reads, and torchrun's own --numa-binding is left to bind alone.

Real parts: the real CLI, real ranks of a real torchrun job read back from /proc, the fake NVML only for GPUs."""

import dataclasses
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import PROBES, REPO, a100, job_processes
from conftest import run_cli as run
from test_plan import JEMALLOC, two_node_host

from hosttune import plan, profile
from hosttune.facts import TorchInstall

PY = sys.executable
PROBE = str(PROBES / "probe.py")
TORCHRUN = [PY, "-m", "torch.distributed.run"]
GOMP = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"  # a real library that is not a malloc (libgomp1, with gcc)
CUDA, GENERIC = plan.CUDA_ALLOC_CONF, plan.ALLOC_CONF


def with_torch(version: Optional[str], **over: Any) -> Any:
    return dataclasses.replace(two_node_host(**over), torch=TorchInstall(python=PY, version=version))


def env_for(extra: Dict[str, str], base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(extra)
    return env


def hosttune(*args: str, env: Dict[str, str], timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([PY, "-m", "hosttune", *args], env=env, capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------------------------------------------
# The allocator variable's name: one rule, by torch version


@pytest.mark.parametrize("version, names", [
    ("1.13.1", (CUDA,)),
    ("2.1.2+cu121", (CUDA,)),
    ("2.8.0", (CUDA,)),
    ("2.9.1+cu128", (CUDA,)),  # generic name exists, but the CUDA allocator ignores it (pytorch#183387)
    ("2.10.0", (GENERIC,)),
    ("2.10.1+cu130", (GENERIC,)),
    ("2.11.0.dev20260301+cu130", (GENERIC,)),
    ("2.13.0+cpu", (GENERIC,)),
    ("3.0.0", (GENERIC,)),
    ("2.10.0a0+git1234abc", (GENERIC, CUDA)),  # a 2.10 pre-release may predate the change: both, same value
    (None, (GENERIC, CUDA)),
    ("not a version", (GENERIC, CUDA)),
])
def test_alloc_conf_names_by_torch_version(version: Optional[str], names: Any) -> None:
    assert plan.alloc_conf_names(version) == names


def test_installed_torch_reads_the_generic_name_first() -> None:
    """The rule's source on this machine: libc10 of the installed torch (2.13) names the new variable, and the
    rule maps its version to it."""
    torch = pytest.importorskip("torch")
    lib = Path(torch.__file__).parent / "lib" / "libc10.so"
    data = lib.read_bytes()
    assert b"PYTORCH_ALLOC_CONF" in data and b"PYTORCH_CUDA_ALLOC_CONF" in data
    assert plan.alloc_conf_names(torch.__version__) == (GENERIC,)


@pytest.mark.parametrize("version", ["2.13.0", "2.9.1", None])
@pytest.mark.parametrize("name", [GENERIC, CUDA])
def test_the_users_alloc_conf_wins_under_their_name_and_the_other_stays_unset(version: Optional[str],
                                                                               name: str) -> None:
    facts, prof = with_torch(version), profile.load("throughput")
    rp = plan.resolve(facts, prof, 0, 2, environ={name: "backend:cudaMallocAsync"})
    other = GENERIC if name == CUDA else CUDA
    assert rp.env[name] == "backend:cudaMallocAsync" and other not in rp.env
    assert rp.kept == {name: "expandable_segments:True"}
    assert f"{name}=backend:cudaMallocAsync kept: set by you (profile: expandable_segments:True; --override to " \
           f"use the profile)" in rp.reasons
    assert rp.to_dict()["kept"] == [{"name": name, "value": "backend:cudaMallocAsync",
                                     "profile": "expandable_segments:True"}]
    forced = plan.resolve(facts, prof, 0, 2, environ={name: "backend:cudaMallocAsync"}, override=True)
    # --override: ours under the name torch reads and under theirs, so torch sees ours whichever it prefers
    assert {n: forced.env[n] for n in (*plan.alloc_conf_names(version), name)} == \
        dict.fromkeys((*plan.alloc_conf_names(version), name), "expandable_segments:True")
    assert forced.overridden == {name: "backend:cudaMallocAsync"} and not forced.kept


def test_alloc_conf_without_a_users_setting() -> None:
    prof = profile.load("throughput")
    for version, names in (("2.13.0", {GENERIC}), ("2.4.0", {CUDA}), (None, {GENERIC, CUDA})):
        env = plan.resolve(with_torch(version), prof, 0, 1, environ={}).env
        assert {n for n in (GENERIC, CUDA) if n in env} == names, version
        assert {env[n] for n in names} == {"expandable_segments:True"}
    old = plan.resolve(with_torch("2.9.1"), prof, 0, 1, environ={GENERIC: "expandable_segments:True"})
    assert any("may have no effect" in r for r in old.reasons)  # 2.9's CUDA allocator does not read that name


# ---------------------------------------------------------------------------------------------------------------
# Threads, MALLOC_CONF, CUDA_VISIBLE_DEVICES, KMP_*: the rule in one place


def test_users_threads_and_allocator_settings_are_kept_and_said() -> None:
    facts, prof = two_node_host(), profile.load("throughput")
    environ = {"OMP_NUM_THREADS": "4", "MALLOC_CONF": "narenas:2", "KMP_BLOCKTIME": "0",
               "LD_PRELOAD": "/opt/intel/lib/libiomp5.so"}
    for rp in plan.resolve_all(facts, prof, 2, environ=environ):
        assert rp.env["OMP_NUM_THREADS"] == "4" and rp.threads == 4
        assert "MKL_NUM_THREADS" not in rp.env  # MKL follows the user's OMP_NUM_THREADS, not our count
        assert rp.env["MALLOC_CONF"] == "narenas:2" and rp.env["KMP_BLOCKTIME"] == "0"
        assert rp.env["KMP_AFFINITY"] == plan.INTEL_KMP["KMP_AFFINITY"]  # not set by the user: the profile's
        assert set(rp.kept) == {"OMP_NUM_THREADS", "MALLOC_CONF", "KMP_BLOCKTIME"}
        assert rp.kept["OMP_NUM_THREADS"] == str(len(rp.cpus) // 2)
        assert rp.kept_lines() == [line for line in rp.reasons if " kept: set by you " in line]
        forced = plan.resolve(facts, prof, rp.local_rank, 2, environ=environ, override=True)
        assert forced.env["OMP_NUM_THREADS"] == forced.env["MKL_NUM_THREADS"] == rp.kept["OMP_NUM_THREADS"]
        assert forced.env["MALLOC_CONF"] == profile.THROUGHPUT_MALLOC_CONF and not forced.kept
        assert forced.overridden["OMP_NUM_THREADS"] == "4"
        assert any(r.startswith("OMP_NUM_THREADS=") and "--override" in r for r in forced.reasons)


def test_cuda_visible_devices_of_the_user_wins_over_cpu_only() -> None:
    rp = plan.resolve(two_node_host(), profile.load("cpu-only"), 0, 1, environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert rp.env["CUDA_VISIBLE_DEVICES"] == "1" and rp.kept == {"CUDA_VISIBLE_DEVICES": ""}
    forced = plan.resolve(two_node_host(), profile.load("cpu-only"), 0, 1, environ={"CUDA_VISIBLE_DEVICES": "1"},
                          override=True)
    assert forced.env["CUDA_VISIBLE_DEVICES"] == ""


def test_hosttunes_own_variables_are_not_the_users() -> None:
    environ = {"CUDA_DEVICE_ORDER": "FASTEST_FIRST", "HOSTTUNE_NUM_WORKERS": "7"}
    rp = plan.resolve(two_node_host(), profile.load("throughput"), 0, 8, environ=environ)
    assert rp.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"  # cuda:N must be the GPU the rank was bound near
    assert rp.env["HOSTTUNE_NUM_WORKERS"] != "7" and not rp.kept


def test_torchruns_own_omp_default_inside_a_worker_is_not_the_users() -> None:
    inside = {"OMP_NUM_THREADS": "1", "TORCHELASTIC_RUN_ID": "none", "LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "1"}
    rp = plan.resolve(two_node_host(), profile.load("throughput"), 1, 2, environ=inside)
    assert rp.env["OMP_NUM_THREADS"] == str(rp.threads) != "1" and not rp.kept
    mine = plan.resolve(two_node_host(), profile.load("throughput"), 1, 2, environ={"OMP_NUM_THREADS": "1"})
    assert mine.env["OMP_NUM_THREADS"] == "1" and "OMP_NUM_THREADS" in mine.kept


# ---------------------------------------------------------------------------------------------------------------
# LD_PRELOAD: prepended to, never replaced


def test_ld_preload_profile_first_users_after_no_duplicates() -> None:
    facts, prof = two_node_host(), profile.load("throughput")
    env = plan.resolve(facts, prof, 0, 1, environ={"LD_PRELOAD": f"/opt/a.so {JEMALLOC}:/opt/b.so:/opt/a.so"}).env
    assert env["LD_PRELOAD"] == f"{JEMALLOC}:/opt/a.so:/opt/b.so"


def test_a_malloc_the_user_preloads_is_their_choice() -> None:
    facts, prof = two_node_host(), profile.load("throughput")
    mine = "/opt/tc/libtcmalloc.so.4"
    rp = plan.resolve(facts, prof, 0, 1, environ={"LD_PRELOAD": mine})
    assert "LD_PRELOAD" not in rp.env and "MALLOC_CONF" not in rp.env  # theirs stays as it is, alone
    assert any(mine in r and "kept" in r for r in rp.reasons)
    forced = plan.resolve(facts, prof, 0, 1, environ={"LD_PRELOAD": mine}, override=True)
    assert forced.env["LD_PRELOAD"] == f"{JEMALLOC}:{mine}"


# ---------------------------------------------------------------------------------------------------------------
# Through the real CLI


def test_env_cli_says_kept_and_override_replaces() -> None:
    r = run(["env", "--profile", "throughput"], env={"OMP_NUM_THREADS": "3", "MALLOC_CONF": "narenas:1"})
    assert r.returncode == 0, r.stderr
    assert "export OMP_NUM_THREADS=3" in r.stdout.splitlines()
    assert any(line.startswith("# OMP_NUM_THREADS=3 kept: set by you (profile: ") for line in r.stdout.splitlines())
    j = run(["env", "--profile", "throughput", "--json", "--override"], env={"OMP_NUM_THREADS": "3"})
    data = json.loads(j.stdout)
    assert data["env"]["OMP_NUM_THREADS"] != "3" and data["kept"] == []
    assert data["overridden"] == [{"name": "OMP_NUM_THREADS", "yours": "3", "value": data["env"]["OMP_NUM_THREADS"]}]


def gpu_env(fake_nvml: Any, extra: Dict[str, str]) -> Dict[str, str]:
    """The environment of a job on a host with two fake A100s: for a child process, and for the CLI run in this
    process (`run`, with the fake NVML this process has loaded; a plan is not about the process boundary)."""
    env = fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": [a100(0, "AF", 0), a100(1, "3B", 0)]})
    return env_for(extra, env)


@pytest.mark.parametrize("name", [GENERIC, CUDA])
def test_exec_dry_run_keeps_the_users_alloc_conf_on_a_gpu_host(fake_nvml: Any, name: str) -> None:
    env = gpu_env(fake_nvml, {name: "backend:cudaMallocAsync", "OMP_NUM_THREADS": "2"})
    cmd = [*TORCHRUN, "--nproc_per_node=2", PROBE]
    r = run(["exec", "--profile", "throughput", "--dry-run", "--json", "--", *cmd], env=env)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    other = GENERIC if name == CUDA else CUDA
    for rank in d["ranks"]:
        assert rank["env"][name] == "backend:cudaMallocAsync" and other not in rank["env"]
        assert {k["name"] for k in rank["kept"]} >= {name}
    assert d["env"][name] == "backend:cudaMallocAsync" and other not in d["env"]  # what torchrun itself gets
    text = run(["exec", "--profile", "throughput", "--dry-run", "--", *cmd], env=env).stdout
    assert text.count(f"# {name}=backend:cudaMallocAsync kept: set by you (profile: expandable_segments:True; "
                      f"--override to use the profile)") == 2  # one reason line per rank
    forced = json.loads(run(["exec", "--profile", "throughput", "--override", "--dry-run", "--json", "--", *cmd],
                            env=env).stdout)
    for rank in forced["ranks"]:  # the probe does not know torch's version: both names, the profile's value
        assert rank["env"][GENERIC] == rank["env"][CUDA] == "expandable_segments:True" and rank["kept"] == []


def test_numa_binding_dry_run_binds_nothing_and_says_so(fake_nvml: Any) -> None:
    env = gpu_env(fake_nvml, {})
    cmd = [*TORCHRUN, "--numa-binding", "exclusive", "--nproc_per_node=2", PROBE]
    d = json.loads(run(["exec", "--profile", "throughput", "--dry-run", "--json", "--", *cmd], env=env).stdout)
    assert "--numa-binding" in d["argv"] and "exclusive" in d["argv"]  # torchrun still gets it
    for rank in d["ranks"]:
        assert rank["cpus"] == [] and rank["mems"] == [] and rank["mem_policy"] == "none"
        assert rank["bound_by"] == "torchrun --numa-binding=exclusive"
        assert 0 < int(rank["env"]["OMP_NUM_THREADS"]) <= max(1, len(os.sched_getaffinity(0)) // 2)
    text = run(["exec", "--profile", "throughput", "--dry-run", "--", *cmd], env=env)
    header = [ln for ln in text.stdout.splitlines() if ln.startswith("# torchrun --numa-binding=exclusive binds")]
    assert len(header) == 1 and "hosttune binds nothing on top" in header[0]
    assert "numactl" not in d["argv"] and "hosttune binds nothing" not in text.stderr


def test_plain_exec_keeps_users_threads_and_prepends_preload(tmp_path: Path) -> None:
    if not os.path.exists(GOMP):
        pytest.skip("needs libgomp1")
    out = tmp_path / "out"
    out.mkdir()
    env = env_for({"PROBE_OUT": str(out), "OMP_NUM_THREADS": "3", "LD_PRELOAD": GOMP})
    r = hosttune("exec", "--profile", "throughput", "--", PY, PROBE, env=env)
    assert r.returncode == 0, r.stderr
    (rep,) = [json.loads(p.read_text()) for p in out.glob("rank-*.json")]
    assert rep["env"]["OMP_NUM_THREADS"] == "3" and "MKL_NUM_THREADS" not in rep["env"]
    preload = rep["env"]["LD_PRELOAD"].split(":")
    assert preload[-1] == GOMP and len(preload) == len(set(preload))
    if len(preload) > 1:
        assert "jemalloc" in preload[0] and rep["jemalloc_mapped"]
    assert r.stderr.count("hosttune: OMP_NUM_THREADS=3 kept: set by you") == 1


# ---------------------------------------------------------------------------------------------------------------
# A real torchrun job: each rank's environment read from /proc


def rank_environs(proc: "subprocess.Popen[str]", mark: str, want: int, timeout: float = 90) -> List[Dict[str, str]]:
    """The environment of each running rank of the job carrying `mark`, read from /proc/PID/environ: the ranks are
    the probe processes (LOCAL_RANK set, not torchrun's agent, whose argv names torch.distributed.run)."""
    deadline = time.monotonic() + timeout
    found: Dict[str, Dict[str, str]] = {}
    while time.monotonic() < deadline and len(found) < want and proc.poll() is None:
        for pid in job_processes(mark):
            try:
                raw = Path(f"/proc/{pid}/environ").read_bytes()
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            env = dict(item.decode("utf-8", "replace").split("=", 1) for item in raw.split(b"\0") if b"=" in item)
            if "LOCAL_RANK" in env and any(a.endswith(b"probe.py") for a in argv) and b"-c" not in argv:
                found[env["LOCAL_RANK"]] = env
        time.sleep(0.2)
    return [found[k] for k in sorted(found)]


@pytest.mark.integration
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("override", [False, True])
def test_torchrun_ranks_keep_the_users_env_or_override_it(fake_nvml: Any, tmp_path: Path, override: bool) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "out"
    out.mkdir()
    token = uuid.uuid4().hex
    mark = f"USERWINS_MARK={token}"  # every process of this job carries it (job_processes)
    extra = {"PROBE_OUT": str(out), "OMP_NUM_THREADS": "3", CUDA: "backend:cudaMallocAsync", "USERWINS_MARK": token}
    if os.path.exists(GOMP):
        extra["LD_PRELOAD"] = GOMP
    env = gpu_env(fake_nvml, extra)
    argv = [PY, "-m", "hosttune", "exec", "--profile", "throughput", *(["--override"] if override else []), "--",
            *TORCHRUN, "--nproc_per_node=2", PROBE, "--sleep", "4"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ranks = rank_environs(proc, mark, 2)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    assert len(ranks) == 2, stderr
    # A Python rank applies its plan inside the interpreter (the per-rank hook), which /proc/PID/environ (the
    # environment the rank was started with) does not show: the thread and allocator variables are the ones each
    # rank reported from its own os.environ; LD_PRELOAD must already be in the start environment to work at all.
    reports = {}
    for f in out.glob("rank-*.json"):
        rep = json.loads(f.read_text())
        reports[rep["local_rank"]] = rep["env"]
    assert sorted(reports) == ["0", "1"], stderr
    for started, renv in zip(ranks, [reports["0"], reports["1"]]):
        if "LD_PRELOAD" in started:
            renv = dict(renv, LD_PRELOAD=started["LD_PRELOAD"])
        if override:
            assert renv["OMP_NUM_THREADS"] != "3" and renv["MKL_NUM_THREADS"] == renv["OMP_NUM_THREADS"]
            assert renv[CUDA] == renv[GENERIC] == "expandable_segments:True"
        else:
            assert renv["OMP_NUM_THREADS"] == "3" and "MKL_NUM_THREADS" not in renv
            assert renv[CUDA] == "backend:cudaMallocAsync" and GENERIC not in renv
        if "LD_PRELOAD" in env:
            preload = renv["LD_PRELOAD"].split(":")
            assert preload[-1] == GOMP and "jemalloc" in preload[0] and len(preload) == len(set(preload))
    kept = "hosttune: OMP_NUM_THREADS=3 kept: set by you"
    assert stderr.count(kept) == (0 if override else 1), stderr  # once for the job, not once per rank
    assert stderr.count(f"hosttune: {CUDA}=backend:cudaMallocAsync kept") == (0 if override else 1), stderr


def test_numa_binding_on_a_host_without_gpu_says_torchrun_will_fail() -> None:
    r = run(["exec", "--dry-run", "--", *TORCHRUN, "--numa-binding=node", "--nproc_per_node=2", PROBE])
    assert r.returncode == 0, r.stderr
    if "gpu " in r.stdout:
        pytest.skip("this host has a GPU")
    head = [ln for ln in r.stdout.splitlines() if ln.startswith("# torchrun --numa-binding=node binds")]
    assert len(head) == 1 and "this host has no GPU" in head[0]
