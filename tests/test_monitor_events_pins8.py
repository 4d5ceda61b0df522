"""Pins (issue 21, round 8 practice) for hosttune/monitor/events.py, whole event lists: a GPU temperature going down
from critical through warning (each level held until the reading is the hysteresis below its line; leaving critical
while still above the warning line is a clear that says the warning remains), and the tune drift events (drift
starts a warning, a skipped check changes nothing, "ok" clears it with the value read)."""

from types import SimpleNamespace
from typing import Any, Dict, List

from hosttune.monitor.config import Thresholds
from hosttune.monitor.events import Alerts


def _temps(alerts: Alerts, temp: float) -> List[Dict[str, Any]]:
    return [e.to_dict() for e in alerts.update({"gpus": [{"index": 0, "uuid": "GPU-a", "temperature_c": temp}]})]


def test_down_from_critical_through_warning_with_hysteresis() -> None:
    alerts = Alerts(Thresholds())  # the table's lines for a GPU without its own: warning 75 C, critical 85 C; 5 C

    def ev(level: str, state: str, message: str, value: float) -> Dict[str, Any]:
        return {"kind": "gpu_temperature", "subject": "gpu0", "level": level, "state": state, "message": message,
                "value": value}

    assert _temps(alerts, 90) == [ev("critical", "start", "GPU 0 (GPU-a) temperature 90 C (critical threshold: "
                                                          ">= 85 C, default)", 90)]
    assert _temps(alerts, 82) == []  # critical held: not yet 5 C below its line
    assert _temps(alerts, 79) == [ev("info", "clear", "GPU 0 (GPU-a) temperature back to 79 C (below critical; "
                                                      "warning remains)", 79)]
    assert alerts.active == {("gpu_temperature", "gpu0"): "warning"}
    assert _temps(alerts, 72) == []  # warning held
    assert _temps(alerts, 69) == [ev("info", "clear", "GPU 0 (GPU-a) temperature back to 69 C", 69)]
    assert alerts.active == {}
    assert _temps(alerts, 76) == [ev("warning", "start", "GPU 0 (GPU-a) temperature 76 C (warning threshold: "
                                                         ">= 75 C, default)", 76)]


def test_tune_drift_starts_a_skip_keeps_it_and_ok_clears_it() -> None:
    alerts = Alerts(Thresholds())

    def st(state: str, actual: str) -> Any:
        return SimpleNamespace(id="thp", title="transparent huge pages", expected="madvise", actual=actual,
                               state=state, reason="")

    drift = {"kind": "tune_drift", "subject": "thp", "level": "warning", "state": "start", "value": None,
             "message": "tunable thp (transparent huge pages) drifted: expected madvise, actual always "
                        "(`hosttune tune verify` shows all; `hosttune tune apply` restores it)"}
    back = {"kind": "tune_drift", "subject": "thp", "level": "info", "state": "clear", "value": None,
            "message": "tunable thp (transparent huge pages) is back to madvise"}
    got = [[e.to_dict() for e in alerts.tune(seq)] for seq in (
        [st("drift", "always")], [st("skip", "?")], [st("drift", "always")], [st("ok", "madvise")],
        [st("ok", "madvise")], [st("skip", "?")])]
    assert got == [[drift], [], [], [back], [], []]
    assert alerts.active == {}
