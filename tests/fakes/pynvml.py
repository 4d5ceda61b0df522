"""A fake `pynvml` (nvidia-ml-py) for tests on machines without an NVIDIA driver.

Put `tests/fakes` first on sys.path / PYTHONPATH and it shadows the real module. It behaves like NVML as
nvidia-ml-py exposes it:
- the same error class hierarchy: `NVMLError(code)` returns the subclass for that code (`NVMLError_NotSupported`,
  `NVMLError_GpuIsLost`, `NVMLError_LibraryNotFound`, `NVMLError_DriverNotLoaded`,
  `NVMLError_LibRmVersionMismatch`, `NVMLError_NoPermission`, `NVMLError_Uninitialized` ...), and the same strings;
- every query before `nvmlInit()` (or after the last `nvmlShutdown()`) raises NVMLError_Uninitialized; init is
  reference counted as in NVML; a bad device index raises NVMLError_InvalidArgument;
- strings come back as `str` (nvidia-ml-py's convertStrBytes), PCI bus ids as "00000000:3B:00.0", memory in
  bytes, power in milliwatts, CUDA driver version as an int (12040 = 12.4), ECC mode as [current, pending],
  remapped rows as (correctable, uncorrectable, pending, failure_occurred), temperature thresholds in whole degrees C.

The host it pretends to be is a scenario: a dict given to `fake_configure()`, or a JSON file named by
$HOSTTUNE_FAKE_NVML (re-read when the file changes, so a test can lose a GPU under a running daemon). Without a
scenario, `nvmlInit` fails like a host without the library (NVML_ERROR_LIBRARY_NOT_FOUND).

Scenario: {"init_error": null | "DRIVER_NOT_LOADED" | ..., "driver": "550.54.15", "cuda_driver": 12040,
 "devices": [{"name", "uuid", "pci_bus_id", "memory_total_mb", "memory_used_mb", "persistence_mode",
  "ecc": [1, 1] | null (= not supported), "temperature_c", "temperature_thresholds": {"slowdown": 90, "shutdown":
  95, ...} (absent = not supported, as on older parts), "utilization": [gpu, mem], "power_mw", "power_limit_mw",
  "clocks": {"sm": 1410, "mem": 1593}, "clock_event_reasons": 0, "ecc_uncorrected_volatile": 0,
  "retired_pages_pending": 0, "remapped_rows": [0, 0, 0, 0] | null, "pcie": {"gen": 4, "gen_max": 4, "width": 16,
  "width_max": 16}, "numa_node": 0, "errors": {"nvmlDeviceGetPowerUsage": "NOT_SUPPORTED"}, "lost": false,
  dcgm-level health (each absent = NOT_SUPPORTED, as on older GPUs): "energy_mj" (nvmlDeviceGetTotalEnergyConsumption,
  millijoules since the driver loaded), "pcie_replay" (nvmlDeviceGetPcieReplayCounter), "memory_temperature_c"
  (field NVML_FI_DEV_MEMORY_TEMP: the field's own nvmlReturn is NOT_SUPPORTED when absent, the call succeeds),
  "violations_ns": {"power": ns, "thermal": ns, ...} (nvmlDeviceGetViolationStatus per NVML_PERF_POLICY_*, keys as
  in _PERF_POLICY_KEYS), "nvlinks": [{"active": 1, "errors": {"replay": 0, "recovery": 0, "crc_flit": 0,
  "crc_data": 0}}] (one entry per link; a link past the list is NOT_SUPPORTED), "event_types" (the mask that
  nvmlDeviceGetSupportedEventTypes reports; default _DEFAULT_EVENT_TYPES), "xids": [13, 79] (critical XIDs since
  the driver loaded, oldest first: an event set registered for nvmlEventTypeXidCriticalError delivers those added
  after its registration, one per nvmlEventSetWait_v2, which raises NVMLError_Timeout when none is pending),
  "processes": [{"pid": 1234, "used_memory_mb": 512 | null, "gpu_instance": 0xFFFFFFFF, "compute_instance": ...}]
  (nvmlDeviceGetComputeRunningProcesses: absent = none running, [] as NVML returns; used_memory_mb null =
  NVML_VALUE_NOT_AVAILABLE, which nvidia-ml-py turns into None)}]}
"""

