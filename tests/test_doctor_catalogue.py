"""doctor's catalogue and runner (hosttune/doctor/catalogue.py, model.py): every check has a pass and a problem case
in the groups' tables (tests/test_doctor_<group>.py) and an explanation, a healthy GPU host passes them all, a
crashing check or facts that break one give a skip, prerequisites are data the runner evaluates."""

import sys
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
from _doctorhelp import NO_PROFILE, R, cpu_host, gpu_facts_from, gpu_host, healthy_scenario, in_use
from test_doctor_cpu import CASES as CPU_CASES
from test_doctor_hosttune import CASES as HOSTTUNE_CASES
from test_doctor_image_decoder import CASES as IMAGE_DECODER_CASES
from test_doctor_nvidia import CASES as NVIDIA_CASES
from test_doctor_os import CASES as OS_CASES
from test_doctor_storage import CASES as STORAGE_CASES
from test_doctor_tools import CASES as TOOLS_CASES
from test_doctor_torch import CASES as TORCH_CASES
from test_onednn import CASES as ONEDNN_CASES

from hosttune import doctor
from hosttune.doctor import Check, Context, Finding, run_checks
from hosttune.errors import UserError
from hosttune.facts import Kernel, Limits, TorchInstall

# every group's table of cases, in the catalogue's order
CASES = (OS_CASES + CPU_CASES + STORAGE_CASES + TOOLS_CASES + NVIDIA_CASES + TORCH_CASES + ONEDNN_CASES
         + IMAGE_DECODER_CASES + HOSTTUNE_CASES)


def test_every_check_has_a_pass_and_a_problem_case() -> None:
    seen: Dict[str, set] = {}
    for cid, *_rest, status, _text in CASES:
        seen.setdefault(cid, set()).add(status)
    for cid in doctor.BY_ID:
        if cid in ("nvidia.pcie_link", "storage.free_space", "hosttune.profile", "hosttune.profile_fresh",
                   "nvidia.acs"):
            continue  # live-only checks: their tests below use the fake NVML, real disks and real profiles
        assert "pass" in seen.get(cid, set()), cid
        if cid in ("os.smt", "os.container"):
            continue  # reports: SMT on or off, and running in a container, are both valid choices
        assert seen[cid] & {"warn", "fail"}, cid


def test_every_check_has_an_explanation() -> None:
    for check in doctor.CHECKS:
        assert check.group in doctor.GROUPS and check.id.startswith(check.group + ".")
        assert len(check.explain.splitlines()) >= 2, check.id


def test_healthy_synthetic_gpu_host_exits_0(tmp_path: Path, fake_nvml: Callable[[Any], Dict[str, str]]) -> None:
    from hosttune import profile

    facts = gpu_facts_from(tmp_path, fake_nvml, healthy_scenario())
    assert [g.source for g in facts.gpus] == ["nvml", "nvml"] and facts.nvidia.nvml == "ok"
    facts = R(facts, torch=TorchInstall(python=sys.executable, version="2.6.0+cu124", cuda="12.4", cudnn="90100",
                                        nccl="2.21.5", cuda_available=True, device_count=2, in_venv=True),
              limits=Limits(nofile_soft=65536, nofile_hard=65536, memlock_soft=-1, memlock_hard=-1))
    path = profile.write(profile.generate(facts), tmp_path / "profile.yaml", force=True)
    report = run_checks(Context(facts=facts, env={}, cwd=str(tmp_path), profile=in_use(path)))
    bad = [r for r in report.results if r.status in ("warn", "fail")]
    # the one thing a tmp dir on this shared machine cannot promise is 50 GiB free
    assert [r.id for r in bad if r.id != "storage.free_space"] == [], bad
    assert report.exit_code == 0 or [r.id for r in bad if r.status == "fail"] == ["storage.free_space"]
    status = {r.id: r.status for r in report.results}
    for cid in ("nvidia.driver", "nvidia.nvml", "nvidia.driver_cuda", "nvidia.torch_build", "nvidia.persistence",
                "nvidia.ecc_mode", "nvidia.ecc_errors", "nvidia.pending_retire", "nvidia.remap_failure",
                "nvidia.pcie_link", "nvidia.clock_reasons", "nvidia.temperature", "nvidia.gpu_numa",
                "hosttune.profile", "hosttune.profile_fresh", "os.numa_balancing", "tools.numactl"):
        assert status[cid] == "pass", (cid, report.results)


