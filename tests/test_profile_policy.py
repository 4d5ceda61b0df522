"""Profiles are policy (issue 17): per-run decisions stay `auto`, the fingerprint note, the locator, the settings
table and the one plan serialisation. Through the CLI where a user would see it."""

import dataclasses
import json
from pathlib import Path
from typing import Any, Dict, Optional

import yaml
from conftest import Result
from conftest import run_cli as run

from hosttune import plan, profile
from hosttune.facts import Cpu, Facts, Numa, NumaNode
from hosttune.profile import settings

ONE_NODE = "16em64t-4s2c2t"  # four packages, one NUMA node
TWO_SOCKET = "32intel64-2p8co2t+8ve"  # two packages, two NUMA nodes with memory


def _env_json(root: Path, rank: int, size: int, prof: Optional[Path] = None) -> Result:
    args = ["env", "--root", str(root), "--local-rank", str(rank), "--local-world-size", str(size), "--json"]
    return run(args + (["--profile", str(prof)] if prof else []))


def _node_cpus(root: Path) -> Dict[int, set]:
    from hosttune.detect import collect

    return {n.id: set(n.cpus) for n in collect(root, probe_torch=False).numa.nodes}


def test_profile_generated_on_a_one_node_host_binds_each_ranks_memory_on_a_two_socket_host(
        hwloc_tree: Any, tmp_path: Path) -> None:
    gen = tmp_path / "one-node.yaml"
    assert run(["profile", "generate", "--root", str(hwloc_tree(ONE_NODE)), "-o", str(gen)]).returncode == 0
    data = yaml.safe_load(gen.read_text())
    assert data["memory_policy"] == "auto" and "1 NUMA node -> none" in data["reasons"]["memory_policy"]
    assert data["binding"] == "auto" and data["threads"] == "auto" and data["dataloader"]["num_workers"] == "auto"
    two = hwloc_tree(TWO_SOCKET)
    nodes = _node_cpus(two)
    assert len(nodes) == 2
    seen = set()
    for rank in range(2):
        res = _env_json(two, rank, 2, gen)
        assert res.returncode == 0, res.stderr
        rp = json.loads(res.stdout)
        assert rp["mem_policy"] == "bind" and len(rp["mems"]) == 1, rp
        node = rp["mems"][0]
        assert set(rp["cpus"]) <= nodes[node]  # memory on the node the rank runs on
        seen.add(node)
    assert seen == set(nodes)
    # the same profile on a one-node host still leaves memory alone
    one = json.loads(_env_json(hwloc_tree(ONE_NODE), 0, 1, gen).stdout)
    assert one["mem_policy"] == "none" and one["mems"] == []


def test_env_root_says_on_stderr_when_the_profile_was_generated_for_other_hardware(
        hwloc_tree: Any, tmp_path: Path) -> None:
    # this machine's generated profile (the user's default path), then `env --root` of another host
    gen = run(["profile", "generate", "--root", str(hwloc_tree(ONE_NODE))])
    assert gen.returncode == 0, gen.stderr
    res = _env_json(hwloc_tree(TWO_SOCKET), 0, 2)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "generated for other hardware" in lines[0], res.stderr
    rp = json.loads(res.stdout)
    assert rp["profile"]["source"] in [str(p) for p in profile.generated_paths()]
    assert rp["mem_policy"] == "bind" and rp["mems"]  # and the plan is still right for the captured host
    same = _env_json(hwloc_tree(ONE_NODE), 0, 1)
    assert same.returncode == 0 and same.stderr == ""  # planned for the host it was generated for: nothing to say


def test_env_root_names_this_machines_profile_even_without_a_fingerprint(hwloc_tree: Any, tmp_path: Path) -> None:
    mine = Path(tmp_path / "home" / ".config" / "hosttune" / "profile.yaml")
    mine.parent.mkdir(parents=True)
    mine.write_text("base: throughput\n")
    res = run(["env", "--root", str(hwloc_tree(TWO_SOCKET))])
    assert res.returncode == 0, res.stderr
    assert "captured host" in res.stderr and str(mine) in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_profile_show_says_on_stderr_when_the_fingerprint_differs(hwloc_tree: Any, tmp_path: Path) -> None:
    gen = tmp_path / "one-node.yaml"
    assert run(["profile", "generate", "--root", str(hwloc_tree(ONE_NODE)), "-o", str(gen)]).returncode == 0
    other = run(["profile", "show", str(gen), "--root", str(hwloc_tree(TWO_SOCKET))])
    assert other.returncode == 0 and "STALE" in other.stdout
    assert "generated for other hardware" in other.stderr and len(other.stderr.strip().splitlines()) == 1
    js = run(["profile", "show", str(gen), "--root", str(hwloc_tree(TWO_SOCKET)), "--json"])
    assert json.loads(js.stdout)["memory_policy"] == "auto" and "generated for other hardware" in js.stderr
    same = run(["profile", "show", str(gen), "--root", str(hwloc_tree(ONE_NODE))])
    assert same.returncode == 0 and same.stderr == "" and "matches this host" in same.stdout


def test_fingerprint_note_is_none_for_the_same_hardware_or_no_fingerprint() -> None:
    facts = Facts(cpu=Cpu(logical=2, online=(0, 1), allowed_cpus=(0, 1)))
    prof = profile.generate(facts)
    assert profile.fingerprint_note(prof, facts) is None
    assert profile.fingerprint_note(dataclasses.replace(prof, fingerprint=None), Facts()) is None
    note = profile.fingerprint_note(prof, Facts(cpu=Cpu(logical=4, online=(0, 1, 2, 3), allowed_cpus=(0, 1, 2, 3))))
    assert note and "\n" not in note and prof.fingerprint in note


