"""Pins for hosttune.doctor.fleet (issue 21, practice round HDOC): slurm_sync's whole answer and the scontrol
commands it runs, per node state and verdict (a HostIO whose scontrol answers from a table, in-process)."""

import subprocess
from pathlib import Path
from typing import List, Optional, Sequence

import pytest

from hosttune.detect.hostio import HostIO
from hosttune.doctor.fleet import Verdict, slurm_sync

SCONTROL = "/usr/bin/scontrol"
BAD = Verdict(False, "hosttune: gpu.ecc: 2 uncorrected errors on GPU0")
GOOD = Verdict(True, "hosttune: ok (31 pass, 2 skip)")


class Slurm(HostIO):
    def __init__(self, show: str, update_rc: int = 0) -> None:
        super().__init__(Path("/"))
        self.show, self.update_rc = show, update_rc
        self.ran: List[List[str]] = []

    def which(self, name: str, extra_dirs: Sequence[str] = ()) -> Optional[str]:
        return SCONTROL if name == "scontrol" else None

    def run(self, argv: Sequence[str], timeout: float = 10.0, env: object = None,
            note: bool = True) -> "Optional[subprocess.CompletedProcess[str]]":
        self.ran.append(list(argv))
        if argv[1] == "-o":
            return subprocess.CompletedProcess(list(argv), 0, self.show, "")
        return subprocess.CompletedProcess(list(argv), self.update_rc, "", "denied\n" if self.update_rc else "")


def show(state: str, reason: str = "") -> str:
    tail = f" Reason={reason} [root@2026-12-01T10:00:00]" if reason else ""
    return f"NodeName=n1 Arch=x86_64 CoresPerSocket=8 State={state} ThreadsPerCore=2{tail}\n"


DRAIN = ["update", "nodename=n1", "state=drain", f"reason={BAD.line}"]
RESUME = ["update", "nodename=n1", "state=resume"]


@pytest.mark.parametrize("verdict,text,want,update", [
    (BAD, show("IDLE"), ("drained", "drained n1"), DRAIN),
    (BAD, show("IDLE+DRAIN", BAD.line), ("kept", "n1 is already drained with this reason"), None),
    (BAD, show("MIXED+DRAIN", "hosttune: cpu.governor: powersave"), ("drained", "drained n1"), DRAIN),
    (BAD, show("IDLE+DRAIN", "bad fan"), ("kept", "n1 is already IDLE+DRAIN by someone else (bad fan): left alone"),
     None),
    (BAD, show("DOWN"), ("kept", "n1 is already DOWN by someone else (no reason): left alone"), None),
    (GOOD, show("IDLE+DRAIN", "hosttune: gpu.ecc: old"), ("resumed", "resumed n1"), RESUME),
    (GOOD, show("IDLE+DRAIN", "admin: rma"), ("none", ""), None),
    (GOOD, show("MIXED"), ("none", ""), None),
])
def test_slurm_sync(verdict: Verdict, text: str, want: object, update: Optional[List[str]]) -> None:
    io = Slurm(text)
    assert slurm_sync(verdict, "n1", io) == want
    assert io.ran == [[SCONTROL, "-o", "show", "node", "n1"]] + ([[SCONTROL, *update]] if update else [])


def test_slurm_sync_update_refused() -> None:
    io = Slurm(show("IDLE"), update_rc=1)
    assert slurm_sync(BAD, "n1", io) == ("error", "scontrol update nodename=n1 state=drain: denied")
