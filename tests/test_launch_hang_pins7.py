"""Pins for hosttune.launch.hang.parse_stacks (issue 21, session 9 practice rounds): one faulthandler text parsed whole
(every thread, every frame, in order): the signalled thread first, innermost frame first, lines that are no frame
ignored, and a frame line's trailing blanks (a dump that went through an editor or a terminal) not part of the
function's name, so where() names the function as the code spells it. And Watch.collect's NCCL flight recorder
dumps: every pipe with a reader poked once, its dump waited for and counted, the summary whole."""

import os
import time
from pathlib import Path
from typing import List

import pytest

from hosttune.launch import hang
from hosttune.launch.hang import Frame, parse_stacks, where

DUMP = (
    "Fatal Python error: Aborted\n"
    "\n"
    "Thread 0x00007f0000000002 (most recent call first):\n"
    '  File "/usr/lib/python3.11/threading.py", line 320 in wait  \n'
    '  File "/srv/job/loader.py", line 41 in worker\t\n'
    "\n"
    "Current thread 0x00007f0000000001 (most recent call first):\n"
    '  File "/srv/job/train.py", line 88 in step   \n'
    "  <no Python frame>\n"
    '  File "/srv/job/train.py", line 120 in main\n'
    '  File "/srv/job/train.py", line 130 in <module>\n'
)


def test_a_dump_parses_whole_signalled_thread_first_and_names_without_trailing_blanks() -> None:
    assert parse_stacks(DUMP) == [
        [Frame("/srv/job/train.py", 88, "step"), Frame("/srv/job/train.py", 120, "main"),
         Frame("/srv/job/train.py", 130, "<module>")],
        [Frame("/usr/lib/python3.11/threading.py", 320, "wait"), Frame("/srv/job/loader.py", 41, "worker")],
    ]
    assert where(parse_stacks(DUMP)) == Frame("/srv/job/train.py", 88, "step")
    assert where(parse_stacks(DUMP)[1:]) == Frame("/srv/job/loader.py", 41, "worker")  # past the stdlib's wait
    assert where(parse_stacks(DUMP)).where() == "step (train.py:88)"


# ---- Watch.collect and the NCCL flight recorder ---------------------------------------------------------------------
# A rank's ProcessGroupNCCL reads a FIFO (nccl-pipe-RANK) and, when written to, dumps its flight recorder
# (nccl-trace-rank-RANK) some time later. collect pokes every pipe that has a reader and waits for as many dumps. The
# "rank" here is the test's own reader of the FIFO; it dumps only while collect waits (hang's clock: its sleep), so a
# collect that did not wait would count no dump.


def test_collect_pokes_the_flight_recorder_and_waits_for_its_dump(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "hang-dir"
    d.mkdir(mode=0o700)
    os.mkfifo(d / "nccl-pipe-0", 0o600)
    os.mkfifo(d / "nccl-pipe-1", 0o600)  # no reader: that rank's process group is gone, it is not poked
    reader = os.open(d / "nccl-pipe-0", os.O_RDONLY | os.O_NONBLOCK)
    asked: List[bytes] = []

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            try:
                asked.append(os.read(reader, 64))
            except BlockingIOError:
                return
            (d / "nccl-trace-rank-0").write_bytes(b"the flight recorder's dump")

    monkeypatch.setattr(hang, "time", Clock)
    watch = hang.Watch(7.0, str(d))
    try:
        lines = watch.collect(f"PIN_HANG_MARKER={os.getpid()}-{tmp_path.name}")
    finally:
        os.close(reader)
        watch.finish()
    assert asked == [b"1\n"]
    assert lines == ["no output from the job for 7 s: every rank's Python stacks are in hang-dir/ (and 1 NCCL flight "
                     "recorder dumps)", "hang: no process of the job could give its stacks"]
    assert (d / "summary.txt").read_text() == (
        "no output from the job for 7 s (hosttune exec --hang-timeout)\n"
        "no process of the job could give its stacks\nstacks: none\nNCCL flight recorder dumps: 1\n")
    assert watch.hung
