"""Pins for hosttune/commands/*.py (issue 21, practice round HTOP): whole outputs of command helpers."""

import dataclasses
import os
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
from _doctorhelp import synthetic_root
from conftest import run_cli

from hosttune import profile
from hosttune.commands import autotune as autotune_cmd
from hosttune.commands import doctor as doctor_cmd
from hosttune.commands import profile as profile_cmd
from hosttune.errors import UserError
from hosttune.facts import Cpu, Facts
from hosttune.profile import measured

JOB = ["python3", "train.py", "--batch", "64"]
OTHER = ["python3", "eval.py"]


def _overlay(facts: Facts, command: List[str], fingerprint: str) -> Path:
    default = profile.active(None, facts)
    winner = dataclasses.replace(default, env={**default.env, "OMP_WAIT_POLICY": "PASSIVE"})
    top = measured.overlay(default, winner, command=command, fingerprint=fingerprint, candidate="omp-passive",
                           ratio=1.25, lo=1.2, hi=1.3, rounds=4)
    return profile.write(top, measured.save_path(command), force=True)


def test_measured_listing_rows_of_a_matching_a_stale_and_a_refused_overlay() -> None:
    facts = Facts(cpu=Cpu(model="Test CPU", logical=8, physical=4))
    now = facts.hardware_fingerprint()
    ok = _overlay(facts, JOB, now)
    stale = _overlay(facts, OTHER, "0123456789abcdef")
    bad = ok.parent / "zz-not-an-overlay.yaml"
    bad.write_text("summary: plain profile\n")
    calls: List[Any] = []

    def facts_now() -> Facts:
        calls.append(1)
        return facts

    got = profile_cmd._measured(facts_now)
    day = time.strftime("%Y-%m-%d", time.gmtime())
    common = {"candidate": "omp-passive", "ratio": "1.250", "interval": "1.200-1.300", "rounds": "4", "date": day,
              "changes": "env.OMP_WAIT_POLICY"}
    rows = {
        str(ok): {"path": str(ok), "fingerprint": now, "matches_host": True, "host_fingerprint": now,
                  "job": " ".join(measured.normalise(JOB)), **common},
        str(stale): {"path": str(stale), "fingerprint": "0123456789abcdef", "matches_host": False,
                     "host_fingerprint": now, "job": " ".join(measured.normalise(OTHER)), **common},
    }
    want = [rows[p] for p in sorted(rows)]
    assert got[:2] == want
    assert len(got) == 3 and got[2]["path"] == str(bad) and set(got[2]) == {"path", "refused"}
    assert "not a measured overlay" in got[2]["refused"]


def test_a_stale_overlay_is_shown_as_its_table_naming_this_hosts_fingerprint(capsys: Any) -> None:
    o = {"path": "/p/x.yaml", "fingerprint": "0123456789abcdef", "matches_host": False,
         "host_fingerprint": "fedcba9876543210", "candidate": "omp-passive", "ratio": "1.250",
         "interval": "1.200-1.300", "rounds": "4", "date": "2026-12-03", "job": "python3 train.py", "changes": ""}
    profile_cmd._say_overlay(o)
    profile_cmd._say_overlay({**o, "matches_host": True, "changes": "env.A"})
    profile_cmd._say_overlay({"path": "/p/y.yaml", "refused": "bad\x1b[2J"})
    assert capsys.readouterr().out.splitlines() == [
        "measured overlay  /p/x.yaml",
        "job               python3 train.py",
        "candidate         omp-passive",
        "changes           -",
        "ratio             x1.250 the default (95% CI 1.200-1.300)",
        "rounds            4",
        "date              2026-12-03",
        "fingerprint       0123456789abcdef (STALE: this host is fedcba9876543210; not applied)",
        "measured overlay  /p/x.yaml",
        "job               python3 train.py",
        "candidate         omp-passive",
        "changes           env.A",
        "ratio             x1.250 the default (95% CI 1.200-1.300)",
        "rounds            4",
        "date              2026-12-03",
        "fingerprint       0123456789abcdef (matches this host)",
        "measured overlay /p/y.yaml: REFUSED: bad\\x1b[2J",
    ]


