"""Profiles: base profiles, inheritance, the search path, validation errors, root safety, write/generate/active."""

import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO
from conftest import run_cli as run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hosttune import plan, profile
from hosttune.errors import UserError
from hosttune.facts import Allocators, Cpu, Facts, Numa, NumaNode

BASES = ("throughput", "reproducible", "memory-saver", "cpu-only", "debug")
IS_ROOT = os.geteuid() == 0
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    d = Path(os.environ["XDG_CONFIG_HOME"]) / "hosttune" / "profiles"
    d.mkdir(parents=True)
    return d


@pytest.fixture
def etc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "etc-hosttune"
    d.mkdir()
    monkeypatch.setenv("HOSTTUNE_ETC_DIR", str(d))
    return d


def small_facts(**over: Any) -> Facts:
    kw: Any = dict(
        hostname="box",
        cpu=Cpu(online=(0, 1, 2, 3), logical=4, physical=4, cores=((0,), (1,), (2,), (3,)), allowed_cpus=(0, 1, 2, 3)),
        numa=Numa(nodes=(NumaNode(0, (0, 1), 1000), NumaNode(1, (2, 3), 1000)), allowed_mems=(0, 1)),
        allocators=Allocators(jemalloc=JEMALLOC),
    )
    kw.update(over)
    return Facts(**kw)


def error_of(fn: Any, *args: Any) -> str:
    with pytest.raises(UserError) as exc:
        fn(*args)
    msg = str(exc.value)
    assert "\n" not in msg, "errors are one line"
    return msg