import json
import os
import string
import sys
import time
from typing import Any, Dict, List, Optional

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_OPERATING_SYSTEM = 17
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_IN_USE = 19
NVML_ERROR_MEMORY = 20
NVML_ERROR_NO_DATA = 21
NVML_ERROR_UNKNOWN = 999

NVML_TEMPERATURE_GPU = 0
# nvmlTemperatureThresholds_t, nvml.h
NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2
NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN = 4
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR = 5
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX = 6
NVML_TEMPERATURE_THRESHOLD_GPS_CURR = 7
NVML_TEMPERATURE_THRESHOLD_COUNT = 8
_THRESHOLD_KEYS = {NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: "shutdown", NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: "slowdown",
                   NVML_TEMPERATURE_THRESHOLD_MEM_MAX: "mem_max", NVML_TEMPERATURE_THRESHOLD_GPU_MAX: "gpu_max",
                   NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN: "acoustic_min",
                   NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR: "acoustic_curr",
                   NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX: "acoustic_max",
                   NVML_TEMPERATURE_THRESHOLD_GPS_CURR: "gps_curr"}
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_VIDEO = 3
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_NVLINK_MAX_LINKS = 36  # NVML 13's value (18 in the 12.x headers); links past a GPU's count are NOT_SUPPORTED
NVML_NVLINK_ERROR_DL_REPLAY = 0
NVML_NVLINK_ERROR_DL_RECOVERY = 1
NVML_NVLINK_ERROR_DL_CRC_FLIT = 2
NVML_NVLINK_ERROR_DL_CRC_DATA = 3
NVML_NVLINK_ERROR_DL_ECC_DATA = 4
NVML_NVLINK_ERROR_COUNT = 5
NVML_PERF_POLICY_POWER = 0
NVML_PERF_POLICY_THERMAL = 1
NVML_PERF_POLICY_SYNC_BOOST = 2
NVML_PERF_POLICY_BOARD_LIMIT = 3
NVML_PERF_POLICY_LOW_UTILIZATION = 4
NVML_PERF_POLICY_RELIABILITY = 5
NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10
NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11
NVML_PERF_POLICY_COUNT = 12
_PERF_POLICY_KEYS = {0: "power", 1: "thermal", 2: "sync_boost", 3: "board_limit", 4: "low_utilization",
                     5: "reliability", 10: "total_app_clocks", 11: "total_base_clocks"}
_NVLINK_COUNTER_KEYS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data", 4: "ecc_data"}
NVML_VALUE_TYPE_DOUBLE = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_VALUE_TYPE_UNSIGNED_LONG = 2
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4
NVML_VALUE_TYPE_SIGNED_INT = 5
NVML_FI_DEV_MEMORY_TEMP = 82
NVML_FI_DEV_NVLINK_LINK_COUNT = 91
NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94
NVML_FI_MAX = 308
nvmlEventTypeSingleBitEccError = 0x0000000000000001
nvmlEventTypeDoubleBitEccError = 0x0000000000000002
nvmlEventTypePState = 0x0000000000000004
nvmlEventTypeXidCriticalError = 0x0000000000000008
nvmlEventTypeClock = 0x0000000000000010
nvmlEventTypeNone = 0x0000000000000000
# what a datacenter GPU reports from nvmlDeviceGetSupportedEventTypes when the scenario does not say
_DEFAULT_EVENT_TYPES = (nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypePState
                        | nvmlEventTypeXidCriticalError | nvmlEventTypeClock)

nvmlClocksEventReasonGpuIdle = 0x1
nvmlClocksEventReasonApplicationsClocksSetting = 0x2
nvmlClocksEventReasonSwPowerCap = 0x4
nvmlClocksEventReasonHwSlowdown = 0x8
nvmlClocksEventReasonSyncBoost = 0x10
nvmlClocksEventReasonSwThermalSlowdown = 0x20
nvmlClocksEventReasonHwThermalSlowdown = 0x40
nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x80
nvmlClocksEventReasonDisplayClockSetting = 0x100


