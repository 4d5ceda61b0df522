"""Per-process limits that matter for training (open files, locked memory for RDMA) and RDMA devices."""

import resource
from typing import Optional, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.facts import Limits


def _pair(which: int) -> Tuple[Optional[int], Optional[int]]:
    try:
        soft, hard = resource.getrlimit(which)
    except (OSError, ValueError):
        return None, None
    inf = resource.RLIM_INFINITY
    return (-1 if soft == inf else soft), (-1 if hard == inf else hard)


def probe(io: HostIO) -> Limits:
    rdma = len(io.listdir("/sys/class/infiniband"))
    if not io.live:  # a captured host's rlimits are not in its files
        return Limits(rdma_devices=rdma)
    nofile = _pair(resource.RLIMIT_NOFILE)
    memlock = _pair(resource.RLIMIT_MEMLOCK)
    return Limits(nofile_soft=nofile[0], nofile_hard=nofile[1], memlock_soft=memlock[0], memlock_hard=memlock[1],
                  rdma_devices=rdma)
