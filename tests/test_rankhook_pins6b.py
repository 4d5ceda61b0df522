"""hosttune's per-rank hook hands over to the next `sitecustomize` as `site` would (issue 21, mutation round 6): one
that fails is reported in site's own words, one line and the error, in every process of the job; the traceback only
with PYTHONVERBOSE, as site does. Each case is a fresh interpreter run with and without the hook first on its
PYTHONPATH, so site itself is the reference."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

from hosttune.launch import hook

FAILING = "raise RuntimeError('the distro hook is broken')\n"


def _python(tmp_path: Path, with_hook: bool, verbose: bool = False) -> "subprocess.CompletedProcess[str]":
    mine = tmp_path / "site"
    mine.mkdir(exist_ok=True)
    (mine / "sitecustomize.py").write_text(FAILING)
    path = [hook.HOOK_DIR, str(mine)] if with_hook else [str(mine)]
    env: Dict[str, Optional[str]] = dict(os.environ, PYTHONPATH=os.pathsep.join(path), PYTHONDONTWRITEBYTECODE="1")
    for name in ("HOSTTUNE_HANDOFF", "PYTHONVERBOSE", "PYTHONSTARTUP", "PYTHONWARNINGS"):
        env.pop(name, None)  # no plan: the hook only hands over
    argv = [sys.executable] + (["-v"] if verbose else []) + ["-c", "print('the program ran')"]
    return subprocess.run(argv, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600, check=False)


def test_a_failing_sitecustomize_after_the_hook_is_one_line_as_site_says_it(tmp_path: Path) -> None:
    plain = _python(tmp_path, with_hook=False)
    hooked = _python(tmp_path, with_hook=True)
    assert plain.stderr == ("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                            "RuntimeError: the distro hook is broken\n")  # site's own words (3.9 to 3.13)
    assert (hooked.returncode, hooked.stdout, hooked.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert hooked.stdout == "the program ran\n" and "Traceback" not in hooked.stderr


def test_with_pythonverbose_the_traceback_is_printed(tmp_path: Path) -> None:
    hooked = _python(tmp_path, with_hook=True, verbose=True)
    assert hooked.returncode == 0 and hooked.stdout == "the program ran\n", hooked.stderr[-2000:]
    assert "Traceback (most recent call last):" in hooked.stderr
    assert "RuntimeError: the distro hook is broken" in hooked.stderr
    assert "Error in sitecustomize; set PYTHONVERBOSE" not in hooked.stderr

