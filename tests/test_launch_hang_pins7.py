"""Pins for hosttune.launch.hang.parse_stacks (issue 21, session 9 practice rounds): one faulthandler text parsed whole
(every thread, every frame, in order): the signalled thread first, innermost frame first, lines that are no frame
ignored, and a frame line's trailing blanks (a dump that went through an editor or a terminal) not part of the
function's name, so where() names the function as the code spells it."""

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
