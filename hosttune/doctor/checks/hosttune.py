"""Checks of hosttune itself: the profile in use loads, and a generated one was made for this hardware.

"Which profile is in use" is `hosttune.profile.locate_active`, the answer `hosttune exec` gets from the same
environment: $HOSTTUNE_PROFILE, else the user's generated profile, else /etc's, else the built-in default.
"""

import re
from typing import Optional

from hosttune.doctor.context import Context
from hosttune.doctor.fixes import shell_path
from hosttune.doctor.model import Finding
from hosttune.policy import names

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # a profile name, safe in a shell command as it is


def regenerate(path: Optional[str], name: Optional[str] = None) -> str:
    """The command that rewrites the host's generated profile at `path` in place: --force, since the file exists
    (`generate` refuses to replace a file without it), and -o, so it is this file, whoever runs it; the base it was
    made from ("throughput@host" -> throughput) kept."""
    base = (name or "").split("@")[0] if name and "@" in name else ""
    quoted = shell_path(path)
    keep_base = f" --base {base}" if _NAME.fullmatch(base) and base != "throughput" else ""
    return f"hosttune profile generate --force{keep_base}" + (f" -o {quoted}" if quoted else "")


def check_profile(ctx: Context) -> Finding:
    """The profile `hosttune exec` would use is configured and loads.

    `hosttune exec` applies the profile in use ($HOSTTUNE_PROFILE, else the generated one: threads, pinning,
    allocator) per rank; with none it falls back to built-in defaults generated each run. A profile that does not
    load is an error that would stop `hosttune exec`.
    """
    active, prof, error = ctx.load_profile()
    if error:
        return Finding(status="fail", actual=f"{active.describe()}: {error}", expected="a profile that loads",
                       fix=(f"{regenerate(active.ref)}   # rewrites it from the current facts" if active.host_file
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
                       expected=f"fingerprint {want}",
                       fix=(f"{regenerate(active.ref, getattr(prof, 'name', None))}   # regenerate for this hardware"
                            if shell_path(active.ref) else "hosttune profile generate -o FILE   # and point "
                            f"${names.PROFILE} at FILE"))
    return Finding(status="pass", actual=f"fingerprint {want}", expected=f"fingerprint {want}")
