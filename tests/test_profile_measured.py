"""Measured overlays (hosttune/profile/measured.py): autotune's winner, keyed by host and job, applied by exec."""

import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional

import pytest

from hosttune.profile import measured
from tests.conftest import run_cli

JOB = [sys.executable, "train.py", "--batch", "64"]


def _facts() -> Any:
    from hosttune import detect

    return detect.collect(Path("/"), probe_torch=False)


def _write(command: List[str], fingerprint: Optional[str] = None, path: Optional[Path] = None) -> Path:
    """An overlay as autotune writes it: the default plan with OMP_WAIT_POLICY=PASSIVE, measured x1.25."""
    from hosttune import profile

    facts = _facts()
    default = profile.active(None, facts)
    winner = dataclasses.replace(default, env={**default.env, "OMP_WAIT_POLICY": "PASSIVE"})
    top = measured.overlay(default, winner, command=command, fingerprint=fingerprint or facts.hardware_fingerprint(),
                           candidate="omp-passive", ratio=1.25, lo=1.2, hi=1.3, rounds=4)
    return profile.write(top, path or measured.save_path(command), force=True)


def _dry(command: List[str], *opts: str) -> Any:
    res = run_cli(["exec", "--dry-run", "--json", *opts, "--", *command])
    plan = json.loads(res.stdout) if res.returncode == 0 else None
    return res, plan


def _policy(plan: Any) -> Optional[str]:
    return plan["ranks"][0]["env"].get("OMP_WAIT_POLICY")


def test_the_key_normalises_run_names_and_keeps_what_shapes_the_work() -> None:
    a = ["/usr/bin/torchrun", "--nproc_per_node=2", "--master_port=29500", "--rdzv-id", "7", "train.py", "--bs", "8"]
    b = ["torchrun", "--nproc-per-node", "2", "--master-port", "29611", "--rdzv_id=9", "train.py", "--bs", "8"]
    assert measured.job_key(a) == measured.job_key(b)
    assert measured.job_key(a) != measured.job_key([*b[:-1], "16"])  # another batch size: another job
    assert measured.job_key(a) != measured.job_key(["torchrun", "--nproc-per-node", "4", "train.py", "--bs", "8"])


def test_the_engines_run_directory_names_a_run_not_a_job() -> None:
    """`--run-dir` is where a run writes (autotune's engine trials each get a scratch one), not the work it does."""
    job = ["hosttune", "train", "--preset", "gpt-tiny", "--set", "steps=100"]
    assert measured.job_key([*job, "--run-dir", "runs/a"]) == measured.job_key([*job, "--run-dir=runs/b"])
    assert measured.job_key([*job, "--run-dir", "runs/a"]) == measured.job_key(job)
    assert measured.job_key(job) != measured.job_key(["hosttune", "train", "--preset", "resnet-tiny"])


def test_a_tcmalloc_settings_overlay_reaches_the_ranks() -> None:
    """A winning tcmalloc candidate (allocator + one TCMALLOC_* setting) is laid over the default and exported."""
    from hosttune import profile
    from hosttune.autotune import candidates as cands

    facts = _facts()
    if not (facts.allocators.tcmalloc or facts.allocators.tcmalloc_minimal):
        pytest.skip("no tcmalloc on this host")
    default = profile.active(None, facts)
    winner = cands.Candidate("tcmalloc-norelease", "test", {"allocator": "tcmalloc",
                                                            "tcmalloc": cands.TCMALLOC_NO_RELEASE}).apply(default)
    top = measured.overlay(default, winner, command=JOB, fingerprint=facts.hardware_fingerprint(),
                           candidate="tcmalloc-norelease", ratio=1.2, lo=1.1, hi=1.3, rounds=8)
    assert top.reasons["measured.changes"].split(",") == ["allocator", "tcmalloc.TCMALLOC_RELEASE_RATE"]
    profile.write(top, measured.save_path(JOB), force=True)
    res, plan = _dry(JOB)
    assert res.returncode == 0, res.stderr
    env = plan["ranks"][0]["env"]
    assert env.get("TCMALLOC_RELEASE_RATE") == "0" and "tcmalloc" in env.get("LD_PRELOAD", ""), env


