"""Which job a GPU works for: NVML's processes (the fake pynvml returns real pids of processes this test starts) are
looked up in /proc/PID/cgroup and mapped to a Slurm job, a Kubernetes pod UID or a container id; the sample's GPU
entries carry them, the textfile has one hosttune_job_info series per GPU and job, and `monitor report --job`
adds up one job's GPUs from the JSONL log.

Where this test runs as root with a writable cgroup hierarchy (v1 or v2), the processes are moved into real cgroups
named as Slurm and the kubelet name them, under a uniquely named directory removed afterwards; a /proc tree of
files stands in for them everywhere else (and for the container runtimes' paths)."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
from conftest import a100, cli_runner
from prometheus_client.parser import text_string_to_metric_families

from hosttune.cli import cli
from hosttune.monitor import jobs, logread, summary
from hosttune.monitor.config import MonitorConfig
from hosttune.monitor.daemon import Monitor
from hosttune.monitor.sample import gpu_fields
from hosttune.monitor.sinks import JsonlSink, render_textfile

POD_UID = "5f1c2a9e-7b3d-4c1e-9a8f-0123456789ab"
CID = "4a3b" * 16  # a 64-hex container id
SLURM_V2 = "system.slice/slurmstepd.scope/job_4242/step_0/user/task_0"
SLURM_V1 = "slurm/uid_0/job_4343/step_0/task_0"
KUBE_SYSTEMD = (f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD_UID.replace('-', '_')}.slice/"
                f"cri-containerd-{CID}.scope")


@pytest.mark.parametrize("path, want", [
    ("/" + SLURM_V2, {"kind": "slurm", "job": "4242"}),
    ("/" + SLURM_V1, {"kind": "slurm", "job": "4343"}),
    ("/system.slice/node7_slurmstepd.scope/job_12/step_batch/user/task_0", {"kind": "slurm", "job": "12"}),
    ("/" + KUBE_SYSTEMD, {"kind": "kubernetes", "job": POD_UID, "container": CID[:12]}),
    (f"/kubepods/besteffort/pod{POD_UID}/{CID}", {"kind": "kubernetes", "job": POD_UID, "container": CID[:12]}),
    (f"/../../kubepods.slice/kubepods-pod{POD_UID.replace('-', '_')}.slice/crio-{CID}.scope",
     {"kind": "kubernetes", "job": POD_UID, "container": CID[:12]}),  # seen from another cgroup namespace
    (f"/system.slice/docker-{CID}.scope", {"kind": "container", "job": CID[:12]}),
    (f"/docker/{CID}", {"kind": "container", "job": CID[:12]}),
    (f"/machine.slice/libpod-{CID}.scope/container", {"kind": "container", "job": CID[:12]}),
    ("/user.slice/user-1000.slice/session-3.scope", None),
    ("/process_api/dc010476eec77444e0c9c2ac302b5a07", None),  # 32 hex: no container id
    ("/system.slice/slurmstepd.scope/system", None),  # slurmstepd itself, in no job
    ("/myjob_7/step_0", None),  # "job_" outside Slurm's tree
    # what a pod makes below its own cgroup is the pod's
    (f"/kubepods/besteffort/pod{POD_UID}/{CID}/slurm/uid_0/job_4242/step_0",
     {"kind": "kubernetes", "job": POD_UID, "container": CID[:12]}),
    # a user's delegated subtree names no Slurm job or pod, whatever it spells; a rootless container is theirs
    ("/user.slice/user-1000.slice/user@1000.service/app.slice/slurm/uid_0/job_4242/step_0", None),
    (f"/user.slice/user-1000.slice/user@1000.service/kubepods/pod{POD_UID}/{CID}", {"kind": "container",
                                                                                      "job": CID[:12]}),
    (f"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{CID}.scope",
     {"kind": "container", "job": CID[:12]}),
])
def test_cgroup_paths_as_slurm_the_kubelet_and_container_runtimes_make_them(
        path: str, want: Optional[Dict[str, str]]) -> None:
    assert jobs.classify(path) == want


def test_a_slurm_v1_controller_wins_over_the_unified_line_of_the_same_process() -> None:
    text = f"12:pids:/{SLURM_V1}\n4:memory:/{SLURM_V1}\n1:name=systemd:/system.slice/slurmd.service\n0::/init.scope\n"
    assert jobs.from_proc_cgroup(text) == {"kind": "slurm", "job": "4343"}
    assert jobs.from_proc_cgroup("garbage\n\n0::/\n") is None


# ---- processes: real cgroups where the test may make them, else a /proc tree ------------------------------------
def _writable_hierarchies() -> List[Path]:
    """Mounted cgroup hierarchies where this process can make a directory: v2 first (Slurm's cgroup/v2 paths go
    there), then v1's pids (its cgroup/v1 paths), so each layout lands where Slurm would put it when both exist."""
    if os.geteuid() != 0:
        return []
    found: List[Tuple[bool, Path]] = []
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    for line in mounts:
        parts = line.split()
        if len(parts) < 4 or parts[2] not in ("cgroup", "cgroup2"):
            continue
        if parts[2] == "cgroup" and "pids" not in parts[3].split(","):
            continue
        probe = Path(parts[1]) / f"hosttune-probe-{uuid.uuid4().hex[:12]}"
        try:
            probe.mkdir()
            probe.rmdir()
        except OSError:
            continue
        found.append((parts[2] != "cgroup2", Path(parts[1])))
    return [path for _v1, path in sorted(found)]


