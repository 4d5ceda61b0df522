"""hosttune/engine/train.py (issue 25): one warning at start when autograd's debug APIs are left on in the run
(anomaly detection, the autograd profiler), and none when they are off or only the engine's own profiler runs."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from _enginehelp import toy_fit  # noqa: E402

WARNING = "hosttune.engine: warning: debug APIs left on: "


def test_anomaly_detection_left_on_is_warned_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with torch.autograd.set_detect_anomaly(True):
        toy_fit(tmp_path, steps=2)
    err = capsys.readouterr().err
    assert err.count(WARNING) == 1, err
    assert "anomaly detection" in err and "autograd profiler" not in err


def test_the_autograd_profiler_left_on_is_warned(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with torch.autograd.profiler.profile():
        toy_fit(tmp_path, steps=1)
    err = capsys.readouterr().err
    assert err.count(WARNING) == 1 and "the autograd profiler" in err, err


def test_no_warning_with_them_off_or_with_the_engines_own_profiler(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    assert not torch.is_anomaly_enabled()
    toy_fit(tmp_path / "plain", steps=1)
    toy_fit(tmp_path / "profiled", steps=3, profile_steps="0,1,1")
    err = capsys.readouterr().err
    assert "debug APIs" not in err, err
    assert (tmp_path / "profiled" / "trace-rank0.json").exists()
