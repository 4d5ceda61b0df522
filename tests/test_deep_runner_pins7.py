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


def test_parse_events_keeps_only_records_with_an_event_and_a_what() -> None:
    text = "\n".join([
        "warning: a library talks on stdout",
        '  {"event": "start", "what": "info"}  ',
        '{"event": "result", "what": "info", "n": 1}',
        '{"event": "result"}',
        '{"event": "result", "what": 3}',
        '{"event": 3, "what": "x"}',
        '{"what": "gpu"}',
        "[1, 2]",
        '{"event": "error", "what": "gpu 0", "error": "E"',
        '["event"]',
        '{"event": "error", "what": "gpu 0", "error": "E"}',
    ])
    assert runner.parse_events(text) == (
        {"event": "start", "what": "info"},
        {"event": "result", "what": "info", "n": 1},
        {"event": "error", "what": "gpu 0", "error": "E"},
    )


def test_hung_on_is_the_last_open_measurement() -> None:
    ev = [{"event": "start", "what": "a"}, {"event": "start", "what": "b"}, {"event": "result", "what": "b"},
          {"event": "start", "what": "c"}, {"event": "error", "what": "c"}, {"event": "result", "what": "zz"}]
    assert runner.hung_on(ev) == "a"
    assert runner.hung_on(ev[:2]) == "b" and runner.hung_on(ev[:4]) == "c" and runner.hung_on([]) is None
    assert runner.current(ev[:4]) == "c"


def test_job_result_reads_and_failure_lines() -> None:
    ev = ({"event": "result", "what": "gpu", "v": 1}, {"event": "result", "what": "gpu 1", "v": 2},
          {"event": "result", "what": "gpus", "v": 3}, {"event": "error", "what": "gpu 2", "error": "E"},
          {"event": "start", "what": "p2p"})
    job = runner.JobResult(name="gpu", events=ev, returncode=1, stderr_tail="x\n  Last line here  \n\n")
    assert [e["v"] for e in job.results("gpu")] == [1, 2] and job.result("gpus") == ev[2]
    assert job.errors("gpu") == [ev[3]] and job.result("p2p") is None and job.hung_on is None
    assert job.failure() == "exit status 1: Last line here"
    assert runner.JobResult(name="t", returncode=-9).failure() == "exit status -9"
    assert runner.JobResult(name="t", start_error="cannot run x").failure() == "cannot run x"
    cut = runner.JobResult(name="t", events=ev, timed_out=True, timeout_s=12.0, budget_cut=True)
    assert cut.hung_on == "p2p"
    assert cut.failure() == "stopped while measuring p2p: the time budget ran out (12 s were left)"
    late = runner.JobResult(name="t", timed_out=True, timeout_s=1.5)
    assert late.failure() == "timed out after 1.5 s (process tree killed)"


class Stream:
    def __init__(self) -> None:
        self.out: List[str] = []

    def write(self, text: str) -> None:
        self.out.append(text)

    def flush(self) -> None:
        self.out.append("<flush>")


def test_progress_draws_only_when_enabled() -> None:
    on, off = Stream(), Stream()
    p = runner.Progress(enabled=True, stream=on)  # type: ignore[arg-type]
    p.show("doctor --deep: gpu: p2p (3 s)\x1b]0;x\x07" + "y" * 200)
    p.clear()
    p.clear()
    shown = on.out[0]
    assert shown == "\r\033[K" + ("doctor --deep: gpu: p2p (3 s)\\x1b]0;x\\x07" + "y" * 200)[:160]
    assert on.out[1:] == ["<flush>", "\r\033[K", "<flush>"]
    q = runner.Progress(enabled=False, stream=off)  # type: ignore[arg-type]
    q.show("x")
    q.clear()
    assert off.out == []


_QUIET_CHILD = """
import os, sys, time
end = time.monotonic() + 600  # hang guard only
while not os.path.exists(sys.argv[1]) and time.monotonic() < end:
    time.sleep(0.01)
"""


class GoStream(Stream):
    """A terminal whose first progress line lets the child finish."""

    def __init__(self, go: Path) -> None:
        super().__init__()
        self.go = go

    def write(self, text: str) -> None:
        super().write(text)
        self.go.write_text("")


def test_tick_runs_before_the_first_start_line(tmp_path: Path) -> None:
    """tick(None, []) each round while nothing is measured yet (NVML sampling does not wait for a start line); the
    progress line says "starting" then."""
    go = tmp_path / "go"
    seen: List[Any] = []
    stream = GoStream(go)
    res = run_job("quiet", [sys.executable, "-c", _QUIET_CHILD, str(go)], env=dict(os.environ), timeout=100000.0,
                  tick=lambda now, events: seen.append((now, list(events))), tick_s=0.01,
                  progress=runner.Progress(enabled=True, stream=stream))  # type: ignore[arg-type]
    assert seen and set(map(repr, seen)) == {"(None, [])"}
    assert stream.out[0].startswith("\r\033[Kdoctor --deep: quiet: starting (")
    assert stream.out[-2:] == ["\r\033[K", "<flush>"]
    assert res.returncode == 0 and not res.timed_out and res.events == ()


def test_start_errors_name_the_program(tmp_path: Path) -> None:
    gone = str(tmp_path / "no-such-dir" / "probe")
    res = run_job("torch", [gone, "-I"], env=dict(os.environ), timeout=600.0)
    assert res == runner.JobResult(name="torch", start_error=f"cannot run {gone}: not an executable file")
    assert res.failure() == f"cannot run {gone}: not an executable file"
    text = tmp_path / "text"
    text.write_text("not a program\n")
    text.chmod(0o755)
    res = run_job("gpu", [str(text)], env=dict(os.environ), timeout=600.0)
    assert res == runner.JobResult(name="gpu", start_error=f"cannot run {text}: Exec format error")


def test_the_stderr_tail_is_the_end_of_a_long_stderr() -> None:
    child = ("import sys\nsys.stderr.write('w' * 5000 + '\\nTraceback ...\\nRuntimeError: the last words\\n')\n"
             "sys.exit(3)\n")
    res = run_job("torch", [sys.executable, "-c", child], env=dict(os.environ), timeout=600.0)
    assert res.returncode == 3 and not res.timed_out and len(res.stderr_tail) == runner.STDERR_TAIL
    assert res.stderr_tail.endswith("w\nTraceback ...\nRuntimeError: the last words\n")
    assert res.failure() == "exit status 3: RuntimeError: the last words"
