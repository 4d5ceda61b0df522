"""Pins for hosttune/monitor/jobs.py (issue 21, round 5): the job ranking over /proc/PID/cgroup's lines, the finder
on a fake /proc (user names remembered, a gone process is its pid), distinct jobs in first-seen order, the pods the
kubelet names in place of UIDs, and records (claimed Slurm ids, lost GPUs, the records directory's problems)."""

import os
import pwd
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hosttune.monitor import jobs

CID = "ab12" * 16
POD = "5f1c2a9e-7b3d-4c1e-9a8f-0123456789ab"


def test_ranking_over_the_hierarchies() -> None:
    kube = f"0::/kubepods/besteffort/pod{POD}/{CID}"
    cont = f"1:cpu:/docker/{CID}"
    assert jobs.from_proc_cgroup(f"{cont}\n{kube}\n") == {"kind": "kubernetes", "job": POD, "container": CID[:12]}
    assert jobs.from_proc_cgroup(f"{kube}\n{cont}\n")["kind"] == "kubernetes"  # type: ignore[index]
    assert jobs.from_proc_cgroup(f"{cont}\n2:mem:/docker/{'cd34' * 16}\n") == {"kind": "container", "job": CID[:12]}
    assert jobs.from_proc_cgroup("garbage\n1:cpu\n0::/user.slice\n") is None
    assert jobs.from_proc_cgroup(f"garbage\n{cont}") == {"kind": "container", "job": CID[:12]}
    assert jobs.from_proc_cgroup("") is None
    assert jobs.from_proc_cgroup(f"0::/odd:name/docker/{CID}\n") == {"kind": "container", "job": CID[:12]}


def test_classify_edges() -> None:
    assert jobs.classify("/slurm/uid_0/job_9") == {"kind": "slurm", "job": "9"}  # at the end of the path
    assert jobs.classify("/slurm/uid_0/job_9x/step") is None
    assert jobs.classify(f"/kubepods/pod{POD}") == {"kind": "kubernetes", "job": POD}  # no container below
    assert jobs.classify(f"/slurm/job_5/kubepods/pod{POD}/{CID}") == {"kind": "slurm", "job": "5"}
    assert jobs.classify(f"/x/{CID}y") is None and jobs.classify(f"/x/{CID[:63]}") is None


def fake_proc(tmp_path: Path, pid: int, cgroup: str) -> Path:
    d = tmp_path / str(pid)
    d.mkdir(parents=True)
    (d / "cgroup").write_text(cgroup)
    return d


def test_finder_on_a_fake_proc(tmp_path: Path) -> None:
    fake_proc(tmp_path, 10, "0::/slurm/uid_0/job_77/step_0\n")
    fake_proc(tmp_path, 11, "0::/user.slice\n")
    f = jobs.JobFinder(str(tmp_path))
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert f.process(10) == {"pid": 10, "user": me, "kind": "slurm", "job": "77"}
    assert f.process(11) == {"pid": 11, "user": me}
    assert f.process(12) == {"pid": 12}
    assert f.attribute([{"pid": "10", "used_memory_mb": 5}, {"pid": 12}]) == [
        {"pid": 10, "used_memory_mb": 5, "user": me, "kind": "slurm", "job": "77"}, {"pid": 12}]


def test_finder_remembers_user_names_and_shows_unknown_uids_as_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    f = jobs.JobFinder("/nonexistent")
    calls: List[int] = []

    def getpwuid(uid: int) -> Any:
        calls.append(uid)
        if uid == 4242:
            raise KeyError(uid)
        return pwd.struct_passwd(("alice", "x", uid, uid, "", "/", "/bin/sh"))

    monkeypatch.setattr(jobs.pwd, "getpwuid", getpwuid)
    assert f.user(1000) == "alice" and f.user(1000) == "alice" and calls == [1000]
    assert f.user(4242) == "4242" and f.user(4242) == "4242" and calls == [1000, 4242]