def _cgroup_root(tmp_path: Path) -> Path:
    """A captured host in a 1-CPU cgroup of 4 CPUs: cpu.cgroup_limit and cpu.nofile warn."""
    return synthetic_root(tmp_path / "host", {
        "proc/self/mountinfo": "22 1 259:1 / / rw - ext4 /dev/nvme0n1p1 rw\n"
                               "25 22 0:23 / /dev/shm rw - tmpfs tmpfs rw,size=32768000k\n"
                               "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "proc/self/cgroup": "0::/docker/abc\n",
        "sys/fs/cgroup/docker/abc/cpu.max": "100000 100000\n",
    })


def test_npd_line_is_cut_to_node_problem_detectors_80_characters(tmp_path: Path) -> None:
    """doctor --npd (hosttune.commands.doctor.fleet_mode), in-process."""
    assert doctor_cmd.fleet_mode.__name__ == "fleet_mode"
    root = str(_cgroup_root(tmp_path))
    warn = run_cli(["doctor", "--npd", "--root", root, "--only", "cpu", "--fail-on", "warn"])
    line = "hosttune: cpu.cgroup_limit: effective 1 of 4 CPUs (cpu.max quota 1 ... (+1 more)"
    assert (warn.returncode, warn.stdout) == (1, line + "\n")
    assert len(line) == 80
    ok = run_cli(["doctor", "--npd", "--root", root, "--only", "cpu"])
    assert (ok.returncode, ok.stdout) == (0, "hosttune: ok: 2 pass, 2 warn, 0 skip\n")


