"""Pins for hosttune/plan/env.py (issue 21, round 5): the allocator fallback order and what each step says, the
captured-root preload rules, LD_PRELOAD's order and de-duplication (the caller's own malloc kept), Intel OpenMP,
the device switches (device: cpu, CUDA order, the allocator config only with GPUs) and the DataLoader, determinism,
debug and literal-env switches every rank gets."""

import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from _profilehelp import elf_lib, needs_root, root_dir

from hosttune.facts import Allocators, Cpu, Facts, Gpu, Numa, NumaNode, TorchInstall
from hosttune.plan import env as penv
from hosttune.plan.model import DEBUG_ENV, DETERMINISTIC_ENV
from hosttune.policy import names
from hosttune.profile.settings import DataLoader, Profile

pytestmark = needs_root  # a preload library must be root's: as root, a tmp_path file is


@pytest.fixture()
def libs(tmp_path: Path) -> Dict[str, str]:
    d = root_dir(tmp_path, "lib")
    out = {n: elf_lib(d, f"lib{n}.so.2") for n in ("jemalloc", "tcmalloc", "tcmalloc_minimal", "iomp5", "other")}
    bad = d / "libbad.so"
    bad.write_text("not elf\n")
    os.chmod(bad, 0o644)
    out["bad"] = str(bad)
    out["dir"] = str(d)
    return out


def facts(gpus: int = 0, torch: Optional[TorchInstall] = None, root: str = "/", **alloc: Optional[str]) -> Facts:
    return Facts(cpu=Cpu(online=(0, 1), logical=2, physical=2, cores=((0,), (1,)), allowed_cpus=(0, 1)),
                 numa=Numa(nodes=(NumaNode(0, (0, 1), 1000),)), allocators=Allocators(**alloc),  # type: ignore[arg-type]
                 gpus=tuple(Gpu(index=i, pci_bus_id=f"0000:{0x10 + i:02x}:00.0", uuid=f"GPU-{i}aaa")
                            for i in range(gpus)),
                 torch=torch, root=root)


def prof(**kw: Any) -> Profile:
    return Profile(name="t", summary="", source="<test>", **kw)


# ---- the allocator ---------------------------------------------------------------------------------------------------
def test_auto_takes_jemalloc_first(libs: Dict[str, str]) -> None:
    got = penv._choose_allocator(facts(jemalloc=libs["jemalloc"], tcmalloc=libs["tcmalloc"]), prof())
    assert got == ("jemalloc", libs["jemalloc"], [f"allocator: jemalloc preloaded from {libs['jemalloc']}"])


def test_missing_or_refused_jemalloc_falls_back_to_tcmalloc_saying_why(libs: Dict[str, str]) -> None:
    name, path, why = penv._choose_allocator(facts(tcmalloc=libs["tcmalloc"]), prof())
    assert (name, path) == ("tcmalloc", libs["tcmalloc"])
    assert why == ["allocator: jemalloc not found on this host",
                   f"allocator: tcmalloc preloaded from {libs['tcmalloc']}"]
    name, path, why = penv._choose_allocator(facts(jemalloc=libs["bad"], tcmalloc_minimal=libs["tcmalloc_minimal"]),
                                             prof(allocator="jemalloc"))
    assert (name, path) == ("tcmalloc", libs["tcmalloc_minimal"])
    assert why[0].startswith("allocator: jemalloc refused for LD_PRELOAD: ") and len(why) == 2


def test_nothing_usable_is_glibc_and_system_is_asked_for(libs: Dict[str, str]) -> None:
    assert penv._choose_allocator(facts(jemalloc=libs["jemalloc"]), prof(allocator="tcmalloc")) == \
        ("system", None, ["allocator: tcmalloc not found on this host",
                          "allocator: glibc malloc (no usable jemalloc/tcmalloc)"])
    assert penv._choose_allocator(facts(jemalloc=libs["jemalloc"]), prof(allocator="system")) == \
        ("system", None, ["allocator: glibc malloc"])


def test_allocator_path_only_for_the_allocator_the_profile_names(libs: Dict[str, str]) -> None:
    f = facts(jemalloc=libs["jemalloc"], tcmalloc=libs["tcmalloc"])
    assert penv._choose_allocator(f, prof(allocator="jemalloc", allocator_path=libs["other"]))[1] == libs["other"]
    assert penv._choose_allocator(f, prof(allocator="auto", allocator_path=libs["other"]))[1] == libs["jemalloc"]
    # a tcmalloc path is not used for the jemalloc tried first, nor for the fallback
    assert penv._choose_allocator(f, prof(allocator="tcmalloc", allocator_path=libs["other"]))[1] == libs["other"]
    f2 = facts(tcmalloc=libs["tcmalloc"])
    got = penv._choose_allocator(f2, prof(allocator="jemalloc", allocator_path=libs["bad"]))
    assert got[1] == libs["tcmalloc"] and "jemalloc refused" in got[2][0]