class Procs:
    """Processes this test starts, each placed in a cgroup path: a real cgroup (`real`) or a /proc tree's file."""

    def __init__(self, tmp: Path, hierarchies: List[Path]) -> None:
        self.hierarchies = hierarchies
        self.real = bool(hierarchies)
        self.top = f"hosttune-test-{uuid.uuid4().hex[:12]}"  # unique: parallel runs, leftovers of a killed one
        self.proc = "/proc" if self.real else str(tmp / "proc")
        self.children: List[subprocess.Popen[bytes]] = []
        self.made: List[Path] = []

    def start(self, cgroup: Optional[str], hierarchy: int = 0) -> int:
        child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        self.children.append(child)
        if cgroup is None:
            pass
        elif self.real:
            where = self.hierarchies[hierarchy % len(self.hierarchies)] / self.top / cgroup
            where.mkdir(parents=True, exist_ok=True)
            self.made.append(where)
            (where / "cgroup.procs").write_text(str(child.pid))
        else:
            line = f"0::/{self.top}/{cgroup}\n"
            (Path(self.proc) / str(child.pid)).mkdir(parents=True)
            (Path(self.proc) / str(child.pid) / "cgroup").write_text(line)
        return child.pid

    def cgroup_of(self, pid: int) -> str:
        return (Path(self.proc) / str(pid) / "cgroup").read_text()

    def close(self) -> None:
        for child in self.children:
            child.kill()
            child.wait(timeout=60)
        for where in self.made:  # the leaves first, then each parent up to (and with) the unique top
            top = next(h / self.top for h in self.hierarchies if h in where.parents)
            while where != top.parent:
                try:
                    where.rmdir()
                except OSError:
                    break  # another leaf still there: removed on its own turn
                where = where.parent


def _procs(tmp_path: Path, real: bool) -> Iterator[Procs]:
    hierarchies = _writable_hierarchies() if real else []
    if real and not hierarchies:
        pytest.skip("no cgroup hierarchy this test can write (needs root and a writable /sys/fs/cgroup); the "
                    "'tree' case reads the same paths from a /proc tree")
    p = Procs(tmp_path, hierarchies)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture(params=["real", "tree"])
def procs(request: Any, tmp_path: Path) -> Iterator[Procs]:
    yield from _procs(tmp_path, request.param == "real")


@pytest.fixture
def real_procs(tmp_path: Path) -> Iterator[Procs]:
    yield from _procs(tmp_path, True)


def _scenario(pids: Dict[str, int], energy_mj: int = 1_000_000, util: int = 80) -> Dict[str, Any]:
    g0 = a100(0, "3B", utilization=[util, 30], power_mw=300_000, energy_mj=energy_mj,
              violations_ns={"power": 2_000_000_000, "thermal": 0},
              processes=[{"pid": pids["slurm"], "used_memory_mb": 30000},
                         {"pid": pids["pod"], "used_memory_mb": None}])
    g1 = a100(1, "5E", utilization=[5, 1], processes=[{"pid": pids["plain"], "used_memory_mb": 100},
                                                      {"pid": pids["slurm_v1"], "used_memory_mb": 2048}])
    g2 = a100(2, "86", errors={"nvmlDeviceGetComputeRunningProcesses": "NO_PERMISSION"})
    return {"driver": "550.54.15", "cuda_driver": 12040, "devices": [g0, g1, g2]}


def _start_all(procs: Procs) -> Dict[str, int]:
    return {"slurm": procs.start(SLURM_V2), "slurm_v1": procs.start(SLURM_V1, hierarchy=1),
            "pod": procs.start(KUBE_SYSTEMD), "plain": procs.start(None)}


def _monitor(tmp_path: Path, procs: Procs) -> Monitor:
    mon = Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), root=tmp_path)
    mon.open_sources()
    return mon


