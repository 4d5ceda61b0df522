"""Pin for mutation round 4 (issue 21) in hosttune/tune/tuned.py: tuned-adm is given the time a daemon applying a
whole profile needs (120 s), not a quick command's few seconds, so a slow apply is not killed as hung. What tuned.adm
hands HostIO.run is read back in-process (no fake daemon that would have to outlast a timeout)."""

import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hosttune.detect.hostio import HostIO
from hosttune.tune import tuned


def test_tuned_adm_is_given_a_whole_profiles_time(monkeypatch: pytest.MonkeyPatch) -> None:
    io = HostIO(Path("/"))
    calls: List[Dict[str, Any]] = []

    def run(argv: List[str], **kw: Any) -> subprocess.CompletedProcess:
        calls.append({"argv": argv, **kw})
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(io, "which", lambda name: "/usr/sbin/tuned-adm" if name == "tuned-adm" else None)
    monkeypatch.setattr(io, "run", run)
    tuned.adm(io, ["off"])
    assert [c["argv"] for c in calls] == [["/usr/sbin/tuned-adm", "off"]]
    assert calls[0]["timeout"] >= 60, calls[0]
