"""The JSON contract of `hosttune facts --json` where nothing could be read (issue 21): every field's default, null
versus "" versus 0 versus [] versus false, in field order, and what a sparse JSON document reads back as
(hosttune.facts)."""

import json

from hosttune import facts as F

EMPTY = {
    "schema": "hosttune.facts/1",
    "root": "/",
    "hostname": None,
    "distro": {"id": "unknown", "version": "", "version_best": "", "codename": "", "like": "", "name": "",
               "family": "unknown"},
    "kernel": {"release": None, "cmdline": None, "thp": None, "thp_defrag": None, "numa_balancing": None,
               "swappiness": None, "governors": [], "modules": []},
    "cpu": {"model": None, "vendor": None, "arch": None, "flags": [], "online": [], "logical": 0, "physical": 0,
            "packages": 0, "smt": False, "smt_control": None, "cores": [], "package_cpus": [], "allowed_cpus": [],
            "quota_cpus": None,
            "cgroup": {"version": None, "path": None, "cpuset": None, "mems": None, "quota_cpus": None,
                       "memory_max": None}},
    "numa": {"nodes": [], "allowed_mems": []},
    "gpus": [],
    "nvidia": {"driver": None, "cuda_driver": None, "nvml": "skipped", "nvml_error": None, "cuda_toolkit": None,
               "cuda_toolkit_path": None, "cudnn": None, "nccl": None, "fabric_manager_installed": False,
               "fabric_manager_running": None, "nvswitches": 0},
    "torch": None,
    "allocators": {"jemalloc": None, "tcmalloc": None, "tcmalloc_minimal": None, "iomp5": None, "gomp": None},
    "tools": {"numactl": None, "nvidia_smi": None, "torchrun": None, "libnuma": None},
    "storage": [],
    "memory": {"total_mb": None, "available_mb": None, "swap_total_mb": None, "hugepages_total": None,
               "hugepage_size_kb": None, "shm_mb": None},
    "limits": {"nofile_soft": None, "nofile_hard": None, "memlock_soft": None, "memlock_hard": None,
               "rdma_devices": 0},
    "tuned": {"installed": False, "running": None, "profile": None, "mode": None, "settings": []},
    "container": {"detected": False, "runtime": None, "evidence": [], "proc_sys_readonly": None,
                  "sys_readonly": None, "nvidia_devices": [], "gpu_nodes": None, "driver_gpus": None,
                  "cgroup_limits": [], "host_values": []},
    "missing": [],
}

GPU = {"index": 3, "name": None, "uuid": None, "pci_bus_id": "", "numa_node": -1, "local_cpus": [], "memory_mb": None,
       "persistence_mode": None, "ecc_enabled": None, "ecc_pending": None, "pcie_gen": None, "pcie_gen_max": None,
       "pcie_width": None, "pcie_width_max": None, "temperature_c": None, "temp_slowdown_c": None,
       "clock_event_reasons": None, "ecc_uncorrected_volatile": None, "retired_pages_pending": None,
       "remapped_rows_pending": None, "remapped_rows_failure": None, "vendor_id": "0x10de", "device_id": None,
       "pci_class": None, "source": "pci"}
TORCH = {"python": "/p", "version": None, "cuda": None, "cudnn": None, "nccl": None, "cuda_available": False,
         "device_count": 0, "in_venv": None, "onednn": None, "error": None}
MOUNT = {"mount": "/m", "fstype": "xfs", "source": "", "device": None, "kind": "unknown", "size_mb": None,
         "free_mb": None}
NODE = {"id": 2, "cpus": [], "memory_mb": 0, "distances": []}
SETTING = {"id": "thp", "option": "vm.transparent_hugepages", "value": "always", "profile": "hpc-compute"}


def test_nothing_read_is_this_json_in_this_order() -> None:
    got = F.Facts().to_dict()
    assert got == EMPTY
    assert json.dumps(got) == json.dumps(EMPTY)  # the key order too
    assert json.loads(F.Facts().to_json()) == EMPTY


def test_each_nested_default_as_json() -> None:
    f = F.Facts(gpus=(F.Gpu(index=3),), torch=F.TorchInstall(python="/p"), storage=(F.Mount("/m", "xfs"),),
                numa=F.Numa(nodes=(F.NumaNode(2),)),
                tuned=F.Tuned(settings=(F.TunedSetting("thp", "vm.transparent_hugepages", "always", "hpc-compute"),)))
    d = f.to_dict()
    assert json.dumps(d["gpus"]) == json.dumps([GPU])
    assert json.dumps(d["torch"]) == json.dumps(TORCH)
    assert json.dumps(d["storage"]) == json.dumps([MOUNT])
    assert json.dumps(d["numa"]) == json.dumps({"nodes": [NODE], "allowed_mems": []})
    assert d["tuned"]["settings"] == [SETTING]
    assert F.Facts.from_dict(json.loads(json.dumps(d))) == f


def test_a_sparse_document_reads_back_with_the_defaults() -> None:
    back = F.Facts.from_dict({"schema": F.SCHEMA, "gpus": [{"index": 1}], "torch": {"python": "/q"},
                              "cpu": {"cgroup": {"cpuset": [0, 2]}, "cores": [[0, 1], [2]]}, "kernel": None})
    assert back.gpus == (F.Gpu(index=1),) and back.gpus[0].numa_node == -1 and back.gpus[0].source == "pci"
    assert back.torch == F.TorchInstall(python="/q")
    assert back.cpu.cgroup.cpuset == (0, 2) and back.cpu.cores == ((0, 1), (2,))
    assert back.kernel is None  # null stays null, even where the field has a default
    assert back.nvidia.nvml == "skipped" and back.distro.family == "unknown"
    assert back.to_dict()["memory"] == EMPTY["memory"]
