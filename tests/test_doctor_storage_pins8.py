"""Pins for hosttune.doctor.checks.storage (issue 21, practice round HDOC8): a --data path is placed on the mount its
real path lies on (a link into a network filesystem is on that filesystem); the whole finding."""

import os
from pathlib import Path

from _doctorhelp import R, cpu_host, run_one

from hosttune.doctor.checks import storage
from hosttune.doctor.model import Finding
from hosttune.facts import Mount


def test_data_behind_a_link_is_judged_by_where_it_really_is(tmp_path: Path) -> None:
    nfs = Path(os.path.realpath(tmp_path)) / "nfs"
    (nfs / "imagenet").mkdir(parents=True)
    local = tmp_path / "local"
    local.mkdir()
    link = local / "imagenet"
    link.symlink_to(nfs / "imagenet")
    plain = local / "plain"
    plain.mkdir()
    facts = R(cpu_host(), storage=(Mount("/", "ext4", "/dev/nvme0n1p1", "nvme0n1", "nvme"),
                                   Mount(str(nfs), "nfs4", "srv:/data", None, "network")))
    assert storage._mount_for(facts_ctx(facts), str(link)) == facts.storage[1]
    assert storage._mount_for(facts_ctx(facts), str(plain)) == facts.storage[0]
    assert run_one("storage.data", facts, data=(str(link), str(plain))) == Finding(
        status="warn", actual=f"{link}: network (nfs4 on {nfs})", expected="local nvme/ssd",
        fix="copy the dataset to local NVMe (e.g. rsync -a SRC /scratch/data/) or use sequential shards "
            "(WebDataset) with more DataLoader workers")
    assert run_one("storage.data", facts, data=(str(plain),)) == Finding(
        status="pass", actual=f"{plain}: nvme (ext4 on /)", expected="local nvme/ssd")


def facts_ctx(facts: object) -> object:
    from hosttune.doctor import Context

    return Context(facts=facts, env={})  # type: ignore[arg-type]
