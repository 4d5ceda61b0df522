"""The rank side (hosttune/launch/rank.py and its two entries, hosttune/shim.py and launch/hook.py): one failure
rule for every kind of bad plan, and imports that never reach the planner, a profile, YAML, the detector or click.

The rule (rank.py's docstring): tampering or a trust failure refuses the rank (the shim exits 2, the hook ends
the process with 2, one line, the program never runs); a plan that merely does not fit is one warning line and
the program runs. Each case below runs a real process through each entry."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest
from conftest import REPO

from hosttune import trust
from hosttune.launch import handoff, hook, rank
from hosttune.launch.job import prepare
from hosttune.launch.torchrun import shim_argv

PY = sys.executable
RAN = "print('job ran')"


@pytest.fixture(scope="module")
def content() -> Dict[str, Any]:
    """A plain job's handoff content (plans for the foreseen world sizes, 2 among them), planned once."""
    return json.loads(json.dumps(handoff.payload(prepare(["python3", "x.py"]), "m")))


@pytest.fixture
def written() -> Iterator[Callable[[Dict[str, Any]], str]]:
    paths: List[str] = []

    def write(data: Dict[str, Any]) -> str:
        paths.append(handoff.write(data))
        return paths[-1]

    yield write
    for path in paths:
        handoff.remove(path)