def test_base_profiles_load_with_one_line_summaries() -> None:
    names = [n for n, _p, _o in profile.available()]
    for name in BASES:
        assert name in names
        p = profile.load(name)
        assert p.name == name and p.summary and "\n" not in p.summary
        assert p.fingerprint is None
        assert p.source.endswith(f"{name}.yaml")
    t = profile.load("throughput")
    assert t.allocator == "auto" and t.threads == "auto" and t.binding == "auto" and t.memory_policy == "bind"
    assert t.malloc_conf == profile.THROUGHPUT_MALLOC_CONF
    assert "OMP_WAIT_POLICY" not in t.env
    r = profile.load("reproducible")
    assert r.deterministic and r.env["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8" and r.env["PYTHONHASHSEED"] == "0"
    assert r.malloc_conf == t.malloc_conf  # inherited
    assert r.chain[0].endswith("throughput.yaml") and r.chain[-1].endswith("reproducible.yaml")
    assert "expandable_segments:True" in (profile.load("memory-saver").cuda_alloc_conf or "")
    assert profile.load("cpu-only").device == "cpu" and profile.load("cpu-only").cuda_alloc_conf is None
    assert profile.load("debug").debug and not any(profile.load(n).debug for n in BASES if n != "debug")


def test_inheritance_chain_merges_and_records_provenance(tmp_path: Path, user_dir: Path) -> None:
    (user_dir / "mid.yaml").write_text("summary: mid\nbase: reproducible\nenv:\n  A: one\n  B: two\nthreads: 3\n")
    (tmp_path / "top.yaml").write_text("base: mid\nenv:\n  B: three\ndataloader:\n  num_workers: 1\n")
    p = profile.load(str(tmp_path / "top.yaml"))
    assert p.name == "top" and p.summary == "mid"
    assert dict(p.env) == {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTHONHASHSEED": "0", "A": "one", "B": "three"}
    assert p.threads == 3 and p.deterministic and p.dataloader.num_workers == 1
    assert p.provenance["env.B"] == f"{tmp_path / 'top.yaml'}:3"
    assert p.provenance["threads"] == f"{user_dir / 'mid.yaml'}:6"
    assert p.provenance["deterministic"].startswith(str(profile.search_path()[0] / "reproducible.yaml"))
    assert len(p.chain) == 4


def test_user_profile_overrides_packaged_and_extends_it(user_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (user_dir / "throughput.yaml").write_text("base: throughput\nthreads: 2\n")
    p = profile.load("throughput")
    assert p.threads == 2 and p.malloc_conf == profile.THROUGHPUT_MALLOC_CONF
    assert p.source == str(user_dir / "throughput.yaml")
    entry = next(e for e in profile.available() if e[0] == "throughput")
    assert entry[1] == user_dir / "throughput.yaml" and len(entry[2]) == 1
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "throughput.yaml").write_text("base: throughput\nbinding: none\n")  # $HOSTTUNE_PROFILE_PATH wins last
    monkeypatch.setenv("HOSTTUNE_PROFILE_PATH", f"/nonexistent:{extra}")
    p = profile.load("throughput")
    assert p.binding == "none" and p.threads == 2 and len(p.chain) == 3


@pytest.mark.parametrize(
    "text, expect",
    [
        ("allocator: jemalloc\nbinding: [1\n", r"bad\.yaml:2: not valid YAML"),
        ("summary: x\nalocator: jemalloc\n", r"bad\.yaml:2: alocator: unknown key \(did you mean 'allocator'\?\)"),
        ("threads: many\n", r"bad\.yaml:1: threads: must be 'auto' or a number"),
        ("threads: 0\n", r"bad\.yaml:1: threads: must be 'auto'"),
        ("binding: [numa]\n", r"bad\.yaml:1: binding: must be one of auto, numa, cores, none"),
        ("allocator: mimalloc\n", r"bad\.yaml:1: allocator: must be one of auto, jemalloc, tcmalloc, system"),
        ("debug: yes please\n", r"bad\.yaml:1: debug: must be true or false"),
        ("base: nosuchbase\n", r"bad\.yaml:1: base: unknown base 'nosuchbase'"),
        ("base: throughputt\n", r"did you mean 'throughput'"),
        ("x: 1\n", r"bad\.yaml:1: x: unknown key"),
        ("dataloader:\n  num_worker: 2\n", r"bad\.yaml:2: dataloader\.num_worker: unknown key \(did you mean"),
        ("dataloader:\n  pin_memory: 3\n", r"bad\.yaml:2: dataloader\.pin_memory: must be auto, true or false"),
        ("env:\n  OK: 1\n  'BAD NAME': x\n", r"bad\.yaml:3: env\.BAD NAME: not a valid environment variable name"),
        ("env:\n  A: [1, 2]\n", r"bad\.yaml:2: env\.A: value must be a string or number"),
        ("env:\n  A: true\n", r"env\.A: value must be a string or number \(quote it\)"),
        ("env: [A]\n", r"bad\.yaml:1: env: must be a mapping"),
        ("tcmalloc:\n  MALLOC_CONF: x\n", r"tcmalloc\.MALLOC_CONF: tcmalloc settings are TCMALLOC_"),
        ("- a\n- b\n", r"bad\.yaml:1: a profile must be a YAML mapping"),
        ("allocator_path: lib/x.so\n", r"allocator_path: must be an absolute path"),
        ("env:\n  LD_PRELOAD: /tmp/x.so\n", r"bad\.yaml:2: env\.LD_PRELOAD: LD_PRELOAD is managed by hosttune"),
        ("a: 1\n---\nb: 2\n", r"bad\.yaml:\d+: not valid YAML"),
    ],
)
def test_bad_profiles_are_one_line_user_errors(tmp_path: Path, text: str, expect: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    msg = error_of(profile.load, str(path))
    assert str(path) in msg
    assert re.search(expect, msg), msg


def test_cycles_and_missing_files(tmp_path: Path, user_dir: Path) -> None:
    (user_dir / "a.yaml").write_text("base: b\n")
    (user_dir / "b.yaml").write_text("summary: b\nbase: c\n")
    (user_dir / "c.yaml").write_text("base: a\n")
    msg = error_of(profile.load, "a")
    assert "inheritance cycle" in msg and "a.yaml" in msg and "c.yaml:1" in msg
    (user_dir / "self.yaml").write_text("base: ./self.yaml\n")
    assert "cycle" in error_of(profile.load, "self")
    assert "no such profile file" in error_of(profile.load, str(tmp_path / "missing.yaml"))
    assert "unknown profile 'nope'" in error_of(profile.load, "nope")
    (tmp_path / "bin.yaml").write_bytes(b"summary: \xff\xfe\n")
    assert "not UTF-8" in error_of(profile.load, str(tmp_path / "bin.yaml"))


@pytest.mark.skipif(not IS_ROOT, reason="the refusal applies only when running as root")
def test_group_or_world_writable_profile_is_refused_as_root(tmp_path: Path) -> None:
    d = tmp_path / "profiles"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    p = d / "mine.yaml"
    p.write_text("base: throughput\nenv:\n  X: '1'\n")
    os.chmod(p, 0o644)
    assert profile.load(str(p)).env["X"] == "1"
    os.chmod(p, 0o664)
    assert "is writable by its group" in error_of(profile.load, str(p))
    os.chmod(p, 0o646)
    assert "chmod go-w" in error_of(profile.load, str(p))
    os.chmod(p, 0o644)
    os.chmod(d, 0o777)
    assert f"directory {d}" in error_of(profile.load, str(p))
    os.chmod(d, 0o775)
    assert f"its directory {d} is writable by its group" in error_of(profile.load, str(p))
    os.chmod(d, 0o755)
    # a writable base is refused too, even when the top file is fine
    (d / "child.yaml").write_text(f"base: {p}\n")
    os.chmod(d / "child.yaml", 0o644)
    os.chmod(p, 0o666)
    assert str(p) in error_of(profile.load, str(d / "child.yaml"))


def test_write_is_atomic_refuses_overwrite_and_round_trips(tmp_path: Path) -> None:
    facts = small_facts()
    gen = profile.generate(facts)
    out = tmp_path / "sub" / "profile.yaml"
    assert profile.write(gen, out, force=False) == out
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    text = out.read_text()
    assert f"jemalloc found at {JEMALLOC}" in text
    assert re.search(r"^allocator: jemalloc  # jemalloc found at ", text, re.M)
    assert f"fingerprint: {facts.hardware_fingerprint()}" in text
    before = out.read_bytes()
    assert "--force" in error_of(profile.write, gen, out, False)
    assert out.read_bytes() == before
    back = profile.load(str(out))
    for key in ("allocator", "threads", "binding", "memory_policy", "malloc_conf", "cuda_alloc_conf", "dataloader",
                "deterministic", "debug", "device", "fingerprint", "name"):
        assert getattr(back, key) == getattr(gen, key), key
    assert dict(back.env) == dict(gen.env) and dict(back.tcmalloc) == dict(gen.tcmalloc)
    assert back.reasons["allocator"] == f"jemalloc found at {JEMALLOC}"
    assert back.provenance["allocator"].endswith(f"jemalloc found at {JEMALLOC}")
    profile.write(profile.generate(facts, "debug"), out, force=True)
    assert profile.load(str(out)).debug
    assert sorted(os.listdir(out.parent)) == ["profile.yaml"], "no temp file left behind"


def test_write_survives_hostile_values(tmp_path: Path) -> None:
    # no path in it: as root a value that names a path is refused (trust.check_env_value), whatever its quoting
    hostile = "a'b\"c $(touch x) `id`\n# not a comment: x\\y"
    base = tmp_path / "h.yaml"
    base.write_text(yaml.safe_dump({"base": "throughput", "summary": "s\u00e9", "env": {"EVIL": hostile}}))
    p = profile.load(str(base))
    out = tmp_path / "out.yaml"
    profile.write(p, out, force=False)
    assert profile.load(str(out)).env["EVIL"] == hostile


def test_generate_choices_and_reasons() -> None:
    g = profile.generate(small_facts())
    assert g.source == profile.GENERATED and g.allocator == "jemalloc" and g.name == "throughput@box"
    assert g.reasons["allocator"] == f"jemalloc found at {JEMALLOC}"
    assert g.memory_policy == "auto" and "2 NUMA nodes -> bind" in g.reasons["memory_policy"]  # decided per run
    none = profile.generate(Facts(cpu=Cpu(online=(0,), allowed_cpus=(0,))))
    assert none.allocator == "system" and "apt install libjemalloc2" in none.reasons["allocator"]
    assert none.memory_policy == "auto" and "-> none" in none.reasons["memory_policy"]
    tc = profile.generate(small_facts(allocators=Allocators(tcmalloc_minimal="/usr/lib/libtcmalloc_minimal.so.4")))
    assert tc.allocator == "tcmalloc" and "tcmalloc found at" in tc.reasons["allocator"]
    assert profile.generate(small_facts(), "reproducible").deterministic
    assert "unknown profile" in error_of(profile.generate, small_facts(), "fast")


@pytest.mark.skipif(not os.path.exists(JEMALLOC), reason="libjemalloc2 not installed")
def test_generated_profile_on_this_machine_names_the_real_jemalloc(tmp_path: Path) -> None:
    from hosttune.detect import collect

    facts = collect(Path("/"), probe_torch=False)
    assert facts.allocators.jemalloc and os.path.realpath(facts.allocators.jemalloc) == os.path.realpath(JEMALLOC)
    out = profile.write(profile.generate(facts), tmp_path / "p.yaml", force=False)
    assert f"jemalloc found at {facts.allocators.jemalloc}" in out.read_text()
    rp = plan.resolve(facts, profile.load(str(out)), 0, 1)
    assert rp.env["LD_PRELOAD"].split(":")[0] == facts.allocators.jemalloc


def test_active_order(tmp_path: Path, etc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    facts = small_facts()
    assert profile.active(None, facts).source == profile.GENERATED
    user, system = profile.generated_paths()
    assert system == etc / "profile.yaml"
    profile.write(profile.generate(facts, "debug"), system, force=False)
    assert profile.active(None, facts).debug
    profile.write(profile.generate(facts, "reproducible"), user, force=False)
    assert profile.active(None, facts).deterministic and not profile.active(None, facts).debug
    monkeypatch.setenv("HOSTTUNE_PROFILE", "memory-saver")
    assert profile.active(None, facts).name == "memory-saver"
    assert profile.active("cpu-only", facts).name == "cpu-only"
    assert profile.default_generate_path() == (system if IS_ROOT else user)


# ------------------------------------------------------------------------------------------------------------------
# Property: any input ends in a Profile or a clean UserError

_KEYS = st.sampled_from(list(profile._TOP_KEYS) + ["x", "Env", "threadz"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5000), st.floats(allow_nan=True), st.text(max_size=12),
                     st.sampled_from(["auto", "none", "numa", "jemalloc", "throughput", "debug", "bind", "cpu"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                       max_leaves=8)


def _loads_cleanly(text: str) -> None:
    try:
        p = profile.load_text(text, "/prop/p.yaml")
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(p, profile.Profile)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in p.env.items())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYS, _VALUES, max_size=6))
def test_property_yaml_structures(data: Any) -> None:
    _loads_cleanly(yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper)))


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_property_arbitrary_text(text: str) -> None:
    _loads_cleanly(text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_property_arbitrary_bytes(tmp_path: Path, blob: bytes) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(blob)
    try:
        profile.load(str(path))
    except UserError as exc:
        assert "\n" not in str(exc)


# ---- Low items (issue 11): terminal output, umask --------------------------------------------------------------------
def test_profile_show_never_prints_raw_control_characters(tmp_path: Path) -> None:
    f = tmp_path / "esc.yaml"
    f.write_text('base: throughput\nname: "x\\e[2J\\e]0;pwned\\a"\nsummary: "s\\x9b31m \\u202egnp"\n'
                 'env:\n  A: "\\e[31mred"\n')
    res = run(["profile", "show", str(f)])
    assert res.returncode == 0, res.stderr
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", res.stdout)
    assert "x\\x1b[2J" in res.stdout and "\\u202e" in res.stdout


def test_profile_generate_under_umask_000_makes_private_parents(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "profile.yaml"
    code = ("import os; os.umask(0); from hosttune.cli import main; "
            f"main(['profile', 'generate', '-o', {str(out)!r}])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    for d in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o755, d
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert [p.name for p in out.parent.iterdir()] == ["profile.yaml"]
