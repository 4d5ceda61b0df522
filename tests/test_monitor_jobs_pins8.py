"""Pins (issue 21, round 8 practice) for hosttune/monitor/jobs.py. add_records, whole GPU entries: a job is listed
once per GPU by its (kind, job) pair; two ranks of one job add one entry; the same id under another kind (a container
named "7" beside Slurm job 7) is another job and gets its own entry. Records.read, whole records in the order of
their names (the order `hosttune exec`'s records are listed in, on every sample)."""

import os
import pwd
from pathlib import Path
from typing import Any, Dict, List

from hosttune import jobrecord
from hosttune.monitor import jobs


class NoJobFinder(jobs.JobFinder):
    """The host's /proc, with no scheduler or container job found for any process (whatever runs this test)."""

    def process(self, pid: int) -> Dict[str, Any]:
        return {"pid": pid}


def test_a_job_is_listed_once_per_gpu_by_kind_and_id() -> None:
    static = [{"index": 0, "uuid": "GPU-0"}, {"index": 1, "uuid": "GPU-1"}]
    recs = [{"kind": "slurm", "job": "7", "user": "bob", "claimed": True, "exec_id": "11.1",
             "cuda_visible_devices": "0,1"},
            {"kind": "slurm", "job": "7", "user": "bob", "claimed": True, "exec_id": "12.1",
             "cuda_visible_devices": "0,1"},
            {"kind": "container", "job": "7", "user": "carol", "claimed": False, "exec_id": "13.1",
             "cuda_visible_devices": "1"}]
    gpus: List[Dict[str, Any]] = [{"index": 0, "jobs": [{"job": "7", "kind": "slurm", "user": "bob"}]}, {"index": 1}]
    jobs.add_records(gpus, static, recs)
    assert gpus == [{"index": 0, "jobs": [{"job": "7", "kind": "slurm", "user": "bob"}]},
                    {"index": 1, "jobs": [{"job": "7", "kind": "slurm", "user": "bob"},
                                          {"job": "7", "kind": "container", "user": "carol"}]}]


def test_records_are_read_whole_in_the_order_of_their_names(tmp_path: Path) -> None:
    """Three records of this process (a Slurm claim on GPUs 0,1, a plain exec on GPU 1, one on GPU 2): read() gives
    each whole, in the sorted order of the record files' names."""
    run = str(tmp_path / "run-hosttune")
    d = Path(jobrecord.records_dir(run))
    d.mkdir(mode=0o755)
    made = {}
    for cvd, env in (("0,1", {"SLURM_JOB_ID": "4711"}), ("1", {}), ("2", {})):
        path = jobrecord.begin(run, cvd, env)
        assert path is not None
        made[os.path.basename(path)] = cvd
    pid = os.getpid()
    ident = f"{pid}.{jobrecord.start_time(pid)}"
    user = pwd.getpwuid(os.geteuid()).pw_name

    def whole(cvd: str) -> Dict[str, Any]:
        claim = "4711" if cvd == "0,1" else None
        return {"slurm_job": claim, "cuda_visible_devices": cvd, "device_order": None, "pid": pid, "user": user,
                "kind": "slurm" if claim else "exec", "job": claim or ident, "claimed": claim is not None,
                "exec_id": ident}

    got = jobs.Records(str(d), NoJobFinder()).read()
    assert got == [whole(made[name]) for name in sorted(os.listdir(d))]
    assert sorted(r["cuda_visible_devices"] for r in got) == ["0,1", "1", "2"]


def test_the_records_problem_is_the_last_reads(tmp_path: Path) -> None:
    """A records directory others may write without the sticky bit is not read (the problem says why); once it is
    gone there is no problem (no `hosttune exec` ran here), and a sound one is read with no problem."""
    d = Path(jobrecord.records_dir(str(tmp_path / "run-hosttune")))
    d.mkdir(mode=0o755)
    os.chmod(d, 0o777)
    records = jobs.Records(str(d), NoJobFinder())
    assert records.read() == [] and records.problem == f"{d} is writable by others without the sticky bit"
    d.rmdir()
    assert records.read() == [] and records.problem is None
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    assert jobrecord.begin(str(tmp_path / "run-hosttune"), "0", {}) is not None
    assert [r["cuda_visible_devices"] for r in records.read()] == ["0"] and records.problem is None