def test_a_cgroup_file_over_the_bound_is_just_the_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_proc(tmp_path, 10, "0::/slurm/uid_0/job_77/step_0\n")
    monkeypatch.setattr(jobs, "MAX_CGROUP_BYTES", 10)
    got = jobs.JobFinder(str(tmp_path)).process(10)
    assert "job" not in got and got["pid"] == 10


def test_jobs_of_distinct_in_first_seen_order() -> None:
    procs = [{"pid": 1}, {"pid": 2, "job": 7, "kind": "slurm", "user": "a"},
             {"pid": 3, "job": "x", "kind": "container"}, {"pid": 4, "job": 7, "kind": "slurm", "user": "b"},
             {"pid": 5, "job": 7, "kind": "container", "user": "c"}]
    assert jobs.jobs_of(procs) == [{"job": "7", "kind": "slurm", "user": "a"},
                                   {"job": "x", "kind": "container", "user": ""},
                                   {"job": "7", "kind": "container", "user": "c"}]
    assert jobs.jobs_of([]) == []


def test_pods_replace_uids_and_keep_a_single_user() -> None:
    pod = {"namespace": "ns", "pod": "p", "container": "c"}
    gpus: List[Dict[str, Any]] = [
        {"index": 0, "uuid": "GPU-a", "jobs": [{"job": POD, "kind": "kubernetes", "user": "u"},
                                               {"job": "5", "kind": "slurm", "user": "s"}]},
        {"index": 1, "uuid": "GPU-b", "jobs": [{"job": POD, "kind": "kubernetes", "user": "u"},
                                               {"job": "other", "kind": "kubernetes", "user": "v"}]},
        {"index": 2, "uuid": "GPU-c", "lost": True},
        {"index": 3, "uuid": "GPU-d"},
        {"index": 4, "uuid": "GPU-e", "jobs": [{"job": "1", "kind": "container"}]},
    ]
    jobs.add_pods(gpus, {"GPU-a": pod, "GPU-b": pod, "GPU-c": pod, "GPU-d": pod})
    named = {"job": "ns/p", "kind": "kubernetes", "container": "c"}
    assert gpus[0]["jobs"] == [{"job": "5", "kind": "slurm", "user": "s"}, dict(named, user="u")]
    assert gpus[1]["jobs"] == [dict(named, user="")]
    assert "jobs" not in gpus[2] and gpus[3]["jobs"] == [dict(named, user="")]
    assert gpus[4]["jobs"] == [{"job": "1", "kind": "container"}]
    before = [dict(g) for g in gpus]
    jobs.add_pods(gpus, None)
    assert gpus == before


def rec(user: str, job: str, kind: str = "slurm", claimed: bool = True, visible: Any = None) -> Dict[str, Any]:
    return {"user": user, "job": job, "kind": kind, "claimed": claimed, "exec_id": f"9.{user}",
            "cuda_visible_devices": visible}


STATIC = [{"index": 0, "uuid": "GPU-a"}, {"index": 1, "uuid": "GPU-b"}]


def test_records_add_their_job_once_on_their_gpus() -> None:
    gpus: List[Dict[str, Any]] = [{"index": 0}, {"index": 1, "jobs": [{"job": "5", "kind": "slurm", "user": "a"}]}]
    jobs.add_records(gpus, STATIC, [rec("a", "5", visible="1"), rec("a", "5", visible="0,1")])
    assert gpus[0]["jobs"] == [{"job": "5", "kind": "slurm", "user": "a"}]
    assert gpus[1]["jobs"] == [{"job": "5", "kind": "slurm", "user": "a"}]


