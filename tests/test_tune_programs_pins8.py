"""Pins (issue 21, round 8 practice) for hosttune/tune/programs.py: a system program runs as the path `which`
resolved (its argv[0] is that path, not the bare name a PATH lookup would take), started in "/", its output
captured as text."""

from pathlib import Path

from hosttune.detect.hostio import HostIO
from hosttune.tune import programs


def test_a_program_runs_as_its_resolved_path_in_the_root_directory() -> None:
    exe = HostIO(Path("/")).which("sh")
    assert exe is not None and exe.startswith("/")
    done = programs.tool("sh", ["-c", 'printf "%s|%s" "$0" "$PWD"'], 600)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{exe}|/", "")


def test_a_failing_program_is_its_exit_status_not_an_error() -> None:
    done = programs.tool("sh", ["-c", "echo out; echo err >&2; exit 3"], 600)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
