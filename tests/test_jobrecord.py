"""The job record's format (hosttune/jobrecord.py): names, content, the parse a reader applies, and the writer's
refusals, on plain values and this test's own directories."""

import json
import os
import stat
from pathlib import Path
from typing import Any, Dict

import pytest

from hosttune import jobrecord


def _blob(**over: Any) -> bytes:
    data: Dict[str, Any] = {"version": 1, "pid": 42, "start": 1000, "slurm_job": "4711",
                            "cuda_visible_devices": "0,GPU-8f3a", "device_order": "PCI_BUS_ID"}
    data.update(over)
    return json.dumps(data).encode()


def test_a_well_formed_record_parses_to_its_claims_only() -> None:
    got = jobrecord.parse(_blob(user="root", uid=0, extra=[1]), 42, 1000)
    assert got == {"slurm_job": "4711", "cuda_visible_devices": "0,GPU-8f3a", "device_order": "PCI_BUS_ID"}
    assert jobrecord.parse(_blob(slurm_job=None, cuda_visible_devices=None, device_order=None), 42, 1000) == {
        "slurm_job": None, "cuda_visible_devices": None, "device_order": None}


@pytest.mark.parametrize("blob", [
    _blob(pid=43),  # not the process its file name names
    _blob(start=999),
    _blob(pid=True),  # JSON true is no pid
    _blob(pid="42"),
    _blob(version=2),
    _blob(slurm_job="4711; rm -rf /"),
    _blob(slurm_job=4711),
    _blob(slurm_job="1" * 21),
    _blob(cuda_visible_devices="0\n1"),
    _blob(cuda_visible_devices="0" * 1025),
    _blob(device_order="ANY"),
    b"[1, 2]",
    b"\xff\xfe",
    b"{" * 100000,  # nesting past the parser's recursion limit
    b"not json",
])
def test_anything_else_is_no_record(blob: bytes) -> None:
    assert jobrecord.parse(blob, 42, 1000) is None


@pytest.mark.parametrize("name, want", [
    ("job-42-1000-0a1b2c3d.json", [42, 1000]),
    (".job-42-1000-0a1b2c3d.json.x1y2.tmp", None),  # atomic_write's temp file
    ("job-42-1000.json", None),
    ("job--1-1000-aa.json", None),
    ("job-42-1000-aa-bb.json", None),
    ("job-99999999999-1-aa.json", None),  # no pid is 11 digits
    ("other.json", None),
])
def test_record_names(name: str, want: Any) -> None:
    assert jobrecord.parse_name(name) == want
    if want:
        assert jobrecord.name(want[0], want[1], "0a1b2c3d") == name


def test_the_ranks_gpus_as_one_value() -> None:
    assert jobrecord.visible(["0", "1", "0,2"]) == "0,1,2"
    assert jobrecord.visible(["GPU-a", " GPU-b "]) == "GPU-a,GPU-b"
    assert jobrecord.visible(["", ""]) == ""  # every rank hides every GPU
    assert jobrecord.visible(["0", None]) is None  # a rank with it unset sees every GPU


def test_start_time_past_a_command_name_with_spaces_and_parentheses() -> None:
    fields = " ".join(str(n) for n in range(3, 53))  # fields 3..52; field 22 is 22
    assert jobrecord.start_time_of(f"7 (a) (b c)) {fields}".encode()) == 22
    assert jobrecord.start_time_of(b"7 (x) S 1") is None
    assert jobrecord.start_time(os.getpid()) == jobrecord.start_time_of(Path("/proc/self/stat").read_bytes())


def test_the_directory_is_beside_the_runtime_directory() -> None:
    assert jobrecord.records_dir("/run/hosttune") == "/run/hosttune-jobs"
    assert jobrecord.records_dir("/x/run-hosttune/") == "/x/hosttune-jobs"


def test_a_directory_others_can_write_without_the_sticky_bit_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "hosttune-jobs"
    d.mkdir()
    d.chmod(0o777)
    assert "without the sticky bit" in (jobrecord.dir_problem(str(d)) or "")
    d.chmod(0o1777)
    assert jobrecord.dir_problem(str(d)) is None
    link = tmp_path / "link"
    link.symlink_to(d)
    assert "not a directory" in (jobrecord.dir_problem(str(link)) or "")


def test_begin_writes_a_0644_record_and_remove_takes_it_away(tmp_path: Path) -> None:
    run = tmp_path / "run-hosttune"
    env = {"SLURM_JOB_ID": "77", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    path = jobrecord.begin(str(run), "1", env)
    assert path is not None and os.path.dirname(path) == jobrecord.records_dir(str(run))
    if os.geteuid() == 0:  # root made the directory: root's, sticky, world-writable
        st = os.stat(os.path.dirname(path))
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o1777)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    tag = jobrecord.parse_name(os.path.basename(path))
    assert tag == [os.getpid(), jobrecord.start_time(os.getpid())]
    assert jobrecord.parse(Path(path).read_bytes(), *tag) == {
        "slurm_job": "77", "cuda_visible_devices": "1", "device_order": "PCI_BUS_ID"}
    jobrecord.remove(path)
    assert os.listdir(os.path.dirname(path)) == []


def test_begin_writes_nothing_where_the_directory_is_not_usable(tmp_path: Path) -> None:
    run = tmp_path / "run-hosttune"
    d = Path(jobrecord.records_dir(str(run)))
    d.mkdir(mode=0o777)
    d.chmod(0o777)  # no sticky bit: anybody could remove or replace a record there
    assert jobrecord.begin(str(run), None, {}) is None
    assert os.listdir(d) == []


def test_begin_sweeps_this_users_records_of_processes_that_are_gone(tmp_path: Path) -> None:
    run = tmp_path / "run-hosttune"
    first = jobrecord.begin(str(run), None, {})
    assert first is not None
    d = os.path.dirname(first)
    gone = os.path.join(d, jobrecord.name(os.getpid(), 1, "00000000"))  # this pid, another start time: not us
    Path(gone).write_text("{}")
    second = jobrecord.begin(str(run), None, {})
    assert sorted(os.listdir(d)) == sorted([os.path.basename(first), os.path.basename(str(second))])