def test_a_sample_names_each_gpus_jobs_and_the_textfile_has_one_info_series_per_gpu_and_job(
        tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]], procs: Procs,
        monkeypatch: pytest.MonkeyPatch) -> None:
    pids = _start_all(procs)
    if procs.real:  # the kernel's own view: the processes really are in the cgroups Slurm and the kubelet make
        assert f"/{procs.top}/{SLURM_V2}" in procs.cgroup_of(pids["slurm"])
        assert f"/{procs.top}/{KUBE_SYSTEMD}" in procs.cgroup_of(pids["pod"])
    else:
        import hosttune.monitor.sample as sample_mod

        monkeypatch.setattr(sample_mod, "_FINDER", jobs.JobFinder(procs.proc))
    fake_nvml(_scenario(pids))
    mon = _monitor(tmp_path, procs)
    try:
        rec = mon.take()
    finally:
        mon.close()
    g0, g1, g2 = rec["gpus"]
    assert [(p["pid"], p.get("job"), p.get("kind")) for p in g0["processes"]] == sorted(
        [(pids["slurm"], "4242", "slurm"), (pids["pod"], POD_UID, "kubernetes")])
    by_pid = {p["pid"]: p for p in g0["processes"]}
    assert by_pid[pids["slurm"]]["used_memory_mb"] == 30000 and "used_memory_mb" not in by_pid[pids["pod"]]
    assert by_pid[pids["pod"]]["container"] == CID[:12]
    assert sorted(j["job"] for j in g0["jobs"]) == sorted(["4242", POD_UID])
    me = by_pid[pids["slurm"]]["user"]
    assert me == __import__("pwd").getpwuid(os.geteuid()).pw_name
    assert g1["jobs"] == [{"job": "4343", "kind": "slurm", "user": me}]  # the plain process is in no job
    assert [p["pid"] for p in g1["processes"]] == sorted([pids["plain"], pids["slurm_v1"]])
    assert "processes" not in g2 and "jobs" not in g2  # NVML may not list them here: nothing claimed
    text = render_textfile(rec, {"samples": 1}, mon.gpus)
    infos = [s for fam in text_string_to_metric_families(text) if fam.name == "hosttune_job_info" for s in fam.samples]
    got = sorted((s.labels["gpu"], s.labels["job"], s.labels["kind"], s.labels["user"], s.value) for s in infos)
    assert got == sorted([("0", "4242", "slurm", me, 1.0), ("0", POD_UID, "kubernetes", me, 1.0),
                          ("1", "4343", "slurm", me, 1.0)])
    assert all(s.labels["uuid"].startswith("GPU-") for s in infos)
    # the jobs are their own small family: the per-GPU readings keep their gpu/uuid labels only
    temps = [s for fam in text_string_to_metric_families(text) if fam.name == "hosttune_gpu_temperature_celsius"
             for s in fam.samples]
    assert temps and all(set(s.labels) == {"gpu", "uuid"} for s in temps)


def test_monitor_once_in_a_child_attributes_real_processes(
        tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]], real_procs: Procs) -> None:
    pids = _start_all(real_procs)
    env = fake_nvml(_scenario(pids))
    for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "JOURNAL_STREAM"):
        env.pop(key, None)
    res = subprocess.run([sys.executable, "-m", "hosttune", "monitor", "--once", "--json"], env=env,
                         capture_output=True, text=True, timeout=120, cwd="/")
    assert res.returncode == 0, res.stderr[-2000:]
    rec = json.loads(res.stdout)
    assert {j["job"] for j in rec["gpus"][0]["jobs"]} == {"4242", POD_UID}
    assert rec["gpus"][1]["jobs"][0]["job"] == "4343"


# ---- monitor report --job ----------------------------------------------------------------------------------------
def _write_log(tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]], procs: Procs,
               monkeypatch: pytest.MonkeyPatch) -> Tuple[Path, Dict[str, int]]:
    """Four samples 10 s apart from the monitor itself, with the energy counter, the power limiter's time and an
    XID moving under job 4242 on GPU 0; then the job ends (its process leaves GPU 0) for one more sample."""
    import time

    pids = _start_all(procs)
    if not procs.real:
        import hosttune.monitor.sample as sample_mod

        monkeypatch.setattr(sample_mod, "_FINDER", jobs.JobFinder(procs.proc))
    log = tmp_path / "log"
    sink = JsonlSink(str(log), 1 << 20, 1)
    t0 = time.time() - 3600
    sc = _scenario(pids)
    fake_nvml(sc)
    mon = _monitor(tmp_path, procs)
    gpu0 = sc["devices"][0]
    scenario_file = Path(os.environ["HOSTTUNE_FAKE_NVML"])
    for n in range(5):
        gpu0.update(energy_mj=1_000_000 + n * 3_000_000, utilization=[60 + 10 * n, 30],  # +3 kJ per 10 s = 300 W
                    violations_ns={"power": (2 + n) * 1_000_000_000, "thermal": 0}, xids=[79] if n >= 2 else [])
        if n == 4:
            gpu0["processes"] = [p for p in gpu0["processes"] if p["pid"] != pids["slurm"]]
        # the host changes under the running monitor: the fake re-reads its file when the mtime changes (set
        # explicitly: two writes within a coarse timestamp tick would otherwise look the same)
        scenario_file.write_text(json.dumps(sc))
        os.utime(scenario_file, ns=(10**18 + n, 10**18 + n))
        rec = mon.take()
        rec["ts"] = t0 + 10 * n
        sink.write(rec)
    mon.close()
    sink.close()
    return log, pids


