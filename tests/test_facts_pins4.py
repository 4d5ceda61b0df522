"""hosttune.facts pinned (issue 21): the JSON round trip of every shape (Optional dataclass, tuples of tuples,
nested dataclasses, missing keys, a wrong schema) and exactly what the hardware fingerprint is made of."""

import json

import pytest

from hosttune import facts as F


def _rich() -> F.Facts:
    cg = F.Cgroup(version=2, path="/x", cpuset=(0, 1, 2), mems=(0,), quota_cpus=2.5, memory_max=1 << 30)
    return F.Facts(
        hostname="h1",
        distro=F.Distro(id="rocky", version="9", version_best="9.3", family="rhel"),
        kernel=F.Kernel(release="5.14", thp="madvise", numa_balancing=0, governors=("performance",),
                        modules=("nvidia", "ib_core")),
        cpu=F.Cpu(model="Xeon", flags=("avx2", "amx_tile"), online=(0, 1, 2, 3), logical=4, physical=2, packages=1,
                  smt=True, cores=((0, 2), (1, 3)), package_cpus=((0, 1, 2, 3),), allowed_cpus=(0, 1, 2),
                  quota_cpus=2.5, cgroup=cg),
        numa=F.Numa(nodes=(F.NumaNode(id=0, cpus=(0, 1), memory_mb=100, distances=(10, 21)),
                           F.NumaNode(id=1, cpus=(2, 3), memory_mb=200, distances=(21, 10))), allowed_mems=(0, 1)),
        gpus=(F.Gpu(index=0, name="A100", pci_bus_id="0000:3b:00.0", local_cpus=(0, 1), ecc_enabled=True),),
        nvidia=F.Nvidia(driver="550.54.15", nvml="ok", nvswitches=2),
        torch=F.TorchInstall(python="/usr/bin/python3", version="2.4.0", cuda_available=True, device_count=1),
        allocators=F.Allocators(jemalloc="/usr/lib/libjemalloc.so.2"),
        tools=F.Tools(numactl="/usr/bin/numactl"),
        storage=(F.Mount(mount="/data", fstype="xfs", device="nvme0n1", kind="nvme", size_mb=10),),
        memory=F.Memory(total_mb=1000, shm_mb=64),
        limits=F.Limits(nofile_soft=1024, memlock_soft=-1),
        tuned=F.Tuned(installed=True, profile="throughput-performance",
                      settings=(F.TunedSetting(id="thp", option="vm.transparent_hugepages", value="always",
                                               profile="throughput-performance"),)),
        container=F.Container(detected=True, runtime="docker", evidence=("/.dockerenv exists",), gpu_nodes=1),
        missing=("tuned: no etc/tuned",),
    )


def test_round_trip_through_json_is_identity() -> None:
    f = _rich()
    back = F.Facts.from_dict(json.loads(f.to_json()))
    assert back == f
    assert isinstance(back.cpu.cores, tuple) and isinstance(back.cpu.cores[0], tuple)
    assert isinstance(back.numa.nodes[0], F.NumaNode) and isinstance(back.cpu.cgroup, F.Cgroup)
    assert isinstance(back.tuned.settings[0], F.TunedSetting) and isinstance(back.torch, F.TorchInstall)
    assert back.cpu.cgroup.cpuset == (0, 1, 2)


def test_to_dict_is_plain_json_in_field_order() -> None:
    d = _rich().to_dict()
    assert list(d)[:4] == ["schema", "root", "hostname", "distro"] and list(d)[-1] == "missing"
    assert d["schema"] == "hosttune.facts/1" == F.SCHEMA
    assert d["cpu"]["cores"] == [[0, 2], [1, 3]] and d["gpus"][0]["local_cpus"] == [0, 1]
    assert d["torch"]["version"] == "2.4.0" and d["numa"]["nodes"][1]["distances"] == [21, 10]
    assert json.loads(_rich().to_json()) == d
    assert F.Facts().to_dict()["torch"] is None


def test_from_dict_keeps_defaults_for_missing_keys_and_none_for_null() -> None:
    back = F.Facts.from_dict({"schema": F.SCHEMA, "hostname": "x", "torch": None, "cpu": {"logical": 3}})
    assert back.hostname == "x" and back.torch is None and back.cpu.logical == 3 and back.cpu.cgroup == F.Cgroup()
    assert back.distro == F.Distro() and back.gpus == ()


@pytest.mark.parametrize("schema", [None, "hosttune.facts/2", ""])
def test_from_dict_refuses_another_schema(schema: object) -> None:
    data = F.Facts().to_dict()
    data["schema"] = schema
    with pytest.raises(ValueError, match="facts schema"):
        F.Facts.from_dict(data)
    data.pop("schema")
    with pytest.raises(ValueError):
        F.Facts.from_dict(data)


def _fp(**over: object) -> str:
    return F.Facts(**over).hardware_fingerprint()  # type: ignore[arg-type]


def test_fingerprint_is_16_hex_and_stable() -> None:
    a = _rich().hardware_fingerprint()
    assert len(a) == 16 and int(a, 16) >= 0
    assert a == _rich().hardware_fingerprint() == F.Facts.from_dict(_rich().to_dict()).hardware_fingerprint()


@pytest.mark.parametrize("change", [
    {"cpu": F.Cpu(model="Epyc")}, {"cpu": F.Cpu(logical=8)}, {"cpu": F.Cpu(physical=4)},
    {"cpu": F.Cpu(flags=("avx2",))},
    {"numa": F.Numa(nodes=(F.NumaNode(id=0),))}, {"numa": F.Numa(nodes=(F.NumaNode(id=1),))},
    {"numa": F.Numa(nodes=(F.NumaNode(id=0, cpus=(1,)),))},
    {"gpus": (F.Gpu(index=0, pci_bus_id="0000:3b:00.0"),)}, {"gpus": (F.Gpu(index=0, name="H100"),)},
    {"allocators": F.Allocators(jemalloc="/j")}, {"allocators": F.Allocators(tcmalloc="/t")},
    {"allocators": F.Allocators(tcmalloc_minimal="/m")},
])
def test_each_hardware_input_changes_the_fingerprint(change: dict) -> None:
    assert _fp(**change) != _fp()


@pytest.mark.parametrize("change", [
    {"hostname": "other"}, {"memory": F.Memory(total_mb=5)}, {"cpu": F.Cpu(vendor="AMD", online=(0,))},
    {"gpus": (F.Gpu(index=3, temperature_c=80),)}, {"allocators": F.Allocators(iomp5="/i", gomp="/g")},
    {"numa": F.Numa(nodes=(F.NumaNode(id=0, memory_mb=9, distances=(10,)),))},
    {"kernel": F.Kernel(release="6.1")}, {"missing": ("x: y",)},
])
def test_what_is_not_hardware_leaves_the_fingerprint(change: dict) -> None:
    base = {"gpus": (F.Gpu(index=0),), "numa": F.Numa(nodes=(F.NumaNode(id=0),))}
    changed = dict(base)
    changed.update(change)
    assert _fp(**changed) == _fp(**base)


def test_fingerprint_ignores_gpu_order_but_not_gpu_count() -> None:
    a = F.Gpu(index=0, name="A100", pci_bus_id="0000:3b:00.0")
    b = F.Gpu(index=1, name="A100", pci_bus_id="0000:5e:00.0")
    assert _fp(gpus=(a, b)) == _fp(gpus=(b, a))
    assert _fp(gpus=(a, b)) != _fp(gpus=(a,))
