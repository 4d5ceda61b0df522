"""Pins (issue 21, session 9, mutation round 7) on hosttune.launch.hook.arm_stacks: under the hang watch
($HOSTTUNE_HANG_DIR) a rank arms its stacks file, but the rank's multiprocessing workers (spawn or forkserver
children, which inherit the rank's variables) do not: no stacks file of theirs in the job's hang directory, no
faulthandler on the stacks signal in them. In-process with a spawn child's argv, then once with real children."""

import faulthandler
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hosttune
from hosttune.launch.hook import HANG_DIR, STACKS_PREFIX, arm_stacks, stacks_signal


@pytest.fixture
def hang_dir(tmp_path: Path) -> Path:
    d = tmp_path / "hang"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)  # private to this user whatever the umask: the one place arm_stacks writes into
    return d


def test_a_spawn_child_of_a_rank_arms_nothing(hang_dir: Path) -> None:
    env = {HANG_DIR: str(hang_dir), "RANK": "0", "LOCAL_RANK": "0"}
    got = arm_stacks(env, ["-c", "--multiprocessing-fork"])  # a multiprocessing spawn child's sys.argv
    if got is not None:  # armed in this process: take the registration back before failing
        faulthandler.unregister(stacks_signal())
    assert got is None
    assert list(hang_dir.iterdir()) == [], "a rank's spawn child wrote a stacks file into the job's hang directory"


# The real hook arms a process from sitecustomize, at interpreter start (where a spawn child's sys.argv is still
# ["-c", "--multiprocessing-fork"]: multiprocessing gives it the parent's argv later). This sitecustomize does the same.
SITE = """\
import os, sys
from hosttune.launch.hook import arm_stacks
arm_stacks(dict(os.environ), list(sys.argv))
"""

JOB = """\
import json, multiprocessing as mp, os


def worker(q):
    q.put([os.getpid(), os.getppid()])


if __name__ == "__main__":
    out = {"rank": os.getpid()}
    for method in ("spawn", "forkserver"):
        ctx = mp.get_context(method)
        q = ctx.Queue()
        p = ctx.Process(target=worker, args=(q,))
        p.start()
        out[method] = q.get(timeout=600)
        p.join(600)
        assert p.exitcode == 0, (method, p.exitcode)
    print(json.dumps(out))
"""


def test_a_ranks_real_multiprocessing_workers_write_no_stacks_file(hang_dir: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    script = tmp_path / "train.py"
    script.write_text(JOB)
    root = str(Path(hosttune.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), root]), RANK="2")
    env[HANG_DIR] = str(hang_dir)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    rank = out["rank"]
    (spawned, _), (forked, forkserver) = out["spawn"], out["forkserver"]
    assert rank not in (spawned, forked, forkserver) and forkserver != rank
    armed = {}
    for p in hang_dir.iterdir():
        label, _, pid = p.name[len(STACKS_PREFIX):-len(".txt")].rpartition("-pid")
        armed[int(pid)] = label
    # the rank itself is watched; its workers, the forkserver that forks them and multiprocessing's resource
    # tracker (started with its own `-c` line) are not: a hang report names the rank once
    assert armed == {rank: "rank2"}, (out, armed)
