"""What the monitor's samples add up to (pure: samples in, numbers out): min/mean/percentiles/max per metric, the
time spent above each threshold, the events, and the series and threshold lines the pictures draw.

A sample's condition counts until the next sample, but never across a gap longer than three typical intervals
(the monitor was not running then). The thresholds are the monitor's (`config.Thresholds`); the GPU temperature
lines and the clock-event groups are the policy's (`policy.gpu_health`), so the report and the live events agree.
"""

import math
from array import array
from typing import Any, Dict, Iterator, List, Sequence, Tuple

from hosttune.monitor.config import Thresholds
from hosttune.policy import gpu_health

# per-GPU fields that do not change and so say nothing as min/mean/max
_STATIC = {"index", "memory_total_mb", "power_limit_w", "clock_event_reasons", "remapped_rows_pending",
           "remapped_rows_failure", "retired_pages_pending", "temp_slowdown_c",
           "energy_j", "last_xid"}  # a counter since driver load and a code: no min/mean/max to speak of
_HOST_STATIC = {"mem_total_bytes", "swap_total_bytes", "shm_total_bytes"}

Series = Dict[str, List[Tuple[float, float]]]


def _numbers(rec: Dict[str, Any]) -> Iterator[Tuple[str, float]]:
    host = rec.get("host") or {}
    for key, value in host.items():
        if key in _HOST_STATIC:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            yield f"host.{key}", float(value)
    for sensor, value in (host.get("cpu_temps_c") or {}).items():
        yield f"cpu_temp.{sensor}", float(value)
    for path, usage in (host.get("disks") or {}).items():
        if "used_pct" in usage:
            yield f"disk.{path}.used_pct", float(usage["used_pct"])
    for device, rates in (host.get("disk_io") or {}).items():  # read_mb_s, write_mb_s, util_pct (diskio.py)
        for key, value in rates.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                yield f"disk_io.{device}.{key}", float(value)
    for gpu in rec.get("gpus") or []:
        if gpu.get("lost"):
            continue
        for key, value in gpu.items():
            if key in _STATIC or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            yield f"gpu{gpu['index']}.{key}", float(value)


