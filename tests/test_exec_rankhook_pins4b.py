"""Pin for mutation round 4's rank hook survivor (issue 21): the hook loads hosttune by running its package (not an
empty module under its name). A plain job's top process keeps the hook's package loaded (its watchers import from
it later), so the program's own `from hosttune import __version__` gets that package: it must be the real one."""
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

import hosttune


def test_a_hooked_plain_programs_own_import_of_hosttune_is_the_real_package(tmp_path: Path) -> None:
    code = ("import sys; from hosttune import __version__; "
            "print(__version__, 'hosttune.launch.hook' in sys.modules, sys.modules['hosttune'].__doc__)")
    r = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--", sys.executable, "-c", code],
                       env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=120,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:2] == [hosttune.__version__, "True"], r.stdout  # the hook ran and kept its package
    assert "hosttune:" in r.stdout, r.stdout  # the real package, docstring and all
