"""Checks of storage for training: where --data lives, free space for checkpoints (/dev/shm's size is
doctor/checks/tunables.py's check_shm)."""

import os
from typing import Any, Optional

from hosttune.detect.storage import data_path_problem
from hosttune.doctor.context import Context
from hosttune.doctor.model import STATUSES, Finding

GiB = 1024  # MiB


def _mount_for(ctx: Context, path: str) -> Optional[Any]:
    real = os.path.realpath(path)
    best = None
    for m in ctx.facts.storage:
        mp = m.mount.rstrip("/") or "/"
        if real == mp or real.startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) > len(best.mount.rstrip("/") or "/"):
                best = m
    return best


def check_data_storage(ctx: Context) -> Finding:
    """Each --data path is on local flash (NVMe/SSD), not on a spinning disk or a network filesystem.

    A path that is not data on a disk (a device such as /dev/zero, a FIFO, a file in /proc or /sys) is named as
    such and never classified; with no other --data path the check is skipped.

    Random-access reads of many small samples run at ~100-200 IOPS on an HDD and at network round-trip latency on
    NFS/CIFS/Lustre clients without a local cache: the GPUs wait for data. Stage the dataset on local NVMe (or use
    a sequential shard format such as WebDataset/tar shards and enough DataLoader workers).
    """
    bad, seen, not_data = [], [], []
    for path in ctx.data:
        why = data_path_problem(path)
        if why is not None:  # /dev/zero, a FIFO, /proc/kmsg: no disk to classify
            not_data.append(f"{path} {why}")
            continue
        m = _mount_for(ctx, path)
        kind = m.kind if m is not None else "unknown"
        where = f"{path}: {kind}" + (f" ({m.fstype} on {m.mount})" if m is not None else "")
        if kind == "hdd" and m is not None and (m.device or "").startswith(("vd", "xvd")):
            where += " [a virtual disk: it reports rotational whatever backs it; measure with fio to be sure]"
        seen.append(where)
        if kind in ("hdd", "network"):
            bad.append(where)
    if not seen:
        return Finding(status="skip", actual="; ".join(not_data), expected="local nvme/ssd")
    if bad:
        return Finding(status="warn", actual="; ".join(bad + not_data), expected="local nvme/ssd",
                       fix="copy the dataset to local NVMe (e.g. rsync -a SRC /scratch/data/) or use sequential "
                       "shards (WebDataset) with more DataLoader workers")
    return Finding(status="pass", actual="; ".join(seen + not_data), expected="local nvme/ssd")


def space_status(total_mb: int, free_mb: int) -> str:
    """fail under 5 GiB free, warn under 50 GiB or under 10% of the filesystem, else pass."""
    if free_mb < 5 * GiB:
        return "fail"
    if free_mb < 50 * GiB or (total_mb and free_mb < total_mb // 10):
        return "warn"
    return "pass"


def check_free_space(ctx: Context) -> Finding:
    """There is room for checkpoints where they are written (the working directory and each --data path).

    A checkpoint of a 7B-parameter model with Adam state is about 100 GB; a run that fills the disk dies at the
    save, losing the work since the last good checkpoint (and a half-written file may corrupt it). Fail under
    5 GiB free, warn under 50 GiB or under 10% free.
    """
    places = [ctx.cwd] + [p for p in ctx.data if p != ctx.cwd]
    worst = "pass"
    notes = []
    for place in places:
        why = data_path_problem(place)
        if why is not None:  # statvfs of /dev/zero is devtmpfs's, of /proc/kmsg 0 of 0: not where checkpoints go
            notes.append(f"{place} {why} (not checked)")
            continue
        total, free = ctx.probe.disk_free_mb(place)
        status = space_status(total, free)
        notes.append(f"{place}: {free // GiB} GiB free of {total // GiB} GiB")
        if STATUSES.index(status) > STATUSES.index(worst):
            worst = status
    fix = "" if worst == "pass" else ("free space (old checkpoints: keep the last N), or write checkpoints to a "
                                      "bigger local disk (the engine's --set checkpoint.dir=/scratch/ckpt)")
    return Finding(status=worst, actual="; ".join(notes), expected=">= 50 GiB and >= 10% free", fix=fix)

