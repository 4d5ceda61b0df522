"""doctor in a fleet: --fail-on, --skip, --explain --json, the --npd exit codes, and --slurm draining and resuming a
node through an `scontrol` on PATH (a stand-in that keeps the node's state in a file, answering in Slurm 22.05's
`scontrol -o show node` format; tests/test_slurm_real.py does the same against a real slurmctld/slurmd)."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pytest
from _doctorhelp import synthetic_root
from conftest import run_cli

from hosttune.detect.hostio import HostIO
from hosttune.doctor import Report, Result, fleet

REPO = Path(__file__).resolve().parents[1]

# A real line from Debian 12's Slurm 22.05.8 (`scontrol -o show node vm` after a drain), reason and all.
SHOW_NODE_2205 = (
    "NodeName=vm Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.75 AvailableFeatures=(null) "
    "ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8 OS=Linux 6.1.0 #1 SMP  "
    "RealMemory=1000 AllocMem=0 FreeMem=21993 Sockets=1 Boards=1 State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 "
    "Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  BootTime=2026-11-30T21:55:30 "
    "SlurmdStartTime=2026-12-01T00:26:31 LastBusyTime=2026-12-01T00:26:31 CfgTRES=cpu=2,mem=1000M,billing=2 "
    "AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=hosttune: x: y z [root@2026-12-01T00:26:37]"
)


def res(check_id: str, status: str, actual: str = "") -> Result:
    return Result(check_id, check_id.split(".")[0], status, "title", "", actual, "")


def hosttune(*args: str, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", *args], capture_output=True, text=True,
                          env=env, timeout=120, cwd=REPO)


# ---- the verdict --------------------------------------------------------------------------------------------------
def test_problems_put_failures_first_and_fail_on_sets_the_exit_code() -> None:
    report = Report((res("os.thp", "warn", "always"), res("storage.shm", "fail", "64 MiB"), res("os.smt", "pass")))
    assert [r.id for r in report.problems("warn")] == ["storage.shm", "os.thp"]
    assert [r.id for r in report.problems("fail")] == ["storage.shm"]
    assert report.exit_code == 1 and report.exit_code_at("warn") == 1
    warn_only = Report((res("os.thp", "warn", "always"),))
    assert warn_only.exit_code_at("fail") == 0 and warn_only.exit_code_at("warn") == 1
    with pytest.raises(ValueError):
        report.problems("skip")


def test_verdict_line_names_the_first_problem_and_counts_the_rest() -> None:
    report = Report((res("os.thp", "warn", "always"), res("storage.shm", "fail", "64 MiB\n\x1b[2Jmounted")))
    v = fleet.verdict(report, "warn")
    assert not v.healthy and v.line == "hosttune: storage.shm: 64 MiB \\x1b[2Jmounted (+1 more)"
    assert fleet.verdict(report, "fail").line == "hosttune: storage.shm: 64 MiB \\x1b[2Jmounted"
    long = Report((res("nvidia.ecc_errors", "fail", "GPU0 " * 60),))
    line = fleet.verdict(long, limit=fleet.NPD_MAX_OUTPUT).line
    assert len(line) == fleet.NPD_MAX_OUTPUT and line.startswith("hosttune: nvidia.ecc_errors: GPU0")
    assert line.endswith("...")
    ok = fleet.verdict(Report((res("os.thp", "warn", "always"), res("os.smt", "pass"))), "fail")
    assert ok.healthy and not ok.unknown and ok.line == "hosttune: ok: 1 pass, 1 warn, 0 skip"


def test_npd_status_codes() -> None:
    crashed = Report((res("os.thp", "skip", "check crashed: KeyError: 'x'"), res("os.smt", "pass")))
    assert fleet.npd_exit(fleet.verdict(crashed)) == fleet.NPD_UNKNOWN == 2
    assert fleet.npd_exit(fleet.verdict(Report((res("os.smt", "pass"),)))) == fleet.NPD_OK == 0
    assert fleet.npd_exit(fleet.verdict(Report((res("os.smt", "fail", "x"),)))) == fleet.NPD_NONOK == 1
    # a crashed check never drains a node on its own (it is hosttune's bug, not the node's)
    assert fleet.verdict(crashed).healthy


def test_parse_show_node_of_slurm_22_05() -> None:
    node = fleet.parse_show_node(SHOW_NODE_2205)
    assert node == fleet.SlurmNode("vm", "IDLE+DRAIN", "hosttune: x: y z") and node.ours and node.offline
    idle = fleet.parse_show_node(SHOW_NODE_2205.replace("IDLE+DRAIN", "IDLE").split(" Reason=")[0])
    assert idle is not None and idle.reason == "" and not idle.offline and not idle.ours
    admin = fleet.parse_show_node(SHOW_NODE_2205.replace("hosttune: x: y z", "disk swap, ticket 12"))
    assert admin is not None and admin.reason == "disk swap, ticket 12" and not admin.ours
    assert fleet.parse_show_node("Node vm not found\n") is None


# ---- the command line ---------------------------------------------------------------------------------------------
@pytest.fixture
def bad_root(tmp_path: Path) -> Path:
    """A captured host with a 64 MiB /dev/shm (storage.shm fails) in a 1-CPU cgroup of 4 CPUs (cpu.cgroup_limit
    warns)."""
    return synthetic_root(tmp_path / "bad", {
        "proc/self/mountinfo": "22 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=65536k\n"
                               "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "proc/self/cgroup": "0::/docker/abc\n",
        "sys/fs/cgroup/docker/abc/cpu.max": "100000 100000\n",
    })


def test_fail_on_and_skip(bad_root: Path) -> None:
    """In-process (click's runner gives the command's exit status; the real process's: test_npd_line_and_exit_codes)
    on a captured root: nothing live is measured (issue 21: a `python -m hosttune` start each)."""
    base = ["doctor", "--root", str(bad_root), "--json"]
    cpu = run_cli([*base, "--only", "cpu"])
    by = {f["id"]: f for f in json.loads(cpu.stdout)["findings"]}
    assert by["cpu.cgroup_limit"]["status"] == "warn"
    assert cpu.returncode == 0
    assert run_cli([*base, "--only", "cpu", "--fail-on", "warn"]).returncode == 1
    assert run_cli([*base, "--only", "storage"]).returncode == 1
    done = run_cli([*base, "--only", "storage", "--skip", "storage.shm"])
    assert done.returncode == 0, done.stdout
    shm = {f["id"]: f for f in json.loads(done.stdout)["findings"]}["storage.shm"]
    assert shm["status"] == "skip" and "--skip" in shm["actual"]
    table = run_cli(["doctor", "--root", str(bad_root), "--only", "storage", "--skip", "storage.shm"])
    assert "SKIP  storage.shm" in table.stdout and "not run (--skip)" in table.stdout


@pytest.mark.parametrize("args,message", [
    (["--skip", "storage.shmm"], "--skip: no check 'storage.shmm'; did you mean storage.shm"),
    (["--skip", "os.thp", "--skip", "nonsense"], "--skip: no check 'nonsense'"),
    (["--fail-on", "skip"], "--fail-on"),
    (["--slurm", "--npd"], "--slurm and --npd: choose one"),
    (["--slurm", "--json"], "--json and --slurm: choose one"),
    (["--slurm", "--root", "/"], "--slurm and --root"),
    (["--slurm", "--deep"], "--slurm and --deep"),
])
def test_bad_fleet_usage_exits_2(args: List[str], message: str) -> None:
    done = run_cli(["doctor", *args])  # in-process: all of these stop before anything is detected
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_explain_json() -> None:
    done = run_cli(["doctor", "--explain", "os.thp", "--json"])
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["id"] == "os.thp" and data["group"] == "os" and "khugepaged" in data["explain"]
    assert run_cli(["doctor", "--explain", "os.thpp", "--json"]).returncode == 2


def test_npd_line_and_exit_codes(bad_root: Path) -> None:
    base = ["doctor", "--npd", "--root", str(bad_root)]
    done = hosttune(*base, "--only", "storage")
    assert done.returncode == 1 and done.stdout.count("\n") == 1
    assert done.stdout.startswith("hosttune: storage.shm: ") and len(done.stdout.rstrip("\n")) <= 80
    ok = hosttune(*base, "--only", "cpu")
    assert ok.returncode == 0 and ok.stdout.startswith("hosttune: ok: "), ok.stdout
    assert hosttune(*base, "--only", "cpu", "--fail-on", "warn").returncode == 1


# ---- --slurm against a stand-in scontrol ---------------------------------------------------------------------------
FAKE_SCONTROL = r'''#!{python}
"""scontrol stand-in: `-o show node NAME` and `update nodename=NAME state=drain|resume [reason=...]` on a JSON state
file, answering like Slurm 22.05; every call is appended to calls.log."""
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
state_file = os.path.join(here, "node.json")
node = json.load(open(state_file))
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
args = sys.argv[1:]
if args[:3] == ["-o", "show", "node"]:
    if args[3] != node["name"]:
        print("Node %s not found" % args[3]); sys.exit(1)
    reason = " Reason=%s [root@2026-12-01T00:26:37]" % node["reason"] if node["reason"] else ""
    print("NodeName=%s Arch=x86_64 CPUTot=2 State=%s ThreadsPerCore=1 Partitions=debug%s"
          % (node["name"], node["state"], reason))
elif args[0] == "update":
    kv = dict(a.split("=", 1) for a in args[1:])
    if kv["state"] == "drain":
        node["state"], node["reason"] = "IDLE+DRAIN", kv["reason"]
    elif kv["state"] == "resume":
        node["state"], node["reason"] = "IDLE", ""
    json.dump(node, open(state_file, "w"))
else:
    sys.exit(2)
'''


class FakeSlurm:
    def __init__(self, base: Path) -> None:
        self.bin = base / "slurm-bin"
        self.bin.mkdir()
        script = self.bin / "scontrol"
        script.write_text(FAKE_SCONTROL.replace("{python}", sys.executable))
        script.chmod(0o755)
        self.set("IDLE", "")

    def set(self, state: str, reason: str) -> None:
        (self.bin / "node.json").write_text(json.dumps({"name": "node7", "state": state, "reason": reason}))

    @property
    def node(self) -> Dict[str, str]:
        return json.loads((self.bin / "node.json").read_text())  # type: ignore[no-any-return]

    def calls(self) -> List[List[str]]:
        log = self.bin / "calls.log"
        return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def slurm_env(tmp_path: Path) -> Dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{tmp_path / 'slurm-bin'}:/usr/sbin:/usr/bin:/sbin:/bin"
    env["SLURMD_NODENAME"] = "node7"  # what slurmd sets for its HealthCheckProgram
    env["HOSTTUNE_PROFILE"] = str(tmp_path / "p.yaml")
    (tmp_path / "p.yaml").write_text("threads: 1\n")
    return env


def test_slurm_drains_resumes_and_leaves_an_admins_drain_alone(tmp_path: Path, slurm_env: Dict[str, str]) -> None:
    slurm = FakeSlurm(tmp_path)
    profile = tmp_path / "p.yaml"

    def check() -> Any:
        """In-process (click's runner; issue 21): the drain/resume decisions, each against the stand-in scontrol on
        slurm_env's PATH. The real process: test_slurm_with_a_failing_scontrol_still_prints_the_line."""
        return run_cli(["doctor", "--slurm", "--only", "hosttune"], env=slurm_env)

    done = check()
    assert done.returncode == 0 and done.stdout.startswith("hosttune: ok: ") and done.stdout.count("\n") == 1
    assert slurm.node["state"] == "IDLE" and not [c for c in slurm.calls() if c[0] == "update"]

    profile.write_text("threads: many\n")  # the profile in use no longer loads: hosttune.profile fails
    done = check()
    line = done.stdout.rstrip("\n")
    assert done.returncode == 1 and line.startswith("hosttune: hosttune.profile: ") and str(profile) in line
    assert slurm.node == {"name": "node7", "state": "IDLE+DRAIN", "reason": line}
    assert slurm.calls()[-1] == ["update", "nodename=node7", "state=drain", f"reason={line}"]
    assert "drained node7" in done.stderr

    n = len(slurm.calls())
    assert check().returncode == 1  # still broken: already drained with this reason, nothing to update
    assert [c[0] for c in slurm.calls()[n:]] == ["-o"]

    profile.write_text("threads: 1\n")
    done = check()
    assert done.returncode == 0 and slurm.node["state"] == "IDLE" and "resumed node7" in done.stderr
    assert slurm.calls()[-1] == ["update", "nodename=node7", "state=resume"]

    # an admin's drain is never resumed, nor its reason overwritten
    slurm.set("IDLE+DRAIN", "disk swap, ticket 12")
    assert check().returncode == 0 and slurm.node["reason"] == "disk swap, ticket 12"
    profile.write_text("threads: many\n")
    done = check()
    assert done.returncode == 1 and slurm.node == {"name": "node7", "state": "IDLE+DRAIN",
                                                   "reason": "disk swap, ticket 12"}
    assert "left alone" in done.stderr
    slurm.set("DOWN+NOT_RESPONDING", "Not responding")
    assert check().returncode == 1 and slurm.node["state"] == "DOWN+NOT_RESPONDING"


def test_slurm_with_a_failing_scontrol_still_prints_the_line(tmp_path: Path, slurm_env: Dict[str, str]) -> None:
    broken = tmp_path / "slurm-bin"
    broken.mkdir()
    (broken / "scontrol").write_text("#!/bin/sh\necho 'slurm_load_node error: Unable to contact slurm controller "
                                     "(connect failure)' >&2\nexit 1\n")
    (broken / "scontrol").chmod(0o755)
    (tmp_path / "p.yaml").write_text("threads: many\n")
    done = hosttune("doctor", "--slurm", "--only", "hosttune", env=slurm_env)
    assert done.returncode == 1 and done.stdout.startswith("hosttune: hosttune.profile: ")
    assert "scontrol show node node7: slurm_load_node error: Unable to contact" in done.stderr
    assert "Traceback" not in done.stderr


def test_slurm_sync_without_scontrol() -> None:
    class NoScontrol(HostIO):
        def which(self, name: str, extra_dirs: Sequence[str] = ()) -> Optional[str]:
            return None

    v = fleet.Verdict(False, "hosttune: storage.shm: 64 MiB")
    assert fleet.slurm_sync(v, "node7", NoScontrol()) == (
        "error", "scontrol not found on PATH: the node's state was not changed")


# ---- papercuts: the stale-profile fix runs as printed; profile list marks the profile in use -------------------------
def test_the_stale_profile_fix_is_a_command_that_works(tmp_path: Path) -> None:
    env = dict(os.environ)
    user = Path(env["XDG_CONFIG_HOME"]) / "hosttune" / "profile.yaml"
    assert run_cli(["profile", "generate", "--base", "memory-saver", "-o", str(user)], env=env).returncode == 0
    text = user.read_text()
    user.write_text(re.sub(r"(?m)^fingerprint: \w+", "fingerprint: 00000000deadbeef", text))

    def fresh() -> Dict[str, str]:  # in-process (issue 21); the fix itself runs as the real command below
        data = json.loads(run_cli(["doctor", "--json", "--only", "hosttune"], env=env).stdout)
        return {f["id"]: f for f in data["findings"]}["hosttune.profile_fresh"]  # type: ignore[no-any-return]

    stale = fresh()
    assert stale["status"] == "warn", stale
    command = shlex.split(stale["fix"].split("#")[0])
    assert command[:4] == ["hosttune", "profile", "generate", "--force"] and command[-2:] == ["-o", str(user)]
    assert "--base" in command and "memory-saver" in command  # regenerated from the base it was made from
    done = hosttune(*command[1:], env=env)
    assert done.returncode == 0, done.stderr
    assert fresh()["status"] == "pass"
    assert "memory-saver@" in user.read_text()


def test_profile_list_marks_the_profile_in_use(tmp_path: Path) -> None:
    env = dict(os.environ)

    def listed(**extra: str) -> Dict[str, Any]:
        return json.loads(hosttune("profile", "list", "--json", env=dict(env, **extra)).stdout)  # type: ignore

    none = listed()
    assert not [p for p in none["profiles"] if p["in_use"]] and none["in_use"]["ref"] is None
    by_name = listed(HOSTTUNE_PROFILE="reproducible")
    assert [p["name"] for p in by_name["profiles"] if p["in_use"]] == ["reproducible"]
    debug = next(p["source"] for p in none["profiles"] if p["name"] == "debug")
    by_path = listed(HOSTTUNE_PROFILE=debug)
    assert [p["name"] for p in by_path["profiles"] if p["in_use"]] == ["debug"]
    text = hosttune("profile", "list", env=dict(env, HOSTTUNE_PROFILE="reproducible")).stdout.splitlines()
    assert [ln.split()[1] for ln in text if ln.startswith("* ")] == ["reproducible"]
    assert text[-1] == "in use: reproducible ($HOSTTUNE_PROFILE)"


def test_contrib_configs_call_the_fleet_modes() -> None:
    npd = json.loads((REPO / "contrib" / "node-problem-detector" / "hosttune-doctor.json").read_text())
    assert npd["plugin"] == "custom" and npd["pluginConfig"]["max_output_length"] == fleet.NPD_MAX_OUTPUT
    (rule,) = npd["rules"]
    assert rule["args"] == ["doctor", "--npd"] and rule["type"] == "permanent"
    assert rule["condition"] in {c["type"] for c in npd["conditions"]}  # NPD refuses a permanent rule without one
    wrapper = REPO / "contrib" / "slurm" / "hosttune-healthcheck"
    assert os.access(wrapper, os.X_OK) and "exec hosttune doctor --slurm" in wrapper.read_text()
    assert subprocess.run(["sh", "-n", str(wrapper)], timeout=10).returncode == 0
