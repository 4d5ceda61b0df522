"""`hosttune doctor`'s table and refusals pinned (issue 21): the table line by line (status tag, id column, expected
only where a check warns or fails, the fix lines, the summary), colours, the --nodes list and the Slurm allocation's
early answers, and every combination of --slurm/--npd/--json/--root/--deep it refuses (hosttune.commands.doctor)."""

from pathlib import Path
from typing import Dict

import click
import pytest
from conftest import run_cli

from hosttune.commands import doctor as doctor_cmd
from hosttune.commands.doctor import parse_nodes, render_table, slurm_nodes
from hosttune.doctor import Report, Result
from hosttune.errors import UserError


def _r(id_: str, status: str, actual: str = "a", expected: str = "e", fix: str = "", title: str = "T") -> Result:
    return Result(id=id_, group=id_.split(".")[0], status=status, title=title, expected=expected, actual=actual,
                  fix=fix)


REPORT = Report((
    _r("os.thp", "warn", "always", "madvise or never", "echo madvise > /sys/x\nhosttune tune apply --only thp",
       "Transparent huge pages"),
    _r("cpu.nofile", "pass", "1048576", ">= 1048576", "never shown", "Open files"),
    _r("nvidia.driver_loaded", "fail", "not loaded", "loaded", "modprobe nvidia", "Driver"),
    _r("torch.venv", "skip", "no torch", "a venv", "pip install torch", "Venv"),
    _r("os.smt", "warn", "on", "", "", "SMT"),
))


def test_the_table_line_by_line() -> None:
    assert render_table(REPORT, colour=False).splitlines() == [
        "WARN  os.thp                Transparent huge pages: always (expected madvise or never)",
        "                          fix: echo madvise > /sys/x",
        "                               hosttune tune apply --only thp",
        "PASS  cpu.nofile            Open files: 1048576",
        "FAIL  nvidia.driver_loaded  Driver: not loaded (expected loaded)",
        "                          fix: modprobe nvidia",
        "SKIP  torch.venv            Venv: no torch",
        "WARN  os.smt                SMT: on",
        "",
        "1 pass, 2 warn, 1 fail, 1 skip",
    ]


def test_an_empty_report_is_its_summary() -> None:
    assert render_table(Report(()), colour=False) == "\n0 pass, 0 warn, 0 fail, 0 skip"


def test_host_text_in_the_table_is_escaped_but_fix_lines_still_split() -> None:
    r = Report((_r("os.distro", "fail", "Deb\x1b[2Jian", "x\x07", "one\rtwo\nthree", "Distro\x1b]0;"),))
    lines = render_table(r).splitlines()
    assert lines[0] == "FAIL  os.distro  Distro\\x1b]0;: Deb\\x1b[2Jian (expected x\\x07)"
    assert lines[1:3] == [" " * 15 + "fix: one\\rtwo", " " * 20 + "three"]


def test_colours_per_status_and_bold_only_for_fail() -> None:
    text = render_table(REPORT, colour=True)
    lines = text.splitlines()
    assert lines[0].startswith(click.style("WARN", fg="yellow", bold=False) + "  os.thp")
    assert lines[3].startswith(click.style("PASS", fg="green", bold=False) + "  cpu.nofile")
    assert lines[4].startswith(click.style("FAIL", fg="red", bold=True) + "  nvidia.driver_loaded")
    assert lines[6].startswith(click.style("SKIP", fg="bright_black", bold=False) + "  torch.venv")
    assert click.unstyle(text) == render_table(REPORT, colour=False)
    assert doctor_cmd.COLOURS == {"pass": "green", "warn": "yellow", "fail": "red", "skip": "bright_black"}


@pytest.mark.parametrize("values,want", [
    (("a,b", " b , [fd00::2]", "10.0.0.1"), ("a", "b", "fd00::2", "10.0.0.1")),
    (("node-1.example.com",), ("node-1.example.com",)),
    (("fe80::1%eth0", "h_x"), ("fe80::1%eth0", "h_x")),
    (("a", "a", "[a]"), ("a",)),
    ((), ()),
    (("x" * 253,), ("x" * 253,)),
])
def test_parse_nodes_accepts(values: tuple, want: tuple) -> None:
    assert parse_nodes(values) == want


