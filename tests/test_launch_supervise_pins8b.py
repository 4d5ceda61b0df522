"""Pin (issue 21, mutation round 8's survivor r8b-supervise-run-path-missing) on hosttune/launch/supervise.py: a
torchrun job whose training script does not exist is refused before anything starts, one line naming the script,
whether torchrun runs it as Python (the default) or through `--run-path` (runpy.run_path); `--no-python` looks its
program up on PATH instead. Started as `python3 -m torch.distributed.run` so no torchrun on PATH is needed."""

from pathlib import Path

import pytest

from hosttune.errors import UserError
from hosttune.launch import supervise
from hosttune.launch.job import prepare

RUN = ["python3", "-m", "torch.distributed.run", "--nproc_per_node=2"]


@pytest.mark.parametrize("how", [[], ["--run-path"], ["--run_path"]])
def test_a_missing_training_script_is_refused_before_the_job_starts(tmp_path: Path, how: list) -> None:
    script = tmp_path / "missing.py"
    launch = prepare([*RUN, *how, str(script)])
    assert launch.kind == "torchrun" and launch.torchrun is not None and launch.torchrun.script == str(script)
    with pytest.raises(UserError) as info:
        supervise.run(launch)
    assert str(info.value) == f"exec: {script}: no such file (torchrun's training script)"


def test_no_python_looks_its_program_up_on_path(tmp_path: Path) -> None:
    launch = prepare([*RUN, "--no-python", "hosttune-no-such-program"])
    with pytest.raises(UserError) as info:
        supervise.run(launch)
    assert "hosttune-no-such-program" in str(info.value) and "training script" not in str(info.value)
