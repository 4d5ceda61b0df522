"""Pin (issue 21, mutation round 8's survivor r8b-engine-profile-steps-key) on hosttune/engine/__main__.py:
`--profile-steps` reaches the config as profile_steps, with --run-dir and --resume, and a run gets it. In-process:
the run itself is replaced (hosttune.engine.train.run) by one that records the config it was given."""

from typing import Any, List

import pytest

torch = pytest.importorskip("torch")

from hosttune.engine import train  # noqa: E402
from hosttune.engine.__main__ import _overrides, main, parser  # noqa: E402


def test_the_options_become_the_configs_settings_by_their_names() -> None:
    args = parser().parse_args(["--preset", "gpt-tiny", "--profile-steps", "1,1,2", "--run-dir", "runs/a", "--resume"])
    assert _overrides(args) == {"run_dir": "runs/a", "resume": True, "profile_steps": "1,1,2"}
    assert _overrides(parser().parse_args(["--preset", "gpt-tiny"])) == {}


def test_a_run_with_profile_steps_profiles_those_steps(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    seen: List[Any] = []
    monkeypatch.setattr(train, "run", lambda cfg, task: seen.append(cfg))
    assert main(["--preset", "gpt-tiny", "--profile-steps", "1,1,2", "--run-dir", str(tmp_path / "run")]) == 0
    assert [(c.profile_steps, c.profile_schedule(), c.run_dir) for c in seen] == [
        ("1,1,2", [1, 1, 2], str(tmp_path / "run"))]