@pytest.mark.parametrize("value,shown", [
    ("x" * 254, repr("x" * 254)), ("-oProxy", "'-oProxy'"), ("a b", "'a b'"), ("a,,b", "''"), ("[]", "'[]'"),
    ("a/b", "'a/b'"), ("h\x1b[2J", "'h\\\\x1b[2J'"), ("[-x]", "'[-x]'"),
    ("[abc", "'[abc'"), ("abc]", "'abc]'"),
])
def test_parse_nodes_refuses_in_one_line(value: str, shown: str) -> None:
    with pytest.raises(UserError) as e:
        parse_nodes((value,))
    assert str(e.value) == f"--nodes: {shown} is not a host name or an address"


@pytest.mark.parametrize("env", [
    {},
    {"SLURM_JOB_NODELIST": "n[1-2]"},
    {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "1"},
    {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_NUM_NODES": "two"},
    {"SLURM_NODELIST": "n1", "SLURM_NNODES": "0"},
    {"SLURM_JOB_NUM_NODES": "4"},
    {"SLURM_NNODES": "4", "SLURM_JOB_NODELIST": ""},
])
def test_slurm_nodes_outside_a_multi_node_allocation_is_none(env: Dict[str, str]) -> None:
    """No scontrol runs: these answer before any program (the test environment has none)."""
    assert slurm_nodes(env) == ()


@pytest.mark.parametrize("args,message", [
    (["--slurm", "--npd"], "--slurm and --npd: choose one"),
    (["--npd", "--json"], "--json and --npd: choose one (both print one line)"),
    (["--slurm", "--json"], "--json and --slurm: choose one (both print one line)"),
    (["--slurm", "--root", "/nonexistent-root"],
     "--slurm and --root: --slurm drains this node, so it checks this node"),
    (["--slurm", "--deep"], "--slurm and --deep: slurmd kills its HealthCheckProgram after 60 s; run --deep as a job"),
    (["--nodes", "a,b"], "--nodes: needs --deep (it checks the network path to the other nodes as a measurement)"),
])
def test_refused_combinations_are_one_line_exit_2(args: list, message: str) -> None:
    done = run_cli(["doctor", *args])
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert message in done.stderr


def test_explain_as_json_names_the_check() -> None:
    import json

    done = run_cli(["doctor", "--explain", "os.swappiness", "--json"])
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["id"] == "os.swappiness" and data["group"] == "os" and data["title"] == "Swappiness"
    assert data["explain"].startswith("vm.swappiness is at most the profile's `tune.swappiness`")
    text = run_cli(["doctor", "--explain", "os.swappiness"])
    assert text.returncode == 0 and "vm.swappiness is at most" in text.stdout and not text.stdout.startswith("{")


def _tree(root: Path) -> str:
    files = {"etc/os-release": 'ID=debian\nVERSION_ID="12"\nNAME="Debian GNU/Linux"\n',
             "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
             "proc/sys/vm/swappiness": "10\n", "proc/sys/kernel/numa_balancing": "0\n"}
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(root)


def test_fail_on_and_skip_decide_the_exit_status(tmp_path: Path) -> None:
    import json

    root = _tree(tmp_path / "host")
    done = run_cli(["doctor", "--root", root, "--only", "os", "--json"])
    data = json.loads(done.stdout)
    warned = sorted(f["id"] for f in data["findings"] if f["status"] == "warn")
    assert warned == ["os.thp"] and data["summary"]["fail"] == 0
    assert done.returncode == 0
    assert {f["group"] for f in data["findings"]} == {"os"}
    assert run_cli(["doctor", "--root", root, "--only", "os", "--fail-on", "warn"]).returncode == 1
    skipped = run_cli(["doctor", "--root", root, "--only", "os", "--fail-on", "warn", "--skip", "os.thp", "--json"])
    assert skipped.returncode == 0
    thp = [f for f in json.loads(skipped.stdout)["findings"] if f["id"] == "os.thp"]
    assert [(f["status"], f["actual"]) for f in thp] == [("skip", "not run (--skip)")]
    table = run_cli(["doctor", "--root", root, "--only", "os"])
    s = data["summary"]
    assert table.returncode == 0
    assert table.stdout.splitlines()[-1] == f"{s['pass']} pass, {s['warn']} warn, {s['fail']} fail, {s['skip']} skip"
    assert "WARN  os.thp" in table.stdout and "\x1b[" not in table.stdout


def test_an_empty_python_is_refused_before_anything_runs() -> None:
    done = run_cli(["doctor", "--python", "", "--only", "os"])
    assert done.returncode == 2 and done.stdout == ""
    assert "--python:: empty program name" in done.stderr
