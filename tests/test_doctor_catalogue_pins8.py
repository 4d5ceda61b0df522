"""Pins for hosttune.doctor.catalogue (issue 21, practice round HDOC8): diagnose()'s one-line usage errors whole, and
what reaches detect.collect (replaced by a fixed host: no process starts)."""

import os
from pathlib import Path
from typing import Any, List

import pytest
from _doctorhelp import cpu_host

import hosttune.detect
from hosttune.doctor import catalogue
from hosttune.errors import UserError

GROUPS = "(groups: os, cpu, storage, tools, nvidia, torch, hosttune)"


@pytest.fixture
def fixed_host(monkeypatch: pytest.MonkeyPatch) -> List[Any]:
    asked: List[Any] = []
    monkeypatch.setattr(hosttune.detect, "collect", lambda *a, **kw: asked.append((a, kw)) or cpu_host())
    return asked


@pytest.mark.parametrize("only,message", [
    ("tool", f"--only: no group 'tool'; did you mean tools? {GROUPS}"),
    ("nvida", f"--only: no group 'nvida'; did you mean nvidia? {GROUPS}"),
    ("zzzz", f"--only: no group 'zzzz' {GROUPS}"),
])
def test_unknown_group_message_whole(fixed_host: List[Any], only: str, message: str) -> None:
    with pytest.raises(UserError) as exc:
        catalogue.diagnose(only=only, env={})
    assert str(exc.value) == message
    assert fixed_host == []  # refused before anything is detected


def test_root_is_read_through_its_real_path(fixed_host: List[Any], tmp_path: Path) -> None:
    """--root LINK: the host tree read is the link's target (trust.host_tree), as one resolved path."""
    tree = tmp_path / "captured"
    tree.mkdir()
    link = tmp_path / "link"
    link.symlink_to(tree)
    report = catalogue.diagnose(root=str(link), only="tools", env={})
    assert report.results
    ((args, kw),) = fixed_host
    assert args == (Path(os.path.realpath(tree)), None)
    assert kw == {"probe_torch": False, "use_nvml": False}


