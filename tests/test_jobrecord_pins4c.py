"""Pin for mutation round 4's last jobrecord survivor (issue 21): writing the job record marks this process busy for
the exec start-up cache's recorder only while it writes; once `begin` returns (a record written, or none for want of
a records directory) what the full path reads next, and its exec, are recorded again."""
import os
from pathlib import Path

import pytest

from hosttune import jobrecord
from hosttune.execcache import recorder as recmod


@pytest.mark.parametrize("usable", [True, False], ids=["record-written", "no-records-directory"])
def test_what_exec_reads_after_its_job_record_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          usable: bool) -> None:
    run = tmp_path / "run" / "hosttune"
    if usable:
        Path(jobrecord.records_dir(str(run))).mkdir(parents=True, mode=0o755)
    rec = recmod.Recorder(["--", "true"], str(tmp_path / "entry"), b"d" * 32)
    monkeypatch.setattr(recmod.Recorder, "current", rec)
    record = jobrecord.begin(str(run), None, {})
    try:
        assert (record is not None) == usable
        assert not jobrecord.busy()
        prog = tmp_path / "prog"
        prog.write_text("")
        recmod._audit("open", (str(prog), "r", os.O_RDONLY))  # the program exec resolves next
        assert str(prog) in rec.paths and rec.spoiled is None
    finally:
        jobrecord.remove(record)