def test_a_link_is_preloaded_by_its_resolved_path_and_shown_both_ways(libs: Dict[str, str]) -> None:
    link = Path(libs["dir"]) / "libjemalloc.so"
    link.symlink_to(libs["jemalloc"])
    name, path, why = penv._choose_allocator(facts(jemalloc=str(link)), prof())
    assert path == libs["jemalloc"] and why == [f"allocator: jemalloc preloaded from {link} (resolved: {path})"]


# ---- a captured root -------------------------------------------------------------------------------------------------
def test_preload_under_a_captured_root_is_named_by_its_path_on_that_host(tmp_path: Path) -> None:
    root = root_dir(tmp_path, "root")
    d = root_dir(root, "usr")
    elf_lib(root_dir(d, "lib"), "libjemalloc.so.2")
    assert penv._preload_library("/usr/lib/libjemalloc.so.2", str(root)) == ("/usr/lib/libjemalloc.so.2", None)
    outside = root_dir(tmp_path, "outside")
    real = elf_lib(outside, "libx.so")
    (d / "lib" / "libout.so").symlink_to(real)
    got, why = penv._preload_library("/usr/lib/libout.so", str(root))
    assert got is None and why == f"/usr/lib/libout.so resolves outside the captured root {root}"
    # no root ("" or "/"): the host's own path
    assert penv._preload_library(real, "") == (real, None) and penv._preload_library(real, "/") == (real, None)


def test_a_link_to_a_name_ld_preload_cannot_carry_is_refused(tmp_path: Path) -> None:
    d = root_dir(tmp_path, "l")
    real = elf_lib(d, "lib a.so")
    (d / "liba.so").symlink_to(real)
    got, why = penv._preload_library(str(d / "liba.so"), "/")
    assert got is None and why is not None and why.endswith("which LD_PRELOAD cannot carry") and "resolves to" in why


# ---- LD_PRELOAD ------------------------------------------------------------------------------------------------------
def test_ours_first_the_callers_after_once_each(libs: Dict[str, str]) -> None:
    f = facts(jemalloc=libs["jemalloc"])
    other = libs["other"]
    env, why = penv._preload_env(f, prof(), {"LD_PRELOAD": f"{other}:{other} {libs['jemalloc']}"}, False)
    assert env == {"LD_PRELOAD": f"{libs['jemalloc']}:{other}"}
    assert why[-1].startswith(f"LD_PRELOAD: the profile's {libs['jemalloc']} first, yours after (")
    env, why = penv._preload_env(f, prof(), {}, False)
    assert env == {"LD_PRELOAD": libs["jemalloc"]} and not any(w.startswith("LD_PRELOAD") for w in why)
    env, why = penv._preload_env(f, prof(), {"LD_PRELOAD": libs["jemalloc"]}, False)
    assert env == {"LD_PRELOAD": libs["jemalloc"]} and not any(w.startswith("LD_PRELOAD") for w in why)


def test_the_callers_own_malloc_is_kept_unless_override(libs: Dict[str, str]) -> None:
    f = facts(jemalloc=libs["jemalloc"])
    theirs = libs["tcmalloc"]
    env, why = penv._preload_env(f, prof(malloc_conf="narenas:2"), {"LD_PRELOAD": theirs}, False)
    assert env == {} and why == [f"allocator: {theirs} from your LD_PRELOAD kept, the profile's auto not added "
                                 "(--override to put the profile's first)"]
    env, why = penv._preload_env(f, prof(malloc_conf="narenas:2"), {"LD_PRELOAD": theirs}, True)
    assert env == {"LD_PRELOAD": f"{libs['jemalloc']}:{theirs}", "MALLOC_CONF": "narenas:2"}
    # the same library the profile wants is no conflict
    env, _ = penv._preload_env(f, prof(), {"LD_PRELOAD": libs["jemalloc"]}, False)
    assert env == {"LD_PRELOAD": libs["jemalloc"]}


