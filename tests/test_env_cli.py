"""`hosttune env` and `hosttune profile` through the real command line: eval safety, JSON, exit codes, files."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, Result
from conftest import run_cli as run

from hosttune import plan
from hosttune.commands.env import shell_quote

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def user_error(proc: Result) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune: error: "), proc.stderr
    return lines[0]


HOSTILE = {
    "Q1": "it's",
    "Q2": 'say "hi"',
    "SUBST": "$(touch {marker})",
    "TICKS": "`touch {marker}`",
    "SEMI": "x; touch {marker}",
    "NL": "line1\nline2\n",
    "BS": "back\\slash\\n",
    "GLOB": "* ? [a-z] ~",
    "DASH": "-n -e",
    "EMPTY": "",
    "UNI": "caf\u00e9 \u2603",
    "VAR": "${HOME} $PATH",
}


def test_hostile_env_values_round_trip_through_eval(tmp_path: Path) -> None:
    # The commands touch a relative name (run in tmp_path): as root a value that names a path is refused
    # (trust.check_env_value), and the point here is the quoting, not the path.
    marker = tmp_path / "pwned"
    values = {k: v.replace("{marker}", marker.name) for k, v in HOSTILE.items()}
    # The file name ends up in a comment line; a newline in it must not start a command.
    prof = tmp_path / "evil\ntouch pwned\n.yaml"
    prof.write_text(yaml.safe_dump({"base": "throughput", "env": values}))
    script = 'eval "$(hosttune env --profile "$1")" || exit 9; for k in ' + " ".join(values) + \
        '; do printf "%s=%s\\0" "$k" "${!k}"; done'
    proc = subprocess.run(["bash", "-c", script, "bash", str(prof)], capture_output=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = dict(item.split("=", 1) for item in proc.stdout.decode().split("\0") if item)
    assert got == values
    assert not marker.exists()


def test_env_json_on_this_machine_two_ranks() -> None:
    out = []
    for rank in (0, 1):
        proc = run(["env", "--profile", "throughput", "--local-rank", str(rank), "--local-world-size", "2", "--json"])
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert {"local_rank", "local_world_size", "cpus", "mems", "env"} <= set(data)
        assert data["local_rank"] == rank and data["local_world_size"] == 2
        out.append(data)
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) >= 2:
        assert not set(out[0]["cpus"]) & set(out[1]["cpus"])
        assert sorted(out[0]["cpus"] + out[1]["cpus"]) == allowed
        threads = [int(d["env"]["OMP_NUM_THREADS"]) for d in out]
        assert sum(threads) <= len(allowed) and all(t >= 1 for t in threads)
    single = json.loads(run(["env", "--profile", "throughput", "--json"]).stdout)
    assert int(single["env"]["OMP_NUM_THREADS"]) == len(allowed) or len(allowed) == 1
    if os.path.exists(JEMALLOC):
        assert single["env"]["LD_PRELOAD"].split(":")[0].endswith("libjemalloc.so.2")


def test_env_exports_apply_in_a_shell_and_reasons_are_comments() -> None:
    proc = subprocess.run(["hosttune", "env", "--profile", "debug", "--local-rank", "0", "--local-world-size", "2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("# threads:") for line in lines)
    assert all(line.startswith(("# ", "export ")) for line in lines)
    shell = subprocess.run(["bash", "-c", 'eval "$1"; echo "$NCCL_DEBUG $OMP_NUM_THREADS $HOSTTUNE_NUM_WORKERS"', "b",
                            proc.stdout], capture_output=True, text=True, timeout=60)
    threads = json.loads(run(["env", "--profile", "debug", "--local-rank", "0", "--local-world-size", "2",
                              "--json"]).stdout)["env"]["OMP_NUM_THREADS"]
    assert shell.stdout.split() == ["INFO", threads, "0"]


def test_env_reads_torchrun_variables() -> None:
    env = dict(os.environ, LOCAL_RANK="1", LOCAL_WORLD_SIZE="2")
    a = json.loads(run(["env", "--profile", "throughput", "--json"], env=env).stdout)
    b = json.loads(run(["env", "--profile", "throughput", "--local-rank", "1", "--local-world-size", "2", "--json"]
                       ).stdout)
    assert (a["local_rank"], a["local_world_size"], a["cpus"]) == (1, 2, b["cpus"])


def test_env_on_a_captured_host(hwloc_tree: Any) -> None:
    root = hwloc_tree("16amd64-8n2c-cpusets")
    proc = run(["env", "--root", str(root), "--profile", "throughput", "--local-rank", "1", "--local-world-size", "2",
                "--json"])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["cpus"] == [6, 12, 13, 14, 15] and data["mems"] == [3]
    assert data["env"]["OMP_NUM_THREADS"] == "5"
    assert "LD_PRELOAD" not in data["env"]  # the captured tree has no allocator libraries


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    assert "outside 0..1" in user_error(run(["env", "--profile", "throughput", "--local-rank", "2",
                                             "--local-world-size", "2"]))
    assert "unknown profile 'fast'" in user_error(run(["env", "--profile", "fast"]))
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: throughput\nthreds: 4\n")
    line = user_error(run(["env", "--profile", str(bad)]))
    assert f"{bad}:2: threds: unknown key (did you mean 'threads'?)" in line
    assert "no such directory" in user_error(run(["env", "--root", str(tmp_path / "nope")]))
    assert "not a number" in user_error(run(["env"], env={"LOCAL_RANK": "x"}))
    assert "unknown profile" in user_error(run(["profile", "show", "nosuch"]))
    assert "unknown profile" in user_error(run(["profile", "generate", "--base", "nosuch", "-o",
                                                str(tmp_path / "p.yaml")]))


def test_generate_writes_refuses_overwrite_and_env_uses_it(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    env = {"HOSTTUNE_ETC_DIR": str(etc)}
    proc = run(["profile", "generate"], env=env)
    assert proc.returncode == 0, proc.stderr
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "hosttune/profile.yaml"
    target = etc / "profile.yaml" if os.geteuid() == 0 else user
    assert f"wrote {target}" in proc.stdout
    text = target.read_text()
    assert "fingerprint: " in text
    if os.path.exists(JEMALLOC):
        assert f"jemalloc found at {JEMALLOC}" in text and f"jemalloc found at {JEMALLOC}" in proc.stdout
    assert "--force" in user_error(run(["profile", "generate"], env=env))
    assert target.read_text() == text
    assert run(["profile", "generate", "--force", "--base", "reproducible"], env=env).returncode == 0
    proc = run(["env", "--local-rank", "1", "--local-world-size", "2"], env=env)  # the generated profile is in use
    assert proc.returncode == 0 and f"({target})" in proc.stdout.splitlines()[0]
    assert "export HOSTTUNE_DETERMINISTIC=1" in proc.stdout
    show = run(["profile", "show"], env=env)
    assert show.returncode == 0 and str(target) in show.stdout and "deterministic" in show.stdout


def test_generate_for_a_captured_host_and_show_list(hwloc_tree: Any, tmp_path: Path) -> None:
    out = tmp_path / "gen.yaml"
    proc = run(["profile", "generate", "--root", str(hwloc_tree("16amd64-8n2c")), "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(out.read_text())
    assert data["allocator"] == "system" and "no jemalloc or tcmalloc found" in data["reasons"]["allocator"]
    assert data["memory_policy"] == "auto" and "8 NUMA nodes -> bind" in data["reasons"]["memory_policy"]
    show = run(["profile", "show", "reproducible"])
    assert show.returncode == 0
    assert any(line.startswith("deterministic") and "reproducible.yaml:" in line for line in show.stdout.splitlines())
    assert any(line.startswith("malloc_conf") and "throughput.yaml:" in line for line in show.stdout.splitlines())
    js = json.loads(run(["profile", "show", "cpu-only", "--json"]).stdout)
    assert js["device"] == "cpu" and js["chain"][0].endswith("throughput.yaml")
    listed = json.loads(run(["profile", "list", "--json"]).stdout)
    names = {p["name"] for p in listed["profiles"]}
    assert {"throughput", "reproducible", "memory-saver", "cpu-only", "debug"} <= names
    text = run(["profile", "list"]).stdout
    assert "throughput" in text and "Fastest training" in text


def test_show_flags_a_stale_generated_profile(tmp_path: Path, hwloc_tree: Any) -> None:
    out = tmp_path / "other-host.yaml"
    assert run(["profile", "generate", "--root", str(hwloc_tree("16amd64-8n2c")), "-o", str(out)]).returncode == 0
    stale = run(["profile", "show", str(out)])
    assert stale.returncode == 0 and "STALE" in stale.stdout
    there = run(["profile", "show", str(out), "--root", str(hwloc_tree("16amd64-8n2c"))])
    assert "matches this host" in there.stdout
    here = tmp_path / "here.yaml"
    assert run(["profile", "generate", "-o", str(here)]).returncode == 0
    assert "matches this host" in run(["profile", "show", str(here)]).stdout
    assert "needs --local-world-size" in user_error(run(["env"], env={"LOCAL_RANK": "1"}))


@pytest.mark.skipif(not os.path.exists(JEMALLOC), reason="libjemalloc2 not installed")
@pytest.mark.parametrize("name", ["throughput", "memory-saver"])
def test_exported_allocator_really_loads_and_accepts_its_settings(name: str) -> None:
    """Apply the exports in a shell, pin with taskset, and read the child's own /proc: jemalloc mapped, no
    '<jemalloc>: Invalid conf pair' warning for our MALLOC_CONF, affinity and thread count as planned."""
    plan_json = json.loads(run(["env", "--profile", name, "--local-rank", "0", "--local-world-size", "2",
                                "--json"]).stdout)
    cpus = ",".join(map(str, plan_json["cpus"]))
    script = ('eval "$(hosttune env --profile "$1" --local-rank 0 --local-world-size 2)" && exec taskset -c "$2" '
              'sh -c \'grep -c libjemalloc /proc/self/maps; grep Cpus_allowed_list /proc/self/status; '
              'echo "omp=$OMP_NUM_THREADS"\'')
    proc = subprocess.run(["bash", "-c", script, "bash", name, cpus], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "<jemalloc>" not in proc.stderr
    count, allowed, omp = proc.stdout.split("\n")[:3]
    assert int(count) >= 1
    assert allowed.split()[-1] == plan.cpulist(plan_json["cpus"])
    assert omp == f"omp={plan_json['env']['OMP_NUM_THREADS']}"


def test_env_on_a_gpu_host_through_fake_nvml(fake_nvml: Any) -> None:
    """The whole path on a (fake-NVML) GPU host: detector -> profile -> plan -> JSON, GPU chosen by PCI bus id."""
    from conftest import a100

    env = fake_nvml({"driver": "550.54.15", "cuda_driver": 12040,
                     "devices": [a100(0, "AF", 0), a100(1, "3B", 0)]})  # NVML index order is not bus order here
    env["CUDA_VISIBLE_DEVICES"] = "1"
    proc = subprocess.run([sys.executable, "-m", "hosttune", "env", "--profile", "throughput", "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["gpu"] == "0000:af:00.0" and data["cuda_device"] == 0  # index 1 in PCI order, NVML index 0
    assert data["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and data["env"]["HOSTTUNE_PIN_MEMORY"] == "1"
    assert data["env"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert "CUDA_VISIBLE_DEVICES" not in data["env"]


def test_env_export_quotes_control_characters_and_round_trips_in_bash(tmp_path: Path) -> None:
    values = {"ESC": "\x1b[31mred\x1b[0m", "BEL": "a\x07b", "NL": "one\ntwo\n", "CR": "x\ry", "C1": "\x9bX",
              "BIDI": "abc\u202edef", "TAB": "a\tb", "QUOTE": "it's \\ $x `id`", "PLAIN": "caf\u00e9"}
    for v in values.values():
        q = shell_quote(v)
        assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", q), q
    f = tmp_path / "ctl.yaml"
    f.write_text(json.dumps({"base": "throughput", "env": values}))  # JSON is YAML
    out = run(["env", "--profile", str(f)])
    assert out.returncode == 0, out.stderr
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out.stdout)
    script = 'eval "$1" || exit 9; for k in ' + " ".join(values) + '; do printf "%s=%s\\0" "$k" "${!k}"; done'
    proc = subprocess.run(["bash", "-c", script, "bash", out.stdout], capture_output=True, timeout=60,
                          env=dict(os.environ, LC_ALL="C"))
    assert proc.returncode == 0, proc.stderr
    got = dict(item.split("=", 1) for item in proc.stdout.decode("utf-8").split("\0") if item)
    assert got == values


def test_piped_env_output_is_the_plan_byte_for_byte(tmp_path: Path) -> None:
    """Through a real pipe (click would strip ANSI there): every export evaluates to the plan's value."""
    f = tmp_path / "ansi.yaml"
    f.write_text(json.dumps({"base": "throughput", "env": {"COLOR": "\x1b[1mbold\x1b[0m", "PLAIN": "x"}}))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "hosttune", "env", "--profile", str(f), "--local-rank", "0",
            "--local-world-size", "2"]
    text = subprocess.run(base, capture_output=True, timeout=120, env=env)
    js = subprocess.run(base + ["--json"], capture_output=True, timeout=120, env=env)
    assert text.returncode == 0 and js.returncode == 0, (text.stderr, js.stderr)
    planned = json.loads(js.stdout)["env"]
    exports = [ln for ln in text.stdout.decode().splitlines() if ln.startswith("export ")]
    assert [ln.split("=", 1)[0][len("export "):] for ln in exports] == sorted(planned)
    for ln in exports:
        key, quoted = ln[len("export "):].split("=", 1)
        assert quoted == shell_quote(planned[key])
    back = subprocess.run(["bash", "-c", 'eval "$1"; printf %s "$COLOR"', "b", text.stdout.decode()],
                          capture_output=True, timeout=60)
    assert back.stdout.decode() == planned["COLOR"] == "\x1b[1mbold\x1b[0m"
    # the in-process runner (not a terminal either) gives the same bytes as the real pipe
    assert run(base[3:]).stdout == text.stdout.decode()
