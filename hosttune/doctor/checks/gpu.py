"""Checks of each GPU's health as NVML reports it: persistence, ECC, retired/remapped memory, PCIe link, clock
events and temperature (severity from hosttune.policy.gpu_health, shared with the monitor)."""

import re

from hosttune import nvml as nvmlmod
from hosttune.doctor.context import Context, gpu_label, nvml_gpus
from hosttune.doctor.fixes import tune_fix
from hosttune.doctor.model import STATUSES, Finding
from hosttune.policy import gpu_health


def check_persistence(ctx: Context) -> Finding:
    """Persistence mode is on (or nvidia-persistenced runs).

    Without it the driver tears GPU state down when the last process exits: every new process pays seconds of
    initialisation and ECC/clock settings can be lost. NVIDIA recommends persistence on datacenter GPUs.
    """
    known = [g for g in nvml_gpus(ctx) if g.persistence_mode is not None]
    if not known:
        return Finding(status="skip", actual="persistence mode not reported (NotSupported)", expected="on")
    off = [gpu_label(g) for g in known if not g.persistence_mode]
    if off:
        return Finding(status="warn", actual="off on " + ", ".join(off), expected="on",
                       fix=tune_fix("persistence", "nvidia-smi -pm 1\nsystemctl enable --now nvidia-persistenced"
                                    "   # keep it after reboot"))
    return Finding(status="pass", actual=f"on ({len(known)} GPUs)", expected="on")


DATACENTER = re.compile(r"\b(A100|A800|H100|H800|H200|H20|B100|B200|B300|GB200|GB300|L40S?|L20|L4|V100|A30|A40|"
                        r"A10|A16|A2|T4|P100|RTX PRO 6000 Blackwell Server)\b", re.I)


def check_ecc_mode(ctx: Context) -> Finding:
    """ECC is enabled on datacenter GPUs (A100/H100/H200/B200/L40/V100/A30/A10/T4 ...).

    Without ECC a flipped bit silently corrupts weights or gradients; on datacenter parts it costs a few percent of
    memory at most. A pending mode (set but not yet active) needs a GPU reset or reboot. Consumer GPUs are skipped.
    """
    dc = [g for g in nvml_gpus(ctx) if g.name and DATACENTER.search(g.name)]
    if not dc:
        return Finding(status="skip", actual="no datacenter GPU (ECC optional)", expected="on")
    off = [gpu_label(g) for g in dc if g.ecc_enabled is False]
    pending = [gpu_label(g) for g in dc if g.ecc_enabled is not None and g.ecc_pending is not None
               and g.ecc_pending != g.ecc_enabled]
    if off:
        idx = ",".join(str(g.index) for g in dc if g.ecc_enabled is False)
        fix = f"nvidia-smi -i {idx} -e 1 && reboot"
        if pending:
            fix = "reboot (ECC change already pending)"
        return Finding(status="warn", actual="ECC off on " + ", ".join(off), expected="on", fix=fix)
    if pending:
        return Finding(status="warn", actual="ECC mode change pending on " + ", ".join(pending),
                       expected="on, nothing pending", fix="reboot")
    if all(g.ecc_enabled is None for g in dc):
        return Finding(status="skip", actual="ECC mode not reported (NotSupported)", expected="on")
    return Finding(status="pass", actual=f"on ({len(dc)} datacenter GPUs)", expected="on")


def check_ecc_errors(ctx: Context) -> Finding:
    """No uncorrected (double-bit) ECC errors since the last driver load.

    An uncorrected error means data was corrupted and the process that touched it got an Xid 48/63/94 error.
    Drain the GPU, reset it, and watch: repeats mean a failing GPU.
    """
    known = [g for g in nvml_gpus(ctx) if g.ecc_uncorrected_volatile is not None]
    if not known:
        return Finding(status="skip", actual="ECC counters not reported (ECC off or NotSupported)", expected="0")
    bad = [f"{gpu_label(g)}: {g.ecc_uncorrected_volatile}" for g in known if g.ecc_uncorrected_volatile]
    if bad:
        idx = ",".join(str(g.index) for g in known if g.ecc_uncorrected_volatile)
        return Finding(status="fail", actual="; ".join(bad), expected="0",
                       fix=f"stop jobs on GPU {idx}, then nvidia-smi -r -i {idx} (reset) "
                       "or reboot; if errors come back: nvidia-bug-report.sh and contact the vendor (RMA)")
    return Finding(status="pass", actual=f"0 on {len(known)} GPUs", expected="0")