def test_a_claim_another_user_holds_or_claims_is_shown_as_the_exec() -> None:
    gpus: List[Dict[str, Any]] = [{"index": 0, "jobs": [{"job": "5", "kind": "slurm", "user": "b"}]}, {"index": 1}]
    jobs.add_records(gpus, STATIC, [rec("a", "5", visible="0")])
    assert gpus[0]["jobs"][-1] == {"job": "9.a", "kind": "exec", "user": "a"}
    gpus = [{"index": 0}, {"index": 1}]
    jobs.add_records(gpus, STATIC, [rec("a", "6", visible="0"), rec("b", "6", visible="1")])
    assert gpus[0]["jobs"] == [{"job": "9.a", "kind": "exec", "user": "a"}]
    assert gpus[1]["jobs"] == [{"job": "9.b", "kind": "exec", "user": "b"}]
    # unclaimed (a cgroup said so): kept whoever else is there
    gpus = [{"index": 0, "jobs": [{"job": "5", "kind": "slurm", "user": "b"}]}, {"index": 1}]
    jobs.add_records(gpus, STATIC, [rec("a", "5", claimed=False, visible="0")])
    assert gpus[0]["jobs"] == [{"job": "5", "kind": "slurm", "user": "b"}]
    # the same user's claim is theirs
    gpus = [{"index": 0, "jobs": [{"job": "5", "kind": "slurm", "user": "a"}]}, {"index": 1}]
    jobs.add_records(gpus, STATIC, [rec("a", "5", visible=None)])
    assert gpus[1]["jobs"] == [{"job": "5", "kind": "slurm", "user": "a"}]


def test_a_lost_gpu_gets_no_record() -> None:
    gpus: List[Dict[str, Any]] = [{"index": 0, "lost": True}, {"index": 1}]
    jobs.add_records(gpus, STATIC, [rec("a", "5")])
    assert "jobs" not in gpus[0] and gpus[1]["jobs"] == [{"job": "5", "kind": "slurm", "user": "a"}]


def test_gpus_of_reads_cuda_visible_devices() -> None:
    assert jobs._gpus_of({"cuda_visible_devices": None}, STATIC) == {0, 1}
    assert jobs._gpus_of({"cuda_visible_devices": "1"}, STATIC) == {1}
    assert jobs._gpus_of({"cuda_visible_devices": "GPU-b,0"}, STATIC) == {0, 1}
    assert jobs._gpus_of({"cuda_visible_devices": ""}, STATIC) == set()
    by_bus = [{"index": 0, "uuid": "GPU-a", "pci_bus_id": "0000:81:00.0"},
              {"index": 1, "uuid": "GPU-b", "pci_bus_id": "0000:01:00.0"}]
    assert jobs._gpus_of({"cuda_visible_devices": "0"}, by_bus) == {1}  # CUDA's 0 is the lowest PCI bus id


def test_records_directory_absent_unreadable_or_untrusted(tmp_path: Path) -> None:
    r = jobs.Records(str(tmp_path / "none"))
    r.problem = "stale"
    assert r.read() == [] and r.problem is None
    d = tmp_path / "recs"
    d.mkdir()
    os.chmod(d, 0o777)  # others may write, not sticky
    r = jobs.Records(str(d))
    assert r.read() == [] and r.problem is not None and r.problem.startswith(f"{d} ")
    os.chmod(d, 0o1777)
    (d / "not-a-record").write_text("x")
    r = jobs.Records(str(d))
    assert r.read() == [] and r.problem is None


def test_a_record_counts_only_for_its_own_live_process(tmp_path: Path) -> None:
    pid = 4190000  # above any pid_max: no such process on the real /proc
    d = tmp_path / str(pid)
    d.mkdir()
    fields = ["S"] + ["0"] * 18 + ["12345"] + ["0"] * 10  # field 22 (starttime) after "pid (comm) "
    (d / "stat").write_text(f"{pid} (a b) " + " ".join(fields) + "\n")
    r = jobs.Records(str(tmp_path / "recs"), finder=jobs.JobFinder(str(tmp_path)))
    me = os.geteuid()
    assert r._alive_and_owned(pid, 12345, me) is True
    assert r._alive_and_owned(pid, 12346, me) is False  # another process of that pid
    assert r._alive_and_owned(pid, 12345, me + 1) is False  # somebody else's
    assert r._alive_and_owned(pid + 1, 12345, me) is False  # gone
