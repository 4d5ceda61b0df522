"""Pin for mutation round 4 (issue 21) in hosttune/tune/tuned.py: tuned-adm is given the time a daemon applying a
whole profile needs (120 s), so one that takes longer than a quick command's timeout is not killed as hung.

Integration: the fake tuned-adm has to outlast the shorter timeout, so the test holds a worker ~13 s (no CPU)."""

import os
import shutil
from pathlib import Path

import pytest

from hosttune.detect.hostio import HostIO
from hosttune.errors import UserError
from hosttune.tune import tuned


@pytest.mark.integration
def test_a_tuned_adm_slower_than_a_quick_command_is_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(mode=0o755)
    done = tmp_path / "done"
    sleep = shutil.which("sleep") or "/bin/sleep"
    adm = bin_dir / "tuned-adm"
    adm.write_text(f'#!/bin/sh\n{sleep} 13\necho "$@" > "{done}"\n')
    adm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    io = HostIO(Path("/"))
    assert io.which("tuned-adm") == str(adm)
    try:
        tuned.adm(io, ["off"])
    except UserError as exc:  # "tuned-adm off: timed out after 12 s" with a quick command's timeout
        pytest.fail(str(exc))
    assert done.read_text() == "off\n"