def check_pending_retire(ctx: Context) -> Finding:
    """No pending page retirement or row remapping (the fix is waiting for a GPU reset).

    After an ECC error the GPU schedules the bad memory page (pre-Ampere: retired pages) or row (Ampere+: row
    remapping) to be replaced; until the GPU is reset the bad memory is still in use.
    """
    g_all = nvml_gpus(ctx)
    known = [g for g in g_all if g.retired_pages_pending is not None or g.remapped_rows_pending is not None]
    if not known:
        return Finding(status="skip", actual="retired pages / remapped rows not reported (NotSupported)",
                       expected="nothing pending")
    bad = [gpu_label(g) for g in known if g.retired_pages_pending or g.remapped_rows_pending]
    if bad:
        idx = ",".join(str(g.index) for g in known if g.retired_pages_pending or g.remapped_rows_pending)
        return Finding(status="warn", actual="pending on " + ", ".join(bad), expected="nothing pending",
                       fix=f"stop jobs on GPU {idx}, then nvidia-smi -r -i {idx} (reset) or reboot")
    return Finding(status="pass", actual=f"nothing pending on {len(known)} GPUs", expected="nothing pending")


def check_remap_failure(ctx: Context) -> Finding:
    """No row-remapping failure: the GPU ran out of spare rows.

    A remapping failure means the memory cannot be repaired any more; NVIDIA's guidance is to take the GPU out of
    service and RMA it.
    """
    known = [g for g in nvml_gpus(ctx) if g.remapped_rows_failure is not None]
    if not known:
        return Finding(status="skip", actual="row remapping not reported (pre-Ampere or NotSupported)",
                       expected="no failure")
    bad = [gpu_label(g) for g in known if g.remapped_rows_failure]
    if bad:
        return Finding(status="fail", actual="row remapping failed on " + ", ".join(bad), expected="no failure",
                       fix="take the GPU out of service: nvidia-bug-report.sh, then RMA with the vendor")
    return Finding(status="pass", actual=f"no failure on {len(known)} GPUs", expected="no failure")


def check_pcie(ctx: Context) -> Finding:
    """The PCIe link runs at its maximum generation and width while the GPU is busy.

    Idle GPUs drop to a lower link speed to save power, so a slow link at idle means nothing: this check judges
    only GPUs that are busy (>= 50% utilisation) in a fresh NVML sample, and says "idle: not judged" otherwise. A
    busy GPU on a narrower or older link than it supports points at a riser, slot, BIOS setting or a dirty contact.
    """
    try:
        samples = ctx.samples()
    except (nvmlmod.NvmlUnavailable, nvmlmod.GpuLost) as exc:
        return Finding(status="skip", actual=f"live NVML sample failed: {exc}", expected="max gen/width under load")
    busy, idle, bad = [], [], []
    for g in nvml_gpus(ctx):
        s = samples.get(g.index, {})
        util = s.get("utilization_gpu_pct")
        if util is None or util < 50:
            idle.append(gpu_label(g))
            continue
        busy.append(g)
        gen, width = s.get("pcie_gen", g.pcie_gen), s.get("pcie_width", g.pcie_width)
        if (gen and g.pcie_gen_max and gen < g.pcie_gen_max) or (width and g.pcie_width_max and
                                                                 width < g.pcie_width_max):
            bad.append(f"{gpu_label(g)} Gen{gen} x{width} of Gen{g.pcie_gen_max} x{g.pcie_width_max} at {util}%")
    if bad:
        return Finding(status="warn", actual="; ".join(bad), expected="max gen/width under load",
                       fix="check the slot/riser and BIOS PCIe speed setting; nvidia-smi -q -d PCIE shows the link")
    if not busy:
        return Finding(status="pass",
                       actual=f"idle: not judged ({len(idle)} GPUs idle; link speed drops at idle by design)",
                       expected="max gen/width under load")
    return Finding(status="pass",
                   actual=f"{len(busy)} busy GPUs at max link" + (f", {len(idle)} idle not judged" if idle else ""),
                   expected="max gen/width under load")


