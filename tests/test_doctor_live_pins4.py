"""The doctor checks that read the live host through `ctx.probe` (issue 21): the PCIe link judged only on busy
GPUs (the 50% line), NVML failing at sample time, free space at 5 GiB / 50 GiB / 10%, and --data placement. The
probe is a `Live` whose answers the test sets; the data paths are real directories under tmp_path."""

from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
from _doctorhelp import NO_PROFILE, R, cpu_host, gpu0, gpu_host

from hosttune import doctor, nvml
from hosttune.doctor import Context, Finding, run_checks
from hosttune.doctor.checks import storage
from hosttune.doctor.context import Live
from hosttune.facts import Facts, Mount


class Probe(Live):
    def __init__(self, samples: Any = None, space: Dict[str, Tuple[int, int]] = {}) -> None:  # noqa: B006
        self.samples, self.space = samples, space

    def gpu_samples(self) -> Dict[int, Dict[str, Any]]:
        if isinstance(self.samples, Exception):
            raise self.samples
        return self.samples

    def disk_free_mb(self, path: str) -> Tuple[int, int]:
        return self.space[path]


def run(check_id: str, facts: Facts, probe: Probe, **kw: Any) -> Finding:
    ctx = Context(facts=facts, env={}, live=True, profile=NO_PROFILE, probe=probe, **kw)
    (r,) = run_checks(ctx, checks=[doctor.BY_ID[check_id]]).results
    return Finding(status=r.status, actual=r.actual, expected=r.expected, fix=r.fix)


def pcie(samples: Any, facts: Facts = None) -> Finding:  # type: ignore[assignment]
    return run("nvidia.pcie_link", facts or gpu_host(), Probe(samples))


FULL = {"pcie_gen": 5, "pcie_width": 16}


def test_pcie_judges_busy_gpus_only_from_50_percent() -> None:
    f = pcie({0: {"utilization_gpu_pct": 49, "pcie_gen": 1}, 1: {"utilization_gpu_pct": 50, **FULL}})
    assert (f.status, f.actual) == ("pass", "1 busy GPUs at max link, 1 idle not judged")
    f = pcie({0: {"utilization_gpu_pct": 100, **FULL}, 1: dict(utilization_gpu_pct=99, **FULL)})
    assert (f.status, f.actual, f.expected) == ("pass", "2 busy GPUs at max link", "max gen/width under load")
    f = pcie({0: {"pcie_gen": 1}, 1: {"utilization_gpu_pct": 0}})
    assert (f.status, f.actual) == ("pass", "idle: not judged (2 GPUs idle; link speed drops at idle by design)")
    f = pcie({})
    assert f.actual.startswith("idle: not judged (2 GPUs idle")


@pytest.mark.parametrize("sample,text", [
    ({"pcie_gen": 4, "pcie_width": 16}, "GPU0 (0000:1b:00.0) Gen4 x16 of Gen5 x16 at 80%"),
    ({"pcie_gen": 5, "pcie_width": 8}, "GPU0 (0000:1b:00.0) Gen5 x8 of Gen5 x16 at 80%"),
    ({}, "GPU0 (0000:1b:00.0) Gen3 x4 of Gen5 x16 at 80%"),  # no sample fields: the facts' link
])
def test_pcie_a_busy_gpu_below_its_link_warns(sample: Dict[str, int], text: str) -> None:
    facts = gpu0(pcie_gen=3, pcie_width=4)(gpu_host())
    f = pcie({0: dict(sample, utilization_gpu_pct=80), 1: {"utilization_gpu_pct": 0}}, facts)
    assert (f.status, f.actual) == ("warn", text)
    assert f.fix == "check the slot/riser and BIOS PCIe speed setting; nvidia-smi -q -d PCIE shows the link"


def test_pcie_link_unknown_max_is_not_judged() -> None:
    facts = gpu0(pcie_gen_max=None, pcie_width_max=None)(gpu_host())
    f = pcie({0: {"utilization_gpu_pct": 90, "pcie_gen": 1, "pcie_width": 1}}, facts)
    assert f.status == "pass" and f.actual == "1 busy GPUs at max link, 1 idle not judged"