def test_report_job_adds_up_one_jobs_gpus_from_the_log(
        tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]], procs: Procs,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log, _pids = _write_log(tmp_path, fake_nvml, procs, monkeypatch)
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--job", "4242", "--json"])
    assert res.exit_code == 0, res.output + str(res.exception)
    out = json.loads(res.stdout)
    assert [g["gpu"] for g in out["gpus"]] == [0]
    g = out["gpus"][0]
    assert g["kind"] == "slurm" and g["samples"] == 4
    assert g["utilization_pct"] == {"mean": 75.0, "max": 90.0}
    assert g["job_memory_used_mb"] == {"mean": 30000.0, "max": 30000.0}
    assert g["power_w"] == {"mean": 300.0, "max": 300.0}
    assert g["energy_j"] == 9000.0 and g["energy_from"] == "counter"  # 3 intervals of 3 kJ; the 5th is not its
    assert g["throttle_seconds"] == {"power": 3.0}
    assert g["xid_errors"] == 1
    assert [ev["value"] for ev in out["xid_events"]] == [79.0]
    # the other Slurm job is on GPU 1 for all five samples; the pod stays on GPU 0 after 4242 left
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--job", POD_UID, "--json"])
    assert json.loads(res.stdout)["gpus"][0]["samples"] == 5
    text = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--job", "4343"])
    assert text.exit_code == 0 and "GPU 1" in text.stdout and "GPU 0" not in text.stdout, text.stdout
    none = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--job", "999"])
    assert none.exit_code == 0 and "no sample" in none.stdout


def test_report_job_energy_skips_a_driver_reload_and_a_monitor_gap() -> None:
    def rec(ts: float, energy: float, power: float = 100.0) -> Dict[str, Any]:
        return {"ts": ts, "gpus": [{"index": 0, "energy_j": energy, "power_w": power, "jobs": [
            {"job": "7", "kind": "slurm", "user": "u"}]}]}

    samples = [rec(0, 100), rec(10, 1100), rec(20, 50), rec(30, 1050), rec(3630, 9e9), rec(3640, 9e9 + 1000)]
    got = summary.job_summary(samples, "7")["gpus"][0]
    assert got["energy_j"] == 3000.0  # 0->10, (reload) 20->30, (the hour down) 3630->3640
    no_counter = [{"ts": t, "gpus": [{"index": 0, "power_w": 200.0, "jobs": [{"job": "7", "kind": "slurm"}]}]}
                  for t in (0, 10, 20)]
    got = summary.job_summary(no_counter, "7")["gpus"][0]
    assert got["energy_from"] == "power" and got["energy_j"] == 6000.0


@pytest.mark.parametrize("bad", [
    {"jobs": "4242"}, {"jobs": [{"job": 4242, "kind": "slurm"}]}, {"jobs": [7]},
    {"throttle_seconds": {"power": "x"}}, {"processes": [{"pid": 1, "used_memory_mb": "x"}]},
])
def test_a_log_line_with_a_malformed_job_is_unreadable_not_a_traceback(bad: Dict[str, Any]) -> None:
    line = json.dumps({"ts": 1.0, "gpus": [dict({"index": 0}, **bad)]}).encode()
    assert logread.parse_line(line) is None


def test_report_job_refuses_an_empty_id_and_a_plot_in_one_line(tmp_path: Path) -> None:
    for args in (["--job", " "], ["--job", "1", "--plot", str(tmp_path / "x.svg")]):
        res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(tmp_path), *args])
        assert res.exit_code == 2, res.output
        assert "--job" in res.stderr and not (tmp_path / "x.svg").exists()


def test_gpu_fields_without_a_process_list_claims_no_job() -> None:
    entry = gpu_fields({"index": 0, "uuid": "GPU-x"}, {"temperature_c": 40})
    assert "jobs" not in entry and "processes" not in entry
    gone = jobs.JobFinder("/nonexistent-proc").attribute([{"pid": 12345, "used_memory_mb": 1}])
    assert gone == [{"pid": 12345, "used_memory_mb": 1}]