def test_an_overlay_is_applied_to_the_same_job_and_said_once() -> None:
    path = _write(JOB)
    res, plan = _dry(JOB)
    assert res.returncode == 0, res.stderr
    assert _policy(plan) == "PASSIVE"
    lines = [line for line in res.stderr.splitlines() if "measured overlay" in line]
    assert len(lines) == 1 and "applied" in lines[0] and "omp-passive" in lines[0] and str(path) in lines[0]
    assert "x1.250" in lines[0] and "env.OMP_WAIT_POLICY" in lines[0]


def test_another_jobs_overlay_is_not_applied() -> None:
    _write([sys.executable, "other.py", "--batch", "64"])
    res, plan = _dry(JOB)
    assert res.returncode == 0, res.stderr
    assert _policy(plan) is None and "measured" not in res.stderr


def test_another_hosts_overlay_is_stale_not_applied_and_said() -> None:
    path = _write(JOB, fingerprint="0123456789abcdef")
    res, plan = _dry(JOB)
    assert res.returncode == 0, res.stderr
    assert _policy(plan) is None
    lines = [line for line in res.stderr.splitlines() if "measured overlay" in line]
    assert len(lines) == 1 and "not applied: stale" in lines[0] and str(path) in lines[0]


def test_no_measured_ignores_it() -> None:
    _write(JOB)
    res, plan = _dry(JOB, "--no-measured")
    assert res.returncode == 0, res.stderr
    assert _policy(plan) is None and "measured" not in res.stderr


def test_an_explicit_profile_runs_as_written() -> None:
    """autotune's trials run `exec --profile FILE`: a saved overlay must not leak into them."""
    _write(JOB)
    res, plan = _dry(JOB, "--profile", "throughput")
    assert res.returncode == 0, res.stderr
    assert _policy(plan) is None and "measured" not in res.stderr


def test_profile_show_lists_the_overlay_with_its_provenance() -> None:
    path = _write(JOB)
    res = run_cli(["profile", "show"])
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"measured overlay  {path}" in out
    for want in ("omp-passive", "x1.250 the default (95% CI 1.200-1.300)", "env.OMP_WAIT_POLICY", "matches this host",
                 "train.py --batch 64"):
        assert want in out, out
    res = run_cli(["profile", "show", "--json"])
    [o] = json.loads(res.stdout)["measured"]
    assert o["candidate"] == "omp-passive" and o["ratio"] == "1.250" and o["rounds"] == "4" and o["date"]
    assert o["matches_host"] is True


def test_profile_show_says_a_stale_overlay_is_stale() -> None:
    _write(JOB, fingerprint="0123456789abcdef")
    res = run_cli(["profile", "show"])
    assert res.returncode == 0, res.stderr
    assert "STALE" in res.stdout and "not applied" in res.stdout


