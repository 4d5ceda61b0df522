"""The plan's data: the fixed environment tables, and RankPlan re-exported from the wire module (hosttune/rankplan.py,
which ranks import without the planner)."""

from typing import Tuple

from hosttune.rankplan import RankPlan, _show, kept_line

Core = Tuple[int, ...]  # the allowed PUs of one physical core (SMT siblings together)

INTEL_KMP = {"KMP_AFFINITY": "granularity=fine,compact,1,0", "KMP_BLOCKTIME": "1"}
DEBUG_ENV = {
    "CUDA_LAUNCH_BLOCKING": "1",
    "NCCL_DEBUG": "INFO",
    "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
    "TORCH_SHOW_CPP_STACKTRACES": "1",
}
DETERMINISTIC_ENV = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTHONHASHSEED": "0"}

__all__ = ["Core", "DEBUG_ENV", "DETERMINISTIC_ENV", "INTEL_KMP", "RankPlan", "_show", "kept_line"]
