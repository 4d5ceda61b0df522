"""The monitor names the jobs `hosttune exec` runs on each GPU from the records exec keeps (hosttune/jobrecord.py,
monitor/jobs.py `Records`), without NVML's process list: a real exec's job shows in the sample and the textfile's
hosttune_job_info while it runs and not after; and root reads the records as another user's input (the other_user
fixture forges them): the user is the file's owner, a record counts only for a live process of that same owner
with the start time it names, and links, FIFOs, oversized or stale records are ignored."""

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
from _jobrecordhelp import WAIT_S, records, start_job, stop, wait_for, wait_started
from conftest import OtherUser, a100
from prometheus_client.parser import text_string_to_metric_families

from hosttune import jobrecord
from hosttune.monitor import jobs
from hosttune.monitor.config import MonitorConfig
from hosttune.monitor.daemon import Monitor
from hosttune.monitor.sinks import render_textfile
from hosttune.policy import dirs

ME = __import__("pwd").getpwuid(os.geteuid()).pw_name
GPUS = [a100(0, "3B"), a100(1, "5E")]  # NVML lists no processes on either
UUID1 = GPUS[1]["uuid"]


def _sample(tmp_path: Path) -> Dict[str, Any]:
    mon = Monitor(MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir=""), root=tmp_path)
    mon.open_sources()
    try:
        rec = mon.take()
    finally:
        mon.close()
    rec["_static"] = mon.gpus
    return rec


def _infos(rec: Dict[str, Any]) -> List[Any]:
    text = render_textfile(rec, {"samples": 1}, rec["_static"])
    return sorted((s.labels["gpu"], s.labels["uuid"], s.labels["job"], s.labels["kind"], s.labels["user"], s.value)
                  for fam in text_string_to_metric_families(text) if fam.name == "hosttune_job_info"
                  for s in fam.samples)