class NVMLError(Exception):
    _valClassMapping: Dict[int, type] = {}
    _errcode_to_string = {
        NVML_ERROR_UNINITIALIZED: "Uninitialized",
        NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
        NVML_ERROR_NOT_SUPPORTED: "Not Supported",
        NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
        NVML_ERROR_ALREADY_INITIALIZED: "Already Initialized",
        NVML_ERROR_NOT_FOUND: "Not Found",
        NVML_ERROR_INSUFFICIENT_SIZE: "Insufficient Size",
        NVML_ERROR_INSUFFICIENT_POWER: "Insufficient External Power",
        NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
        NVML_ERROR_TIMEOUT: "Timeout",
        NVML_ERROR_IRQ_ISSUE: "Interrupt Request Issue",
        NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
        NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
        NVML_ERROR_CORRUPTED_INFOROM: "Corrupted infoROM",
        NVML_ERROR_GPU_IS_LOST: "GPU is lost",
        NVML_ERROR_RESET_REQUIRED: "GPU requires restart",
        NVML_ERROR_OPERATING_SYSTEM: "The operating system has blocked the request.",
        NVML_ERROR_LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.",
        NVML_ERROR_MEMORY: "Insufficient Memory",
        NVML_ERROR_UNKNOWN: "Unknown Error",
    }

    def __new__(typ, value: int) -> "NVMLError":  # noqa: N804 - same signature as nvidia-ml-py
        if typ == NVMLError:
            typ = NVMLError._valClassMapping.get(value, typ)
        obj = Exception.__new__(typ)
        obj.value = value  # type: ignore[attr-defined]
        return obj  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return self._errcode_to_string.get(self.value, f"NVML Error with code {self.value}")  # type: ignore

    def __eq__(self, other: object) -> bool:
        return self.value == getattr(other, "value", None)  # type: ignore[attr-defined,no-any-return]

    __hash__ = Exception.__hash__


def _extract_errors_as_classes() -> None:
    module = sys.modules[__name__]
    for err_name in [x for x in dir(module) if x.startswith("NVML_ERROR_")]:
        class_name = "NVMLError_" + string.capwords(err_name.replace("NVML_ERROR_", ""), "_").replace("_", "")
        err_val = getattr(module, err_name)

        def gen_new(val: int) -> Any:
            def new(typ: type, *args: Any) -> NVMLError:
                return NVMLError.__new__(typ, val)

            return new

        cls = type(class_name, (NVMLError,), {"__new__": gen_new(err_val)})
        cls.__module__ = __name__
        setattr(module, class_name, cls)
        NVMLError._valClassMapping[err_val] = cls


_extract_errors_as_classes()


class _Struct:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