def _tampered(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    data = json.loads(json.dumps(content))
    data["plans"]["2"][0] = {"cpus": "all of them"}  # in our own private file, but no plan: not what we wrote
    return write(data)


def _other_rank(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    data = json.loads(json.dumps(content))
    data["plans"]["2"][0] = data["plans"]["2"][1]  # a well-formed plan, but rank 1's
    return write(data)


def _untrusted(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)  # not a private directory: anybody's file could be there
    (shared / "handoff.json").write_text(json.dumps(content))
    return str(shared / "handoff.json")


def _missing(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    path = write(content)
    os.unlink(path)  # $HOSTTUNE_HANDOFF names a file that is not there
    return path


def _not_fitting(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    data = json.loads(json.dumps(content))
    data["plans"]["2"][0]["cpus"] = [4093]  # no such CPU here
    return write(data)


def _unplannable(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    data = json.loads(json.dumps(content))
    data["plans"] = {}  # nothing foreseen: the launcher's planner is asked, and cannot plan from these facts
    data["facts"] = {"cpu": "no such facts"}
    return write(data)


def _malformed_touched(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    data = json.loads(json.dumps(content))
    data["plans"] = {}  # planned again, from the caller's environment: what the launcher touched must be a table
    data["touched"] = ["OMP_NUM_THREADS"]
    return write(data)


def _malformed_planner(content: Dict[str, Any], write: Callable[..., str], tmp_path: Path) -> str:
    data = json.loads(json.dumps(content))
    data["plans"] = {}
    data["planner"] = {"python": ["not", "a", "path"], "root": 7}
    return write(data)


REFUSED = {"tampered": _tampered, "other-ranks-plan": _other_rank, "untrusted-dir": _untrusted,
           "missing": _missing, "malformed-touched": _malformed_touched, "malformed-planner": _malformed_planner}
WARNED = {"not-fitting-cpus": (_not_fitting, "4093"), "re-plan-fails": (_unplannable, "plan not applied")}


def _run(entry: str, path: str, tmp_path: Path) -> "subprocess.CompletedProcess[str]":
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTTUNE_")}
    env.update(HOSTTUNE_HANDOFF=path, HOSTTUNE_LAUNCH_ID="1-abcd", LOCAL_RANK="0", LOCAL_WORLD_SIZE="2",
               PYTHONPATH=str(REPO))
    if entry == "shim":
        argv = [*shim_argv(PY), PY, "-c", RAN]
    else:
        env.update(hook.job_env(env))
        argv = [PY, "-c", RAN]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))


@pytest.mark.parametrize("entry", ["shim", "hook"])
@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_tampering_or_a_trust_failure_refuses_the_rank_in_both_entries(
        entry: str, kind: str, content: Dict[str, Any], written: Callable[..., str], tmp_path: Path) -> None:
    r = _run(entry, REFUSED[kind](content, written, tmp_path), tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == ""  # the program never ran
    (line,) = r.stderr.splitlines()
    assert "rank 0/2" in line and "handoff" in line and line.endswith("rank not started"), line


@pytest.mark.parametrize("entry", ["shim", "hook"])
@pytest.mark.parametrize("kind", sorted(WARNED))
def test_a_plan_that_does_not_fit_is_one_warning_and_the_rank_runs_in_both_entries(
        entry: str, kind: str, content: Dict[str, Any], written: Callable[..., str], tmp_path: Path) -> None:
    make, said = WARNED[kind]
    r = _run(entry, make(content, written, tmp_path), tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "job ran\n"
    (line,) = r.stderr.splitlines()
    assert said in line and "Traceback" not in r.stderr, line


def test_as_root_a_plan_variable_naming_another_users_file_refuses_the_hooks_rank(
        other_user: Any, content: Dict[str, Any], written: Callable[..., str], tmp_path: Path) -> None:
    lib = other_user.write("lib/libevil.so", "not a library", mode=0o755)
    data = json.loads(json.dumps(content))
    data["plans"]["2"][0]["env"]["LD_PRELOAD"] = str(lib)
    r = _run("hook", written(data), tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    (line,) = r.stderr.splitlines()
    assert str(lib) in line and line.endswith("rank not started"), line


@pytest.mark.parametrize("entry", ["shim", "hook"])
def test_as_root_a_planner_python_of_another_user_refuses_the_rank(
        entry: str, other_user: Any, content: Dict[str, Any], written: Callable[..., str], tmp_path: Path) -> None:
    marker = other_user.home / "ran-as-root"
    evil = other_user.write("bin/python3", f"#!/bin/sh\ntouch {marker}\nexec {PY} \"$@\"\n", mode=0o755)
    data = json.loads(json.dumps(content))
    data["plans"] = {}  # nothing foreseen: the planner named in the handoff would be run
    data["planner"] = {"python": str(evil), "root": rank.own_root()}
    r = _run(entry, written(data), tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    (line,) = r.stderr.splitlines()
    assert str(evil) in line and line.endswith("rank not started"), line
    assert not marker.exists()


def test_as_root_a_planner_package_of_another_user_is_untrusted(other_user: Any, content: Dict[str, Any]) -> None:
    other_user.write("hosttune/__init__.py", "")
    data = dict(content, plans={}, planner={"python": PY, "root": str(other_user.home)})
    with pytest.raises(trust.Untrusted, match="planner"):
        rank.setup(data, 0, 2, dict(os.environ))


def test_a_planner_that_hangs_is_one_warning_not_a_hung_rank(
        content: Dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hangs = tmp_path / "python3"
    hangs.write_text("#!/bin/sh\nexec sleep 600\n")  # never answers
    hangs.chmod(0o755)
    monkeypatch.setattr(rank, "REPLAN_TIMEOUT_S", 1.0)
    data = dict(content, plans={}, planner={"python": str(hangs), "root": rank.own_root()})
    if os.geteuid() == 0:
        os.chmod(tmp_path, 0o755)
    got = rank.setup(data, 0, 2, dict(os.environ))
    assert got.plan is None and got.warning is not None and "timed out" in got.warning, got


def test_a_planner_answer_with_a_malformed_plan_is_one_warning(
        content: Dict[str, Any], tmp_path: Path) -> None:
    answers = tmp_path / "python3"
    answers.write_text("#!/bin/sh\ncat >/dev/null; echo '{\"plan\": [1, 2]}'\n")
    answers.chmod(0o755)
    data = dict(content, plans={}, planner={"python": str(answers), "root": rank.own_root()})
    if os.geteuid() == 0:
        os.chmod(tmp_path, 0o755)
    got = rank.setup(data, 0, 2, dict(os.environ))
    assert got.plan is None and got.warning is not None and "malformed" in got.warning, got


def test_a_handed_plan_comes_back_as_the_wire_type(content: Dict[str, Any]) -> None:
    plan = rank.handed(content, 1, 2)
    assert plan is not None and type(plan).__module__ == "hosttune.rankplan"
    assert plan.to_dict() == content["plans"]["2"][1]
    assert rank.handed(content, 0, 97) is None  # a world size nobody foresaw: planned again
    with pytest.raises(trust.Untrusted):
        rank.handed(dict(content, plans={"2": [{"cpus": 1}, None]}), 0, 2)


def test_a_world_size_nobody_foresaw_is_planned_by_the_launchers_planner(content: Dict[str, Any]) -> None:
    env = dict(os.environ)
    plans = [rank.plan_for(content, r, 3, env)[0] for r in range(3)]
    assert [(p.local_rank, p.local_world_size) for p in plans] == [(0, 3), (1, 3), (2, 3)]
    assert all(set(p.cpus) <= os.sched_getaffinity(0) for p in plans)


# What the rank side may never load: the planner, profiles, YAML, the detector, click (issue 23's "done when").
FORBIDDEN = ("hosttune.plan", "hosttune.profile", "hosttune.yamlio", "hosttune.detect", "hosttune.facts", "yaml",
             "click")
LOADS = """
import json, os, sys
import hosttune.shim, hosttune.launch.hook, hosttune.launch.rank, hosttune.launch.handoff, hosttune.rankplan
from hosttune.launch import hook, rank
env = dict(os.environ, LOCAL_RANK="1", LOCAL_WORLD_SIZE="2", HOSTTUNE_LAUNCH_ID="1-abcd")
role = hook.run(env, ["rank.py"])  # the hook's whole rank path on a handed plan (this process rebinds itself)
data = hosttune.launch.handoff.read(env)
setup = rank.setup(data, 1, 2, env)
rank.checked_env(setup.plan.env, data, env)
print(json.dumps({"role": role, "modules": sorted(sys.modules)}))
"""


def test_the_rank_side_loads_no_planner_profile_yaml_detector_or_click(
        content: Dict[str, Any], written: Callable[..., str], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOSTTUNE_")}
    env.update(HOSTTUNE_HANDOFF=written(content), PYTHONPATH=str(REPO))
    r = subprocess.run([PY, "-c", LOADS], env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["role"] == "rank"
    loaded = [m for m in out["modules"] if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert loaded == []
    assert "hosttune.launch.job" not in out["modules"] and "hosttune.launch.replan" not in out["modules"]
