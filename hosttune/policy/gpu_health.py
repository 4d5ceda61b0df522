"""How bad a GPU's temperature or clock events are: the one decision doctor and the monitor both use.

Temperature: the critical line is the GPU's own slowdown threshold (NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: where the
hardware starts cutting clocks), and the warning line sits WARN_MARGIN_C below it. A GPU that does not report its
threshold (older parts, NotSupported) falls back to the table: 75 C warning (datacenter GPUs run 65-75 C under
sustained load) and 85 C critical (where most parts begin thermal slowdown). A reading AT a line is at that level.
An admin's explicit lines (monitor.yaml) win over both.

Clock events (nvml.h nvmlClocksEventReason*): hardware slowdown, hardware thermal slowdown and power brake halve
clocks or more and mean a cooling or power-supply fault: critical. Software thermal slowdown: warning. Software
power capping under load: notice (the board is at its power limit, often by design). Idle, application clocks,
sync boost and display clocks are normal.

Levels are the monitor's (critical, warning, notice, ""); doctor shows critical as fail and the others as warn.
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple

FALLBACK_WARN_C = 75.0
FALLBACK_CRIT_C = 85.0
WARN_MARGIN_C = 10.0

HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80
SW_POWER_CAP = 0x4

# (kind, mask, level, what): the monitor's event kinds, doctor's grouping
CLOCK_EVENT_GROUPS: Tuple[Tuple[str, int, str, str], ...] = (
    ("gpu_throttle_hw", HW_SLOWDOWN | HW_THERMAL | HW_POWER_BRAKE, "critical",
     "hardware slowdown (cooling or power-supply fault)"),
    ("gpu_throttle_thermal", SW_THERMAL, "warning", "software thermal slowdown"),
    ("gpu_throttle_power", SW_POWER_CAP, "notice", "software power capping"),
)
_RANK = {"": 0, "notice": 1, "warning": 2, "critical": 3}


@dataclass(frozen=True)
class TempLimits:
    warn_c: float
    crit_c: float
    source: str  # "nvml" (the GPU's own slowdown threshold) | "table" | "config"

    def level(self, temp_c: float) -> str:
        if temp_c >= self.crit_c:
            return "critical"
        if temp_c >= self.warn_c:
            return "warning"
        return ""

    def describe(self) -> str:
        where = {"nvml": "the GPU's slowdown threshold", "table": "default", "config": "configured"}[self.source]
        return f"warning from {self.warn_c:g} C, critical from {self.crit_c:g} C ({where})"


def temperature_limits(slowdown_c: Optional[float] = None, warn_c: Optional[float] = None,
                       crit_c: Optional[float] = None) -> TempLimits:
    """The warning/critical lines for one GPU: configured lines, else its NVML slowdown threshold, else the table."""
    if crit_c is not None or warn_c is not None:
        crit = crit_c if crit_c is not None else (slowdown_c or FALLBACK_CRIT_C)
        warn = warn_c if warn_c is not None else crit - WARN_MARGIN_C
        return TempLimits(float(warn), float(crit), "config")
    if slowdown_c and slowdown_c > WARN_MARGIN_C:
        return TempLimits(float(slowdown_c) - WARN_MARGIN_C, float(slowdown_c), "nvml")
    return TempLimits(FALLBACK_WARN_C, FALLBACK_CRIT_C, "table")


def temperature(temp_c: float, slowdown_c: Optional[float] = None) -> str:
    """The level of one reading with the GPU's own (or the table's) lines."""
    return temperature_limits(slowdown_c).level(temp_c)


def clock_events(mask: Optional[int]) -> List[Tuple[str, str, int, str]]:
    """[(kind, level, bits, what)] for every group of `mask` that is set, worst first."""
    if not mask:
        return []
    out = [(kind, level, mask & bits, what) for kind, bits, level, what in CLOCK_EVENT_GROUPS if mask & bits]
    return sorted(out, key=lambda e: -_RANK[e[1]])


def worst(levels: List[str]) -> str:
    return max(levels, key=lambda lvl: _RANK[lvl], default="")


def doctor_status(level: str) -> str:
    """doctor's status for a level: critical fails, warning and notice warn."""
    return {"critical": "fail", "warning": "warn", "notice": "warn"}.get(level, "pass")
