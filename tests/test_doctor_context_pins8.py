"""Pins for hosttune.doctor.context (issue 21, practice round HDOC8): host_setting_fix whole in every container case,
the questions checks ask (gpus, labels, versions, gaps), the prerequisites' skip findings, the NVML sample cache and
the profile load's error."""

from typing import Any, Dict, List

import pytest
from _doctorhelp import R, cpu_host, dgpu, gpu_host, run_one

from hosttune import nvml as nvmlmod
from hosttune.doctor import context as C
from hosttune.doctor.model import Finding
from hosttune.facts import Container
from hosttune.profile import Active

FIX = "sysctl -w kernel.numa_balancing=0"


def ctx_in(container: Container) -> C.Context:
    return C.Context(facts=cpu_host(container=container), env={})


@pytest.mark.parametrize("container,where,sysctl,head", [
    (Container(), "/proc/sys", "kernel.numa_balancing", None),
    (Container(detected=True, runtime="docker", proc_sys_readonly=True, sys_readonly=False), "/proc/sys",
     "kernel.shmmax", "read-only inside a container (docker): set it on the host (or the pod's "
     "securityContext.sysctls (kernel.shmmax is namespaced))"),
    (Container(detected=True, runtime="kubernetes", proc_sys_readonly=True), "/proc/sys", "net.core.somaxconn",
     "read-only inside a container (kubernetes): set it on the host (or the pod's securityContext.sysctls "
     "(net.core.somaxconn is namespaced))"),
    (Container(detected=True, runtime="podman", proc_sys_readonly=True), "/proc/sys", "vm.swappiness",
     "read-only inside a container (podman): set it on the host (a pod's securityContext.sysctls cannot: "
     "vm.swappiness is not a namespaced sysctl)"),
    # /sys is judged by sys_readonly, /proc/sys by proc_sys_readonly
    (Container(detected=True, runtime=None, proc_sys_readonly=True, sys_readonly=False), "/sys", "",
     "inside a container (unknown runtime) /sys is the host's: a change here changes it for every container on "
     "the host and is lost at its reboot; set it on the host (/sys is the host's kernel, no pod setting reaches "
     "it)"),
    (Container(detected=True, runtime="lxc", proc_sys_readonly=False, sys_readonly=True), "/sys", "",
     "read-only inside a container (lxc): set it on the host (/sys is the host's kernel, no pod setting reaches "
     "it)"),
    (Container(detected=True, runtime="docker", proc_sys_readonly=False, sys_readonly=True), "/proc/sys",
     "fs.mqueue.msg_max", "inside a container (docker) /proc/sys is the host's: a change here changes it for "
     "every container on the host and is lost at its reboot; set it on the host (or the pod's "
     "securityContext.sysctls (fs.mqueue.msg_max is namespaced))"),
])
def test_host_setting_fix_whole(container: Container, where: str, sysctl: str, head: Any) -> None:
    want = FIX if head is None else f"{head}\non the host:\n{FIX}"
    assert C.host_setting_fix(ctx_in(container), where, FIX, sysctl) == want


@pytest.mark.parametrize("text,want", [
    ("12.4", (12, 4)), ("2.6.0+cu124", (2, 6, 0)), ("550.54.15", (550, 54, 15)), ("12.x", (12,)), ("1-2", (1, 2)),
    ("", ()), (None, ()), ("v12", ()), ("12.x.3", (12,)), ("2.6.0a0+git1.3", (2, 6)),
])
def test_version_tuple(text: Any, want: Any) -> None:
    assert C.version_tuple(text) == want


def test_gpu_questions() -> None:
    switch = dgpu(2, pci_class="0x068000", source="nvml")
    unknown_class = dgpu(3, pci_class="", pci_bus_id=None, source="lspci")
    facts = R(gpu_host(), gpus=(dgpu(0), dgpu(1, pci_class="0x030000"), switch, unknown_class),
              missing=("numa.nodes: x", "kernel.modules: unreadable", "kernel.modules: second"))
    ctx = C.Context(facts=facts, env={})
    assert [g.index for g in C.gpus(ctx)] == [0, 1, 3]
    assert [g.index for g in C.nvml_gpus(ctx)] == [0, 1]
    assert C.gpu_label(unknown_class) == "GPU3 (?)"
    assert C.gpu_label(dgpu(0)) == "GPU0 (0000:1b:00.0)"
    assert C.missing(ctx, "kernel.modules") == "kernel.modules: unreadable"
    assert C.missing(ctx, "cpu") is None
    assert C.multi_node(ctx) is True and C.is_vm(ctx) is False and ctx.family == "debian"
    one = R(cpu_host(), numa=R(cpu_host().numa, nodes=cpu_host().numa.nodes[:1]),
            cpu=R(cpu_host().cpu, flags=("sse", "hypervisor")))
    assert C.multi_node(C.Context(facts=one, env={})) is False and C.is_vm(C.Context(facts=one, env={})) is True


