"""Whole-output pins for hosttune/launch/rankhook/sitecustomize.py, the per-rank hook (issue 21, round-8 practice,
HLAU8): a child interpreter with the hook first on PYTHONPATH, and for each case its exit status, its whole stderr and
what the program saw (which sitecustomize is registered, which hosttune modules stayed loaded, how often the user's own
sitecustomize ran). The program's own code never runs in a refused rank (status 2, one line); the user's
sitecustomize runs once after the hook, or is reported the way site reports it; no hosttune module stays behind."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

from hosttune.launch.hook import HOOK_DIR

OURS = os.path.join(HOOK_DIR, "sitecustomize.py")
REPORT = """\
import json, os, sys
print(json.dumps({"sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", None),
                  "hosttune_loaded": sorted(n for n in sys.modules if n == "hosttune" or n.startswith("hosttune.")),
                  "hook_on_path": [p for p in sys.path
                                   if p and os.path.realpath(p) == os.path.realpath(os.environ["PIN_HOOK"])],
                  "user_runs": os.environ.get("PIN_USER_RUNS")}))
"""
RANK = {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "HOSTTUNE_LAUNCH_ID": "1-abcd"}


def _child(tmp: Path, extra: Dict[str, str], user: Optional[str] = None) -> Tuple[int, str, Optional[dict]]:
    path = [HOOK_DIR]
    if user is not None:
        mine = tmp / "mine"
        mine.mkdir()
        (mine / "sitecustomize.py").write_text(user)
        path.append(str(mine))
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp), "PIN_HOOK": HOOK_DIR,
           "PYTHONPATH": os.pathsep.join(path), **extra}
    done = subprocess.run([sys.executable, "-c", REPORT], env=env, capture_output=True, text=True, timeout=600,
                          cwd=str(tmp))
    return done.returncode, done.stderr, json.loads(done.stdout) if done.stdout else None


COUNT = "import os\nos.environ['PIN_USER_RUNS'] = str(int(os.environ.get('PIN_USER_RUNS', '0')) + 1)\n"


def test_without_a_handoff_the_hook_loads_nothing_and_stays_the_registered_sitecustomize(tmp_path: Path) -> None:
    assert _child(tmp_path, {}) == (0, "", {"sitecustomize": OURS, "hosttune_loaded": [], "hook_on_path": [],
                                            "user_runs": None})


def test_the_users_sitecustomize_runs_once_after_the_hook_and_is_the_registered_one(tmp_path: Path) -> None:
    rc, err, seen = _child(tmp_path, {"HOSTTUNE_HANDOFF": str(tmp_path / "none.json"),
                                      "HOSTTUNE_LAUNCH_ID": "1-abcd"}, user=COUNT)
    assert (rc, err, seen) == (0, "", {"sitecustomize": str(tmp_path / "mine" / "sitecustomize.py"),
                                       "hosttune_loaded": [], "hook_on_path": [], "user_runs": "1"})


def test_a_users_failing_sitecustomize_is_reported_as_site_does_and_the_program_runs(tmp_path: Path) -> None:
    rc, err, seen = _child(tmp_path, {}, user="raise RuntimeError('boom')\n")
    assert (rc, err) == (0, "Error in sitecustomize; set PYTHONVERBOSE for traceback:\nRuntimeError: boom\n")
    assert seen == {"sitecustomize": OURS, "hosttune_loaded": [], "hook_on_path": [], "user_runs": None}


def test_a_refused_rank_ends_with_status_2_and_one_line_before_any_of_its_code(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "plain"}')
    rc, err, seen = _child(tmp_path, {"HOSTTUNE_HANDOFF": str(bad), **RANK}, user=COUNT)
    assert (rc, err, seen) == (2, f"hosttune: rank 0/1 (LOCAL_RANK): refusing the launcher's handoff '{bad}': not a "
                                  "hosttune handoff path; rank not started\n", None)
