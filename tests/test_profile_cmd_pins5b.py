"""Pin for mutation round 5's survivor in hosttune/commands/profile.py (issue 21): `hosttune profile show FILE` of a
profile generated for other hardware says so on this host without --root: the fingerprint row says STALE with this
host's fingerprint, and stderr carries the one-line note `env` and `exec --dry-run` print too. (The real CLI
in-process; this host is detected as `profile show` itself detects it.)"""

from pathlib import Path

from tests.conftest import run_cli

OTHER = "0123456789abcdef"  # no host hashes to this


def test_show_of_a_profile_for_other_hardware_says_stale_without_root(tmp_path: Path) -> None:
    path = tmp_path / "other-host.yaml"
    path.write_text(f"summary: made on another machine\nthreads: 2\nfingerprint: {OTHER}\n")
    res = run_cli(["profile", "show", str(path)])
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if line.startswith("fingerprint")]
    assert len(rows) == 1 and f"{OTHER} (STALE: this host is " in rows[0] and rows[0].endswith("; regenerate)"), \
        res.stdout
    now = rows[0].split("this host is ", 1)[1].split(";")[0]
    assert len(now) == 16 and now != OTHER
    assert f"was generated for other hardware (fingerprint {OTHER}; " in res.stderr, res.stderr
    assert f" is {now}): its auto settings are decided for the planned host" in res.stderr, res.stderr


def test_show_of_a_profile_without_a_fingerprint_has_no_fingerprint_row(tmp_path: Path) -> None:
    path = tmp_path / "handmade.yaml"
    path.write_text("summary: written by hand\nthreads: 2\n")
    res = run_cli(["profile", "show", str(path)])
    assert res.returncode == 0, res.stderr
    assert not [line for line in res.stdout.splitlines() if line.startswith("fingerprint")], res.stdout
    assert "generated for other hardware" not in res.stderr
