"""Threshold crossings as events: logged once when a condition starts and once when it clears (pure, no I/O).

`Alerts.update(sample)` compares one sample with the conditions that were active after the previous one and
returns the transitions. How bad a GPU temperature or clock event is comes only from `policy.gpu_health` (doctor
reads the same function): a reading AT a line is at that level, and each GPU's lines follow its own slowdown
threshold (`temp_slowdown_c`, from `Nvml.static()`, carried in every GPU entry of a sample). The monitor adds
only what a stream of samples needs: hysteresis, so a reading that hovers at a line is one event, not one per
sample (a level entered at its line holds until the value falls `hysteresis` below it). Counters (uncorrected ECC
errors, uncorrectable remapped rows) produce one event per increase. `Alerts.tune(statuses)` does the same for
`hosttune.tune.verify`: a tunable that drifted is one `tune_drift` warning, and one clear when it is back.
"""

from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from hosttune import nvml
from hosttune.monitor.config import Thresholds
from hosttune.policy import gpu_health

# syslog priorities, for the journal's "<N>" line prefix (sd-daemon(3))
PRIORITY = {"critical": 2, "error": 3, "warning": 4, "notice": 5, "info": 6}


@dataclass(frozen=True)
class Event:
    kind: str  # gpu_temperature | gpu_memory | host_memory | gpu_throttle_thermal | ... | gpu_ecc | tune_drift
    subject: str  # "gpu0", "host", or a tunable id (tune_drift)
    level: str  # critical | warning | notice | info
    state: str  # start | clear | once
    message: str
    value: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


# where a GPU's temperature lines come from, as an event message says it
_SOURCE = {"nvml": "the GPU's slowdown threshold", "table": "default", "config": "configured"}


class Alerts:
    def __init__(self, thresholds: Thresholds) -> None:
        self.t = thresholds
        self.active: Dict[Tuple[str, str], str] = {}  # (kind, subject) -> level now in force
        self._counters: Dict[Tuple[str, str], int] = {}
        self._lost: set = set()

    # ---- helpers --------------------------------------------------------------------------------------------
    def _hold(self, key: Tuple[str, str], entered: str, value: float, lines: Dict[str, float], hyst: float) -> str:
        """The level in force: `entered` (the reading's own level) unless a higher level already in force still
        holds, which it does until the value falls `hyst` below that level's line."""
        cur = self.active.get(key, "")
        for held in ("critical", "warning"):
            if gpu_health.worst([entered, held]) == entered:
                return entered  # the reading is at least at this level: nothing to hold
            if gpu_health.worst([cur, held]) == cur and held in lines and value > lines[held] - hyst:
                return held
        return entered

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
            lvl = self._memory(key, pct)
            self._transition(out, key, lvl, f"host memory {pct:.1f} % used (threshold {t.memory_pct:g} %)",
                             f"host memory back to {pct:.1f} % used", pct)
        for gpu in sample.get("gpus") or []:
            self._gpu(out, gpu)
        return out

    def tune(self, statuses: Iterable[Any]) -> List[Event]:
        """Events for one `hosttune.tune.verify` result (objects with id, title, expected, actual, state, reason).
        "drift" starts a warning, "ok" clears it; "skip" (the tunable cannot be read or does not apply here) never
        makes an event and leaves what was in force as it was, so a passing read error does not clear a drift."""
        out: List[Event] = []
        for st in statuses:
            if st.state not in ("ok", "drift"):
                continue
            key = ("tune_drift", str(st.id))
            self._transition(out, key, "warning" if st.state == "drift" else "",
                             f"tunable {st.id} ({st.title}) drifted: expected {st.expected}, actual {st.actual}"
                             " (`hosttune tune verify` shows all; `hosttune tune apply` restores it)",
                             f"tunable {st.id} ({st.title}) is back to {st.actual}", None)
        return out

    def _memory(self, key: Tuple[str, str], pct: float) -> str:
        t = self.t
        entered = "warning" if pct >= t.memory_pct else ""
        return self._hold(key, entered, pct, {"warning": t.memory_pct}, t.memory_hysteresis_pct)

    def _gpu(self, out: List[Event], gpu: Dict[str, Any]) -> None:
        t = self.t
        subj = f"gpu{gpu['index']}"
        name = f"GPU {gpu['index']}" + (f" ({gpu['uuid']})" if gpu.get("uuid") else "")
        if gpu.get("lost"):
            self._gpu_lost(out, subj, name)
            return
        temp = gpu.get("temperature_c")
        if temp is not None:
            self._gpu_temperature(out, subj, name, temp, gpu.get("temp_slowdown_c"))
        mem = gpu.get("memory_used_pct")
        if mem is not None:
            key = ("gpu_memory", subj)
            lvl = self._memory(key, mem)
            self._transition(out, key, lvl, f"{name} memory {mem:.1f} % used (threshold {t.memory_pct:g} %)",
                             f"{name} memory back to {mem:.1f} % used", mem)
        reasons = gpu.get("clock_event_reasons")
        if reasons is not None:
            self._gpu_clocks(out, subj, name, reasons)
        self._gpu_counters(out, subj, name, gpu)
        for kind, field, level, what in (
            ("gpu_remap_pending", "remapped_rows_pending", "warning", "row remapping pending: reset the GPU"),
            ("gpu_remap_failure", "remapped_rows_failure", "critical", "row remapping failed: replace the GPU"),
            ("gpu_retire_pending", "retired_pages_pending", "warning", "page retirement pending: reset the GPU"),
        ):
            flag = gpu.get(field)
            if flag is not None:
                self._transition(out, (kind, subj), level if flag else "", f"{name} {what}",
                                 f"{name} {field.replace('_', ' ')} cleared", None)

    def _gpu_lost(self, out: List[Event], subj: str, name: str) -> None:
        if subj in self._lost:
            return
        self._lost.add(subj)
        # a lost GPU is never asked again, so whatever was in force for it is over
        for key in [k for k in self.active if k[1] == subj]:
            del self.active[key]
        out.append(Event("gpu_lost", subj, "critical", "once",
                         f"{name} is lost (NVML: GPU is lost); no longer sampled: check dmesg for Xid 79"))

    def _gpu_temperature(self, out: List[Event], subj: str, name: str, temp: float, slowdown: Any) -> None:
        t = self.t
        key = ("gpu_temperature", subj)
        limits = t.gpu_temp_limits(slowdown)
        lines = {"critical": limits.crit_c, "warning": limits.warn_c}
        lvl = self._hold(key, limits.level(temp), temp, lines, t.gpu_temp_hysteresis_c)
        where = _SOURCE.get(limits.source, limits.source)
        limit = f">= {lines[lvl]:g} C, {where}" if lvl else ""
        self._transition(out, key, lvl, f"{name} temperature {temp:g} C ({{level}} threshold: {limit})",
                         f"{name} temperature back to {temp:g} C", temp)

    def _gpu_clocks(self, out: List[Event], subj: str, name: str, reasons: int) -> None:
        on = {kind: (level, bits) for kind, level, bits, _what in gpu_health.clock_events(reasons)}
        for kind, _mask, _level, what in gpu_health.CLOCK_EVENT_GROUPS:  # every group, to clear the ended ones
            level, bits = on.get(kind, ("", 0))
            names = ", ".join(nvml.reason_names(bits))
            self._transition(out, (kind, subj), level, f"{name} clocks reduced by {what}: {names}",
                             f"{name} {what} ended", None)

    def _gpu_counters(self, out: List[Event], subj: str, name: str, gpu: Dict[str, Any]) -> None:
        """One event per increase of an error counter; a count already above 0 at the first sample is said once."""
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
