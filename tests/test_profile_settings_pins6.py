"""Pins (issue 21, round 6) for hosttune/profile/settings.py's validation through hosttune/profile/load.py: every
rule's exact one-line error (file, line, section.key, what is wrong, the value shown), and what passes (YAML's `no`
as memory_policy none, an empty section, a number in tcmalloc's map). In-process, no file is read."""

import pytest

from hosttune.errors import UserError
from hosttune.profile.load import load_text
from hosttune.profile.settings import BY_NAME, SECTIONS, SETTINGS, Profile, duration_or_off, duration_s, shown

EPP = "must be an energy_performance_preference name (lower-case letters and _), not "
GOV = "must be a cpufreq governor name (lower-case letters, digits, _; at most 15), not "
SHM = "must be a tmpfs size: 1% to 100%, or a number with an optional k, m, g or t suffix (16G), not "
MANAGED = "is managed by hosttune (it checks every library it preloads); set allocator/allocator_path instead"


@pytest.mark.parametrize("text, message", [
    ('tcmalloc:\n  MALLOC_X: 1\n',
     '/p.yaml:2: tcmalloc.MALLOC_X: tcmalloc settings are TCMALLOC_* variables'),
    ('env:\n  A: "a\\0b"\n',
     '/p.yaml:2: env.A: value must not contain a NUL byte'),
    ('env:\n  A: null\n',
     '/p.yaml:2: env.A: value must be a string or number (quote it), not None'),
    ('env:\n  A: true\n',
     '/p.yaml:2: env.A: value must be a string or number (quote it), not True'),
    ('env:\n  1A: x\n',
     '/p.yaml:2: env.1A: not a valid environment variable name'),
    ('env:\n  "A\\n": x\n',  # `$` matches before a final newline: `export A` then a command `=x`
     "/p.yaml:2: env.'A\\n': not a valid environment variable name"),
    ('env: [1]\n',
     '/p.yaml:1: env: must be a mapping of NAME: value, not list'),
    ('dataloader: 5\n',
     '/p.yaml:1: dataloader: must be a mapping, not int'),
    ('dataloader:\n  nope: 1\n',
     '/p.yaml:2: dataloader.nope: unknown key (known: num_workers, pin_memory, prefetch_factor, persistent_workers)'),
    ('tune:\n  epp: Perf\n',
     "/p.yaml:2: tune.epp: " + EPP + "'Perf'"),
    ('tune:\n  epp: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n',
     "/p.yaml:2: tune.epp: " + EPP + "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'"),
    ('tune:\n  governor: aaaaaaaaaaaaaaaa\n',
     "/p.yaml:2: tune.governor: " + GOV + "'aaaaaaaaaaaaaaaa'"),
    ("tune:\n  memlock: '01'\n",
     "/p.yaml:2: tune.memlock: must be 'unlimited' or a number of KiB, quoted, not '01'"),
    ('tune:\n  shm_size: 101%\n',
     "/p.yaml:2: tune.shm_size: " + SHM + "'101%'"),
    ('tune:\n  shm_size: 0%\n',
     "/p.yaml:2: tune.shm_size: " + SHM + "'0%'"),
    ('memory_policy: fast\n',
     "/p.yaml:1: memory_policy: must be one of auto, bind, preferred, none, not 'fast'"),
    ('threads: 0\n',
     "/p.yaml:1: threads: must be 'auto' or a number from 1 to 4096, not 0"),
    ('threads: 4097\n',
     "/p.yaml:1: threads: must be 'auto' or a number from 1 to 4096, not 4097"),
    ('threads: true\n',
     "/p.yaml:1: threads: must be 'auto' or a number from 1 to 4096, not True"),
    ('dataloader:\n  num_workers: 257\n',
     "/p.yaml:2: dataloader.num_workers: must be 'auto' or a number from 0 to 256, not 257"),
    ('dataloader:\n  pin_memory: 1\n',
     '/p.yaml:2: dataloader.pin_memory: must be auto, true or false, not 1'),
    ('deterministic: 1\n',
     '/p.yaml:1: deterministic: must be true or false, not 1'),
    ('hang_timeout: 0\n',
     '/p.yaml:1: hang_timeout: must be a duration such as 600, 90s, 10m or 1h, or off, not 0'),
    ('allocator_path: lib.so\n',
     '/p.yaml:1: allocator_path: must be an absolute path'),
    ('malloc_conf: 5\n',
     '/p.yaml:1: malloc_conf: must be a string, not int'),
    ('malloc_conf: "a\\0"\n',
     '/p.yaml:1: malloc_conf: must not contain a NUL byte'),
    ('reasons: {a: 1}\n',
     '/p.yaml:1: reasons: must be a mapping of setting: text'),
    ('reasons: [x]\n',
     '/p.yaml:1: reasons: must be a mapping of setting: text'),
    ('tune:\n  swappiness: 201\n',
     "/p.yaml:2: tune.swappiness: must be 'auto' or a number from 0 to 200, not 201"),
    ('tune:\n  nofile: 1023\n',
     "/p.yaml:2: tune.nofile: must be 'auto' or a number from 1024 to 1073741816, not 1023"),
    ('env:\n  LD_PRELOAD: x\n',
     "/p.yaml:2: env.LD_PRELOAD: LD_PRELOAD " + MANAGED),
    ('tune:\n  thp: sometimes\n',
     "/p.yaml:2: tune.thp: must be one of madvise, never, always, not 'sometimes'"),
])
def test_each_rule_is_one_line_naming_the_file_line_and_key(text: str, message: str) -> None:
    with pytest.raises(UserError) as exc:
        load_text(text, "/p.yaml")
    assert str(exc.value) == message


