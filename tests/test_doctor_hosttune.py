"""doctor's hosttune checks (hosttune/doctor/checks/hosttune.py): the profile in use is present, valid and made for
this hardware, on real profile files, and it is the one `$HOSTTUNE_PROFILE` names."""

from pathlib import Path

from _doctorhelp import R, cpu_host, doctor_json, in_use, profile_env, run_one, same, table_test

# (check id, host builder, change, context kwargs, expected status, text that must be in actual or fix)
CASES = [
    ("hosttune.profile", cpu_host, same, {}, "warn", "hosttune profile generate"),
    ("hosttune.profile", cpu_host, same, {"live": False}, "skip", "captured"),
    ("hosttune.profile_fresh", cpu_host, same, {}, "skip", "no profile"),
]


test_check = table_test(CASES)  # one case per row: status, and the text in actual/fix/expected


def test_profile_present_valid_and_fresh(tmp_path: Path) -> None:
    from hosttune import profile

    facts = cpu_host()
    path = profile.write(profile.generate(facts), tmp_path / "profile.yaml", force=True)
    assert run_one("hosttune.profile", facts, profile=in_use(path)).status == "pass"
    fresh = run_one("hosttune.profile_fresh", facts, profile=in_use(path))
    assert fresh.status == "pass", fresh
    changed = R(facts, cpu=R(facts.cpu, model="EPYC 9654", logical=16, physical=16))
    stale = run_one("hosttune.profile_fresh", changed, profile=in_use(path))
    assert stale.status == "warn" and "hosttune profile generate" in stale.fix


def test_broken_profile_fails_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text("threads: [1, 2\n")
    f = run_one("hosttune.profile", cpu_host(), profile=in_use(path))
    assert f.status == "fail" and str(path) in f.actual
    path.write_text("allocator: jemalloc\nthreadz: 4\n")
    f = run_one("hosttune.profile", cpu_host(), profile=in_use(path))
    assert f.status == "fail" and "threadz" in f.actual


def test_doctor_uses_the_profile_named_by_hosttune_profile(tmp_path: Path) -> None:
    env = profile_env(tmp_path)
    mine = tmp_path / "one-thread.yaml"
    mine.write_text("threads: 1\n")
    env["HOSTTUNE_PROFILE"] = str(mine)
    by = doctor_json("--only", "hosttune", env=env)
    assert by["hosttune.profile"]["status"] == "pass", by["hosttune.profile"]
    assert str(mine) in by["hosttune.profile"]["actual"] and "$HOSTTUNE_PROFILE" in by["hosttune.profile"]["actual"]
    # no generated profile at all, only $HOSTTUNE_PROFILE: still a profile in use (doctor used to warn)
    Path(env["XDG_CONFIG_HOME"], "hosttune", "profile.yaml").unlink()
    assert doctor_json("--only", "hosttune", env=env)["hosttune.profile"]["status"] == "pass"
    broken = tmp_path / "broken.yaml"
    broken.write_text("threads: many\n")
    env["HOSTTUNE_PROFILE"] = str(broken)
    f = doctor_json("--only", "hosttune", env=env)["hosttune.profile"]
    assert f["status"] == "fail" and str(broken) in f["actual"] and "HOSTTUNE_PROFILE" in f["fix"], f