def test_train_rank_loads_the_hosttune_package_it_belongs_to_in_an_interpreter_without_hosttune() -> None:
    """The rank script runs in the user's training interpreter, which may not have hosttune: _load_hosttune()
    registers the package beside the script, so the imports after it resolve there (here: `python -I -S`, where
    no hosttune is on sys.path at all)."""
    import subprocess
    import sys

    from hosttune.commands import train_rank

    pkg = os.path.dirname(os.path.dirname(os.path.abspath(train_rank.__file__)))
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('rank_script', {train_rank.__file__!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "assert 'hosttune' not in sys.modules\n"
        "m._load_hosttune()\n"
        "import hosttune.cpulist\n"
        "print(sys.modules['hosttune'].__file__); print(hosttune.cpulist.__file__)\n"
        "print(hosttune.cpulist.parse_cpulist('0-2,5'))\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=600,
                          cwd="/")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [os.path.join(pkg, "__init__.py"), os.path.join(pkg, "cpulist.py"),
                                        "[0, 1, 2, 5]"]


@pytest.mark.parametrize("args,params", [
    (["--profile=throughput", "--hang-timeout", "5m", "--dry-run", "python3", "-u", "x.py", "--profile=y"],
     {"profile_name": "throughput", "hang_timeout": "5m", "dry_run": True,
      "command": ("python3", "-u", "x.py", "--profile=y")}),
    (["--root=/cap", "--hang-timeout=off", "--", "--weird-program", "-x"],
     {"root": "/cap", "hang_timeout": "off", "command": ("--weird-program", "-x")}),
    (["--profile", "--dry-run", "torchrun", "t.py"], {"profile_name": "--dry-run", "command": ("torchrun", "t.py")}),
])
def test_exec_options_in_both_forms_and_the_command_untouched(args: List[str], params: Dict[str, Any]) -> None:
    from hosttune.commands.exec import cmd

    defaults = {"profile_name": None, "dry_run": False, "as_json": False, "root": None, "no_bind": False,
                "verify": False, "override": False, "no_measured": False, "hang_timeout": None}
    ctx = cmd.make_context("exec", list(args))
    assert ctx.params == {**defaults, **params}


@pytest.mark.parametrize("args,name", [
    (["--bogus", "python3"], "--bogus"),
    (["-x=1", "python3"], "-x"),
    (["--profile=x", "--nope=3", "python3"], "--nope"),
])
def test_exec_refuses_an_unknown_option_before_the_command(args: List[str], name: str) -> None:
    from hosttune.commands.exec import cmd

    with pytest.raises(UserError) as info:
        cmd.make_context("exec", list(args))
    assert str(info.value) == (f"exec: no such option: {name} (put COMMAND after --: hosttune exec [OPTIONS] -- "
                               "COMMAND...)")


@pytest.mark.integration
def test_exec_says_every_kept_variable_once_before_the_job_runs(tmp_path: Path) -> None:
    """`hosttune exec -- COMMAND`: each variable the caller set and the plan would set is kept and said, one line
    each on stderr, before COMMAND (here: it writes a marker file) runs."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    marker = tmp_path / "ran"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--", "/bin/sh", "-c", f"echo ok > {marker}"],
                          env=env, cwd=repo, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "ok\n"
    lines = done.stderr.splitlines()
    assert [line.split(" (profile: ")[0] for line in lines] == [
        "hosttune: MKL_NUM_THREADS=1 kept: set by you", "hosttune: OMP_NUM_THREADS=1 kept: set by you"]
    assert all(line.endswith("; --override to use the profile)") for line in lines)


@pytest.mark.parametrize("args,error", [
    (["--trial", "0", "--", "python3", "t.py"], "--trial: seconds must be more than 0"),
    (["--trial", "-1", "--", "python3", "t.py"], "--trial: seconds must be more than 0"),
    (["--trial", "nan", "--", "python3", "t.py"], "--trial: seconds must be more than 0"),
    (["--min-gain", "10", "--", "python3", "t.py"], "--min-gain: a fraction from 0 to 10 (0.01 = 1%)"),
    (["--min-gain", "-0.5", "--", "python3", "t.py"], "--min-gain: a fraction from 0 to 10 (0.01 = 1%)"),
    (["--"], "autotune: no COMMAND given (hosttune autotune [OPTIONS] -- COMMAND [ARGS...])"),
    (["--candidates", ",", "--", "python3", "t.py"], "--candidates: give at least one name"),
])
def test_autotune_refuses_bad_input_in_one_line_exit_2(args: List[str], error: str) -> None:
    """hosttune.commands.autotune checks its input before anything runs."""
    assert autotune_cmd.cmd.name == "autotune"
    done = run_cli(["autotune", "--metric", "x ([0-9]+)", *args])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"hosttune: error: {error}\n")


def test_profile_show_lists_the_settings_in_the_tables_order_and_env_in_the_files(tmp_path: Path) -> None:
    p = tmp_path / "mine.yaml"
    p.write_text("summary: my test\nthreads: 3\nenv:\n  ZED: 'z'\n  ALPHA: a\n")
    done = run_cli(["profile", "show", str(p)])
    assert (done.returncode, done.stderr) == (0, "")
    head, _, table = done.stdout.partition("\n\n")
    assert head.splitlines() == ["profile  mine", "summary  my test", f"source   {p}"]
    rows = [line.split() for line in table.splitlines()]
    assert [r[0] for r in rows] == [
        "allocator", "allocator_path", "malloc_conf", "threads", "binding", "memory_policy", "cuda_alloc_conf",
        "deterministic", "debug", "hang_timeout", "device", "openmp", "dataloader.num_workers",
        "dataloader.pin_memory", "dataloader.prefetch_factor", "dataloader.persistent_workers", "tune.thp",
        "tune.thp_defrag", "tune.numa_balancing", "tune.swappiness", "tune.governor", "tune.epp", "tune.nofile",
        "tune.memlock", "tune.shm_size", "tune.persistence", "env.ZED", "env.ALPHA"]
    by = {r[0]: r[1:] for r in rows}
    assert by["threads"] == ["3", f"{p}:2"] and by["env.ZED"] == ["'z'", f"{p}:4"]
    assert by["allocator_path"] == ["-", "default"] and by["deterministic"] == ["false", "default"]


def test_train_without_an_interpreter_names_only_the_interpreters_it_tried(tmp_path: Path) -> None:
    """The one line lists what was tried for the training interpreter; notes the same HostIO took about other
    sources (here a CPU file) are not interpreters and stay out."""
    from hosttune.commands.train import INSTALL_HINT, find_python
    from hosttune.detect.hostio import HostIO

    io = HostIO(tmp_path)  # a foreign root: nothing is probed, every candidate says so
    io.note("cpu", "/proc/cpuinfo unreadable")
    with pytest.raises(UserError) as info:
        find_python(None, {"PATH": str(tmp_path / "nobin")}, io)
    msg = str(info.value)
    assert msg.startswith("no interpreter with torch to train with (") and msg.endswith(f"): {INSTALL_HINT}")
    assert "(hosttune's interpreter): not probed with a foreign root" in msg
    assert "cpuinfo" not in msg and "cpu:" not in msg
