"""Pin for mutation round 4's hang survivor (issue 21): under a launcher, `exec --hang-timeout`'s variables (the hang
directory, torch's NCCL trace files) reach the job's ranks, so a hung rank's stacks and traces land where hosttune
reads them."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TORCHRUN, torchrun_env

from hosttune.launch import hang, hook

RANK = """import json, os, sys
keys = ("{hang}", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
open(sys.argv[1], "w").write(json.dumps({{k: os.environ.get(k) for k in keys}}))
"""


@pytest.mark.integration  # a real `hosttune exec --hang-timeout` around torchrun (make check leaves it out)
def test_a_torchrun_jobs_ranks_get_the_hang_watchs_variables(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # torchrun is torch's (the Python 3.9 pass has none: test_launch_hang.py's skip)
    script, out = tmp_path / "rank.py", tmp_path / "seen.json"
    script.write_text(RANK.format(hang=hook.HANG_DIR))
    r = subprocess.run([sys.executable, "-m", "hosttune", "exec", "--hang-timeout", "600", "--", *TORCHRUN,
                        "--nproc-per-node", "1", str(script), str(out)], env=torchrun_env(), cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    seen = json.loads(out.read_text())
    d = Path(seen[hook.HANG_DIR] or "")  # hosttune's hang directory, in the job's working directory (removed after)
    assert d.parent == tmp_path and d.name.startswith(hang.DIR_PREFIX), seen
    assert seen["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == str(d / hang.NCCL_TRACE), seen
    assert seen["TORCH_FR_DUMP_TEMP_FILE"] == str(d / hang.NCCL_TRACE), seen
    assert seen["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] == str(d / hang.NCCL_PIPE), seen
