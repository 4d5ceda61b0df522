"""Pins for hosttune.doctor.deep.runner (issue 21, practice round HDOC8): a result line after 100 KiB of a library's
chatter on stdout is still read (the output is read back up to 4 MiB, and cut there); result() is the first match;
failure() keeps 300 characters of stderr's last line."""

import os
import sys

from hosttune.doctor.deep import runner
from hosttune.doctor.deep.runner import JobResult, run_job

_CHILD = ("import json, sys\nsys.stdout.write(('chatter ' * 15 + '\\n') * int(sys.argv[1]))\n"
          "print(json.dumps({'event': 'result', 'what': 'shm', 'bytes': 1.0}))\n")


def test_results_after_much_chatter_are_read_up_to_the_output_limit() -> None:
    """~1000 lines of 120 bytes (120 KiB) before the result: read; ~36000 lines (4.3 MiB): past the limit, cut."""
    res = run_job("shm", [sys.executable, "-c", _CHILD, "1000"], env=dict(os.environ), timeout=600.0)
    assert res.returncode == 0 and res.events == ({"event": "result", "what": "shm", "bytes": 1.0},)
    res = run_job("shm", [sys.executable, "-c", _CHILD, "36000"], env=dict(os.environ), timeout=600.0)
    assert res.returncode == 0 and res.events == ()
    assert runner.OUTPUT_LIMIT == 4 << 20


def test_result_is_the_first_match_and_failure_keeps_300_characters() -> None:
    job = JobResult(name="gpu", events=(
        {"event": "result", "what": "gpu_compute gpu1 bf16", "gpu": 1},
        {"event": "result", "what": "gpu_compute gpu0 bf16", "gpu": 0},
        {"event": "error", "what": "gpu_copies gpu0 pinned h2d", "error": "E"}), returncode=1,
        stderr_tail="first\n" + "x" * 400 + "\n\n")
    assert job.result("gpu_compute") == {"event": "result", "what": "gpu_compute gpu1 bf16", "gpu": 1}
    assert job.result("gpu_copies") is None
    assert job.failure() == "exit status 1: " + "x" * 300
