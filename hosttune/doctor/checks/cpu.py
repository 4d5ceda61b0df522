"""Checks of the CPUs this process may use: cgroup CPU limit, OMP_NUM_THREADS against the plan. (The limits, open
files and locked memory, are tunable-backed: hosttune.doctor.checks.tunables.)"""

from typing import Optional, Tuple

from hosttune.doctor.context import Context
from hosttune.doctor.fixes import COUNT, valid
from hosttune.doctor.model import Finding
from hosttune.policy import cpu as cpu_policy


def check_cgroup(ctx: Context) -> Finding:
    """The cgroup (container/systemd slice) lets this process use all CPUs, or the limit is known.

    PyTorch sizes its intra-op thread pool from the number of online CPUs, not from the cgroup cpuset or
    `cpu.max` quota. In a container limited to 8 of 64 CPUs it starts 32-64 threads that fight for 8 CPUs
    (measured here: oversubscription halves training throughput). The finding gives the usable CPU count and the
    thread budget `hosttune exec` sizes threads to (policy.cpu.thread_budget: physical cores of the allowed set,
    capped by the quota), or set OMP_NUM_THREADS to it yourself.
    """
    cpu = ctx.facts.cpu
    eff = cpu_policy.usable_cpus(cpu)
    if not cpu.logical or eff is None:
        return Finding(status="skip", actual="CPU count not readable", expected="")
    if eff >= cpu.logical:
        return Finding(status="pass", actual=f"{eff} of {cpu.logical} CPUs usable",
                       expected=f"{cpu.logical} (no smaller limit)")
    quota = cpu_policy.quota(cpu)
    how = []
    if len(cpu.allowed_cpus) and len(cpu.allowed_cpus) < cpu.logical:
        how.append(f"cpuset {len(cpu.allowed_cpus)} CPUs")
    if quota is not None:
        how.append(f"cpu.max quota {quota:g} CPUs")
    actual = f"effective {eff} of {cpu.logical} CPUs ({', '.join(how) or 'limited'})"
    threads = cpu_policy.thread_budget(cpu) or eff
    fix = (f"run training through `hosttune exec` (sizes threads to {threads}), or export OMP_NUM_THREADS={threads}; "
           "or give the container more CPUs (docker --cpus/--cpuset-cpus, systemd CPUQuota=/AllowedCPUs=)")
    return Finding(status="warn", actual=actual, expected=f"{cpu.logical} CPUs, or threads sized to {eff}", fix=fix)


def _planned_threads(ctx: Context) -> Optional[Tuple[str, str]]:
    """(OMP_NUM_THREADS from hosttune's plan for one rank, the profile it came from) when a profile is configured:
    the one `hosttune exec` would use from this environment (--profile aside: doctor has none)."""
    active, prof, _error = ctx.load_profile()
    if prof is None:
        return None
    from hosttune import plan as plan_mod

    try:
        environ = {k: v for k, v in ctx.env.items() if k != "OMP_NUM_THREADS"}  # the plan, not the shell's value
        rank = plan_mod.resolve(ctx.facts, prof, 0, 1, environ)
    except Exception:  # noqa: BLE001 - the profile checks report a broken profile; here it only means "no plan"
        return None
    value = rank.env.get("OMP_NUM_THREADS")
    return (str(value), f"{active.ref}") if value else None


def check_omp_threads(ctx: Context) -> Finding:
    """OMP_NUM_THREADS, when set by hand, matches the plan (or at least the CPUs this process can use).

    A value left in a shell profile outlives the hardware it was chosen for. With a hosttune profile the expected
    value is what `hosttune env` plans for a single rank; without one, a value above the effective CPU count is
    certain oversubscription (measured: x0.5 throughput) and a non-integer value is ignored by libgomp with a
    warning. Under `hosttune exec`/torchrun each rank gets its own value: this check looks at your shell only.
    """
    raw = ctx.env.get("OMP_NUM_THREADS")
    eff = cpu_policy.thread_budget(ctx.facts.cpu)
    if raw is None:
        return Finding(status="pass", actual="unset (hosttune exec / torchrun decide)",
                       expected="unset, or matching the plan")
    try:
        value = int(raw.split(",")[0])
        if value < 1:
            raise ValueError
    except ValueError:
        return Finding(status="warn", actual=f"OMP_NUM_THREADS={raw!r} is not a positive integer",
                       expected="a positive integer",
                       fix="unset OMP_NUM_THREADS (and remove it from ~/.bashrc or /etc/environment)")
    planned = _planned_threads(ctx)
    if planned is not None:
        want, src = planned
        if str(value) == want:
            return Finding(status="pass", actual=f"{value} (matches the plan)", expected=want)
        # the planned value comes from a profile file: only a plain count goes into the command
        export = f", or export OMP_NUM_THREADS={want}" if valid(COUNT, want) else ""
        return Finding(status="warn", actual=f"{value}, plan from {src} says {want}", expected=want,
                       fix=f"unset OMP_NUM_THREADS{export}")
    if eff is not None and value > eff:
        return Finding(status="warn", actual=f"{value} threads for {eff} usable cores", expected=f"<= {eff}",
                       fix=f"export OMP_NUM_THREADS={eff}   # or unset it and launch with `hosttune exec`")
    return Finding(status="pass", actual=f"{value} (<= {eff} usable cores; no profile to compare with)",
                   expected=f"<= {eff}")