@pytest.mark.parametrize("exc", [nvml.NvmlUnavailable("driver_not_loaded", "nvmlInit: gone"),
                                 nvml.GpuLost("GPU 1: lost")])
def test_pcie_nvml_failing_at_sample_time_is_a_skip(exc: Exception) -> None:
    f = pcie(exc)
    assert (f.status, f.actual, f.expected) == ("skip", f"live NVML sample failed: {exc}",
                                                "max gen/width under load")


@pytest.mark.parametrize("total,free,status", [
    (10**7, 5 * 1024 - 1, "fail"), (10**7, 5 * 1024, "warn"), (100 * 1024, 50 * 1024 - 1, "warn"),
    (500 * 1024, 50 * 1024, "pass"), (500 * 1024 + 10, 50 * 1024, "warn"), (10**6, 10**5, "pass"),
    (10**6, 10**5 - 1, "warn"), (0, 50 * 1024, "pass"), (0, 50 * 1024 - 1, "warn"),
])
def test_space_status_lines(total: int, free: int, status: str) -> None:
    assert storage.space_status(total, free) == status


def test_free_space_takes_the_worst_place_and_says_each(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    space = {str(tmp_path): (2048 * 1024, 1024 * 1024), str(a): (1024 * 1024, 60 * 1024), str(b): (10**7, 1024)}
    probe = Probe(space=space)
    f = run("storage.free_space", cpu_host(), probe, cwd=str(tmp_path), data=(str(a), str(tmp_path)))
    assert f.status == "warn"  # a: 60 GiB of 1 TiB is under 10%
    assert f.actual == f"{tmp_path}: 1024 GiB free of 2048 GiB; {a}: 60 GiB free of 1024 GiB"
    assert f.expected == ">= 50 GiB and >= 10% free" and "checkpoint.dir" in f.fix
    f = run("storage.free_space", cpu_host(), probe, cwd=str(tmp_path), data=(str(a), str(b)))
    assert f.status == "fail" and f.actual.endswith(f"{b}: 1 GiB free of 9765 GiB")
    f = run("storage.free_space", cpu_host(), probe, cwd=str(tmp_path), data=("/dev/zero",))
    assert f.status == "pass" and f.fix == ""
    assert f.actual.startswith(f"{tmp_path}: 1024 GiB free of 2048 GiB; /dev/zero ") and "(not checked)" in f.actual


def test_data_storage_by_the_longest_mount(tmp_path: Path) -> None:
    nfs, hdd, fast = tmp_path / "nfs", tmp_path / "nfs" / "local", tmp_path / "fast"
    for d in (nfs, hdd, fast):
        d.mkdir(parents=True, exist_ok=True)
    mounts = (Mount("/", "ext4", "/dev/nvme0n1p1", "nvme0n1", "nvme"),
              Mount(str(nfs), "nfs4", "srv:/x", None, "network"),
              Mount(str(hdd) + "/", "xfs", "/dev/vdb1", "vdb", "hdd"))
    facts = R(cpu_host(), storage=mounts)
    f = run("storage.data", facts, Probe(), data=(str(fast),))
    assert (f.status, f.actual) == ("pass", f"{fast}: nvme (ext4 on /)")
    f = run("storage.data", facts, Probe(), data=(str(hdd), str(nfs / "x"), str(fast)))
    assert f.status == "warn"
    assert f.actual == (f"{hdd}: hdd (xfs on {hdd}/) [a virtual disk: it reports rotational whatever backs it; "
                        f"measure with fio to be sure]; {nfs / 'x'}: network (nfs4 on {nfs})")
    assert f.expected == "local nvme/ssd" and "WebDataset" in f.fix
    f = run("storage.data", R(cpu_host(), storage=()), Probe(), data=(str(fast), "/dev/zero"))
    assert f.status == "pass" and f.actual.startswith(f"{fast}: unknown; /dev/zero ")
    f = run("storage.data", facts, Probe(), data=("/dev/zero",))
    assert f.status == "skip" and f.actual.startswith("/dev/zero ")
