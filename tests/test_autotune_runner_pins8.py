"""Pins (issue 21, round 8 practice) for hosttune/autotune/runner.py: SIGTERM to autotune while a trial runs ends
autotune with exit status 143 after stopping the trial's job (and puts the previous handler back); off the main
thread the guard installs nothing; an empty environment given is the trial's whole environment; the metric lines
kept per trial are bounded; and `_judge`'s whole Trial for each way a trial ends."""

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, List

import pytest

from hosttune.autotune import metric, runner
from hosttune.autotune.search import Trial


class _Outer(Exception):
    """Raised by the test's own SIGTERM handler: the trial's guard was not in place."""


def _outer(signum: int, frame: Any) -> None:
    raise _Outer(signum)


# The job: writes its pid where the test reads it, sends SIGTERM to autotune (its parent), then waits to be stopped.
_TERM_PARENT = ("import os, signal, sys, time; p = sys.argv[sys.argv.index('--profile') + 1]; "
                "open(p + '.pid', 'w').write(str(os.getpid())); os.kill(os.getppid(), signal.SIGTERM); time.sleep(900)")


def test_sigterm_during_a_trial_exits_143_after_stopping_its_job(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "hosttune_argv", lambda: [sys.executable, "-c", _TERM_PARENT])
    prof = tmp_path / "cand.yaml"
    r = runner.ExecRunner(["true"], {"cand": prof}, metric.compile_metric(r"rate (\d+)"), window_s=900.0,
                          environ={"PATH": "/usr/bin:/bin"})
    old = signal.signal(signal.SIGTERM, _outer)
    try:
        with pytest.raises(SystemExit) as info:
            r.run("cand")
        assert info.value.code == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is _outer  # the handler before the trial is back
    finally:
        signal.signal(signal.SIGTERM, old)
    pid = int((tmp_path / "cand.yaml.pid").read_text())
    with pytest.raises(ProcessLookupError):  # stopped and reaped before autotune exits
        os.kill(pid, 0)


def test_off_the_main_thread_the_guard_installs_nothing() -> None:
    seen: List[Any] = []

    def body() -> None:
        try:
            with runner._term_stops_the_trial():
                seen.append(signal.getsignal(signal.SIGTERM))
        except ValueError as exc:  # signal.signal off the main thread
            seen.append(exc)

    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [before]


def test_in_the_main_thread_the_guard_turns_sigterm_into_exit_143() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with runner._term_stops_the_trial():
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler) and handler is not before
        with pytest.raises(SystemExit) as info:
            handler(signal.SIGTERM, None)  # type: ignore[operator]
        assert info.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_empty_environment_given_is_the_trials_whole_environment(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    code = "import os; print('rate 1'); print('env', sorted(k for k in os.environ if k != 'LC_CTYPE')); exit(1)"
    monkeypatch.setattr(runner, "hosttune_argv", lambda: [sys.executable, "-c", code])
    r = runner.ExecRunner(["true"], {"cand": tmp_path / "c.yaml"}, metric.compile_metric(r"rate (\d+)"),
                          window_s=900.0, environ={})
    assert r.environ == {}
    trial = r.run("cand")
    assert trial.why == "exit status 1; last line: env []"
    assert 0.0 < trial.seconds < r.window_s and not trial.cut  # its own length, not the window's (a hang guard)


def test_the_metric_lines_kept_per_trial_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (runner.MAX_KEPT, runner.TAIL, runner.MAX_LINE) == (100_000, 20, 4096)
    monkeypatch.setattr(runner, "MAX_KEPT", 5)  # the bound as the module reads it, small enough to reach here
    out = runner._Output(metric.compile_metric(r"rate (\d+)"), 0.0)
    for i in range(30):
        out.feed(b"rate %d\n" % i)
    assert [line for _, line in out.matched] == [f"rate {i}" for i in range(5)]
    assert out.tail == [f"rate {i}" for i in range(10, 30)]


def test_output_lines_are_cut_decoded_and_stripped() -> None:
    out = runner._Output(metric.compile_metric(r"rate (\d+)"), 0.0)
    out.feed(b"x" * 5000 + b"\n")
    out.feed(b"rate 7\r\n")
    out.feed(b"\xffrate 8\n")
    out.feed(b"  rate 9 \t\n")  # only the line's end goes: its own spaces stay
    assert out.tail == ["x" * runner.MAX_LINE, "rate 7", "\ufffdrate 8", "  rate 9 \t"]
    assert [line for _, line in out.matched] == ["rate 7", "\ufffdrate 8", "  rate 9 \t"]


def _out(*lines: str) -> "runner._Output":
    out = runner._Output(metric.compile_metric(r"rate (\d+)"), 0.0)
    for line in lines:
        if "rate" in line:
            out.matched.append((1.0, line))
        out.tail.append(line)
    return out


@pytest.mark.parametrize("lines,rc,stopped,want", [
    (("rate 1", "rate 5", "done"), 0, False, Trial("c", 5.0, 9.5)),
    (("rate 1", "rate 5"), -15, True, Trial("c", 5.0, 9.5, cut=True)),  # the window ended it: scored
    (("rate 1", "rate 5", "Traceback"), 1, False, Trial("c", None, 9.5, "exit status 1; last line: Traceback")),
    ((), 3, False, Trial("c", None, 9.5, "exit status 3; last line: (no output)")),
    (("rate 1", "still warm"), -15, True,
     Trial("c", None, 9.5, "printed 1 metric line(s), all in the warm-up (first 1 match(es), first 0 s) within the "
                           "12 s window; last line: still warm", cut=True)),
    (("nothing",), 0, False, Trial("c", None, 9.5, "printed no metric matching 'rate (\\\\d+)'; last line: nothing")),
    (("rate 1", "\x1b[31mred\x1b[0m"), 2, False,
     Trial("c", None, 9.5, "exit status 2; last line: \\x1b[31mred\\x1b[0m")),
], ids=["ended", "cut", "failed", "silent", "warm-only", "no-metric", "escape"])
def test_judge_whole_trial(lines: Any, rc: int, stopped: bool, want: Trial) -> None:
    out = _out(*lines)
    assert runner._judge("c", out.spec, out, rc, stopped, 9.5, 12.0) == want
