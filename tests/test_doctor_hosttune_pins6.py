"""hosttune's own checks word for word (issue 21): the regenerate command (its --base and -o, quoted or left out),
a profile that fails to load, none at all, a fingerprint that matches, differs or is absent
(hosttune.doctor.checks.hosttune)."""

from types import SimpleNamespace
from typing import Any, Optional

import pytest
from _doctorhelp import cpu_host

from hosttune.doctor import Context, run_checks
from hosttune.doctor.catalogue import BY_ID
from hosttune.doctor.checks import hosttune as hosttune_checks
from hosttune.profile import Active


@pytest.mark.parametrize("path,name,command", [
    ("/home/u/.config/hosttune/profile.yaml", None,
     "hosttune profile generate --force -o /home/u/.config/hosttune/profile.yaml"),
    ("/p/x y.yaml", "cpu-inference@host7", "hosttune profile generate --force --base cpu-inference -o '/p/x y.yaml'"),
    (None, "throughput@h", "hosttune profile generate --force"),
    ("rel/p.yaml", "a@b", "hosttune profile generate --force --base a"),
    ("/p", "custom", "hosttune profile generate --force -o /p"),
    ("/p", "x;rm@h", "hosttune profile generate --force -o /p"),
    ("/p", "@h", "hosttune profile generate --force -o /p"),
    ("/p", "a" * 64 + "@h", f"hosttune profile generate --force --base {'a' * 64} -o /p"),
    ("/p", "a" * 65 + "@h", "hosttune profile generate --force -o /p"),
    ("/p", "-x@h", "hosttune profile generate --force -o /p"),
    ("/p\nq", "b@h", "hosttune profile generate --force --base b"),
    ("/p", "b\n@h", "hosttune profile generate --force -o /p"),  # `$` matches before a final newline: fullmatch
])
def test_regenerate(path: Optional[str], name: Optional[str], command: str) -> None:
    assert hosttune_checks.regenerate(path, name) == command


def _run(check_id: str, active: Active, prof: Any, error: str = "") -> Any:
    ctx = Context(facts=cpu_host(), env={}, profile=active, _loaded=(active, prof, error))
    (r,) = run_checks(ctx, checks=[BY_ID[check_id]]).results
    return r


USER = Active("/home/u/.config/hosttune/profile.yaml", "user profile")
ENV = Active("mine", "$HOSTTUNE_PROFILE")


def test_profile_loads_fails_or_is_absent() -> None:
    r = _run("hosttune.profile", USER, None, "line 3: unknown key 'x'")
    assert (r.status, r.actual, r.expected) == ("fail", "/home/u/.config/hosttune/profile.yaml (user profile): line 3: "
                                                        "unknown key 'x'", "a profile that loads")
    assert r.fix == ("hosttune profile generate --force -o /home/u/.config/hosttune/profile.yaml   # rewrites it from "
                     "the current facts")
    r = _run("hosttune.profile", ENV, None, "no profile named mine")
    assert r.fix == "fix or unset $HOSTTUNE_PROFILE; hosttune profile list shows the names"
    r = _run("hosttune.profile", Active(None, "built-in default"), None)
    assert (r.status, r.actual, r.fix) == ("warn", "no generated profile (exec makes throughput for the host each run)",
                                           "hosttune profile generate")
    r = _run("hosttune.profile", USER, SimpleNamespace(fingerprint=None, name="x"))
    assert (r.status, r.actual, r.expected) == ("pass", "/home/u/.config/hosttune/profile.yaml (user profile)",
                                                "present and valid")


def test_profile_fresh() -> None:
    want = cpu_host().hardware_fingerprint()
    r = _run("hosttune.profile_fresh", USER, SimpleNamespace(fingerprint=want, name="throughput@h"))
    assert (r.status, r.actual, r.expected) == ("pass", f"fingerprint {want}", f"fingerprint {want}")
    r = _run("hosttune.profile_fresh", USER, SimpleNamespace(fingerprint="0123", name="cpu-inference@h"))
    assert (r.status, r.actual) == ("warn", "made for other hardware: /home/u/.config/hosttune/profile.yaml "
                                            "(user profile) (0123)")
    assert r.fix == ("hosttune profile generate --force --base cpu-inference -o /home/u/.config/hosttune/profile.yaml"
                     "   # regenerate for this hardware")
    r = _run("hosttune.profile_fresh", Active("rel.yaml", "--profile"), SimpleNamespace(fingerprint="0123", name="x"))
    assert r.fix == "hosttune profile generate -o FILE   # and point $HOSTTUNE_PROFILE at FILE"
    r = _run("hosttune.profile_fresh", ENV, SimpleNamespace(fingerprint=None, name="x"))
    assert (r.status, r.actual, r.expected) == ("skip", "mine ($HOSTTUNE_PROFILE) has no fingerprint (not generated "
                                                        "for a host)", f"fingerprint {want}")
    r = _run("hosttune.profile_fresh", USER, SimpleNamespace(fingerprint=None, name="x"))
    assert (r.status, r.actual) == ("warn", "made for other hardware: /home/u/.config/hosttune/profile.yaml "
                                            "(user profile) (None)")
    r = _run("hosttune.profile_fresh", USER, None, "broken")
    assert (r.status, r.actual) == ("skip", "no profile that loads (see hosttune.profile)")
