"""Pins for hosttune/sigexec.py in-process: caught signals go back to their default action, ignored ones stay
ignored, none is left blocked, and nothing is touched when no handler is installed (issue 21)."""

import signal
from typing import Iterator

import pytest

from hosttune import sigexec

SIGS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


@pytest.fixture
def saved() -> Iterator[None]:
    old = {s: signal.getsignal(s) for s in SIGS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _handler(signum: int, frame: object) -> None:
    raise AssertionError("no signal was sent")


def test_every_caught_signal_gets_its_default_and_none_stays_blocked(saved: None) -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGS)
    for s in SIGS:
        signal.signal(s, _handler)
    sigexec.default_handlers_for_exec()
    assert [signal.getsignal(s) for s in SIGS] == [signal.SIG_DFL] * 4
    assert not set(SIGS) & signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_ignored_signals_stay_ignored(saved: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup's choice crosses exec
    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sigexec.default_handlers_for_exec()
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_signal_blocked_by_the_caller_is_not_unblocked_when_nothing_is_caught(saved: None) -> None:
    for s in SIGS:
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGQUIT])
    sigexec.default_handlers_for_exec()
    assert signal.SIGQUIT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_the_signals_are_the_four_that_stop_a_job() -> None:
    assert set(sigexec._SIGNALS) == set(SIGS)