def durations(samples: Sequence[Dict[str, Any]]) -> List[float]:
    """How long each sample stands for: until the next one, capped at 3 typical intervals (monitor down)."""
    if len(samples) < 2:
        return [0.0] * len(samples)
    gaps = [b["ts"] - a["ts"] for a, b in zip(samples, samples[1:])]
    typical = sorted(gaps)[len(gaps) // 2] or 1.0
    cap = 3 * typical
    return [min(g, cap) for g in gaps] + [typical]


PERCENTILES = (50, 95, 99)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of sorted values, interpolated between the closest ranks (numpy's default, "linear")."""
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _metrics(samples: Sequence[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    # every reading is kept (8 bytes each in an array) for exact percentiles: a week of 5 s samples of a 1-GPU host
    # is a few million values; --since/--until bound it
    values: Dict[str, array[float]] = {}
    for rec in samples:
        for name, value in _numbers(rec):
            seq = values.get(name)
            if seq is None:
                seq = values[name] = array("d")
            seq.append(value)
    table: Dict[str, Dict[str, Any]] = {}
    for name, seq in sorted(values.items()):
        ordered = sorted(seq)
        row: Dict[str, Any] = {"min": ordered[0], "mean": round(math.fsum(ordered) / len(ordered), 3),
                               "max": ordered[-1]}
        for q in PERCENTILES:
            row[f"p{q}"] = round(percentile(ordered, q), 3)
        row["samples"] = len(ordered)
        table[name] = row
    return table


def _conditions(rec: Dict[str, Any], t: Thresholds) -> Iterator[Tuple[str, bool]]:
    """(condition, held) for every threshold this sample can be compared with, in the report's order."""
    pct = (rec.get("host") or {}).get("mem_used_pct")
    if pct is not None:
        yield f"host memory >= {t.memory_pct:g} %", pct >= t.memory_pct
    for gpu in rec.get("gpus") or []:
        if gpu.get("lost"):
            continue
        g = f"gpu{gpu['index']}"
        temp = gpu.get("temperature_c")
        if temp is not None:
            # the events' lines for this GPU (the policy's, from its slowdown threshold): at the line is over it
            limits = t.gpu_temp_limits(gpu.get("temp_slowdown_c"))
            level = limits.level(temp)
            yield f"{g} temperature >= {limits.warn_c:g} C (warning)", level in ("warning", "critical")
            yield f"{g} temperature >= {limits.crit_c:g} C (critical)", level == "critical"
        mem = gpu.get("memory_used_pct")
        if mem is not None:
            yield f"{g} memory >= {t.memory_pct:g} %", mem >= t.memory_pct
        reasons = gpu.get("clock_event_reasons")
        if reasons is not None:
            on = {kind for kind, _level, _bits, _what in gpu_health.clock_events(reasons)}
            for kind, _mask, level, what in gpu_health.CLOCK_EVENT_GROUPS:
                yield f"{g} {what} ({level})", kind in on


def summarize(samples: Sequence[Dict[str, Any]], thresholds: Thresholds) -> Dict[str, Any]:
    """The report as data (`monitor report --json`): the metrics table, the time above each threshold (in the
    order the conditions first appear) and the events, each with its sample's time."""
    above: Dict[str, float] = {}  # insertion order is the report's order
    spans = durations(samples)
    for rec, dt in zip(samples, spans):
        for label, held in _conditions(rec, thresholds):
            above[label] = above.get(label, 0.0) + (dt if held else 0.0)
    span = sum(spans)
    events = [dict(ev, ts=rec["ts"], time=rec.get("time")) for rec in samples for ev in rec.get("events") or []]
    return {
        "samples": len(samples),
        "first": samples[0]["ts"] if samples else None,
        "last": samples[-1]["ts"] if samples else None,
        "covered_seconds": round(span, 3),
        "metrics": _metrics(samples),
        "above": [{"condition": label, "seconds": round(seconds, 3),
                   "fraction": round(seconds / span, 4) if span else 0.0} for label, seconds in above.items()],
        "events": events,
    }


def series(samples: Sequence[Dict[str, Any]]) -> Tuple[Series, Series]:
    """The pictures' two panels as (time, value) series: temperatures (GPU, CPU sensors) and memory use in %
    (GPU memory, host memory, swap)."""
    temps: Series = {}
    mems: Series = {}
    for rec in samples:
        ts = rec["ts"]
        host = rec.get("host") or {}
        for gpu in rec.get("gpus") or []:
            if gpu.get("temperature_c") is not None:
                temps.setdefault(f"GPU {gpu['index']}", []).append((ts, float(gpu["temperature_c"])))
            if gpu.get("memory_used_pct") is not None:
                mems.setdefault(f"GPU {gpu['index']} memory", []).append((ts, float(gpu["memory_used_pct"])))
        for sensor, value in (host.get("cpu_temps_c") or {}).items():
            temps.setdefault(f"CPU {sensor}", []).append((ts, float(value)))
        if host.get("mem_used_pct") is not None:
            mems.setdefault("host memory", []).append((ts, float(host["mem_used_pct"])))
        if host.get("swap_total_bytes"):
            swap_pct = 100.0 * host.get("swap_used_bytes", 0) / host["swap_total_bytes"]
            mems.setdefault("swap used", []).append((ts, swap_pct))
    return temps, mems


def temperature_lines(samples: Sequence[Dict[str, Any]], thresholds: Thresholds) -> List[Tuple[float, str]]:
    """[(degrees, level)] of every GPU's warning and critical lines in the log, each value once (GPUs of one
    model share them); the table's (or the configured) lines when the log holds no GPU temperature."""
    slowdowns = {gpu.get("temp_slowdown_c") for rec in samples for gpu in rec.get("gpus") or []
                 if gpu.get("temperature_c") is not None} or {None}
    lines: Dict[float, str] = {}
    for slowdown in sorted(slowdowns, key=lambda v: -1.0 if v is None else float(v)):
        limits = thresholds.gpu_temp_limits(slowdown)
        lines.setdefault(limits.warn_c, "warning")
        lines[limits.crit_c] = "critical"  # one GPU's critical line wins over another's warning at that value
    return sorted(lines.items())


# ---- one job's GPUs (`monitor report --job`) ------------------------------------------------------------------
def _has_job(gpu: Dict[str, Any], job: str) -> bool:
    return any(j.get("job") == job for j in gpu.get("jobs") or [])


def _rising(values: Sequence[Tuple[float, bool]]) -> float:
    """What a counter gained over the job: the sum of its increases between neighbouring samples that are not
    across a gap (`values`: (reading, continues the previous)); a counter that went down (driver reload) restarts."""
    total = 0.0
    for (prev, _), (cur, joined) in zip(values, values[1:]):
        if joined and cur >= prev:
            total += cur - prev
    return total


def _stats(values: List[float]) -> Dict[str, float]:
    if not values:
        return {}
    return {"mean": round(math.fsum(values) / len(values), 3), "max": max(values)}


def _job_gpu(rows: List[Tuple[Dict[str, Any], float, bool]], job: str) -> Dict[str, Any]:
    """One GPU's share of a job: `rows` are (GPU entry, seconds it stands for, continues the previous row)."""
    first = rows[0][0]
    mine = next(j for j in first.get("jobs") or [] if j.get("job") == job)
    out: Dict[str, Any] = {"gpu": first["index"], "uuid": first.get("uuid"), "kind": mine.get("kind"),
                           "user": mine.get("user"), "samples": len(rows),
                           "seconds": round(sum(dt for _, dt, _ in rows), 3)}
    for key, name in (("utilization_gpu_pct", "utilization_pct"), ("memory_used_mb", "memory_used_mb"),
                      ("power_w", "power_w")):
        stats = _stats([float(g[key]) for g, _, _ in rows if g.get(key) is not None])
        if stats:
            out[name] = stats
    job_mem = [float(sum(p.get("used_memory_mb") or 0 for p in g.get("processes") or [] if p.get("job") == job))
               for g, _, _ in rows if g.get("processes")]
    if job_mem:
        out["job_memory_used_mb"] = _stats(job_mem)
    energy = [(float(g["energy_j"]), joined) for g, _, joined in rows if g.get("energy_j") is not None]
    if len(energy) >= 2:
        out["energy_j"], out["energy_from"] = round(_rising(energy), 3), "counter"
    elif any(g.get("power_w") is not None for g, _, _ in rows):  # no energy counter: power over time
        out["energy_j"] = round(math.fsum(float(g["power_w"]) * dt for g, dt, _ in rows if g.get("power_w")), 3)
        out["energy_from"] = "power"
    reasons = sorted({r for g, _, _ in rows for r in (g.get("throttle_seconds") or {})})
    throttle = {r: round(_rising([(float(g["throttle_seconds"][r]), j) for g, _, j in rows
                                  if r in (g.get("throttle_seconds") or {})]), 3) for r in reasons}
    out["throttle_seconds"] = {r: s for r, s in throttle.items() if s > 0}
    xids = [(float(g["xid_errors"]), j) for g, _, j in rows if g.get("xid_errors") is not None]
    out["xid_errors"] = int(_rising(xids)) if xids else None
    return out


def job_summary(samples: Sequence[Dict[str, Any]], job: str) -> Dict[str, Any]:
    """`monitor report --job ID`: per GPU that had a process of job `job` (Slurm job id, pod UID or container id),
    over the samples in which it had: utilisation, memory (the GPU's and the job's processes'), power, energy (the
    GPU's energy counter, else power over time), time held back per limiter, XIDs (with the XID events)."""
    spans = durations(samples)
    cap = max(spans) if spans else 0.0
    per_gpu: Dict[int, List[Tuple[Dict[str, Any], float, bool]]] = {}
    last_row: Dict[int, int] = {}  # GPU index -> position of the sample that last had the job on it
    xid_events: List[Dict[str, Any]] = []
    for pos, (rec, dt) in enumerate(zip(samples, spans)):
        for gpu in rec.get("gpus") or []:
            if gpu.get("lost") or not _has_job(gpu, job):
                continue
            i = gpu["index"]
            joined = last_row.get(i) == pos - 1 and (pos == 0 or rec["ts"] - samples[pos - 1]["ts"] <= cap)
            per_gpu.setdefault(i, []).append((gpu, dt, joined))
            last_row[i] = pos
            xid_events += [dict(ev, ts=rec["ts"], time=rec.get("time")) for ev in rec.get("events") or []
                           if ev.get("kind") == "gpu_xid" and ev.get("subject") == f"gpu{i}"]
    times = [rec["ts"] for rec in samples if any(_has_job(g, job) for g in rec.get("gpus") or [])]
    return {"job": job, "first": min(times) if times else None, "last": max(times) if times else None,
            "gpus": [_job_gpu(rows, job) for _i, rows in sorted(per_gpu.items())], "xid_events": xid_events}