class _Handle:
    """nvmlDevice_t: a pointer, one address per GPU; each call returns a new object holding it (as pynvml's ctypes
    pointers), so two handles of one GPU are equal (same address), not the same object."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Handle) and other.index == self.index

    def __hash__(self) -> int:
        return hash(self.index)


# ---- scenario ---------------------------------------------------------------------------------------------------
_state: Dict[str, Any] = {"scenario": None, "mtime": None, "path": None, "refcount": 0, "calls": {}}


def fake_configure(scenario: Optional[Dict[str, Any]]) -> None:
    """Set the scenario in-process (tests); resets the init refcount and call counters."""
    _state.update(scenario=scenario, path=None, mtime=None, refcount=0, calls={})


def fake_calls() -> Dict[str, int]:
    return dict(_state["calls"])


def _scenario() -> Optional[Dict[str, Any]]:
    path = os.environ.get("HOSTTUNE_FAKE_NVML")
    if path and _state["path"] in (None, path):
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            return _state["scenario"]  # type: ignore[no-any-return]
        if mtime != _state["mtime"]:
            with open(path) as f:
                _state.update(scenario=json.load(f), mtime=mtime, path=path)
    return _state["scenario"]  # type: ignore[no-any-return]


def _raise(name_or_code: Any) -> None:
    code = name_or_code if isinstance(name_or_code, int) else globals()["NVML_ERROR_" + str(name_or_code)]
    raise NVMLError(code)


def _count(fn: str) -> None:
    _state["calls"][fn] = _state["calls"].get(fn, 0) + 1


def _require_init(fn: str) -> Dict[str, Any]:
    _count(fn)
    if _state["refcount"] <= 0:
        _raise(NVML_ERROR_UNINITIALIZED)
    return _scenario() or {}


def _device(fn: str, handle: _Handle) -> Dict[str, Any]:
    sc = _require_init(fn)
    devices: List[Dict[str, Any]] = sc.get("devices", [])
    if not isinstance(handle, _Handle) or handle.index >= len(devices):
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    dev = devices[handle.index]
    if dev.get("lost"):
        _raise(NVML_ERROR_GPU_IS_LOST)
    err = dev.get("errors", {}).get(fn)
    if err:
        _raise(err)
    return dev


def _field(dev: Dict[str, Any], key: str) -> Any:
    """A field that is absent or null is a query the GPU does not support."""
    value = dev.get(key)
    if value is None:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return value


# ---- library ----------------------------------------------------------------------------------------------------
def nvmlInit() -> None:
    nvmlInitWithFlags(0)


def nvmlInitWithFlags(flags: int) -> None:
    _count("nvmlInit")
    sc = _scenario()
    if sc is None:
        _raise(NVML_ERROR_LIBRARY_NOT_FOUND)
    if sc.get("init_error"):
        _raise(sc["init_error"])
    _state["refcount"] += 1


def nvmlShutdown() -> None:
    _count("nvmlShutdown")
    if _state["refcount"] <= 0:
        _raise(NVML_ERROR_UNINITIALIZED)
    _state["refcount"] -= 1


def nvmlErrorString(result: int) -> str:
    return NVMLError._errcode_to_string.get(result, "Unknown Error")


def nvmlSystemGetDriverVersion() -> str:
    return str(_field(_require_init("nvmlSystemGetDriverVersion"), "driver"))


def nvmlSystemGetCudaDriverVersion() -> int:
    return int(_field(_require_init("nvmlSystemGetCudaDriverVersion"), "cuda_driver"))


def nvmlSystemGetNVMLVersion() -> str:
    sc = _require_init("nvmlSystemGetNVMLVersion")
    return "12." + str(_field(sc, "driver"))


def nvmlDeviceGetCount() -> int:
    return len(_require_init("nvmlDeviceGetCount").get("devices", []))


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    sc = _require_init("nvmlDeviceGetHandleByIndex")
    devices = sc.get("devices", [])
    if not 0 <= index < len(devices):
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    if devices[index].get("lost"):
        _raise(NVML_ERROR_GPU_IS_LOST)
    return _Handle(index)


def nvmlDeviceGetName(handle: _Handle) -> str:
    return str(_field(_device("nvmlDeviceGetName", handle), "name"))


def nvmlDeviceGetUUID(handle: _Handle) -> str:
    return str(_field(_device("nvmlDeviceGetUUID", handle), "uuid"))


def nvmlDeviceGetMinorNumber(handle: _Handle) -> int:
    _device("nvmlDeviceGetMinorNumber", handle)
    return handle.index


def nvmlDeviceGetPciInfo(handle: _Handle) -> _Struct:
    dev = _device("nvmlDeviceGetPciInfo", handle)
    bus_id = str(_field(dev, "pci_bus_id"))
    domain, bus, devfn = bus_id.split(":")
    return _Struct(
        busId=bus_id.upper() if len(domain) == 8 else ("0000" + bus_id).upper(),
        busIdLegacy=bus_id.upper()[-12:],
        domain=int(domain, 16),
        bus=int(bus, 16),
        device=int(devfn.split(".")[0], 16),
        pciDeviceId=int(dev.get("pci_device_id", 0x233510DE)),
        pciSubSystemId=0,
    )


def nvmlDeviceGetMemoryInfo(handle: _Handle, version: Any = None) -> _Struct:
    dev = _device("nvmlDeviceGetMemoryInfo", handle)
    total = int(_field(dev, "memory_total_mb")) * 1024 * 1024
    used = int(dev.get("memory_used_mb", 0)) * 1024 * 1024
    return _Struct(total=total, used=used, free=total - used)


def nvmlDeviceGetPersistenceMode(handle: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetPersistenceMode", handle), "persistence_mode"))


def nvmlDeviceGetEccMode(handle: _Handle) -> List[int]:
    return [int(v) for v in _field(_device("nvmlDeviceGetEccMode", handle), "ecc")]


def nvmlDeviceGetTotalEccErrors(handle: _Handle, errorType: int, counterType: int) -> int:  # noqa: N803
    dev = _device("nvmlDeviceGetTotalEccErrors", handle)
    if errorType not in (0, 1) or counterType not in (0, 1):
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    if dev.get("ecc") is None or not dev["ecc"][0]:
        _raise(NVML_ERROR_NOT_SUPPORTED)  # counters exist only with ECC enabled
    if errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED:
        return int(dev.get("ecc_uncorrected_volatile" if counterType == 0 else "ecc_uncorrected_aggregate", 0))
    return int(dev.get("ecc_corrected_volatile", 0))


def nvmlDeviceGetRetiredPagesPendingStatus(device: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetRetiredPagesPendingStatus", device), "retired_pages_pending"))


def nvmlDeviceGetRemappedRows(device: _Handle) -> tuple:
    return tuple(int(v) for v in _field(_device("nvmlDeviceGetRemappedRows", device), "remapped_rows"))


def nvmlDeviceGetTemperature(handle: _Handle, sensor: int) -> int:
    dev = _device("nvmlDeviceGetTemperature", handle)
    if sensor != NVML_TEMPERATURE_GPU:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    return int(_field(dev, "temperature_c"))


def nvmlDeviceGetTemperatureThreshold(handle: _Handle, threshold: int) -> int:
    """nvml.h: INVALID_ARGUMENT for a threshold type outside nvmlTemperatureThresholds_t, NOT_SUPPORTED when the
    device does not report it (a scenario without "temperature_thresholds", or without that key)."""
    dev = _device("nvmlDeviceGetTemperatureThreshold", handle)
    if threshold not in _THRESHOLD_KEYS:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    value = (dev.get("temperature_thresholds") or {}).get(_THRESHOLD_KEYS[threshold])
    if value is None:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return int(value)


def nvmlDeviceGetUtilizationRates(handle: _Handle) -> _Struct:
    gpu, mem = _field(_device("nvmlDeviceGetUtilizationRates", handle), "utilization")
    return _Struct(gpu=int(gpu), memory=int(mem))


def nvmlDeviceGetPowerUsage(handle: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetPowerUsage", handle), "power_mw"))


def nvmlDeviceGetEnforcedPowerLimit(handle: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetEnforcedPowerLimit", handle), "power_limit_mw"))


def nvmlDeviceGetClockInfo(handle: _Handle, type: int) -> int:  # noqa: A002 - nvidia-ml-py's name
    dev = _device("nvmlDeviceGetClockInfo", handle)
    names = {NVML_CLOCK_GRAPHICS: "graphics", NVML_CLOCK_SM: "sm", NVML_CLOCK_MEM: "mem", NVML_CLOCK_VIDEO: "video"}
    if type not in names:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    value = (dev.get("clocks") or {}).get(names[type])
    if value is None:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return int(value)


def nvmlDeviceGetCurrentClocksEventReasons(handle: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetCurrentClocksEventReasons", handle), "clock_event_reasons"))


def nvmlDeviceGetCurrentClocksThrottleReasons(handle: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetCurrentClocksThrottleReasons", handle), "clock_event_reasons"))


def _pcie(fn: str, handle: _Handle, key: str) -> int:
    value = (_field(_device(fn, handle), "pcie") or {}).get(key)
    if value is None:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return int(value)


def nvmlDeviceGetCurrPcieLinkGeneration(handle: _Handle) -> int:
    return _pcie("nvmlDeviceGetCurrPcieLinkGeneration", handle, "gen")


def nvmlDeviceGetMaxPcieLinkGeneration(handle: _Handle) -> int:
    return _pcie("nvmlDeviceGetMaxPcieLinkGeneration", handle, "gen_max")


def nvmlDeviceGetCurrPcieLinkWidth(handle: _Handle) -> int:
    return _pcie("nvmlDeviceGetCurrPcieLinkWidth", handle, "width")


def nvmlDeviceGetMaxPcieLinkWidth(handle: _Handle) -> int:
    return _pcie("nvmlDeviceGetMaxPcieLinkWidth", handle, "width_max")


def nvmlDeviceGetNumaNodeId(handle: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetNumaNodeId", handle), "numa_node"))


# ---- dcgm-level health ------------------------------------------------------------------------------------------
def nvmlDeviceGetTotalEnergyConsumption(handle: _Handle) -> int:
    """Millijoules since the driver was last reloaded (Volta and newer; NOT_SUPPORTED before)."""
    return int(_field(_device("nvmlDeviceGetTotalEnergyConsumption", handle), "energy_mj"))


def nvmlDeviceGetPcieReplayCounter(handle: _Handle) -> int:
    return int(_field(_device("nvmlDeviceGetPcieReplayCounter", handle), "pcie_replay"))


def nvmlDeviceGetViolationStatus(device: _Handle, perfPolicyType: int) -> _Struct:  # noqa: N803
    """c_nvmlViolationTime_t: referenceTime (CPU timestamp, microseconds), violationTime (nanoseconds spent held
    back by that policy since the driver loaded)."""
    dev = _device("nvmlDeviceGetViolationStatus", device)
    if not 0 <= perfPolicyType < NVML_PERF_POLICY_COUNT:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    key = _PERF_POLICY_KEYS.get(perfPolicyType)
    value = (dev.get("violations_ns") or {}).get(key) if key else None
    if value is None:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return _Struct(referenceTime=int(time.time() * 1e6), violationTime=int(value))


def _nvlink(fn: str, device: _Handle, link: int) -> Dict[str, Any]:
    dev = _device(fn, device)
    if not 0 <= link < NVML_NVLINK_MAX_LINKS:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    links = dev.get("nvlinks")
    if not links or link >= len(links):
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return links[link]  # type: ignore[no-any-return]


def nvmlDeviceGetNvLinkState(device: _Handle, link: int) -> int:
    """NVML_FEATURE_ENABLED (1) when the link is active, NVML_FEATURE_DISABLED (0) when it is down."""
    return int(_nvlink("nvmlDeviceGetNvLinkState", device, link).get("active", 1))


def nvmlDeviceGetNvLinkErrorCounter(device: _Handle, link: int, counter: int) -> int:
    entry = _nvlink("nvmlDeviceGetNvLinkErrorCounter", device, link)
    if not 0 <= counter < NVML_NVLINK_ERROR_COUNT:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    value = (entry.get("errors") or {}).get(_NVLINK_COUNTER_KEYS[counter])
    if value is None:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return int(value)


def nvmlDeviceGetFieldValues(handle: _Handle, fieldIds: List[Any]) -> List[_Struct]:  # noqa: N803
    """One c_nvmlFieldValue_t per requested id (an int, or (fieldId, scopeId)). The call itself succeeds; each
    value carries its own nvmlReturn (NOT_SUPPORTED for a field this GPU lacks, INVALID_ARGUMENT past NVML_FI_MAX)."""
    dev = _device("nvmlDeviceGetFieldValues", handle)
    out = []
    for fid in fieldIds:
        field_id, scope = (fid if isinstance(fid, tuple) else (fid, 0))
        ret, vtype, value = NVML_ERROR_NOT_SUPPORTED, NVML_VALUE_TYPE_UNSIGNED_INT, 0
        if not 0 < field_id < NVML_FI_MAX:
            ret = NVML_ERROR_INVALID_ARGUMENT
        elif field_id == NVML_FI_DEV_MEMORY_TEMP and dev.get("memory_temperature_c") is not None:
            ret, value = NVML_SUCCESS, int(dev["memory_temperature_c"])
        elif field_id == NVML_FI_DEV_PCIE_REPLAY_COUNTER and dev.get("pcie_replay") is not None:
            ret, vtype, value = NVML_SUCCESS, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, int(dev["pcie_replay"])
        elif field_id == NVML_FI_DEV_NVLINK_LINK_COUNT and dev.get("nvlinks"):
            ret, value = NVML_SUCCESS, len(dev["nvlinks"])
        union = _Struct(dVal=float(value), uiVal=value, ulVal=value, ullVal=value, sllVal=value, siVal=value,
                        usVal=value & 0xFFFF)
        out.append(_Struct(fieldId=field_id, scopeId=scope, timestamp=int(time.time() * 1e6), latencyUsec=0,
                           valueType=vtype, nvmlReturn=ret, value=union))
    return out


class _EventSet:
    """nvmlEventSet_t: the devices registered in it, with how many of each device's XIDs were already there."""

    def __init__(self) -> None:
        self.registered: Dict[int, List[int]] = {}  # device index -> [event mask, XIDs seen]
        self.freed = False


