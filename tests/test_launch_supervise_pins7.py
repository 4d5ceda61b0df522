"""Pins for hosttune.launch.supervise (issue 21, session 9 practice rounds): what a plain job's process is given.

A plain job is bound and exec'd by supervise.run, which a pytest worker must not do: the launch runs in a child
interpreter (the driver) on facts built from that process's own CPUs, with --no-bind (no binding needed to see the
environment), and the job prints its whole environment as JSON. Every variable of the rank's plan, the launch id
and the rank variables must reach it. The hook's handoff (_hook_handoff) is checked in-process: when the per-rank
hook directory is refused, no handoff is written and the job's environment is left as it was."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict

import pytest

import hosttune
from hosttune import trust
from hosttune.facts import Cpu, Facts
from hosttune.launch import hook, job, supervise
from hosttune.policy import names

REPO = str(Path(hosttune.__file__).resolve().parent.parent)

JOB = "import json, os; print(json.dumps(dict(os.environ)))"

DRIVER = textwrap.dedent("""
    import json, os, sys
    from hosttune.facts import Cpu, Facts
    from hosttune.launch import job, supervise

    profile, *command = sys.argv[1:]
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    facts = Facts(cpu=Cpu(logical=len(cpus), physical=len(cpus), online=cpus, allowed_cpus=cpus,
                          cores=tuple((c,) for c in cpus)))
    launch = job.prepare(command, profile=profile, facts=facts, environ=dict(os.environ), measured=False,
                         no_bind=True)
    assert launch.kind == "plain", launch.to_dict()
    sys.stderr.write("PLAN " + json.dumps(launch.ranks[0].env) + "\\n")
    sys.stderr.flush()
    supervise.run(launch)  # execs: never returns
""")


def _facts() -> Facts:
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    return Facts(cpu=Cpu(logical=len(cpus), physical=len(cpus), online=cpus, allowed_cpus=cpus,
                         cores=tuple((c,) for c in cpus)))


@pytest.mark.integration
def test_a_plain_job_gets_every_variable_of_its_plan_and_the_rank_variables(tmp_path: Path) -> None:
    profile = tmp_path / "threads.yaml"
    profile.write_text("threads: 1\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", names.LAUNCH_ID, names.LOCAL_RANK, names.LOCAL_WORLD_SIZE):
        env.pop(key, None)
    done = subprocess.run([sys.executable, "-c", DRIVER, str(profile), sys.executable, "-c", JOB],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout, done.stderr)
    plan_line = [line for line in done.stderr.splitlines() if line.startswith("PLAN ")]
    assert len(plan_line) == 1, done.stderr
    plan_env: Dict[str, str] = json.loads(plan_line[0][len("PLAN "):])
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert plan_env.get("OMP_NUM_THREADS") == "1", plan_env  # the profile's value is in the plan ...
    assert {k: got.get(k) for k in plan_env} == plan_env  # ... and every planned variable reaches the job
    assert got[names.LOCAL_RANK] == "0" and got[names.LOCAL_WORLD_SIZE] == "1", got
    assert got[names.LAUNCH_ID].split("-")[0].isdigit(), got[names.LAUNCH_ID]


def test_a_refused_hook_directory_means_no_handoff_and_an_untouched_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    # As root the hook directory must be root's alone: one that others can write is refused (a non-root run is
    # told it is root, and then its own directory is not root's: refused as well).
    loose = tmp_path / "hookdir"
    loose.mkdir()
    (loose / "sitecustomize.py").write_text("")
    os.chmod(loose, 0o777)
    monkeypatch.setattr(hook, "HOOK_DIR", str(loose))
    monkeypatch.setattr(trust, "is_root", lambda: True)
    monkeypatch.setattr(hook, "_REFUSED", set())
    assert hook.job_env(dict(os.environ)) == {}
    env = {"PATH": "/usr/bin", "KEEP": "1"}
    before = dict(env)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    environ = {"XDG_RUNTIME_DIR": str(runtime), "HOSTTUNE_RUNTIME_DIR": str(runtime)}
    launch = job.prepare(["true"], facts=_facts(), environ=environ, measured=False, no_bind=True)
    assert supervise._hook_handoff(launch, "123-abcd", environ, env) is None
    assert env == before
    assert list(runtime.iterdir()) == []
    capsys.readouterr()
