"""Scratch run directories for trials of the bundled engine, so no trial resumes another's checkpoints.

The engine writes its metrics, checkpoints and traces to `--run-dir` (default `runs/<preset>-<time>` under the
working directory; with `--resume`, or an elastic restart, it continues from the newest checkpoint there). Trials of
the same command would share that directory: a later trial would resume an earlier one's checkpoint and measure a
different amount of work. So each trial of a command that starts the engine (`hosttune train ...` or the torchrun
line it runs, `python -m hosttune.engine ...`, or a launcher running `-m hosttune.engine`) gets `--run-dir` appended,
naming a fresh directory of its own under one private (0700) directory of the session (under TMPDIR). The engine's
option parser
takes the last `--run-dir`, and that option wins over `--set run_dir=` and a config file's `run_dir:`.

A trial's directory is removed after the trial, unless the trial was dropped (failed, hung, printed no metric):
then it is kept, for its logs, and the trial's reason names it. `close` removes the session's directory only when
nothing is kept in it. Only these directories are ever removed: whatever the job writes elsewhere stays.
"""

import os
import shutil
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

ENGINE_MODULE = "hosttune.engine"
RUN_DIR = "--run-dir"
RANK_SCRIPT = os.path.join("hosttune", "commands", "train_rank.py")  # `hosttune train`'s rank: the engine's args


def _is_hosttune(word: str) -> bool:
    return os.path.basename(word) == "hosttune"


def engine_command(command: Sequence[str]) -> bool:
    """Whether `command` starts the bundled engine in a form that takes `--run-dir` at its end."""
    argv = list(command)
    if len(argv) >= 2 and _is_hosttune(argv[0]) and argv[1] == "train":
        return True
    if any(word.endswith(os.sep + RANK_SCRIPT) for word in argv):  # the line `hosttune train` runs under torchrun
        return True
    for i, word in enumerate(argv[:-1]):
        nxt = argv[i + 1]
        if word == "-m" and nxt == ENGINE_MODULE:
            return True
        if word == "-m" and nxt in ("hosttune", "hosttune.cli") and argv[i + 2:i + 3] == ["train"]:
            return True
    return False


def with_run_dir(command: Sequence[str], path: Path) -> List[str]:
    """The command with the engine's run directory set to `path` (appended: the last --run-dir wins)."""
    return [*command, RUN_DIR, str(path)]


class RunDirs:
    """`new(name)` before a trial, `done(path, keep)` after it, `close()` at the end of the session."""

    def __init__(self, base: Optional[str] = None):
        self.root = Path(tempfile.mkdtemp(prefix="hosttune-autotune-runs-", dir=base))  # 0700, ours
        self.count = 0
        self.kept: List[Path] = []

    def new(self, name: str) -> Path:
        self.count += 1
        path = self.root / f"{self.count:03d}-{name}"
        path.mkdir(mode=0o700)  # ours and fresh: the engine's mkdir(exist_ok=True) takes it as it is
        return path

    def done(self, path: Path, keep: bool) -> None:
        if keep:
            self.kept.append(path)
        else:
            shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        """Remove the session's directory when no dropped trial's directory is kept in it."""
        try:
            self.root.rmdir()
        except OSError:
            pass
