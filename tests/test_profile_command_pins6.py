"""Pins (issue 21, round 6) for hosttune/commands/profile.py through the real CLI in-process (run_cli): `profile list`'s
two lines per profile (the * of the one in use, by name or by its file's path; names padded to the longest; the file
and what it overrides; INVALID for a profile that does not load) and its last line, `profile show`'s table (its
columns and the inherits/fingerprint rows) and `profile generate`'s lines."""

import json
import re
from pathlib import Path
from typing import Any, Dict, List

from tests.conftest import run_cli


def _dir(tmp_path: Path) -> Path:
    d = tmp_path / "profiles"
    d.mkdir()
    (d / "throughput.yaml").write_text("summary: my throughput\n")
    (d / "mine.yaml").write_text("summary: mine\nbase: memory-saver\n")
    (d / "a-rather-long-profile-name.yaml").write_text("summary: long one\n")
    (d / "bad.yaml").write_text("threds: 4\n")
    return d


def _listing(env: Dict[str, str]) -> Dict[str, Any]:
    r = run_cli(["profile", "list", "--json"], env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _expected_text(data: Dict[str, Any]) -> List[str]:
    rows = data["profiles"]
    width = max(len(r["name"]) for r in rows)
    lines = []
    for r in rows:
        lines.append(f"{'*' if r['in_use'] else ' '} {r['name'].ljust(width)}  {r['summary']}")
        lines.append(f"  {' ' * width}  {r['source']}"
                     + (f" (overrides {', '.join(r['overrides'])})" if r["overrides"] else ""))
    return lines + ["", f"in use: {data['in_use']['describe']}"]


def test_list_marks_the_profile_in_use_by_name_and_pads_to_the_longest_name(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    env = {"HOSTTUNE_PROFILE_PATH": str(d), "HOSTTUNE_PROFILE": "throughput"}
    data = _listing(env)
    by = {r["name"]: r for r in data["profiles"]}
    assert [n for n, r in by.items() if r["in_use"]] == ["throughput"]
    assert by["throughput"]["source"] == str(d / "throughput.yaml") and len(by["throughput"]["overrides"]) == 1
    assert by["throughput"]["overrides"][0].endswith("throughput.yaml")
    assert by["throughput"]["summary"] == "my throughput"
    assert by["bad"]["summary"].startswith("INVALID: ") and "threds" in by["bad"]["summary"]
    assert by["a-rather-long-profile-name"]["overrides"] == []
    assert data["in_use"] == {"ref": "throughput", "source": "$HOSTTUNE_PROFILE",
                              "describe": "throughput ($HOSTTUNE_PROFILE)"}
    assert data["search_path"][-1] == str(d)
    text = run_cli(["profile", "list"], env=env).stdout.splitlines()
    assert text == _expected_text(data)
    long_line = next(t for t in text if "a-rather-long-profile-name" in t)
    assert long_line == "  a-rather-long-profile-name  long one"
    assert "* throughput                  my throughput" in text


def test_a_profile_in_use_by_its_path_is_marked_and_another_file_is_not(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    data = _listing({"HOSTTUNE_PROFILE_PATH": str(d), "HOSTTUNE_PROFILE": str(d / "." / "throughput.yaml")})
    assert [r["name"] for r in data["profiles"] if r["in_use"]] == ["throughput"]
    other = tmp_path / "elsewhere" / "throughput.yaml"
    other.parent.mkdir()
    other.write_text("summary: x\n")
    data = _listing({"HOSTTUNE_PROFILE_PATH": str(d), "HOSTTUNE_PROFILE": str(other)})
    assert not any(r["in_use"] for r in data["profiles"])  # the same name in another file is not the listed one
    data = _listing({"HOSTTUNE_PROFILE_PATH": str(d), "HOSTTUNE_PROFILE": "nothing-listed"})
    assert not any(r["in_use"] for r in data["profiles"])


def test_with_nothing_configured_nothing_is_marked_and_the_default_is_described(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    env = {"HOSTTUNE_PROFILE_PATH": str(d), "HOSTTUNE_ETC_DIR": str(tmp_path / "etc"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    data = _listing(env)
    assert data["in_use"]["ref"] is None and not any(r["in_use"] for r in data["profiles"])
    text = run_cli(["profile", "list"], env=env).stdout.splitlines()
    assert text == _expected_text(data)
    assert text[-1] == "in use: throughput generated for the host (built-in default)"


def _rows(stdout: str) -> List[str]:
    return stdout.split("\n\n", 1)[0].splitlines()


def test_show_table_rows_and_columns(tmp_path: Path) -> None:
    d = _dir(tmp_path)
    r = run_cli(["profile", "show", "mine"], env={"HOSTTUNE_PROFILE_PATH": str(d)})
    assert r.returncode == 0, r.stderr
    head = _rows(r.stdout)
    assert head[0] == "profile   mine" and head[1] == "summary   mine"
    assert head[2] == f"source    {d / 'mine.yaml'}"
    assert re.fullmatch(r"inherits  \S*mine\S* <- \S*memory-saver\S* <- \S*throughput\S*", head[3]), head[3]
    assert len(head) == 4
    body = r.stdout.split("\n\n", 1)[1].splitlines()
    keys = [line.split()[0] for line in body]
    w1 = max(len(k) for k in keys)
    for line in body:  # every value starts in the same column, two spaces after the longest key
        assert line[w1:w1 + 2] == "  " and line[w1 + 2] != " ", line
    device = next(line for line in body if line.startswith("device "))
    assert device.split()[1] == "auto" and device.split()[2] == "default"
    summary = next(line for line in body if line.startswith("malloc_conf "))
    assert "memory-saver.yaml:" in summary


def test_show_of_a_generated_profile_names_its_fingerprint_state(tmp_path: Path, hwloc_tree: Any) -> None:
    tree = hwloc_tree("16amd64-8n2c")
    out = tmp_path / "gen.yaml"
    r = run_cli(["profile", "generate", "--root", str(tree), "-o", str(out)])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    fp = re.fullmatch(rf"wrote {re.escape(str(out))} \(profile (\S+), fingerprint (\S+)\)", lines[0])
    assert fp is not None, lines[0]
    assert all(line.startswith("  ") and ": " in line for line in lines[1:]) and len(lines) > 1
    assert any(line.startswith("  memory_policy: ") for line in lines[1:])
    there = run_cli(["profile", "show", str(out), "--root", str(tree)])
    head = _rows(there.stdout)
    assert head[-1] == f"fingerprint  {fp.group(2)} (matches this host)"
    assert head[0] == f"profile      {fp.group(1)}" and fp.group(1) == "throughput"
    js = json.loads(run_cli(["profile", "generate", "--root", str(tree), "-o", str(tmp_path / "b.yaml"),
                             "--json"]).stdout)
    assert js["path"] == str(tmp_path / "b.yaml") and js["profile"]["fingerprint"] == fp.group(2)