def test_a_running_exec_names_its_job_on_the_gpus_its_ranks_were_given(
        tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": GPUS})
    proc = start_job(tmp_path, 0, SLURM_JOB_ID="4711", CUDA_VISIBLE_DEVICES=UUID1, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    try:
        wait_started(proc, tmp_path)
        rec = _sample(tmp_path)
    finally:
        stop(proc, tmp_path)
    g0, g1 = rec["gpus"]
    assert not g0.get("jobs")  # NVML lists no process on either GPU: the record alone names the job
    assert g1["jobs"] == [{"job": "4711", "kind": "slurm", "user": ME}]
    assert _infos(rec) == [("1", UUID1, "4711", "slurm", ME, 1.0)]
    wait_for(lambda: not records(), "the record to go")
    assert _infos(_sample(tmp_path)) == []  # the job ended: nothing claims the GPU any more


def test_a_job_outside_slurm_is_named_by_its_exec_on_every_gpu_it_may_use(
        tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    fake_nvml({"driver": "550.54.15", "cuda_driver": 12040, "devices": GPUS})
    proc = start_job(tmp_path, 0)  # no CUDA_VISIBLE_DEVICES: CUDA gives it every GPU
    try:
        pid = wait_started(proc, tmp_path)
        start = jobrecord.start_time(pid)
        rec = _sample(tmp_path)
    finally:
        stop(proc, tmp_path)
    got = _infos(rec)
    assert [(g, k, u) for g, _uuid, _job, k, u, _v in got] == [("0", "exec", ME), ("1", "exec", ME)]
    assert pid == proc.pid  # exec'd: the job is exec's own process, and the job id is its pid and start time
    assert got[0][2] == got[1][2] == f"{pid}.{start}"


# ---- the claims, as pure values --------------------------------------------------------------------------------
STATIC = [{"index": i, "uuid": g["uuid"], "pci_bus_id": g["pci_bus_id"].lower()} for i, g in enumerate(GPUS)]


def _rec(user: str, job: str, claimed: bool, visible: Any = None, kind: str = "slurm") -> Dict[str, Any]:
    return {"user": user, "job": job, "kind": kind, "claimed": claimed, "exec_id": f"{user}.1",
            "cuda_visible_devices": visible, "device_order": "PCI_BUS_ID"}


def _gpus(**jobs_on: Any) -> List[Dict[str, Any]]:
    return [{"index": s["index"], "uuid": s["uuid"], **({"jobs": list(jobs_on[f"g{s['index']}"])}
                                                         if f"g{s['index']}" in jobs_on else {})} for s in STATIC]


def test_a_claimed_slurm_id_another_user_holds_or_claims_names_nobodys_job_here() -> None:
    gpus = _gpus()
    jobs.add_records(gpus, STATIC, [_rec("alice", "4711", True, "0"), _rec("bob", "4711", True, "1")])
    assert [g["jobs"] for g in gpus] == [[{"job": "alice.1", "kind": "exec", "user": "alice"}],
                                         [{"job": "bob.1", "kind": "exec", "user": "bob"}]]
    # what a cgroup says (NVML's processes, or a record's own process) wins over a claim
    gpus = _gpus(g0=[{"job": "4711", "kind": "slurm", "user": "alice"}])
    jobs.add_records(gpus, STATIC, [_rec("bob", "4711", True, "0")])
    assert gpus[0]["jobs"] == [{"job": "4711", "kind": "slurm", "user": "alice"},
                               {"job": "bob.1", "kind": "exec", "user": "bob"}]
    # one user's several execs of one job (an srun task per GPU) keep its id
    gpus = _gpus()
    jobs.add_records(gpus, STATIC, [_rec("alice", "4711", True, "0"), _rec("alice", "4711", True, "1")])
    assert [g["jobs"] for g in gpus] == [[{"job": "4711", "kind": "slurm", "user": "alice"}]] * 2


@pytest.mark.parametrize("visible, on", [
    (None, [0, 1]), ("", []), ("1", [1]), (GPUS[0]["uuid"], [0]), ("GPU-00000001", [1]), ("1,0", [0, 1]),
    ("7", []),  # past the end: CUDA stops there
])
def test_a_records_gpus_are_what_cuda_would_give_its_ranks(visible: Any, on: List[int]) -> None:
    gpus = _gpus()
    jobs.add_records(gpus, STATIC, [_rec("alice", "4711", True, visible)])
    assert [g["index"] for g in gpus if g.get("jobs")] == on


def test_a_lost_gpu_gets_no_job() -> None:
    gpus = _gpus()
    gpus[1]["lost"] = True
    jobs.add_records(gpus, STATIC, [_rec("alice", "4711", True, None)])
    assert "jobs" in gpus[0] and "jobs" not in gpus[1]


# ---- another user's records ------------------------------------------------------------------------------------
@pytest.fixture
def shared_records(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A records directory another user can reach (a test's tmp_path is root's 0700): root's, under /tmp, made
    the way root's exec makes it (1777)."""
    base = Path(tempfile.mkdtemp(prefix="hosttune-jobrec-", dir="/tmp"))
    base.chmod(0o755)
    monkeypatch.setenv("HOSTTUNE_RUNTIME_DIR", str(base / "run-hosttune"))
    d = Path(jobrecord.records_dir(dirs.runtime_dir()))
    d.mkdir()
    d.chmod(0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_other(other: OtherUser, path: Path, blob: bytes, kind: str = "file") -> None:
    code = ("import os, sys\np, kind = sys.argv[1], sys.argv[2]\n"
            "if kind == 'fifo': os.mkfifo(p, 0o644)\n"
            "elif kind.startswith('link:'): os.symlink(kind[5:], p)\n"
            "else: open(p, 'wb').write(sys.stdin.buffer.read()); os.chmod(p, 0o644)\n")
    done = other.run(["/usr/bin/python3", "-c", code, str(path), kind], input=blob.decode(), text=True)
    assert done.returncode == 0, done.stderr


def _body(pid: int, start: int, **over: Any) -> bytes:
    data = {"version": 1, "pid": pid, "start": start, "slurm_job": "4242", "cuda_visible_devices": "0",
            "device_order": "PCI_BUS_ID"}
    data.update(over)
    return json.dumps(data).encode()


def test_another_users_records_claim_only_their_own_live_processes_under_their_own_name(
        shared_records: Path, other_user: OtherUser) -> None:
    theirs = subprocess.Popen(["setpriv", f"--reuid={other_user.uid}", f"--regid={other_user.gid}", "--clear-groups",
                               "--", "sleep", "600"])
    try:
        wait_for(lambda: os.stat(f"/proc/{theirs.pid}").st_uid == other_user.uid, "their process to be theirs")
        their_start = jobrecord.start_time(theirs.pid)
        assert their_start is not None
        mine = jobrecord.begin(dirs.runtime_dir(), "1", {"SLURM_JOB_ID": "4711"})  # root's own, for this process
        assert mine is not None
        my_pid, my_start = os.getpid(), jobrecord.start_time(os.getpid())
        assert my_start is not None
        d = shared_records
        # their own live process, in a record that also says it is root's: shown as theirs
        _as_other(other_user, d / jobrecord.name(theirs.pid, their_start, "aaaaaaaa"),
                  _body(theirs.pid, their_start, user="root", uid=0))
        # root's live process (this one), claimed by them: not theirs, ignored
        _as_other(other_user, d / jobrecord.name(my_pid, my_start, "bbbbbbbb"), _body(my_pid, my_start))
        # their process with another start time (a reused pid), a process that is gone
        _as_other(other_user, d / jobrecord.name(theirs.pid, their_start + 1, "cccccccc"),
                  _body(theirs.pid, their_start + 1))
        _as_other(other_user, d / jobrecord.name(999999, 1, "dddddddd"), _body(999999, 1))
        # a link to root's own record (followed, it would count root's job twice under a name they chose)
        _as_other(other_user, d / jobrecord.name(my_pid, my_start, "eeeeeeee"), b"", kind=f"link:{mine}")
        # a FIFO (a reader that opened it blocking would hang the monitor), an oversized record of their own
        _as_other(other_user, d / jobrecord.name(theirs.pid, their_start, "ffffffff"), b"", kind="fifo")
        _as_other(other_user, d / jobrecord.name(theirs.pid, their_start, "99999999"),
                  _body(theirs.pid, their_start, pad="x" * jobrecord.LIMIT))
        read = jobs.Records().read()
        got = sorted((r["pid"], r["user"], r["kind"], r["job"]) for r in read)
        assert got == sorted([(my_pid, ME, "slurm", "4711"), (theirs.pid, "nobody", "slurm", "4242")])
        gpus = [{"index": s["index"], "uuid": s["uuid"]} for s in STATIC]
        jobs.add_records(gpus, STATIC, read)
        assert gpus[0]["jobs"] == [{"job": "4242", "kind": "slurm", "user": "nobody"}]
        assert gpus[1]["jobs"] == [{"job": "4711", "kind": "slurm", "user": ME}]
        jobrecord.remove(mine)
    finally:
        theirs.kill()
        theirs.wait()


def test_another_users_exec_writes_a_record_of_their_own(shared_records: Path, other_user: OtherUser) -> None:
    """exec run by an ordinary user records its job in root's sticky directory, as that user."""
    other_user.hosttune("--version")  # puts a copy of this checkout's package in their home
    profile = other_user.write("profile.yaml", "threads: 1\n")  # the package's profiles/ are beside the checkout's
    code = ("import os; from hosttune import jobrecord; from hosttune.policy import dirs\n"
            "d = jobrecord.records_dir(dirs.runtime_dir())\n"
            "print([os.lstat(os.path.join(d, n)).st_uid for n in os.listdir(d)\n"
            "       if (jobrecord.parse_name(n) or [0])[0] == os.getpid()])\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(other_user.home), "PYTHONPATH": str(other_user.home / ".hosttune-src"),
           "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8", "HOSTTUNE_EXEC_CACHE": "0",
           "HOSTTUNE_RUNTIME_DIR": os.environ["HOSTTUNE_RUNTIME_DIR"], "HOSTTUNE_PROFILE": str(profile)}
    res = other_user.run(["/usr/bin/python3", "-m", "hosttune", "exec", "--", "/usr/bin/python3", "-c", code], env=env,
                         cwd=str(other_user.home), timeout=WAIT_S)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"[{other_user.uid}]"
    wait_for(lambda: not records(), "their record to go")