# ---------------------------------------------------------------------------------------------------------------
# Which profile is in use: one answer


def test_locator_later_directories_win(tmp_path: Path) -> None:
    low, high = tmp_path / "low", tmp_path / "high"
    for d in (low, high):
        d.mkdir()
        (d / "fast.yaml").write_text("summary: x\n")
    (low / "only.yml").write_text("summary: y\n")
    loc = profile.Locator([low, high])
    assert loc.locate("fast") == high / "fast.yaml" and loc.locate("only") == low / "only.yml"
    assert loc.locate("none") is None
    assert [(n, p, o) for n, p, o in loc.available()] == [
        ("fast", high / "fast.yaml", [low / "fast.yaml"]), ("only", low / "only.yml", [])]


def test_locate_active_order_and_source(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOSTTUNE_ETC_DIR": str(tmp_path / "etc")}
    assert profile.locate_active(None, env).generated
    assert profile.locate_active(None, env).source == "built-in default"
    system = tmp_path / "etc" / "profile.yaml"
    system.parent.mkdir()
    system.write_text("base: throughput\n")
    assert profile.locate_active(None, env) == profile.Active(str(system), "system profile")
    user = tmp_path / "cfg" / "hosttune" / "profile.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("base: throughput\n")
    assert profile.locate_active(None, env) == profile.Active(str(user), "user profile")
    assert profile.locate_active(None, dict(env, HOSTTUNE_PROFILE="debug")) == profile.Active(
        "debug", "$HOSTTUNE_PROFILE")
    assert profile.locate_active("reproducible", dict(env, HOSTTUNE_PROFILE="debug")) == profile.Active(
        "reproducible", "--profile")


def test_active_loads_what_locate_active_names(monkeypatch: Any) -> None:
    monkeypatch.setenv("HOSTTUNE_PROFILE", "debug")
    assert profile.active().debug and profile.locate_active().ref == "debug"


# ---------------------------------------------------------------------------------------------------------------
# One table of settings


def test_every_setting_is_one_row_that_validation_yaml_and_show_all_use() -> None:
    fields = {f.name for f in dataclasses.fields(profile.Profile)} - {"source", "provenance", "chain"}
    tops = {s.section or s.name for s in settings.SETTINGS}
    assert fields <= tops, fields - tops
    p = profile.Profile(name="n", summary="s", source="<x>")
    for s in settings.SETTINGS:
        if s.kind not in ("envmap", "reasons") and s.name not in ("base", "name", "summary"):
            assert settings.value_of(p, s.name) == s.default, s.name  # the table's default is the Profile's
    text = profile.to_yaml(dataclasses.replace(p, allocator_path="/x.so", malloc_conf="m", cuda_alloc_conf="c",
                                               env={"A": "1"}, tcmalloc={"TCMALLOC_X": "1"}))
    written = yaml.safe_load(text)
    for s in settings.shown():
        holder = written[s.section] if s.section else written
        assert s.key in holder, s.name
    assert profile.load_text(text).allocator_path == "/x.so"


def test_show_lists_every_setting_of_the_table() -> None:
    res = run(["profile", "show", "throughput"])
    assert res.returncode == 0, res.stderr
    keys = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    for s in settings.shown():
        if s.kind != "envmap":
            assert s.name in keys, s.name
    assert "tcmalloc.TCMALLOC_LARGE_ALLOC_REPORT_THRESHOLD" in keys


def test_a_bad_value_is_refused_by_the_table_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("memory_policy: always\n")
    res = run(["env", "--profile", str(bad)])
    assert res.returncode == 2 and "memory_policy: must be one of auto, bind, preferred, none" in res.stderr


# ---------------------------------------------------------------------------------------------------------------
# The planner's per-run decisions and its one serialisation


def _two_nodes() -> Facts:
    return Facts(cpu=Cpu(online=tuple(range(4)), allowed_cpus=tuple(range(4)), cores=((0,), (1,), (2,), (3,))),
                 numa=Numa(nodes=(NumaNode(id=0, cpus=(0, 1), memory_mb=1024),
                                          NumaNode(id=1, cpus=(2, 3), memory_mb=1024))))


def test_memory_policy_auto_binds_on_two_nodes_and_not_on_one() -> None:
    auto = profile.load_text("base: throughput\nmemory_policy: auto\n")
    two = plan.resolve_all(_two_nodes(), auto, 2, environ={})
    assert [(p.mem_policy, p.mems) for p in two] == [("bind", (0,)), ("bind", (1,))]
    one = Facts(cpu=Cpu(online=(0, 1), allowed_cpus=(0, 1)), numa=Numa(nodes=(NumaNode(0, (0, 1), 1024),)))
    p = plan.resolve(one, auto, 0, 1, environ={})
    assert p.mem_policy == "none" and p.mems == () and any("single NUMA node" in r for r in p.reasons)


def test_rank_plan_round_trips_through_its_one_dict_shape() -> None:
    p = plan.resolve(_two_nodes(), profile.load("throughput"), 1, 2, environ={})
    d = json.loads(json.dumps(p.to_dict()))
    assert plan.RankPlan.from_dict(d) == dataclasses.replace(p, common={})
    prof = profile.load("memory-saver")
    assert profile.Profile.from_dict(json.loads(json.dumps(prof.to_dict()))) == prof
