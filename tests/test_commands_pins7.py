"""Pins for hosttune/commands/*.py (issue 21, practice round HTOP): whole outputs of command helpers."""

import dataclasses
import os
import time
from pathlib import Path
from typing import Any, List

from _doctorhelp import synthetic_root
from conftest import run_cli

from hosttune import profile
from hosttune.commands import profile as profile_cmd
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
