"""Pins for hosttune.execcache.replay (issue 21, session 9 practice rounds): fast_exec's look-up, what it says, and a
hit's exec, end to end in a child interpreter (a hit execs, a miss installs the recorder's audit hook: neither may
happen in a pytest worker). The child writes the entry itself (the digest depends on its own environment, cwd and
ids), so every case is exact and nothing depends on time:

- a private cache directory without the entry: "no usable entry PATH", and the call returns (the full path runs);
- a cache directory others could read: the entry in it is never looked at, the directory is named;
- an entry whose recorded input changed: "stale: PATH", and the call returns;
- a fresh entry: the recorded stderr printed, "replayed PATH", the program exec'd with the entry's argv, environment
  (set and deleted variables, a fresh launch marker with the job's pid) and CPU affinity, and a job record whose
  watcher (a forked copy of the caller) removes it when the job ends.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import hosttune
from hosttune import execcache, jobrecord
from hosttune.execcache import replay  # noqa: F401 - the module these pins are for (named for the rule)
from hosttune.policy import dirs, names

REPO = str(Path(hosttune.__file__).resolve().parent.parent)
ARGS = ["--", "true"]

# argv: DRIVER MODE TOKEN; MODE is miss, stale or hit. TOKEN only marks this process's cmdline (and its forks').
DRIVER = """\
import marshal, os, sys
from hosttune import execcache
from hosttune.execcache import replay
from hosttune.execcache.key import digest, _stat_key

mode = sys.argv[1]
args = ["--", "true"]
where = execcache.cache_dir()
dig = digest(args)
path = os.path.join(where, dig[:16].hex())
if mode in ("stale", "hit"):
    probe = os.environ["PIN_PROBE"]
    key = _stat_key(probe)
    if mode == "stale":
        key = tuple(k + 1 if i == 3 else k for i, k in enumerate(key))  # another mtime
    job = [sys.executable, "-c", os.environ["PIN_JOB"], "first arg"]
    cpus = (min(os.sched_getaffinity(0)),)
    entry = (execcache.VERSION, dig, ((probe, False, key),), (), sys.executable, tuple(job),
             (("PIN_SET", "set by the entry"), ("OMP_NUM_THREADS", "1")), ("PIN_DEL",), cpus, None,
             "said by the full path\\n", True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, marshal.dumps(entry))
    os.close(fd)
replay.fast_exec(args)
print("RETURNED " + path)
"""

# The replayed program: what it was given, and how many processes carry the caller's token (its job record's
# watcher, forked from the caller before the exec; the caller itself is this process now).
JOB = """\
import json, os, sys
token = os.environ["PIN_TOKEN"]
carriers = []
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if token.encode() in fh.read().split(b"\\0"):
                    carriers.append(int(pid))
        except OSError:
            pass
records = os.environ["PIN_RECORDS"]
print(json.dumps({"argv": sys.argv[1:], "pid": os.getpid(), "cpus": sorted(os.sched_getaffinity(0)),
                  "carriers": len(carriers), "records": sorted(os.listdir(records)) if os.path.isdir(records) else None,
                  "env": {k: os.environ.get(k) for k in ("PIN_SET", "PIN_DEL", "OMP_NUM_THREADS", "PIN_KEEP")},
                  "marker": os.environ.get("HOSTTUNE_LAUNCH_ID")}))
