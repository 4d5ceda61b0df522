"""Threshold crossings as events: logged once when a condition starts and once when it clears (pure, no I/O).

`Alerts.update(sample)` compares one sample with the conditions that were active after the previous one and
returns the transitions. Hysteresis keeps a reading that hovers at a threshold from producing a line per sample.
Counters (uncorrected ECC errors, uncorrectable remapped rows) produce one event per increase.
"""

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Tuple

from hosttune import nvml
from hosttune.monitor.config import Thresholds

# syslog priorities, for the journal's "<N>" line prefix (sd-daemon(3))
PRIORITY = {"critical": 2, "error": 3, "warning": 4, "notice": 5, "info": 6}


@dataclass(frozen=True)
class Event:
    kind: str  # gpu_temperature | gpu_memory | host_memory | gpu_throttle_thermal | ... | gpu_lost | gpu_ecc
    subject: str  # "gpu0" or "host"
    level: str  # critical | warning | notice | info
    state: str  # start | clear | once
    message: str
    value: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


# clock-event reason groups that count as throttling, and how loud each is
_THROTTLE = (
    ("gpu_throttle_thermal", nvml.THERMAL_REASONS, "warning", "thermal slowdown"),
    ("gpu_throttle_hw", 0x8, "warning", "hardware slowdown (HW_SLOWDOWN)"),
    ("gpu_throttle_power", nvml.POWER_REASONS, "notice", "power capping"),
)


class Alerts:
    def __init__(self, thresholds: Thresholds) -> None:
        self.t = thresholds
        self.active: Dict[Tuple[str, str], str] = {}  # (kind, subject) -> level now in force
        self._counters: Dict[Tuple[str, str], int] = {}
        self._lost: set = set()

    # ---- helpers --------------------------------------------------------------------------------------------
    def _band(self, key: Tuple[str, str], value: float, warn: float, hyst: float, crit: Optional[float]) -> str:
        """The level for `value` given the level in force: enter at the threshold, leave `hyst` below it."""
        cur = self.active.get(key, "")
        if crit is not None and (value > crit or (cur == "critical" and value > crit - hyst)):
            return "critical"
        if value >= warn or (cur in ("warning", "critical") and value > warn - hyst):
            return "warning"
        return ""

    def _transition(self, out: List[Event], key: Tuple[str, str], new: str, start_msg: str, clear_msg: str,
                    value: Optional[float]) -> None:
        old = self.active.get(key, "")
        if new == old:
            return
        kind, subject = key
        if new and old == "critical":  # down from critical to warning: the critical condition clears
            self.active[key] = new
            out.append(Event(kind, subject, "info", "clear", f"{clear_msg} (below critical; {new} remains)", value))
        elif new:
            self.active[key] = new
            out.append(Event(kind, subject, new, "start", start_msg.format(level=new), value))
        else:
            del self.active[key]
            out.append(Event(kind, subject, "info", "clear", clear_msg, value))

    # ---- the update -----------------------------------------------------------------------------------------
    def update(self, sample: Dict[str, Any]) -> List[Event]:
        out: List[Event] = []
        t = self.t
        host = sample.get("host") or {}
        pct = host.get("mem_used_pct")
        if pct is not None:
            key = ("host_memory", "host")
            lvl = self._band(key, pct, t.memory_pct, t.memory_hysteresis_pct, None)
            self._transition(out, key, lvl, f"host memory {pct:.1f} % used (threshold {t.memory_pct:g} %)",
                             f"host memory back to {pct:.1f} % used", pct)
        for gpu in sample.get("gpus") or []:
            self._gpu(out, gpu)
        return out

    def _gpu(self, out: List[Event], gpu: Dict[str, Any]) -> None:
        t = self.t
        subj = f"gpu{gpu['index']}"
        name = f"GPU {gpu['index']}" + (f" ({gpu['uuid']})" if gpu.get("uuid") else "")
        if gpu.get("lost"):
            if subj not in self._lost:
                self._lost.add(subj)
                # a lost GPU is never asked again, so whatever was in force for it is over
                for key in [k for k in self.active if k[1] == subj]:
                    del self.active[key]
                out.append(Event("gpu_lost", subj, "critical", "once",
                                 f"{name} is lost (NVML: GPU is lost); no longer sampled: check dmesg for Xid 79"))
            return
        temp = gpu.get("temperature_c")
        if temp is not None:
            key = ("gpu_temperature", subj)
            lvl = self._band(key, temp, t.gpu_temp_warn_c, t.gpu_temp_hysteresis_c, t.gpu_temp_crit_c)
            limit = f"> {t.gpu_temp_crit_c:g}" if lvl == "critical" else f">= {t.gpu_temp_warn_c:g}"
            self._transition(out, key, lvl, f"{name} temperature {temp:g} C ({{level}} threshold: {limit} C)",
                             f"{name} temperature back to {temp:g} C", temp)
        mem = gpu.get("memory_used_pct")
        if mem is not None:
            key = ("gpu_memory", subj)
            lvl = self._band(key, mem, t.memory_pct, t.memory_hysteresis_pct, None)
            self._transition(out, key, lvl, f"{name} memory {mem:.1f} % used (threshold {t.memory_pct:g} %)",
                             f"{name} memory back to {mem:.1f} % used", mem)
        reasons = gpu.get("clock_event_reasons")
        if reasons is not None:
            for kind, mask, level, what in _THROTTLE:
                on = bool(reasons & mask)
                names = ", ".join(nvml.reason_names(reasons & mask))
                self._transition(out, (kind, subj), level if on else "",
                                 f"{name} clocks reduced by {what}: {names}", f"{name} {what} ended", None)
        for kind, field, what in (
            ("gpu_ecc", "ecc_uncorrected_volatile", "uncorrected ECC error(s)"),
            ("gpu_remapped_rows", "remapped_rows_uncorrectable", "row remapping(s) for uncorrectable errors"),
        ):
            value = gpu.get(field)
            if value is None:
                continue
            ckey = (kind, subj)
            prev = self._counters.get(ckey)
            self._counters[ckey] = value
            if prev is None:
                if value > 0:  # already non-zero when we started: say so once
                    out.append(Event(kind, subj, "warning", "once", f"{name} has {value} {what} (since driver load)",
                                     value))
            elif value > prev:
                out.append(Event(kind, subj, "critical", "once",
                                 f"{name}: {value - prev} new {what} (total {value})", value))
        for kind, field, level, what in (
            ("gpu_remap_pending", "remapped_rows_pending", "warning", "row remapping pending: reset the GPU"),
            ("gpu_remap_failure", "remapped_rows_failure", "critical", "row remapping failed: replace the GPU"),
            ("gpu_retire_pending", "retired_pages_pending", "warning", "page retirement pending: reset the GPU"),
        ):
            flag = gpu.get(field)
            if flag is not None:
                self._transition(out, (kind, subj), level if flag else "", f"{name} {what}",
                                 f"{name} {field.replace('_', ' ')} cleared", None)
