"""Pins for hosttune/launch/rankhook/sitecustomize.py, the per-rank hook (issue 21, session 9 practice rounds): it
leaves no trace of itself on sys.path, whatever the spelling its directory has there (the real path and a link to
it: a venv's lib64 -> lib, a symlinked install prefix), and the user's own sitecustomize, next on the path, runs
once and is the one registered. The hook runs once: a second run from the link's spelling would load hosttune from
beside the link (no package there: "the per-rank hook failed"). In a child interpreter with a launch's variables but
no rank variables (the hook has nothing to plan: it says nothing)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from hosttune.launch.hook import HOOK_DIR

REPORT = """\
import json, os, sys
hook = os.path.realpath(os.environ["PIN_HOOK"])
print(json.dumps({"ours_left": [p for p in sys.path if os.path.realpath(p or os.curdir) == hook],
                  "sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", None),
                  "user_runs": os.environ.get("PIN_USER_RUNS")}))
"""


def test_the_hook_dir_leaves_sys_path_in_every_spelling_and_the_users_sitecustomize_runs(tmp_path: Path) -> None:
    link = tmp_path / "hook-link"
    link.symlink_to(HOOK_DIR, target_is_directory=True)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sitecustomize.py").write_text(
        "import os\nos.environ['PIN_USER_RUNS'] = str(int(os.environ.get('PIN_USER_RUNS', '0')) + 1)\n")
    rank_vars = ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                 "MPI_LOCALRANKID", "PMI_RANK", "HOSTTUNE_LOCAL_RANK", "PYTHONSAFEPATH", "PIN_USER_RUNS")
    env = {k: v for k, v in os.environ.items() if k not in rank_vars}
    env.update(PYTHONPATH=os.pathsep.join([HOOK_DIR, str(link), str(mine)]), PIN_HOOK=HOOK_DIR,
               HOSTTUNE_HANDOFF=str(tmp_path / "no-handoff.json"), HOSTTUNE_LAUNCH_ID="1-abcd")
    done = subprocess.run([sys.executable, "-c", REPORT], env=env, capture_output=True, text=True, timeout=600,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout) == {"ours_left": [], "sitecustomize": str(mine / "sitecustomize.py"),
                                       "user_runs": "1"}
