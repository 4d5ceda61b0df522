"""Pins (issue 21, second mutation round) for hosttune/monitor/jobs.py: a Slurm job in a later cgroup v1 line wins
over a container named by an earlier line of the same process, and a /proc/PID/cgroup that is a symbolic link is
not followed (the process keeps only its pid and user)."""

import os
from pathlib import Path

from hosttune.monitor import jobs

CID = "4a3b" * 16


def test_slurm_wins_over_a_container_whichever_line_comes_first() -> None:
    text = f"13:cpuset:/docker/{CID}\n12:pids:/slurm/uid_0/job_77/step_0/task_0\n0::/init.scope\n"
    assert jobs.from_proc_cgroup(text) == {"kind": "slurm", "job": "77"}
    pod = f"5:memory:/docker/{CID}\n4:pids:/kubepods/besteffort/pod5f1c2a9e-7b3d-4c1e-9a8f-0123456789ab/{CID}\n"
    assert jobs.from_proc_cgroup(pod)["kind"] == "kubernetes"  # type: ignore[index]


def test_a_linked_cgroup_file_is_not_followed(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    planted = tmp_path / "planted"
    planted.write_text("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n")
    (proc / "101").mkdir(parents=True)
    (proc / "101" / "cgroup").symlink_to(planted)
    (proc / "102").mkdir()
    (proc / "102" / "cgroup").write_text(planted.read_text())
    finder = jobs.JobFinder(str(proc))
    linked = finder.process(101)
    assert linked["pid"] == 101 and "job" not in linked and "user" in linked
    assert finder.process(102)["job"] == "4242"  # the same text in a regular file is read
    assert os.path.islink(proc / "101" / "cgroup")