"""


def _env(tmp_path: Path) -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=REPO, PYTHONDONTWRITEBYTECODE="1", PIN_JOB=JOB, PIN_KEEP="kept",
               PIN_DEL="deleted by the entry")
    env[names.EXEC_CACHE] = "explain"
    probe = tmp_path / "probe"
    probe.write_text("an input of the entry\n")
    env["PIN_PROBE"] = str(probe)
    env["PIN_RECORDS"] = jobrecord.records_dir(dirs.runtime_dir(env))
    env["PIN_TOKEN"] = f"pin-token-{os.getpid()}-{tmp_path.name}"
    return env


def _private_cache(env: Dict[str, str]) -> str:
    where = execcache.cache_dir(env)
    assert where is not None and str(Path(where).parent).startswith(str(Path(dirs.runtime_dir(env)).parent.parent))
    os.makedirs(os.path.dirname(where), mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(where), 0o700)
    os.makedirs(where, mode=0o700, exist_ok=True)
    os.chmod(where, 0o700)
    return where


def _drive(mode: str, env: Dict[str, str], cwd: Path) -> Tuple[int, List[str], List[str]]:
    done = subprocess.run([sys.executable, "-c", DRIVER, mode, env["PIN_TOKEN"]], env=env, cwd=str(cwd),
                          capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout.splitlines(), done.stderr.splitlines()


def _said(err: List[str]) -> List[str]:
    return [line[len("hosttune: exec cache: "):] for line in err if line.startswith("hosttune: exec cache: ")]


def test_a_private_cache_without_the_entry_says_so_and_returns(tmp_path: Path) -> None:
    env = _env(tmp_path)
    where = _private_cache(env)
    rc, out, err = _drive("miss", env, tmp_path)
    assert rc == 0, err
    assert len(out) == 1 and out[0].startswith("RETURNED " + where + "/"), out
    path = out[0][len("RETURNED "):]
    assert _said(err) == [f"no usable entry {path}"]


def test_a_cache_others_can_read_is_named_and_never_looked_into(tmp_path: Path) -> None:
    env = _env(tmp_path)
    where = _private_cache(env)
    os.chmod(where, 0o755)
    rc, out, err = _drive("hit", env, tmp_path)  # a fresh entry in it: still not replayed
    assert rc == 0, err
    assert out == ["RETURNED " + out[0][len("RETURNED "):]] and out[0].startswith("RETURNED " + where + "/"), out
    assert _said(err) == [f"{where} is missing or not private to this user"]
    assert "said by the full path" not in err


def test_a_changed_input_makes_the_entry_stale_and_the_call_returns(tmp_path: Path) -> None:
    env = _env(tmp_path)
    _private_cache(env)
    rc, out, err = _drive("stale", env, tmp_path)
    assert rc == 0, err
    assert len(out) == 1 and out[0].startswith("RETURNED "), out
    assert _said(err) == [f"stale: {env['PIN_PROBE']}"]
    assert "said by the full path" not in err


def _wait_gone(folder: str, names_: List[str]) -> List[str]:
    """The records of `names_` still in `folder` once they are gone, or after the hang guard (600 s)."""
    end = time.monotonic() + 600
    while True:
        left = [n for n in names_ if os.path.exists(os.path.join(folder, n))]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def test_a_fresh_entry_is_replayed_exactly_with_a_watched_job_record(tmp_path: Path) -> None:
    env = _env(tmp_path)
    where = _private_cache(env)
    records = env["PIN_RECORDS"]
    if jobrecord._usable_dir(dirs.runtime_dir(env)) is None:
        pytest.skip("no records directory this user may write")
    rc, out, err = _drive("hit", env, tmp_path)
    assert rc == 0, err
    assert not any(line.startswith("RETURNED") for line in out), out  # exec'd: the driver's print never ran
    got: Dict[str, Any] = json.loads(out[-1])
    assert [line for line in err if not line.startswith("hosttune: exec cache: ")] == ["said by the full path"]
    said = _said(err)
    assert len(said) == 1 and said[0].startswith(f"replayed {where}/"), said
    assert got["argv"] == ["first arg"]
    assert got["env"] == {"PIN_SET": "set by the entry", "PIN_DEL": None, "OMP_NUM_THREADS": "1", "PIN_KEEP": "kept"}
    pid_s, _, tag = got["marker"].partition("-")
    assert int(pid_s) == got["pid"] and len(tag) == 8 and int(tag, 16) >= 0, got["marker"]
    assert got["cpus"] == [min(os.sched_getaffinity(0))]
    mine = [n for n in got["records"] or [] if (jobrecord.parse_name(n) or [None])[0] == got["pid"]]
    assert len(mine) == 1, got["records"]  # the job's own record while it ran ...
    assert got["carriers"] == 1, got  # ... watched by one forked copy of the caller
    assert _wait_gone(records, mine) == []  # ... which removes it once the job has ended