def test_prerequisite_skips_whole() -> None:
    skip = Finding(status="skip", actual="the environment belongs to this shell, not the captured host",
                   expected="none set")
    assert run_one("torch.debug_env", cpu_host(), live=False) == skip
    assert run_one("torch.cuda_visible_devices", cpu_host(), live=False) == R(skip, expected="")
    assert run_one("hosttune.profile", cpu_host(), live=False) == Finding(
        status="skip", actual="profiles live on this machine, not in the captured host", expected="present and valid")
    assert run_one("nvidia.driver_cuda", cpu_host()) == Finding(status="skip", actual="no NVIDIA GPU on this host")
    no_nvml = R(gpu_host(), nvidia=R(gpu_host().nvidia, nvml="skipped"))
    assert run_one("nvidia.persistence", no_nvml) == Finding(
        status="skip", actual="NVML not available (skipped): see nvidia.nvml")
    lspci_only = R(gpu_host(), gpus=(dgpu(0, source="lspci"),))
    assert run_one("nvidia.persistence", lspci_only) == Finding(
        status="skip", actual="NVML not available (ok): see nvidia.nvml")


class Probe(C.Live):
    def __init__(self, answer: Any) -> None:
        self.answer, self.calls = answer, 0

    def gpu_samples(self) -> Dict[int, Dict[str, Any]]:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[no-any-return]


def test_samples_are_taken_once_and_a_failure_is_kept() -> None:
    ok = Probe({0: {"temperature_c": 40}})
    ctx = C.Context(facts=cpu_host(), env={}, probe=ok)
    assert ctx.samples() == {0: {"temperature_c": 40}} and ctx.samples() is ctx.samples()
    assert ok.calls == 1
    gone = Probe(nvmlmod.NvmlUnavailable("driver_not_loaded", "no driver"))
    ctx = C.Context(facts=cpu_host(), env={}, probe=gone)
    seen: List[Exception] = []
    for _ in range(2):
        with pytest.raises(nvmlmod.NvmlUnavailable) as exc:
            ctx.samples()
        seen.append(exc.value)
    assert gone.calls == 1 and seen[0] is seen[1] is gone.answer


def test_a_profile_that_does_not_load_says_why(tmp_path: Any) -> None:
    missing = str(tmp_path / "p.yaml")
    ctx = C.Context(facts=cpu_host(), env={}, profile=Active(missing, "user profile"))
    active, prof, error = ctx.load_profile()
    assert (active.ref, prof, error) == (missing, None, f"{missing}: no such profile file")
    assert ctx.load_profile() is ctx.load_profile()
    builtin = C.Context(facts=cpu_host(), env={}, profile=Active(None, "built-in default"))
    assert builtin.load_profile()[1:] == (None, "")


def test_live_disk_free_is_total_and_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """(total, free) in MiB from statvfs (a fixed answer: the real free space moves while a test runs)."""
    import collections

    usage = collections.namedtuple("usage", "total used free")
    asked: List[str] = []
    monkeypatch.setattr(C.shutil, "disk_usage",
                        lambda path: asked.append(path) or usage(10 << 30, 7 << 30, (3 << 30) + (5 << 20)))
    assert C.Live().disk_free_mb("/srv/train") == (10240, 3077)
    assert asked == ["/srv/train"]


def test_live_lspci_that_cannot_run_is_an_error_naming_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """lspci found but refused or failing to start: a RuntimeError with HostIO's reason (check_acs turns it into a
    skip naming it); not found at all: None."""

    class IO(C.HostIO):
        found = "/usr/bin/lspci"

        def which(self, name: str) -> Any:
            return self.found

        def run(self, argv: Any, timeout: float = 10.0, **kw: Any) -> Any:
            self.last_error = f"cannot run {argv[0]}: Permission denied"
            return None

    monkeypatch.setattr(C, "HostIO", IO)
    with pytest.raises(RuntimeError) as exc:
        C.Live().lspci_vvv()
    assert str(exc.value) == "lspci -vvv: cannot run /usr/bin/lspci: Permission denied"
    IO.found = None  # type: ignore[assignment]
    assert C.Live().lspci_vvv() is None
