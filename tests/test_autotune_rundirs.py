"""Trials of the bundled engine run in scratch run directories (hosttune/autotune/rundirs.py): one per trial, removed
after it unless it was dropped, so no trial resumes another's checkpoints; what the job writes elsewhere stays.

The job is synthetic: an executable named `hosttune` that, like `hosttune train ... --resume`, continues from a
checkpoint in its (last) `--run-dir` when there is one, and then reports half the speed (it has less work left):
trials that shared a run directory would score differently from each other for no reason of their plan."""

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hosttune.autotune import metric, rundirs, runner
from hosttune.autotune.candidates import DEFAULT

FAKE_TRAIN = """#!{python}
import os, sys
argv = sys.argv[1:]
assert argv[0] == "train", argv
run_dir = [argv[i + 1] for i, a in enumerate(argv) if a == "--run-dir"][-1]  # the engine's parser: the last wins
os.makedirs(os.path.join(run_dir, "checkpoints"), exist_ok=True)
ckpt = os.path.join(run_dir, "checkpoints", "step-10")
resumed = "--resume" in argv and os.path.exists(ckpt)
with open({seen!r}, "a") as f:
    f.write(run_dir + "\\t" + os.environ.get("HOSTTUNE_PROFILE", "") + "\\n")
with open(os.path.join({elsewhere!r}, "log-%d.txt" % os.getpid()), "w") as f:  # the job's own file, not a run dir's
    f.write("kept")
with open(ckpt, "w") as f:
    f.write("weights")
if os.environ.get("OMP_WAIT_POLICY") == "ACTIVE":
    sys.exit("crashed")
rate = 50.0 if resumed else 100.0
for i in range(3):
    print("step %d: %.1f samples/s" % (i, rate), flush=True)
"""


def test_engine_commands_are_recognised() -> None:
    assert rundirs.engine_command(["hosttune", "train", "--preset", "gpt-tiny"])
    assert rundirs.engine_command(["/usr/bin/hosttune", "train"])
    assert rundirs.engine_command([sys.executable, "-m", "hosttune.engine", "--preset", "x"])
    assert rundirs.engine_command(["torchrun", "--nproc_per_node=2", "-m", "hosttune.engine", "--preset", "x"])
    assert rundirs.engine_command(["python3", "-m", "hosttune", "train", "--preset", "x"])
    assert not rundirs.engine_command(["hosttune", "exec", "--", "python", "train.py"])
    assert not rundirs.engine_command(["python3", "train.py", "-m", "hosttune.engine"][:2])
    assert not rundirs.engine_command(["torchrun", "train.py"])
    assert rundirs.with_run_dir(["hosttune", "train"], Path("/x")) == ["hosttune", "train", "--run-dir", "/x"]


def _profiles(tmp_path: Path) -> Dict[str, Path]:
    """The default and a candidate whose trials fail (OMP_WAIT_POLICY=ACTIVE), as autotune writes them."""
    from hosttune import profile
    from hosttune.profile.settings import Profile

    base = Profile("default", "the default", "built-in")
    out = {DEFAULT: tmp_path / "default.yaml", "bad": tmp_path / "bad.yaml"}
    profile.write(base, out[DEFAULT], force=True)
    profile.write(dataclasses.replace(base, name="bad", env={"OMP_WAIT_POLICY": "ACTIVE"}), out["bad"], force=True)
    return out


@pytest.mark.integration
def test_engine_trials_run_in_their_own_scratch_run_dirs_and_never_resume_each_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: every trial ran the command as given, so with the user's `--run-dir R --resume` the second trial resumed
    the first one's checkpoint (x0.5 here) and every trial wrote into R. Now each trial has a fresh run directory."""
    seen, elsewhere, user_run, tmp = (tmp_path / "seen.txt", tmp_path / "job-output", tmp_path / "runs-mine",
                                      tmp_path / "tmp")
    for d in (elsewhere, user_run, tmp):
        d.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    job = tmp_path / "bin" / "hosttune"
    job.parent.mkdir()
    job.write_text(FAKE_TRAIN.format(python=sys.executable, seen=str(seen), elsewhere=str(elsewhere)))
    job.chmod(0o755)
    command = [str(job), "train", "--preset", "gpt-tiny", "--run-dir", str(user_run), "--resume"]
    assert rundirs.engine_command(command)
    profiles = _profiles(tmp_path)
    runs = rundirs.RunDirs()
    r = runner.ExecRunner(command, profiles, metric.compile_metric(metric.ENGINE_REGEX), 300.0, dict(os.environ),
                          runs=runs)
    trials = [r.run(DEFAULT), r.run(DEFAULT), r.run("bad")]
    assert [t.score for t in trials[:2]] == [100.0, 100.0], [t.why for t in trials]  # neither resumed the other
    used: List[List[str]] = [line.split("\t") for line in seen.read_text().splitlines()]
    dirs = [Path(d) for d, _ in used]
    assert len(set(dirs)) == 3 and all(d.parent == runs.root for d in dirs), dirs
    assert [p for _, p in used] == [str(profiles[DEFAULT])] * 2 + [str(profiles["bad"])]  # train's own exec too
    assert not dirs[0].exists() and not dirs[1].exists()  # scored trials: removed
    assert trials[2].score is None and dirs[2].is_dir() and f"its run directory is kept: {dirs[2]}" in trials[2].why
    assert list(user_run.iterdir()) == []  # the user's run directory was never written nor resumed from
    assert len(list(elsewhere.iterdir())) == 3  # what the job writes elsewhere is never deleted
    runs.close()
    assert runs.root.is_dir()  # a dropped trial's directory is kept, so is the session's
    runs.done(dirs[2], keep=False)
    runs.close()
    assert not runs.root.exists() and list(tmp.iterdir()) == []


def test_a_command_that_is_not_the_engine_runs_as_given(tmp_path: Path) -> None:
    """No run directories for other jobs: without them the trial runs the command as given."""
    calls: List[Any] = []

    class Probe(runner.ExecRunner):
        def _run(self, name: str, command: Any = None, environ: Any = None) -> Any:
            calls.append(command)
            return runner.Trial(name, 1.0, 1.0)

    p = Probe([sys.executable, "train.py"], {DEFAULT: tmp_path / "d.yaml"}, metric.compile_metric("x"), 5.0, {})
    assert p.run(DEFAULT).score == 1.0 and calls == [None]
