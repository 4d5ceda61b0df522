"""Pins for hosttune/profile/settings.py (issue 21, round 5): the table itself (defaults, choices, count limits,
what is shown), each kind's check at its edges with its exact message, durations, env maps, `validate` on the
shapes a file can have, and Profile's to_dict/from_dict round trip."""

import importlib
from typing import Any, Dict, Optional

import pytest

from hosttune.errors import UserError

S = importlib.import_module("hosttune.profile.settings")


def bad(key: str, msg: str, sect: Optional[str]) -> UserError:
    return UserError(f"{sect}.{key}: {msg}" if sect else f"{key}: {msg}")


def unknown(key: Any, known: Any, sect: Optional[str]) -> UserError:
    return UserError(f"unknown {sect}.{key}" if sect else f"unknown {key}")


def check(data: Dict[str, Any]) -> None:
    S.validate(data, bad, unknown)


def refused(data: Dict[str, Any]) -> str:
    with pytest.raises(UserError) as e:
        check(data)
    return str(e.value)


def test_defaults_and_choices() -> None:
    assert S._DEFAULT == {
        "name": None, "summary": "", "base": None, "allocator": "auto", "allocator_path": None, "malloc_conf": None,
        "threads": "auto", "binding": "auto", "memory_policy": "bind", "cuda_alloc_conf": None, "deterministic": False,
        "debug": False, "hang_timeout": "off", "device": "auto", "openmp": "auto", "dataloader.num_workers": "auto",
        "dataloader.pin_memory": "auto", "dataloader.prefetch_factor": "auto",
        "dataloader.persistent_workers": "auto", "tcmalloc": None, "tune.thp": "madvise",
        "tune.thp_defrag": "madvise", "tune.numa_balancing": False, "tune.swappiness": 10,
        "tune.governor": "performance", "tune.epp": "performance", "tune.nofile": 65536,
        "tune.memlock": "unlimited", "tune.shm_size": "50%", "tune.persistence": True, "env": None,
        "fingerprint": None, "reasons": None}
    assert S.BY_NAME["allocator"].choices == ("auto", "jemalloc", "tcmalloc", "system")
    assert S.BY_NAME["binding"].choices == ("auto", "numa", "cores", "none")
    assert S.BY_NAME["memory_policy"].choices == ("auto", "bind", "preferred", "none")
    assert S.BY_NAME["device"].choices == ("auto", "cpu") and S.BY_NAME["openmp"].choices == ("auto", "gnu", "intel")
    assert S.BY_NAME["tune.thp"].choices == ("madvise", "never", "always")
    assert S.THROUGHPUT_MALLOC_CONF == ("oversize_threshold:1,background_thread:true,metadata_thp:auto,"
                                        "dirty_decay_ms:-1,muzzy_decay_ms:-1")


def test_sections_keys_and_what_is_shown() -> None:
    assert S.SECTIONS == {"dataloader": ("num_workers", "pin_memory", "prefetch_factor", "persistent_workers"),
                          "tune": ("thp", "thp_defrag", "numa_balancing", "swappiness", "governor", "epp", "nofile",
                                   "memlock", "shm_size", "persistence")}
    assert S._TOP_KEYS[:4] == ("name", "summary", "base", "allocator") and S._TOP_KEYS.count("tune") == 1
    assert "dataloader" in S._TOP_KEYS and "dataloader.num_workers" not in S._TOP_KEYS
    shown = [s.name for s in S.shown()]
    assert "name" not in shown and "summary" not in shown and "fingerprint" not in shown and "reasons" not in shown
    assert shown[0] == "allocator" and shown[-1] == "env" and len(shown) == len(S.SETTINGS) - 5
    s = S.BY_NAME["dataloader.num_workers"]
    assert (s.section, s.key) == ("dataloader", "num_workers")
    assert (S.BY_NAME["threads"].section, S.BY_NAME["threads"].key) == (None, "threads")