def test_what_passes() -> None:
    assert load_text("memory_policy: no\n", "/p.yaml").memory_policy == "none"
    p = load_text("tune:\nenv:\ntcmalloc:\n  TCMALLOC_X: 1.5\n", "/p.yaml")
    assert dict(p.tcmalloc) == {"TCMALLOC_X": "1.5"} and dict(p.env) == {}
    assert load_text("hang_timeout: 10m\n", "/p.yaml").hang_timeout == "10m"
    longest = "a" + "_" * 31  # 32 characters: the longest energy_performance_preference name
    assert load_text(f"tune:\n  epp: {longest}\n  governor: {'g' * 15}\n", "/p.yaml").tune.epp == longest
    assert load_text("tune:\n  shm_size: 100%\n  memlock: '0'\n  epp: balance_performance\n", "/p.yaml").tune.shm_size \
        == "100%"


def test_setting_names_keys_and_sections() -> None:
    s = BY_NAME["dataloader.num_workers"]
    assert (s.section, s.key) == ("dataloader", "num_workers")
    assert (BY_NAME["threads"].section, BY_NAME["threads"].key) == (None, "threads")
    assert BY_NAME["tune.shm_size"].key == "shm_size" and BY_NAME["tune.shm_size"].section == "tune"
    assert SECTIONS["dataloader"] == ("num_workers", "pin_memory", "prefetch_factor", "persistent_workers")
    assert BY_NAME["memory_policy"].default == "bind" and Profile("n", "s", "x").memory_policy == "bind"
    assert BY_NAME["allocator_path"].default is None and BY_NAME["summary"].default == ""
    assert [s.name for s in shown()][:3] == ["allocator", "allocator_path", "malloc_conf"]
    assert all(s.show for s in shown()) and len(shown()) == sum(1 for s in SETTINGS if s.show)
    assert "name" not in [s.name for s in shown()] and "reasons" not in [s.name for s in shown()]


@pytest.mark.parametrize("value, seconds", [(600, 600.0), (1.5, 1.5), ("90s", 90.0), ("10m", 600.0), ("1h", 3600.0),
                                            (" 2M ", 120.0)])
def test_durations(value: object, seconds: float) -> None:
    assert duration_s(value) == seconds and duration_or_off(value) == seconds


@pytest.mark.parametrize("value", [0, -1, "0s", "inf", "nan", True, None, [], "10d", ""])
def test_bad_durations(value: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        duration_s(value)


def test_off_durations() -> None:
    assert duration_or_off(None) is None and duration_or_off(False) is None and duration_or_off(" OFF ") is None