# ---- crash handling --------------------------------------------------------------------------------------------------
def test_a_crashing_check_becomes_a_skip() -> None:
    def boom(ctx: Context) -> Finding:
        """Always crashes."""
        return Finding(status="pass", actual=str(1 // 0))

    def odd(ctx: Context) -> Finding:
        """Returns a status that does not exist."""
        return Finding(status="maybe")

    checks = [Check("x.boom", "os", "boom", boom), Check("x.odd", "os", "odd", odd), doctor.BY_ID["os.thp"]]
    report = run_checks(Context(facts=cpu_host(), env={}), checks=checks)
    r = {x.id: x for x in report.results}
    assert r["x.boom"].status == "skip" and "ZeroDivisionError" in r["x.boom"].actual
    assert r["x.odd"].status == "skip" and "'maybe'" in r["x.odd"].actual
    assert r["os.thp"].status == "pass" and report.exit_code == 0


def test_facts_that_break_a_check_give_skip_not_traceback() -> None:
    facts = cpu_host(kernel=Kernel(governors=("performance",), thp="madvise"), torch=TorchInstall(python="py",
                                                                                                   version="x.y"))
    bad = R(facts, cpu=R(facts.cpu, quota_cpus="two"))  # type: ignore[arg-type]
    report = run_checks(Context(facts=bad, env={}, profile=NO_PROFILE))
    assert {r.id: r.status for r in report.results}["cpu.cgroup_limit"] == "skip"


# ---- explain ---------------------------------------------------------------------------------------------------------
def test_explain_and_unknown_ids() -> None:
    text = doctor.explain("nvidia.driver_cuda")
    assert "CUDA Toolkit and Corresponding Driver Versions" in text and "525.60.13" in text
    with pytest.raises(UserError, match="did you mean nvidia.driver_cuda"):
        doctor.explain("nvidia.driver_cud")


# ---- the finding model and prerequisites -----------------------------------------------------------------------------
def test_finding_is_built_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        Finding("warn", "actual", "expected")  # type: ignore[misc]
    with pytest.raises(ValueError, match="'maybe'"):
        Finding(status="maybe")


def test_prerequisites_are_data_the_runner_evaluates() -> None:
    """A check that needs a GPU/NVML/the live host never runs without it: the runner's skip says what is missing."""
    ran = []

    def probe(ctx: Context) -> Finding:
        """Records that it ran."""
        ran.append(1)
        return Finding(status="pass")

    needs_gpu = Check("x.gpu", "nvidia", "needs a GPU", probe, needs=doctor.BY_ID["nvidia.temperature"].needs)
    report = run_checks(Context(facts=cpu_host(), env={}, profile=NO_PROFILE), checks=[needs_gpu])
    assert report.results[0].status == "skip" and "no NVIDIA GPU" in report.results[0].actual and not ran
    no_nvml = gpu_host(nvidia=R(gpu_host().nvidia, nvml="no_permission"))
    report = run_checks(Context(facts=no_nvml, env={}, profile=NO_PROFILE), checks=[needs_gpu])
    assert "NVML not available (no_permission)" in report.results[0].actual and not ran
    assert [n.name for n in doctor.BY_ID["nvidia.pcie_link"].needs] == ["gpu", "nvml", "live"]
    run_checks(Context(facts=gpu_host(), env={}, profile=NO_PROFILE), checks=[needs_gpu])
    assert ran == [1]
