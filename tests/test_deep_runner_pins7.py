"""Pins for hosttune.doctor.deep.runner (issue 21, practice round HDOC): each test fails with one planted change."""

import os
import sys
import types
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from hosttune.doctor.deep import runner
from hosttune.doctor.deep.runner import run_job

# A child that reports measurement "a", waits for the parent's go (file), then reports "b" and waits again.
# Hang guard only: it gives up after 600 s.
_CHILD = """
import json, os, sys, time
def say(event, what):
    print(json.dumps({"event": event, "what": what}), flush=True)
def wait(path):
    end = time.monotonic() + 600
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.01)
say("start", "a")
wait(sys.argv[1])
say("result", "a")
say("start", "b")
wait(sys.argv[2])
say("result", "b")
"""


class Clock:
    """runner's view of time.monotonic: advanced only by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_measurement_limit_counts_from_its_own_start_line(tmp_path: Path, monkeypatch: Any) -> None:
    """Measurement "a" takes 500 (fake) seconds, within its own limit; "b" then starts with a 100 s limit and ends
    at once: nothing timed out (the limit runs from b's start line, not from the job's start)."""
    clock = Clock()
    monkeypatch.setattr(runner, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    go_a, go_b = tmp_path / "go_a", tmp_path / "go_b"
    seen: List[Optional[str]] = []

    def tick(now: Optional[str], events: Sequence[Dict[str, Any]]) -> None:
        seen.append(now)
        if now == "a" and not go_a.exists():
            clock.now += 500.0
            go_a.write_text("")
        elif now == "b":
            go_b.write_text("")

    limits = {"a": 1000.0, "b": 100.0}
    res = run_job("ab", [sys.executable, "-c", _CHILD, str(go_a), str(go_b)], env=dict(os.environ), timeout=100000.0,
                  tick=tick, tick_s=0.02, measure_limit=lambda what: limits[what])
    assert not res.timed_out, (res, seen)
    assert res.returncode == 0 and res.timeout_s == 100000.0
    assert [(e["event"], e["what"]) for e in res.events] == [("start", "a"), ("result", "a"), ("start", "b"),
                                                              ("result", "b")]
    assert res.elapsed_s == 500.0
    assert "b" in seen