def test_root_that_is_a_file_is_refused(fixed_host: List[Any], tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(UserError) as exc:
        catalogue.diagnose(root=str(f), env={})
    assert str(exc.value) == f"--root {f}: not a directory (it is a regular file)"
    assert fixed_host == []


def test_skip_holds_with_deep_too(fixed_host: List[Any]) -> None:
    """--skip ID with --deep: the check is still left out and reported as a skip (only "tools": no measurement runs)."""
    from hosttune.doctor.deep.session import DeepOptions

    deep = catalogue.diagnose(only="tools", env={}, skip=["tools.numactl"], deep=DeepOptions(progress=False))
    plain = catalogue.diagnose(only="tools", env={}, skip=["tools.numactl"])
    got = [(r.id, r.status, r.actual) for r in deep.results]
    assert got == [(r.id, r.status, r.actual) for r in plain.results]
    assert ("tools.numactl", "skip", catalogue.SKIPPED) in got


# (id, group, title, the names of its needs, what each need's skip shows as expected): the table doctor prints
CATALOGUE = [
    ("os.distro", "os", "Supported distribution", (), ()),
    ("os.numa_balancing", "os", "Automatic NUMA balancing", (), ()),
    ("os.thp", "os", "Transparent huge pages", (), ()),
    ("os.swappiness", "os", "Swappiness", (), ()),
    ("os.governor", "os", "CPU frequency governor", (), ()),
    ("os.smt", "os", "SMT (hyper-threading) state", (), ()),
    ("os.container", "os", "Inside a container: what it can see", (), ()),
    ("os.tuned", "os", "tuned profile agrees with these checks", (), ()),
    ("cpu.cgroup_limit", "cpu", "Usable CPUs vs machine (cgroup)", (), ()),
    ("cpu.omp_threads", "cpu", "OMP_NUM_THREADS set by hand", (), ()),
    ("cpu.nofile", "cpu", "Open files limit (ulimit -n)", (), ()),
    ("cpu.memlock", "cpu", "Locked memory limit on RDMA hosts", (), ()),
    ("storage.shm", "storage", "/dev/shm size for DataLoader workers", (), ()),
    ("storage.data", "storage", "Dataset storage (--data)", ("data", "live"), ("local nvme/ssd", "local nvme/ssd")),
    ("storage.free_space", "storage", "Free space for checkpoints", ("live",), (">= 50 GiB free",)),
    ("tools.allocator", "tools", "jemalloc or tcmalloc installed", (), ()),
    ("tools.numactl", "tools", "numactl on NUMA hosts", (), ()),
    ("nvidia.driver", "nvidia", "NVIDIA driver loaded for the GPUs", (), ()),
    ("nvidia.nouveau", "nvidia", "nouveau not loaded", (), ()),
    ("nvidia.nvml", "nvidia", "NVML answers", (), ()),
    ("nvidia.driver_cuda", "nvidia", "Driver new enough for torch's CUDA", ("gpu",), ("",)),
    ("nvidia.torch_build", "nvidia", "torch is a CUDA build that sees the GPUs", ("gpu",), ("",)),
    ("nvidia.cudnn_nccl", "nvidia", "cuDNN/NCCL torch loaded vs system", ("gpu",), ("",)),
    ("nvidia.persistence", "nvidia", "Persistence mode", ("gpu", "nvml"), ("", "")),
    ("nvidia.ecc_mode", "nvidia", "ECC on datacenter GPUs", ("gpu", "nvml"), ("", "")),
    ("nvidia.ecc_errors", "nvidia", "Uncorrected ECC errors", ("gpu", "nvml"), ("", "")),
    ("nvidia.pending_retire", "nvidia", "Pending page retirement / row remap", ("gpu", "nvml"), ("", "")),
    ("nvidia.remap_failure", "nvidia", "Row remapping failure", ("gpu", "nvml"), ("", "")),
    ("nvidia.pcie_link", "nvidia", "PCIe link gen/width under load",
     ("gpu", "nvml", "live"), ("", "", "max gen/width under load")),
    ("nvidia.clock_reasons", "nvidia", "Thermal/power clock events", ("gpu", "nvml"), ("", "")),
    ("nvidia.temperature", "nvidia", "GPU temperature", ("gpu", "nvml"), ("", "")),
    ("nvidia.fabric_manager", "nvidia", "Fabric Manager on NVSwitch hosts", (), ()),
    ("nvidia.gpu_numa", "nvidia", "GPU NUMA locality known", ("gpu",), ("",)),
    ("nvidia.iommu", "nvidia", "IOMMU pass-through for P2P", (), ()),
    ("nvidia.acs", "nvidia", "PCIe ACS off between GPUs", (), ()),
    ("torch.version", "torch", "torch version", (), ()),
    ("torch.debug_env", "torch", "Debug switches left on", ("shell_env",), ("none set",)),
    ("torch.alloc_conf", "torch", "PYTORCH_CUDA_ALLOC_CONF parses", ("shell_env",), ("parses",)),
    ("torch.cuda_visible_devices", "torch", "CUDA_VISIBLE_DEVICES names real GPUs", ("shell_env",), ("",)),
    ("torch.onednn", "torch", "torch's CPU kernels use the CPU's ISA", ("shell_env",), ("no ISA cap below the CPU",)),
    ("torch.venv", "torch", "Training python in a venv/conda", (), ()),
    ("torch.image_decoder", "torch", "Fast JPEG decoder in the training python", (), ()),
    ("hosttune.profile", "hosttune", "Profile present and valid", ("local_profiles",), ("present and valid",)),
    ("hosttune.profile_fresh", "hosttune", "Profile made for this hardware", ("local_profiles",), ("",)),
]


def test_the_catalogue_whole() -> None:
    got = [(x.id, x.group, x.title, tuple(n.name for n in x.needs), tuple(n.expected for n in x.needs))
           for x in catalogue.CHECKS]
    assert got == CATALOGUE
    assert list(catalogue.BY_ID) == [row[0] for row in CATALOGUE]
    assert list(catalogue.KNOWN) == [row[0] for row in CATALOGUE] + [x.id for x in catalogue.DEEP_CHECKS]



def test_unknown_check_ids_whole() -> None:
    with pytest.raises(UserError) as exc:
        catalogue.check_by_id("os.tph", "--skip")
    assert str(exc.value) == "--skip: no check 'os.tph'; did you mean os.thp, os.smt, os.tuned?"
    with pytest.raises(UserError) as exc:
        catalogue.explain("zzzzzzzz")
    assert str(exc.value) == "--explain: no check 'zzzzzzzz'; ids: " + ", ".join(catalogue.KNOWN)
    assert catalogue.explain("os.thp").startswith("os.thp (os): Transparent huge pages\n\nTransparent huge pages ")


def test_usage_errors_whole(fixed_host: List[Any], tmp_path: Path) -> None:
    from hosttune.doctor.deep.session import DeepOptions

    def refused(**kw: Any) -> str:
        with pytest.raises(UserError) as exc:
            catalogue.diagnose(env={}, **kw)
        return str(exc.value)

    gone = tmp_path / "gone"
    assert refused(data=[str(gone)]) == f"--data: {gone}: no such file or directory"
    assert refused(data=["/dev/null"]).startswith("--data: /dev/null ")
    assert refused(root=str(tmp_path), deep=DeepOptions(progress=False)) == \
        "--deep measures this machine; it cannot be combined with --root"
    plain = tmp_path / "python"
    plain.write_text("")
    assert refused(python=str(plain)) == f"--python: {plain}: not an executable file"
    assert refused(skip=["nonsense"]).startswith("--skip: no check 'nonsense'")
    assert fixed_host == []


def test_the_live_host_is_probed_with_the_python_given(fixed_host: List[Any], tmp_path: Path) -> None:
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    catalogue.diagnose(python=str(py), only="tools", env={})
    catalogue.diagnose(root="/", only="tools", env={})
    assert fixed_host == [((Path("/"), str(py)), {"probe_torch": True, "use_nvml": True}),
                          ((Path("/"), None), {"probe_torch": True, "use_nvml": True})]


def test_a_check_that_crashes_or_returns_junk_is_a_skip_naming_it() -> None:
    from hosttune.doctor.model import Check, Finding, Result

    def boom(ctx: Any) -> Finding:
        raise KeyError("gpus")

    checks = [Check("x.boom", "x", "Boom", boom), Check("x.junk", "x", "Junk", lambda ctx: "ok"),  # type: ignore
              Check("x.fine", "x", "Fine", lambda ctx: Finding(status="warn", actual="a", expected="e", fix="f"))]
    report = catalogue.run_checks(object(), checks, skip=["x.fine"])  # type: ignore[arg-type]
    assert report.results == (
        Result("x.boom", "x", "skip", "Boom", "", "check crashed: KeyError: 'gpus'", ""),
        Result("x.junk", "x", "skip", "Junk", "", "check crashed: TypeError: returned str, not a Finding", ""),
        Result("x.fine", "x", "skip", "Fine", "", "not run (--skip)", ""))
    report = catalogue.run_checks(object(), checks[2:], only="x")  # type: ignore[arg-type]
    assert report.results == (Result("x.fine", "x", "warn", "Fine", "e", "a", "f"),)
    assert catalogue.run_checks(object(), checks, only="y").results == ()  # type: ignore[arg-type]


def test_deep_runs_with_the_options_given(fixed_host: List[Any]) -> None:
    """The DeepRun gets the caller's options: --nodes 127.0.0.1 (this host: read in-process, nothing measured) makes
    os.deep_network judge that path; without the options it would be a skip for want of --nodes."""
    from hosttune.doctor.deep.session import DeepOptions

    report = catalogue.diagnose(only="os", env={}, skip=["os.deep_nodes_allreduce"],
                                deep=DeepOptions(progress=False, nodes=("127.0.0.1",)))
    got = {r.id: (r.status, r.actual) for r in report.results}
    assert got["os.deep_network"] == ("pass", "127.0.0.1: this host (127.0.0.1)")
    assert got["os.deep_nodes_allreduce"] == ("skip", catalogue.SKIPPED)
    assert list(got)[-3:] == ["os.deep_network", "os.deep_nodes_allreduce", "os.deep_container"]