def test_intel_openmp_goes_after_the_allocator_or_says_why_not(libs: Dict[str, str]) -> None:
    env, why = penv._preload_env(facts(jemalloc=libs["jemalloc"], iomp5=libs["iomp5"]), prof(openmp="intel"), {}, False)
    assert env == {"LD_PRELOAD": f"{libs['jemalloc']}:{libs['iomp5']}"}
    assert why[-1] == f"openmp: Intel OpenMP preloaded from {libs['iomp5']}"
    env, why = penv._preload_env(facts(), prof(openmp="intel"), {}, False)
    assert env == {} and why[-1] == "openmp: Intel OpenMP not preloaded: libiomp5 not found"
    env, why = penv._preload_env(facts(iomp5=libs["bad"]), prof(openmp="intel"), {}, False)
    assert env == {} and why[-1].startswith("openmp: Intel OpenMP not preloaded: ") and libs["bad"] in why[-1]
    env, _ = penv._preload_env(facts(iomp5=libs["iomp5"]), prof(openmp="auto"), {}, False)
    assert env == {}


def test_allocator_settings_follow_the_allocator_chosen(libs: Dict[str, str]) -> None:
    tc = {"TCMALLOC_RELEASE_RATE": "10"}
    env, _ = penv._preload_env(facts(jemalloc=libs["jemalloc"]), prof(malloc_conf="c", tcmalloc=tc), {}, False)
    assert env == {"LD_PRELOAD": libs["jemalloc"], "MALLOC_CONF": "c"}
    env, _ = penv._preload_env(facts(tcmalloc=libs["tcmalloc"]), prof(malloc_conf="c", tcmalloc=tc), {}, False)
    assert env == {"LD_PRELOAD": libs["tcmalloc"], "TCMALLOC_RELEASE_RATE": "10"}
    env, _ = penv._preload_env(facts(), prof(malloc_conf="c", tcmalloc=tc), {}, False)
    assert env == {}


# ---- the device ------------------------------------------------------------------------------------------------------
def device(f: Facts, p: Profile, environ: Optional[Dict[str, str]] = None) -> Any:
    env: Dict[str, str] = {}
    why: List[str] = []
    gpus = penv._device_env(f, p, environ or {}, False, env, why)
    return gpus, env, why


def test_device_cpu_hides_the_gpus() -> None:
    gpus, env, why = device(facts(gpus=2), prof(device="cpu", cuda_alloc_conf="x"))
    assert gpus == [] and env == {"CUDA_VISIBLE_DEVICES": ""}
    assert why == ["device: cpu - CUDA_VISIBLE_DEVICES='' hides the GPUs"]


def test_gpus_get_pci_order_and_the_allocator_config() -> None:
    t = TorchInstall(python="/usr/bin/python3", version="2.9.1", cuda="12.8")
    gpus, env, why = device(facts(gpus=2, torch=t), prof(cuda_alloc_conf="expandable_segments:True"))
    assert len(gpus) == 2 and env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                                      "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert why == ["allocator config: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (torch 2.9.1)"]
    gpus, env, _ = device(facts(gpus=2), prof(cuda_alloc_conf="x"), {"CUDA_VISIBLE_DEVICES": "1"})
    assert [g.index for g in gpus] == [1] and env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "PYTORCH_ALLOC_CONF": "x",
                                                      "PYTORCH_CUDA_ALLOC_CONF": "x"}
    # every GPU hidden by the caller: still PCI order, no allocator config
    gpus, env, _ = device(facts(gpus=2), prof(cuda_alloc_conf="x"), {"CUDA_VISIBLE_DEVICES": ""})
    assert gpus == [] and env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert device(facts(), prof(cuda_alloc_conf="x")) == ([], {}, [])
    assert device(facts(gpus=1), prof())[1] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def test_visible_gpus_say_what_cuda_visible_devices_does() -> None:
    f = facts(gpus=2)
    assert penv._visible_gpus(f, {}) == (list(f.gpus), [])
    gpus, why = penv._visible_gpus(f, {"CUDA_VISIBLE_DEVICES": "1,7"})
    assert gpus == [f.gpus[1]]
    assert why == ["CUDA_VISIBLE_DEVICES='1,7'",
                   "CUDA_VISIBLE_DEVICES: CUDA stops at entry '7' (index 7 is past the 2 GPU(s))"]
    gpus, why = penv._visible_gpus(f, {"CUDA_VISIBLE_DEVICES": "MIG-GPU-ffff/1/0"})
    assert gpus == [None] and len(why) == 2 and why[1].endswith("; its rank gets no GPU-local binding")


# ---- the switches ----------------------------------------------------------------------------------------------------
def switches(f: Facts, p: Profile, gpus: List[Any]) -> Any:
    env: Dict[str, str] = {names.PREFETCH_FACTOR: "stale"}
    why: List[str] = []
    penv._switches_env(f, p, gpus, env, why)
    return env, why


