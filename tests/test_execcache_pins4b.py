"""Pin for mutation round 4's execcache survivor (issue 21): an error inside the recorder's audit hook spoils the
recording, so a record that missed a read is never written (and never replayed)."""
import os
from pathlib import Path

import pytest

from hosttune.execcache import recorder as recmod


def test_an_error_inside_the_audit_hook_spoils_the_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    os.rmdir(gone)  # the job's working directory was removed: a relative open's path cannot be resolved (getcwd fails)
    rec = recmod.Recorder(["--", "true"], str(tmp_path / "entry"), b"d" * 32)
    monkeypatch.setattr(recmod.Recorder, "current", rec)
    recmod._audit("open", ("profile.yaml", "r", os.O_RDONLY))  # a read the record would miss
    assert rec.paths == set() and rec.spoiled == "recorder error"
