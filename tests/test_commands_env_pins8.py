"""Pins for hosttune/commands/env.py (issue 21, practice round HTOP8): `hosttune env` on a captured host, its whole
text (header comments, the numactl hint, every reason, the sorted exports) and its whole JSON."""

import json
from typing import Any, Dict, Optional

from conftest import run_cli

import hosttune.commands.env  # noqa: F401  (the module these pins are for; run through the CLI below)
from hosttune import profile

# The caller's own settings would be kept and said: none of them here.
_SCRUB: Dict[str, Optional[str]] = {k: None for k in (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "LD_PRELOAD", "MALLOC_CONF", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
    "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "HOSTTUNE_NUM_WORKERS",
    "HOSTTUNE_PIN_MEMORY", "HOSTTUNE_PERSISTENT_WORKERS", "HOSTTUNE_PREFETCH_FACTOR", "HOSTTUNE_DETERMINISTIC",
    "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "KMP_AFFINITY", "KMP_BLOCKTIME")}
_ARGS = ["--profile", "throughput", "--local-rank", "1", "--local-world-size", "2"]


def test_env_text_on_a_captured_host_whole(hwloc_tree: Any) -> None:
    root = hwloc_tree("16amd64-8n2c-cpusets")
    done = run_cli(["env", "--root", str(root), *_ARGS], env=_SCRUB)
    assert (done.returncode, done.stderr) == (0, "")
    source = profile.load("throughput").source
    assert done.stdout == f"""\
# hosttune env: profile throughput ({source}), local rank 1 of 2
# cpus 6,12-15; mems 3 (bind)
# pin with: numactl --physcpubind=6,12-15 --membind=3 -- COMMAND   (hosttune exec does this per rank)
# allocator: jemalloc not found on this host
# allocator: tcmalloc not found on this host
# allocator: glibc malloc (no usable jemalloc/tcmalloc)
# binding: 5 core(s) 6,12-15 on NUMA node(s) 3,6-7, disjoint from the other ranks
# memory: bind to node(s) 3
# threads: 5 (5 physical cores for this rank; SMT siblings count once)
# dataloader: 2 workers (5 cores: half of them, at most 4)
export HOSTTUNE_DETERMINISTIC=0
export HOSTTUNE_NUM_WORKERS=2
export HOSTTUNE_PERSISTENT_WORKERS=1
export HOSTTUNE_PIN_MEMORY=0
export HOSTTUNE_PREFETCH_FACTOR=2
export MKL_NUM_THREADS=5
export OMP_NUM_THREADS=5
"""


def test_env_json_on_a_captured_host_whole(hwloc_tree: Any) -> None:
    root = hwloc_tree("16amd64-8n2c-cpusets")
    done = run_cli(["env", "--root", str(root), *_ARGS, "--json"], env=_SCRUB)
    assert (done.returncode, done.stderr) == (0, "")
    data = json.loads(done.stdout)
    assert data == {
        "local_rank": 1, "local_world_size": 2, "cpus": [6, 12, 13, 14, 15], "mems": [3], "mem_policy": "bind",
        "threads": 5, "gpu": None, "cuda_device": None,
        "env": {"HOSTTUNE_PIN_MEMORY": "0", "HOSTTUNE_NUM_WORKERS": "2", "HOSTTUNE_PERSISTENT_WORKERS": "1",
                "HOSTTUNE_PREFETCH_FACTOR": "2", "HOSTTUNE_DETERMINISTIC": "0", "OMP_NUM_THREADS": "5",
                "MKL_NUM_THREADS": "5"},
        "reasons": data["reasons"], "kept": [], "overridden": [], "bound_by": None,
        "profile": {"name": "throughput", "source": profile.load("throughput").source},
    }
    text = run_cli(["env", "--root", str(root), *_ARGS], env=_SCRUB).stdout
    assert [f"# {r}" for r in data["reasons"]] == text.splitlines()[3:10]