def nvmlDeviceGetSupportedEventTypes(handle: _Handle) -> int:
    return int(_device("nvmlDeviceGetSupportedEventTypes", handle).get("event_types", _DEFAULT_EVENT_TYPES))


def nvmlEventSetCreate() -> _EventSet:
    _require_init("nvmlEventSetCreate")
    return _EventSet()


def nvmlDeviceRegisterEvents(handle: _Handle, eventTypes: int, eventSet: _EventSet) -> None:  # noqa: N803
    """NOT_SUPPORTED when the device lacks any requested type (nvml.h); events before registration are not
    delivered."""
    dev = _device("nvmlDeviceRegisterEvents", handle)
    if not isinstance(eventSet, _EventSet) or eventSet.freed:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    if eventTypes & ~int(dev.get("event_types", _DEFAULT_EVENT_TYPES)):
        _raise(NVML_ERROR_NOT_SUPPORTED)
    eventSet.registered[handle.index] = [int(eventTypes), len(dev.get("xids") or [])]


def nvmlEventSetWait_v2(eventSet: _EventSet, timeoutms: int) -> _Struct:
    """The next pending event (c_nvmlEventData_t: device, eventType, eventData = the XID, gpuInstanceId,
    computeInstanceId), or NVMLError_Timeout after `timeoutms` without one."""
    sc = _require_init("nvmlEventSetWait_v2")
    if not isinstance(eventSet, _EventSet) or eventSet.freed:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    devices = sc.get("devices", [])
    for index, reg in sorted(eventSet.registered.items()):
        xids = (devices[index].get("xids") or []) if index < len(devices) else []
        if reg[0] & nvmlEventTypeXidCriticalError and len(xids) > reg[1]:
            xid = int(xids[reg[1]])
            reg[1] += 1
            return _Struct(device=_Handle(index), eventType=nvmlEventTypeXidCriticalError, eventData=xid,
                           gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
    time.sleep(max(0, timeoutms) / 1000.0)
    _raise(NVML_ERROR_TIMEOUT)
    raise AssertionError  # unreachable: _raise always raises


def nvmlEventSetWait(eventSet: _EventSet, timeoutms: int) -> _Struct:
    return nvmlEventSetWait_v2(eventSet, timeoutms)


def nvmlEventSetFree(eventSet: _EventSet) -> None:
    _require_init("nvmlEventSetFree")
    if not isinstance(eventSet, _EventSet) or eventSet.freed:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    eventSet.freed = True


NVML_VALUE_NOT_AVAILABLE_ulonglong = 0xFFFFFFFFFFFFFFFF
NVML_INSTANCE_NOT_MIG = 0xFFFFFFFF  # gpuInstanceId / computeInstanceId of a process on a GPU not in MIG mode


def nvmlDeviceGetComputeRunningProcesses_v3(handle: _Handle) -> List[_Struct]:
    """c_nvmlProcessInfo_t per process with a compute context (pid, usedGpuMemory in bytes, gpuInstanceId,
    computeInstanceId), in the driver's order; [] when none runs (NVML_SUCCESS with a count of 0). nvidia-ml-py sets
    usedGpuMemory to None where NVML reports NVML_VALUE_NOT_AVAILABLE."""
    out = []
    for proc in _device("nvmlDeviceGetComputeRunningProcesses", handle).get("processes") or []:
        mb = proc.get("used_memory_mb")
        out.append(_Struct(pid=int(proc["pid"]), usedGpuMemory=None if mb is None else int(mb) * 1024 * 1024,
                           gpuInstanceId=int(proc.get("gpu_instance", NVML_INSTANCE_NOT_MIG)),
                           computeInstanceId=int(proc.get("compute_instance", NVML_INSTANCE_NOT_MIG))))
    return out


nvmlDeviceGetComputeRunningProcesses_v2 = nvmlDeviceGetComputeRunningProcesses_v3
nvmlDeviceGetComputeRunningProcesses = nvmlDeviceGetComputeRunningProcesses_v3