@pytest.mark.parametrize("name, low, high", [
    ("threads", 1, 4096), ("dataloader.num_workers", 0, 256), ("dataloader.prefetch_factor", 1, 1024),
    ("tune.swappiness", 0, 200), ("tune.nofile", 1024, 1073741816),
])
def test_count_limits_are_inclusive(name: str, low: int, high: int) -> None:
    def data(v: Any) -> Dict[str, Any]:
        if "." in name:
            sect, key = name.split(".")
            return {sect: {key: v}}
        return {name: v}

    check(data(low))
    check(data(high))
    check(data("auto"))
    for v in (low - 1, high + 1, True, "3", 2.0):
        msg = refused(data(v))
        assert f"must be 'auto' or a number from {low} to {high}, not " in msg


def test_text_and_path_checks() -> None:
    assert refused({"malloc_conf": 3}) == "malloc_conf: must be a string, not int"
    assert refused({"malloc_conf": "a\x00b"}) == "malloc_conf: must not contain a NUL byte"
    assert refused({"allocator_path": "lib/x.so"}) == "allocator_path: must be an absolute path"
    check({"allocator_path": "/x.so", "malloc_conf": None, "summary": ""})
    msg = refused({"tune": {"governor": "Perf"}})
    assert msg.startswith("tune.governor: must be a cpufreq governor name (lower-case letters, digits, _; at most 15)")
    check({"tune": {"governor": "a" * 15}})
    assert refused({"tune": {"governor": "a" * 16}}).startswith("tune.governor: ")
    check({"tune": {"memlock": "0", "shm_size": "100%"}})
    for v in ("101%", "0%", "016G"):
        assert refused({"tune": {"shm_size": v}}).startswith("tune.shm_size: must be a tmpfs size")
    for v in ("01", "unlimitedx", "1" * 19):
        assert refused({"tune": {"memlock": v}}).startswith("tune.memlock: must be 'unlimited' or a number of KiB")
    check({"tune": {"memlock": "1" * 18, "shm_size": "1%"}})


def test_choice_bool_tristate_duration_reasons() -> None:
    assert refused({"binding": "nodes"}) == "binding: must be one of auto, numa, cores, none, not 'nodes'"
    assert refused({"binding": 1}).startswith("binding: must be one of ")
    check({"memory_policy": False})  # YAML's bare `no`
    assert refused({"binding": False}).startswith("binding: must be one of")
    assert refused({"debug": "yes"}) == "debug: must be true or false, not 'yes'"
    check({"debug": True, "deterministic": False})
    assert refused({"dataloader": {"pin_memory": "on"}}) == \
        "dataloader.pin_memory: must be auto, true or false, not 'on'"
    check({"dataloader": {"pin_memory": False, "persistent_workers": "auto"}})
    assert refused({"hang_timeout": "soon"}) == \
        "hang_timeout: must be a duration such as 600, 90s, 10m or 1h, or off, not 'soon'"
    check({"hang_timeout": "10m"})
    check({"hang_timeout": False})
    assert refused({"reasons": {"threads": 3}}) == "reasons: must be a mapping of setting: text"
    assert refused({"reasons": ["x"]}) == "reasons: must be a mapping of setting: text"
    check({"reasons": {"threads": "why"}})


@pytest.mark.parametrize("value, seconds", [
    (600, 600.0), (1.5, 1.5), ("90s", 90.0), ("10m", 600.0), ("1h", 3600.0), (" 2M ", 120.0), ("0.5h", 1800.0),
])
def test_duration_s(value: Any, seconds: float) -> None:
    assert S.duration_s(value) == seconds


@pytest.mark.parametrize("value", [0, -1, "0s", "inf", "nan", True, None, [], "", "10x", "m"])
def test_duration_s_refuses(value: Any) -> None:
    with pytest.raises(ValueError):
        S.duration_s(value)


def test_duration_or_off() -> None:
    assert S.duration_or_off(None) is None and S.duration_or_off(False) is None
    assert S.duration_or_off(" OFF ") is None and S.duration_or_off("90s") == 90.0
    with pytest.raises(ValueError):
        S.duration_or_off(True)


