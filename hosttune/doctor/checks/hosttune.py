"""Checks of hosttune itself: the profile in use loads, and a generated one was made for this hardware.

"Which profile is in use" is `hosttune.profile.locate_active`, the answer `hosttune exec` gets from the same
environment: $HOSTTUNE_PROFILE, else the user's generated profile, else /etc's, else the built-in default.
"""

from hosttune.doctor.context import Context
from hosttune.doctor.model import Finding
from hosttune.policy import names


def check_profile(ctx: Context) -> Finding:
    """The profile `hosttune exec` would use is configured and loads.

    `hosttune exec` applies the profile in use ($HOSTTUNE_PROFILE, else the generated one: threads, pinning,
    allocator) per rank; with none it falls back to built-in defaults generated each run. A profile that does not
    load is an error that would stop `hosttune exec`.
    """
    active, prof, error = ctx.load_profile()
    if error:
        return Finding(status="fail", actual=f"{active.describe()}: {error}", expected="a profile that loads",
                       fix=("hosttune profile generate   # rewrites it from the current facts" if active.host_file
                            else f"fix or unset ${names.PROFILE}; hosttune profile list shows the names"))
    if prof is None:
        return Finding(status="warn", actual=f"no generated profile (exec makes {active.base} for the host each run)",
                       expected="present and valid", fix="hosttune profile generate")
    return Finding(status="pass", actual=active.describe(), expected="present and valid")


def check_profile_fresh(ctx: Context) -> Finding:
    """The profile in use was made for this hardware (its fingerprint matches the current facts).

    The fingerprint covers CPU model/counts/flags, NUMA layout, GPUs by PCI address and the allocators found. After
    a hardware change (a GPU swapped, a socket added, jemalloc removed) a generated profile's pinning and thread
    counts are stale. A profile written by hand (no fingerprint) and the built-in default are not judged.
    """
    active, prof, _error = ctx.load_profile()
    if prof is None:
        return Finding(status="skip", actual="no profile that loads (see hosttune.profile)", expected="")
    have = getattr(prof, "fingerprint", None)
    want = ctx.facts.hardware_fingerprint()
    if have is None and not active.host_file:
        return Finding(status="skip", actual=f"{active.describe()} has no fingerprint (not generated for a host)",
                       expected=f"fingerprint {want}")
    if have != want:
        return Finding(status="warn", actual=f"made for other hardware: {active.describe()} ({have})",
                       expected=f"fingerprint {want}", fix="hosttune profile generate   # regenerate for this hardware")
    return Finding(status="pass", actual=f"fingerprint {want}", expected=f"fingerprint {want}")
