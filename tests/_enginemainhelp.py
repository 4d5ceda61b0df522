"""The engine's CLI (`python -m hosttune.engine ARGS`) run in this process, answering as the subprocess helper
(_enginehelp.engine) does: its exit status and its stderr. For tests whose subject is what the engine does with
its input (a damaged or planted checkpoint, a resume), not the process boundary: a child's interpreter and torch
import cost seconds of CPU on these 2-core machines (issue 21). Each CLI error path keeps at least one test that
runs the real process (one line, exit 2, no traceback as the user sees them).

What a process would print and pytest would otherwise swallow is put back: the warnings raised while the engine
ran, under Python's default filters, formatted as the interpreter prints them (after the engine's own lines), and
log records of WARNING and above that reach the root logger (logging's last resort in a process without handlers),
so a stray warning still breaks a one-line check. torch's process-wide switches and the random generators the engine
sets are restored afterwards: the next test in this worker starts as it would have."""

import contextlib
import io
import logging
import os
import random
import subprocess
import warnings
from pathlib import Path
from typing import Iterator, List

import numpy as np
import torch

from hosttune.engine.__main__ import main

# Python's filters when no -W option is given (the warnings module's documentation, "Default Warning Filter"),
# applied in this order: the first match wins.
_DEFAULT_FILTERS = (("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                    ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                    ("ignore", ResourceWarning, ""))


@contextlib.contextmanager
def torch_state_kept() -> Iterator[None]:
    """The switches runtime.determinism_switches sets for the whole process (and CUBLAS_WORKSPACE_CONFIG, which
    deterministic mode puts in the environment), and the generators seed_all seeds, as they were before. One
    intra-op thread meanwhile, as the subprocess helpers give a rank (OMP_NUM_THREADS=1): pytest-xdist runs one
    worker per core already."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    cudnn = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    rng = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    cublas = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = cudnn
        random.setstate(rng[0])
        np.random.set_state(rng[1])
        torch.set_rng_state(rng[2])
        torch.set_num_threads(threads)
        if cublas is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = cublas


@contextlib.contextmanager
def _warnings_as_a_process_shows_them() -> Iterator[List[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.resetwarnings()
        for action, category, module in reversed(_DEFAULT_FILTERS):  # each filterwarnings call goes first
            warnings.filterwarnings(action, category=category, module=module)
        yield seen


def engine_here(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m hosttune.engine ARGS` started in `cwd`, run by this process: returncode and stderr (stdout is
    left to pytest's capture: no test reads it)."""
    err = io.StringIO()
    last_resort = logging.StreamHandler(err)
    last_resort.setLevel(logging.WARNING)
    old = os.getcwd()
    os.chdir(cwd)
    logging.getLogger().addHandler(last_resort)
    try:
        with torch_state_kept(), _warnings_as_a_process_shows_them() as seen, contextlib.redirect_stderr(err):
            rc = main(list(args))
    finally:
        logging.getLogger().removeHandler(last_resort)
        os.chdir(old)
    shown = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line) for w in seen)
    return subprocess.CompletedProcess(["python", "-m", "hosttune.engine", *args], rc, "", err.getvalue() + shown)