def test_env_maps() -> None:
    assert refused({"env": ["A"]}) == "env: must be a mapping of NAME: value, not list"
    assert refused({"env": {"1A": "x"}}) == "env.1A: not a valid environment variable name"
    assert refused({"env": {"A-B": "x"}}) == "env.A-B: not a valid environment variable name"
    assert refused({"env": {"LD_PRELOAD": "/x.so"}}).startswith("env.LD_PRELOAD: LD_PRELOAD is managed by hosttune")
    assert refused({"env": {"LD_AUDIT": "/x.so"}}).startswith("env.LD_AUDIT: LD_AUDIT is managed by hosttune")
    check({"tcmalloc": {"TCMALLOC_RELEASE_RATE": 10}})
    assert refused({"tcmalloc": {"LD_PRELOAD": "1"}}) == \
        "tcmalloc.LD_PRELOAD: tcmalloc settings are TCMALLOC_* variables"
    assert refused({"tcmalloc": {"MALLOC_X": "1"}}) == "tcmalloc.MALLOC_X: tcmalloc settings are TCMALLOC_* variables"
    for v in (True, None, ["x"]):
        assert "value must be a string or number (quote it)" in refused({"env": {"A": v}})
    assert refused({"env": {"A": "x\x00"}}) == "env.A: value must not contain a NUL byte"
    check({"env": {"_A1": "x", "B": 1, "C": 1.5}, "tcmalloc": None})


def test_validate_shapes() -> None:
    assert refused({"nope": 1}) == "unknown nope"
    assert refused({"name": 3}) == "name: must be a string, not int"  # every top key is checked, the first too
    assert refused({"reasons": 3}) == "reasons: must be a mapping of setting: text"  # and the last
    assert refused({1: 1}) == "unknown 1"
    assert refused({"dataloader": {"workers": 1}}) == "unknown dataloader.workers"
    assert refused({"dataloader": {1: 1}}) == "unknown dataloader.1"
    assert refused({"dataloader": [1]}) == "dataloader: must be a mapping, not list"
    check({"dataloader": None, "tune": None})
    assert refused({"tune": {"swappiness": 201}}).startswith("tune.swappiness: ")


def test_tune_checks_itself() -> None:
    with pytest.raises(UserError) as e:
        S.Tune(swappiness=300)
    assert str(e.value).startswith("tune.swappiness: must be 'auto' or a number from 0 to 200")
    assert S.Tune(swappiness=200).swappiness == 200
    with pytest.raises(UserError, match="^tune.persistence: must be true or false"):
        S.Tune(persistence="yes")  # type: ignore[arg-type]  # the last field is checked too
    with pytest.raises(UserError, match="^tune.thp: must be one of"):
        S.Tune(thp="sometimes")


def test_value_of_and_the_dict_round_trip() -> None:
    p = S.Profile(name="p", summary="s", source="/x.yaml", threads=3, env={"A": "1"},
                  dataloader=S.DataLoader(num_workers=2), tune=S.Tune(swappiness=5), chain=("/b", "/x.yaml"),
                  reasons={"threads": "why"}, provenance={"threads": "/x.yaml:1"}, tcmalloc={"TCMALLOC_X": "1"})
    assert S.value_of(p, "threads") == 3 and S.value_of(p, "dataloader.num_workers") == 2
    assert S.value_of(p, "tune.swappiness") == 5 and S.value_of(p, "dataloader.pin_memory") == "auto"
    d = p.to_dict()
    assert d["chain"] == ["/b", "/x.yaml"] and d["env"] == {"A": "1"} and d["dataloader"]["num_workers"] == 2
    assert d["tune"]["swappiness"] == 5 and d["reasons"] == {"threads": "why"} and d["tcmalloc"] == {"TCMALLOC_X": "1"}
    back = S.Profile.from_dict(dict(d, unknown_key=1, dataloader=dict(d["dataloader"], extra=1),
                                    tune=dict(d["tune"], extra=2)))
    assert back == p and isinstance(back.chain, tuple) and isinstance(back.dataloader, S.DataLoader)
    assert isinstance(back.tune, S.Tune)
    nulls = S.Profile.from_dict({"name": "n", "summary": "", "source": "s", "env": None, "chain": None})
    assert nulls.env == {} and nulls.chain == ()
