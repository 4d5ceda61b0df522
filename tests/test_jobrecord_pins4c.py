"""Pin for mutation round 4's last jobrecord survivor (issue 21) and its neighbour in watch(): writing the job record
(begin) or forking its watcher (watch) marks this process busy for the exec start-up cache's recorder only while it
does so; once either returns (a record written, or none for want of a records directory) what the full path reads
next, and its exec, are recorded again."""
import os
from pathlib import Path

import pytest
from conftest import checkout_env

from hosttune import jobrecord
from hosttune.execcache import recorder as recmod


@pytest.mark.parametrize("usable", [True, False], ids=["record-written", "no-records-directory"])
def test_what_exec_reads_after_its_job_record_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          usable: bool) -> None:
    run = tmp_path / "run" / "hosttune"
    if usable:
        Path(jobrecord.records_dir(str(run))).mkdir(parents=True, mode=0o755)
    prog = tmp_path / "prog"
    prog.write_text("")  # before the recorder is current: an audit hook an earlier test installed here would see it
    rec = recmod.Recorder(["--", "true"], str(tmp_path / "entry"), b"d" * 32)
    monkeypatch.setattr(recmod.Recorder, "current", rec)
    record = jobrecord.begin(str(run), None, {})
    try:
        assert (record is not None) == usable
        assert not jobrecord.busy()
        recmod._audit("open", (str(prog), "r", os.O_RDONLY))  # the program exec resolves next
        assert str(prog) in rec.paths and rec.spoiled is None
    finally:
        jobrecord.remove(record)


def test_after_forking_its_watcher_exec_is_no_longer_busy(tmp_path: Path) -> None:
    """watch() (a real fork of the watcher, in a child python that then ends as the exec'd job would) leaves the
    module idle, so the recorder sees the exec that follows; the watcher removes the record once the child ends."""
    import subprocess
    import sys
    import time

    run = tmp_path / "run" / "hosttune"
    records = Path(jobrecord.records_dir(str(run)))
    records.mkdir(parents=True, mode=0o755)
    code = ("import sys\nfrom hosttune import jobrecord\n"
            "p = jobrecord.begin(sys.argv[1], None, {})\njobrecord.watch(p)\nprint(p, jobrecord.busy())\n")
    out = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, check=True,
                         timeout=120, env=checkout_env()).stdout.split()
    assert len(out) == 2 and Path(out[0]).parent == records and out[1] == "False", out
    deadline = time.monotonic() + 120  # the watcher's exit: no process of this test outlives it
    while Path(out[0]).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(out[0]).exists()