def test_as_root_another_users_overlay_is_refused(other_user: Any, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """Root's config directory pointed at another user's (sudo keeping XDG_CONFIG_HOME): their overlay would set
    the environment of root's job. It is refused like a profile would be: one line, exit 2, nothing runs."""
    text_file = _write(JOB, path=tmp_path / "o.yaml")
    key = measured.job_key(JOB)
    other_user.write(f".config/hosttune/measured/{key}.yaml", text_file.read_text())
    monkeypatch.setenv("XDG_CONFIG_HOME", str(other_user.home / ".config"))
    res, plan = _dry(JOB)
    assert res.returncode == 2 and plan is None
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "measured overlay refused" in lines[0] and "Traceback" not in res.stderr
    res, plan = _dry(JOB, "--no-measured")
    assert res.returncode == 0 and _policy(plan) is None, res.stderr


def test_as_root_an_overlay_in_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the root trust rule applies to root")
    path = _write(JOB)
    path.parent.chmod(0o777)
    res, plan = _dry(JOB)
    assert res.returncode == 2 and plan is None and "measured overlay refused" in res.stderr


def test_autotune_save_writes_the_overlay_the_next_exec_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    """report.save with a real session (no trials): the winner lands where exec finds it, for this job only."""
    from hosttune.autotune import metric, report, search, session, stats

    spec = metric.compile_metric(r"([0-9.]+) samples/s")
    s = session.prepare(JOB, spec, 60.0, only=["omp-passive"])
    try:
        w = stats.Summary("omp-passive", 4, 1.25, 1.2, 1.3)
        saved = report.save(s, search.Result(["omp-passive"]), w, None)
    finally:
        s.close()
    assert saved == measured.save_path(JOB)
    res, plan = _dry(JOB)
    assert res.returncode == 0 and _policy(plan) == "PASSIVE", res.stderr
    assert "measured overlay applied: omp-passive" in res.stderr
    res, plan = _dry([sys.executable, "train.py", "--batch", "128"])
    assert _policy(plan) is None


def test_autotune_output_writes_a_whole_profile_that_exec_profile_runs(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    """`autotune --output FILE` through the real CLI, in-process: the winner goes to FILE as a whole profile (for exec
    --profile), not to the job's measured overlay. Each trial's score is read from the candidate's own profile file
    (PASSIVE twice as fast), so the search, the statistics and the save are the real ones; only the job is not
    started (the real trials run in test_autotune.py::test_real_autotune_finds_saves_and_the_next_exec_applies_the_
    winner, which saves the overlay the next exec applies; issue 21: one real autotune run, not two)."""
    from hosttune import profile
    from hosttune.autotune import runner, search

    def trial(self: Any, name: str, command: Any = None, environ: Any = None) -> search.Trial:
        policy = profile.load(str(self.profiles[name])).env.get("OMP_WAIT_POLICY")
        return search.Trial(name, 200.0 if policy == "PASSIVE" else 100.0, 1.0)

    monkeypatch.setattr(runner.ExecRunner, "_run", trial)
    scratch = tmp_path / "tmp"  # the session's scratch profiles (tempfile.mkdtemp), removed after
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    out = tmp_path / "winner.yaml"
    res = run_cli(["autotune", "--budget", "10m", "--candidates", "omp-passive", "--output", str(out), "--metric",
                   r"([0-9.]+) samples/s", "--", *JOB])
    assert res.returncode == 0, res.stderr
    assert "winner: omp-passive, x2.000" in res.stdout, res.stdout
    assert f"saved: {out}\nuse it: hosttune exec --profile {out} -- ..." in res.stdout, res.stdout
    text = out.read_text()
    assert "OMP_WAIT_POLICY: PASSIVE" in text and "measured by hosttune autotune" in text
    assert not measured.save_path(JOB).exists()  # --output instead of the overlay, not beside it
    assert list(scratch.iterdir()) == []
    dry, plan = _dry(JOB)
    assert _policy(plan) is None and "measured" not in dry.stderr  # the plain exec of the job: the default
    dry, plan = _dry(JOB, "--profile", str(out))
    assert dry.returncode == 0 and _policy(plan) == "PASSIVE", dry.stderr


@pytest.mark.parametrize("bad", ["env", "reasons", "provenance", "tcmalloc", "fingerprint", "chain",
                                 "dataloader.bogus", "env.", "bogus.X"])
def test_an_overlay_naming_an_unknown_change_is_refused_in_one_line(bad: str) -> None:
    """Was: `env`/`reasons`/`provenance`/`tcmalloc` (no dot) a TypeError from dataclasses.replace (multiple values),
    any other dotless field (`fingerprint`, `chain`) a TypeError, `dataloader.bogus` an AttributeError: exec printed
    a traceback. Now the overlay is refused: one line naming the file and the key, exit 2."""
    from hosttune import profile
    from hosttune.profile.load import load

    path = _write(JOB)
    top = load(str(path))
    reasons = {**top.reasons, "measured.changes": f"env.OMP_WAIT_POLICY,{bad}"}
    profile.write(dataclasses.replace(top, reasons=reasons), path, force=True)
    res, _plan = _dry(JOB)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and repr(bad) in lines[0], res.stderr
