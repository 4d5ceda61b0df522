"""Pin for mutation round 4's rank hook survivor (issue 21): the hook loads hosttune by running its package (not an
empty module under its name), so a rank's own `from hosttune import __version__` (the CLI, capture, the exec cache
import it) still works after the hook applied the plan."""
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

from hosttune.launch import handoff, hook
from hosttune.launch.job import prepare


def test_a_hooked_rank_imports_the_real_hosttune_package(tmp_path: Path) -> None:
    path = handoff.write(handoff.payload(prepare(["python3", "x.py"]), "m"))
    try:
        base = dict(os.environ, PYTHONPATH=str(REPO))
        env = dict(base, **hook.job_env(base))
        env.update({"HOSTTUNE_HANDOFF": path, "HOSTTUNE_LAUNCH_ID": "1-abcd", "LOCAL_RANK": "0",
                    "LOCAL_WORLD_SIZE": "2"})
        code = ("import os, sys; planned = os.environ.get('HOSTTUNE_LOCAL_RANK'); "
                "from hosttune import __version__; print(planned, __version__, sys.modules['hosttune'].__doc__)")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                           cwd=str(tmp_path))
    finally:
        handoff.remove(path)
    import hosttune

    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == ["0", hosttune.__version__], r.stdout  # the hook ran (rank 0 planned) and the
    assert "hosttune:" in r.stdout  # package is the real one, docstring and all
