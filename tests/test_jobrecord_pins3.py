"""Pins of mutation round 3 (issue 21) on hosttune/jobrecord.py and the monitor's reader of it (monitor/jobs.py
Records): the records directory's owner, a hard-linked record, a claimed Slurm id (bench/mutants.py r3-jobrecord-*,
r3-records-*). Records of this test's own process in a records directory under its own tmp_path."""

import os
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune import jobrecord
from hosttune.monitor import jobs

NOBODY = 65534


class NoJobFinder(jobs.JobFinder):
    """The host's /proc, with no scheduler or container job found for any process (whatever runs this test)."""

    def process(self, pid: int) -> Dict[str, Any]:
        return {"pid": pid}


def _records_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run-hosttune"
    d = Path(jobrecord.records_dir(str(run)))
    d.mkdir(mode=0o755)
    return d


@pytest.mark.skipif(os.geteuid() != 0, reason="handing the directory to another user needs root")
def test_a_records_directory_another_user_owns_is_neither_written_nor_read(tmp_path: Path) -> None:
    d = _records_dir(tmp_path)
    run = str(tmp_path / "run-hosttune")
    mine = jobrecord.begin(run, "0", {"SLURM_JOB_ID": "4711"})
    assert mine is not None and jobs.Records(str(d), NoJobFinder()).read() != []
    os.chown(d, NOBODY, NOBODY)  # theirs now: they could replace or forge any record in it
    assert "is owned by uid" in (jobrecord.dir_problem(str(d)) or "")
    assert jobrecord.begin(run, "1", {}) is None
    records = jobs.Records(str(d), NoJobFinder())
    assert records.read() == [] and "owned by uid" in (records.problem or "")


def test_a_claimed_slurm_id_is_read_as_a_claim_and_the_exec_id_names_the_process(tmp_path: Path) -> None:
    d = _records_dir(tmp_path)
    path = jobrecord.begin(str(tmp_path / "run-hosttune"), "0,1", {"SLURM_JOB_ID": "4711"})
    assert path is not None
    (rec,) = jobs.Records(str(d), NoJobFinder()).read()
    start = jobrecord.start_time(os.getpid())
    # $SLURM_JOB_ID is any user's to set: without the process's own cgroup saying so it stays a claim
    assert (rec["kind"], rec["job"], rec["claimed"]) == ("slurm", "4711", True)
    assert rec["exec_id"] == f"{os.getpid()}.{start}" and rec["cuda_visible_devices"] == "0,1"
    plain = jobrecord.begin(str(tmp_path / "run-hosttune"), None, {})  # no claim: the exec names the job
    assert plain is not None
    got = {r["job"]: r for r in jobs.Records(str(d), NoJobFinder()).read()}
    assert (got[f"{os.getpid()}.{start}"]["kind"], got[f"{os.getpid()}.{start}"]["claimed"]) == ("exec", False)


def test_a_hard_linked_record_is_read_under_neither_name(tmp_path: Path) -> None:
    d = _records_dir(tmp_path)
    path = jobrecord.begin(str(tmp_path / "run-hosttune"), "0", {"SLURM_JOB_ID": "4711"})
    assert path is not None
    pid, start = jobrecord.parse_name(os.path.basename(path)) or [0, 0]
    # another name for the same inode (a user's hard link to a record: its content under a name and owner of
    # their choosing, or one job counted twice)
    os.link(path, d / jobrecord.name(pid, start, "0badf00d"))
    assert jobs.Records(str(d), NoJobFinder()).read() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="handing the parent directory to another user needs root")
def test_a_records_directory_under_a_directory_another_user_owns_is_neither_written_nor_read(tmp_path: Path) -> None:
    parent = tmp_path / "run"
    parent.mkdir(mode=0o755)
    run = str(parent / "hosttune")
    d = Path(jobrecord.records_dir(run))
    d.mkdir(mode=0o755)  # root's own, not writable by others: only its parent is theirs
    assert jobrecord.begin(run, "0", {}) is not None and jobs.Records(str(d), NoJobFinder()).read() != []
    os.chown(parent, NOBODY, NOBODY)  # they can rename the directory away and put their own in its place
    assert jobrecord.dir_problem(str(d)) is not None and jobrecord.begin(run, "1", {}) is None
    records = jobs.Records(str(d), NoJobFinder())
    assert records.read() == [] and records.problem is not None