def check_clock_reasons(ctx: Context) -> Finding:
    """No GPU is slowed by thermal or power clock events right now.

    NVML's current clock-event ("throttle") reasons, rated by hosttune.policy.gpu_health (the monitor's rating):
    software thermal slowdown and software power capping under full load are worth a look (cooling, power limit:
    warn); hardware slowdown, hardware thermal slowdown and power brake halve clocks or more and point at cooling or
    power-supply faults (fail). Idle, application clocks and sync boost are normal.
    """
    known = [g for g in nvml_gpus(ctx) if g.clock_event_reasons is not None]
    if not known:
        return Finding(status="skip", actual="clock-event reasons not reported (NotSupported)", expected="none")
    worst, notes = "pass", []
    for g in known:
        events = gpu_health.clock_events(g.clock_event_reasons)
        if events:
            bits = 0
            for _kind, _level, event_bits, _what in events:
                bits |= event_bits
            notes.append(f"{gpu_label(g)}: {','.join(nvmlmod.reason_names(bits))}")
            status = gpu_health.doctor_status(events[0][1])  # worst first
            if STATUSES.index(status) > STATUSES.index(worst):
                worst = status
    if worst == "pass":
        return Finding(status="pass", actual=f"none on {len(known)} GPUs", expected="no thermal/power events")
    return Finding(status=worst, actual="; ".join(notes), expected="no thermal/power events",
                   fix="nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER; check airflow/fans and PSU; "
                   "nvidia-smi -pl shows/sets the power limit")


def _lines(lim: gpu_health.TempLimits) -> str:
    """The warn/fail lines of one GPU and where they came from, in doctor's words."""
    where = ("its slowdown threshold" if lim.source == "nvml"
             else "default lines: the GPU reports no slowdown threshold")
    return f"below {lim.warn_c:g} C (warn from {lim.warn_c:g} C, fail from {lim.crit_c:g} C: {where})"


def check_temperature(ctx: Context) -> Finding:
    """GPU temperature is below the warning line: warn from 10 C under the GPU's slowdown threshold, fail from it.

    The lines are hosttune.policy.gpu_health's, the same the monitor alerts on: the GPU's own slowdown threshold
    (NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, where the hardware starts cutting clocks; `nvidia-smi -q -d TEMPERATURE`
    shows it) is the fail line and the warn line sits 10 C below it. A GPU that does not report its threshold gets
    75 C (warn: datacenter GPUs run at 65-75 C under sustained load) and 85 C (fail: where most parts begin thermal
    slowdown). A reading at a line is at that level.
    """
    known = [g for g in nvml_gpus(ctx) if g.temperature_c is not None]
    if not known:
        return Finding(status="skip", actual="temperature not reported",
                       expected=_lines(gpu_health.temperature_limits(None)))
    rated = []
    for g in known:
        lim = gpu_health.temperature_limits(g.temp_slowdown_c)
        rated.append((g, lim, gpu_health.doctor_status(lim.level(g.temperature_c or 0))))
    worst = max((status for _g, _lim, status in rated), key=STATUSES.index)
    if worst == "pass":
        hot, lim, _ = max(rated, key=lambda r: r[0].temperature_c or 0)
        return Finding(status="pass", actual=f"max {hot.temperature_c} C ({gpu_label(hot)})", expected=_lines(lim))
    bad = [(g, lim) for g, lim, status in rated if status != "pass"]
    actual = "; ".join(f"{gpu_label(g)}: {g.temperature_c} C" for g, _ in bad)
    expected = "; ".join(dict.fromkeys(_lines(lim) for _, lim in bad))
    used = "; ".join(dict.fromkeys(f"warn from {lim.warn_c:g} C, fail from {lim.crit_c:g} C "
                                   f"({'the GPU slowdown threshold' if lim.source == 'nvml' else 'default lines'})"
                                   for _, lim in bad))
    return Finding(status=worst, actual=actual, expected=expected,
                   fix=f"check airflow, fans and inlet temperature: nvidia-smi -q -d TEMPERATURE   # {used}")
