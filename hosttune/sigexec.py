"""Exec without losing a signal that arrives just before it.

A Python signal handler runs between bytecodes: a Ctrl-C or SIGTERM whose C-level handler has run but whose Python
handler has not when `os.execve` replaces the process is gone. The new program starts with the default action and
never sees it (seen: `hosttune exec -- sleep 5` ran its 5 s after a Ctrl-C that landed during the exec).
`default_handlers_for_exec()` closes that window: with the signals blocked, any caught one runs its Python handler
now (CPython checks pending signals before it changes a handler), then the default action is restored and the
signals unblocked, so one that arrives later acts on this process, or after the exec, on the program (which gets
the default action on exec anyway). Ignored signals stay ignored (nohup's choice crosses exec by design).

Cheap to import (only the signal module's C core): the start-up cache's exec path uses it.
"""

import _signal

_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)


def default_handlers_for_exec() -> None:
    """Call right before os.exec*: run any caught signal's Python handler now, then leave the default actions."""
    caught = [s for s in _SIGNALS if callable(_signal.getsignal(s))]
    if not caught:
        return
    _signal.pthread_sigmask(_signal.SIG_BLOCK, caught)
    try:
        for sig in caught:
            _signal.signal(sig, _signal.SIG_DFL)
    finally:
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, caught)