def test_pin_memory_auto_needs_a_gpu_and_a_cuda_torch() -> None:
    g = [object()]
    cuda = TorchInstall(python="p", version="2.9", cuda="12.8")
    cpu_torch = TorchInstall(python="p", version="2.9", cuda=None)
    assert switches(facts(torch=cuda), prof(), g)[0][names.PIN_MEMORY] == "1"
    assert switches(facts(), prof(), g)[0][names.PIN_MEMORY] == "1"  # not probed: assume CUDA
    assert switches(facts(torch=cuda), prof(), [])[0][names.PIN_MEMORY] == "0"
    env, why = switches(facts(torch=cpu_torch), prof(), g)
    assert env[names.PIN_MEMORY] == "0" and why == ["pin_memory: off - the torch build has no CUDA"]
    assert switches(facts(torch=cpu_torch), prof(), [])[1] == []
    assert switches(facts(), prof(dataloader=DataLoader(pin_memory=True)), [])[0][names.PIN_MEMORY] == "1"
    assert switches(facts(), prof(dataloader=DataLoader(pin_memory=False)), g)[0][names.PIN_MEMORY] == "0"


def test_fixed_workers_bring_their_followers() -> None:
    env, _ = switches(facts(), prof(dataloader=DataLoader(num_workers=4)), [])
    assert env[names.NUM_WORKERS] == "4" and env[names.PERSISTENT_WORKERS] == "1" and env[names.PREFETCH_FACTOR] == "2"
    env, _ = switches(facts(), prof(dataloader=DataLoader(num_workers=2, prefetch_factor=5,
                                                          persistent_workers=False)), [])
    assert env[names.PERSISTENT_WORKERS] == "0" and env[names.PREFETCH_FACTOR] == "5"
    env, _ = switches(facts(), prof(dataloader=DataLoader(num_workers=0, prefetch_factor=5)), [])
    assert env[names.NUM_WORKERS] == "0" and env[names.PERSISTENT_WORKERS] == "0" and names.PREFETCH_FACTOR not in env
    env, _ = switches(facts(), prof(), [])
    assert names.NUM_WORKERS not in env and names.PERSISTENT_WORKERS not in env
    assert env[names.PREFETCH_FACTOR] == "stale"


def test_determinism_debug_and_literal_env() -> None:
    env, why = switches(facts(), prof(), [])
    assert env[names.DETERMINISTIC] == "0" and not set(DETERMINISTIC_ENV) & set(env) and not set(DEBUG_ENV) & set(env)
    assert why == []
    env, why = switches(facts(), prof(deterministic=True, debug=True, env={"B": 2, "A": "x"}), [])
    assert env[names.DETERMINISTIC] == "1"
    assert {k: env[k] for k in DETERMINISTIC_ENV} == DETERMINISTIC_ENV and {k: env[k] for k in DEBUG_ENV} == DEBUG_ENV
    assert env["A"] == "x" and env["B"] == "2" and why == ["env: 2 literal entries from the profile (A, B)"]


def test_common_env_reads_the_process_environment_and_keeps_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PINS5_KNOB", "mine")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    p = prof(env={"PINS5_KNOB": "profile", "PINS5_OTHER": "o"})
    got = penv.common_env(facts(), p)
    assert got["PINS5_KNOB"] == "mine" and got["PINS5_OTHER"] == "o"
    assert penv.common_env(facts(), p, {})["PINS5_KNOB"] == "profile"
    assert penv.common_env(facts(), p, {"PINS5_KNOB": "mine"}, override=True)["PINS5_KNOB"] == "profile"
    assert penv.common_env(facts(), p, {"PINS5_KNOB": "mine"})["PINS5_KNOB"] == "mine"


def test_the_network_plan_reaches_every_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, why = penv._common(facts(root=str(tmp_path)), prof(), {"MASTER_ADDR": "10.9.8.7"})
    assert why[-1] == ("network: MASTER_ADDR 10.9.8.7: no interface named for a captured host (its routes are not "
                       "in the capture)")
    seen: List[Any] = []

    def decide(endpoint: Any, root: str) -> Any:
        seen.append((endpoint.host, root))
        return penv.network.NetPlan({"GLOO_SOCKET_IFNAME": "eth9"}, ("network: eth9 reaches 10.9.8.7",))

    monkeypatch.setattr(penv.network, "live_decide", decide)
    env, why = penv._common(facts(), prof(), {"MASTER_ADDR": "10.9.8.7"})
    assert env["GLOO_SOCKET_IFNAME"] == "eth9" and why[-1] == "network: eth9 reaches 10.9.8.7"
    assert seen == [("10.9.8.7", "/")]
