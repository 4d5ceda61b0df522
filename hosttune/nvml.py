"""The one place hosttune talks to NVML (through nvidia-ml-py's `pynvml`), for the detector, doctor and monitor.

NVML is optional: no library, no driver, a driver/library version mismatch after an upgrade, or no permission are
normal states that become `NvmlUnavailable(status, message)`. Per-device queries that the GPU does not support
(NVML_ERROR_NOT_SUPPORTED and friends) give None and are not asked again; a lost GPU raises `GpuLost`.
The packages ship nvidia-ml-py's module as `hosttune._vendor.pynvml` so that it cannot clash with a user's
`pynvml`; a source checkout uses the installed `pynvml`.
"""

import ctypes
import importlib
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

# NVML error codes (nvml.h); used by name so that a missing pynvml constant cannot break us.
ERR_UNINITIALIZED = 1
ERR_NOT_SUPPORTED = 3
ERR_INVALID_ARGUMENT = 2
ERR_NO_PERMISSION = 4
ERR_DRIVER_NOT_LOADED = 9
ERR_TIMEOUT = 10
ERR_LIBRARY_NOT_FOUND = 12
ERR_FUNCTION_NOT_FOUND = 13
ERR_GPU_IS_LOST = 15
ERR_LIB_RM_VERSION_MISMATCH = 18

_STATUS_BY_CODE = {
    ERR_LIBRARY_NOT_FOUND: "library_not_found",
    ERR_DRIVER_NOT_LOADED: "driver_not_loaded",
    ERR_LIB_RM_VERSION_MISMATCH: "version_mismatch",
    ERR_NO_PERMISSION: "no_permission",
}
# Errors that mean "this GPU (or driver) cannot answer this query": the field is left out, never an error.
_UNANSWERABLE = {ERR_NOT_SUPPORTED, ERR_NO_PERMISSION, ERR_FUNCTION_NOT_FOUND, 21}  # 21 = NO_DATA

# Clock-event ("throttle") reason bits, nvml.h nvmlClocksEventReason*: names only; how bad each is, is
# policy.gpu_health.clock_events.
CLOCK_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# nvmlTemperatureThresholds_t (nvml.h): SHUTDOWN = 0, SLOWDOWN = 1 (where the GPU starts cutting clocks).
TEMPERATURE_THRESHOLD_SLOWDOWN = 1
# nvmlPerfPolicyType_t (nvml.h) -> our reason label: nvmlDeviceGetViolationStatus gives the nanoseconds the GPU spent
# held below its clocks by each policy since the driver loaded (dcgm's DCGM_FI_DEV_*_VIOLATION fields). The two
# TOTAL_* policies are "by any limiter", below application clocks and below base clocks.
PERF_POLICIES = {0: "power", 1: "thermal", 2: "sync_boost", 3: "board_limit", 4: "low_utilization",
                 5: "reliability", 10: "total_app_clocks", 11: "total_base_clocks"}
# nvmlNvLinkErrorCounter_t (nvml.h) -> our type label (dcgm: DCGM_FI_DEV_NVLINK_{REPLAY,RECOVERY,CRC_FLIT,CRC_DATA}_
# ERROR_COUNT_TOTAL). NVML_NVLINK_ERROR_DL_ECC_DATA (4) exists only on some parts; NOT_SUPPORTED leaves it out.
NVLINK_ERROR_COUNTERS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data", 4: "ecc_data"}
NVLINK_MAX_LINKS = 18  # nvml.h 12.x; nvidia-ml-py 13 says 36 (pynvml.NVML_NVLINK_MAX_LINKS wins when present)
FI_DEV_MEMORY_TEMP = 82  # nvml.h NVML_FI_DEV_MEMORY_TEMP: HBM/GDDR temperature, C (dcgm's DCGM_FI_DEV_MEMORY_TEMP)
EVENT_TYPE_XID_CRITICAL = 0x8  # nvml.h nvmlEventTypeXidCriticalError; eventData holds the XID


def reason_names(mask: Optional[int]) -> List[str]:
    if not mask:
        return []
    return [name for bit, name in CLOCK_REASONS.items() if mask & bit]


class NvmlUnavailable(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status  # library_not_found | driver_not_loaded | version_mismatch | no_permission | error


class GpuLost(Exception):
    """NVML_ERROR_GPU_IS_LOST: the GPU fell off the bus or stopped answering."""


def load_pynvml() -> ModuleType:
    for name in ("hosttune._vendor.pynvml", "pynvml"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise NvmlUnavailable("library_not_found", "nvidia-ml-py (module pynvml) is not installed")


def normalize_bus_id(bus_id: Any) -> str:
    """NVML gives "00000000:3B:00.0", sysfs "0000:3b:00.0": one form, lower case with a 4-digit domain."""
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode(errors="replace")
    text = str(bus_id).strip().lower()
    parts = text.split(":")
    if len(parts) == 3:
        domain = int(parts[0], 16) if parts[0] else 0
        return f"{domain:04x}:{parts[1]}:{parts[2]}"
    if len(parts) == 2:  # "3b:00.0" without a domain
        return f"0000:{parts[0]}:{parts[1]}"
    return text


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _code(exc: BaseException) -> Optional[int]:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


class Nvml:
    """An initialised NVML session. Create once (the monitor keeps it for its lifetime), `close()` at the end."""

    def __init__(self, module: Optional[ModuleType] = None) -> None:
        self.nv = module or load_pynvml()
        self._unsupported: Set[Tuple[int, str]] = set()
        try:
            self.nv.nvmlInit()
        except self.nv.NVMLError as exc:
            code = _code(exc)
            raise NvmlUnavailable(_STATUS_BY_CODE.get(code or 0, "error"), f"nvmlInit: {exc}") from None
        except OSError as exc:  # a broken libnvidia-ml.so
            raise NvmlUnavailable("library_not_found", f"nvmlInit: {exc}") from None
        self._handles: Dict[int, Any] = {}

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down a broken NVML must not fail the caller
            pass

    def __enter__(self) -> "Nvml":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- system ---------------------------------------------------------------------------------------------
    def driver_version(self) -> Optional[str]:
        value = self._call(-1, "driver", self.nv.nvmlSystemGetDriverVersion)
        return _text(value) if value is not None else None

    def cuda_driver_version(self) -> Optional[str]:
        """nvmlSystemGetCudaDriverVersion gives 12040 for CUDA 12.4."""
        value = self._call(-1, "cuda", self.nv.nvmlSystemGetCudaDriverVersion)
        if value is None:
            return None
        return f"{value // 1000}.{(value % 1000) // 10}"

    def count(self) -> int:
        value = self._call(-1, "count", self.nv.nvmlDeviceGetCount)
        return int(value or 0)

    def handle(self, index: int) -> Any:
        if index not in self._handles:
            try:
                self._handles[index] = self.nv.nvmlDeviceGetHandleByIndex(index)
            except self.nv.NVMLError as exc:
                if _code(exc) == ERR_GPU_IS_LOST:
                    raise GpuLost(f"GPU {index}: {exc}") from None
                raise
        return self._handles[index]

    # ---- per device -----------------------------------------------------------------------------------------
    def _call(self, index: int, key: str, fn: Optional[Callable[..., Any]], *args: Any) -> Any:
        """Call one NVML query. None when the device cannot answer it (and then it is not asked again); `fn` None is
        a function this nvidia-ml-py lacks."""
        if (index, key) in self._unsupported:
            return None
        if fn is None:
            self._unsupported.add((index, key))
            return None
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            code = _code(exc)
            if code == ERR_GPU_IS_LOST:
                raise GpuLost(f"GPU {index}: {exc}") from None
            if code in _UNANSWERABLE:
                self._unsupported.add((index, key))
            return None
        except AttributeError:  # an older nvidia-ml-py without this function
            self._unsupported.add((index, key))
            return None

    def unsupported(self, index: int) -> List[str]:
        return sorted(key for i, key in self._unsupported if i == index)

    def static(self, index: int) -> Dict[str, Any]:
        """What does not change while the host runs: identity, memory size, modes, maximum PCIe link, the
        temperature at which the GPU starts its hardware slowdown (`temp_slowdown_c`, absent when not reported)."""
        nv, h = self.nv, self.handle(index)
        out: Dict[str, Any] = {"index": index}
        name = self._call(index, "name", nv.nvmlDeviceGetName, h)
        out["name"] = _text(name) if name is not None else None
        uuid = self._call(index, "uuid", nv.nvmlDeviceGetUUID, h)
        out["uuid"] = _text(uuid) if uuid is not None else None
        pci = self._call(index, "pci", nv.nvmlDeviceGetPciInfo, h)
        out["pci_bus_id"] = normalize_bus_id(pci.busId) if pci is not None else ""
        mem = self._call(index, "memory", nv.nvmlDeviceGetMemoryInfo, h)
        out["memory_mb"] = int(mem.total) // (1024 * 1024) if mem is not None else None
        pm = self._call(index, "persistence_mode", nv.nvmlDeviceGetPersistenceMode, h)
        out["persistence_mode"] = bool(pm) if pm is not None else None
        ecc = self._call(index, "ecc_mode", nv.nvmlDeviceGetEccMode, h)
        out["ecc_enabled"] = bool(ecc[0]) if ecc is not None else None
        out["ecc_pending"] = bool(ecc[1]) if ecc is not None else None
        out["pcie_gen_max"] = self._call(index, "pcie_gen_max", nv.nvmlDeviceGetMaxPcieLinkGeneration, h)
        out["pcie_width_max"] = self._call(index, "pcie_width_max", nv.nvmlDeviceGetMaxPcieLinkWidth, h)
        # The slowdown threshold is fixed by the board's firmware: read once, the temperature policy's critical line.
        # Left out when the GPU does not report it (NOT_SUPPORTED on older parts); the policy then uses its table.
        slowdown = self._call(index, "temp_slowdown", nv.nvmlDeviceGetTemperatureThreshold, h,
                              TEMPERATURE_THRESHOLD_SLOWDOWN)
        if slowdown is not None:
            out["temp_slowdown_c"] = int(slowdown)
        return out

    def nvlink_count(self, index: int) -> int:
        """How many NVLinks the GPU has: nvmlDeviceGetNvLinkState answers for link 0..N-1 (active or not) and
        NOT_SUPPORTED / INVALID_ARGUMENT past them (and for link 0 on a GPU without NVLink)."""
        nv, h = self.nv, self.handle(index)
        fn = getattr(nv, "nvmlDeviceGetNvLinkState", None)
        if fn is None:
            return 0
        count = 0
        for link in range(int(getattr(nv, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS))):
            try:
                fn(h, link)
            except nv.NVMLError as exc:
                if _code(exc) == ERR_GPU_IS_LOST:
                    raise GpuLost(f"GPU {index}: {exc}") from None
                break
            count = link + 1
        return count

    def sample(self, index: int, health: bool = False, nvlinks: int = 0) -> Dict[str, Any]:
        """What changes: temperature, memory use, utilisation, power, clocks, clock-event reasons, errors, link;
        with `health` also `health(index, nvlinks)` (the monitor's dcgm-level fields).

        Fields the GPU cannot report are left out. Raises GpuLost when the GPU is gone.
        """
        nv, h = self.nv, self.handle(index)
        out: Dict[str, Any] = {}

        def put(key: str, fn: Callable[..., Any], *args: Any, conv: Callable[[Any], Any] = lambda v: v) -> None:
            value = self._call(index, key, fn, h, *args)
            if value is not None:
                out[key] = conv(value)

        put("temperature_c", nv.nvmlDeviceGetTemperature, 0)  # NVML_TEMPERATURE_GPU
        mem = self._call(index, "memory", nv.nvmlDeviceGetMemoryInfo, h)
        if mem is not None:
            out["memory_used_mb"] = int(mem.used) // (1024 * 1024)
            out["memory_total_mb"] = int(mem.total) // (1024 * 1024)
        util = self._call(index, "utilization", nv.nvmlDeviceGetUtilizationRates, h)
        if util is not None:
            out["utilization_gpu_pct"] = int(util.gpu)
            out["utilization_memory_pct"] = int(util.memory)
        put("power_w", nv.nvmlDeviceGetPowerUsage, conv=lambda mw: round(mw / 1000.0, 3))
        put("power_limit_w", nv.nvmlDeviceGetEnforcedPowerLimit, conv=lambda mw: round(mw / 1000.0, 3))
        put("sm_clock_mhz", nv.nvmlDeviceGetClockInfo, 1)  # NVML_CLOCK_SM
        put("mem_clock_mhz", nv.nvmlDeviceGetClockInfo, 2)  # NVML_CLOCK_MEM
        # nvidia-ml-py >= 12.535 names it "ClocksEvent"; older releases only have the "ClocksThrottle" name.
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if reasons_fn is None:
            reasons_fn = nv.nvmlDeviceGetCurrentClocksThrottleReasons
        put("clock_event_reasons", reasons_fn, conv=int)
        # NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0
        put("ecc_uncorrected_volatile", nv.nvmlDeviceGetTotalEccErrors, 1, 0, conv=int)
        put("retired_pages_pending", nv.nvmlDeviceGetRetiredPagesPendingStatus, conv=bool)
        rows = self._call(index, "remapped_rows", nv.nvmlDeviceGetRemappedRows, h)
        if rows is not None:
            corr, unc, pending, failure = rows
            out["remapped_rows_correctable"] = int(corr)
            out["remapped_rows_uncorrectable"] = int(unc)
            out["remapped_rows_pending"] = bool(pending)
            out["remapped_rows_failure"] = bool(failure)
        put("pcie_gen", nv.nvmlDeviceGetCurrPcieLinkGeneration, conv=int)
        put("pcie_width", nv.nvmlDeviceGetCurrPcieLinkWidth, conv=int)
        procs = self.processes(index)
        if procs is not None:
            out["processes"] = procs
        if health:
            out.update(self.health(index, nvlinks))
        return out

    def processes(self, index: int) -> Optional[List[Dict[str, Any]]]:
        """The processes with a compute context on the GPU (nvmlDeviceGetComputeRunningProcesses: CUDA programs, not
        graphics ones), [{"pid", "used_memory_mb"}] by pid; `used_memory_mb` is absent where NVML cannot say
        (nvidia-ml-py gives None for NVML_VALUE_NOT_AVAILABLE). The pids are in the host's PID namespace (the
        driver's view), so a monitor in a container needs the host's (hostPID) to look them up. None when the GPU
        cannot answer (NOT_SUPPORTED, NO_PERMISSION): not asked again."""
        value = self._call(index, "processes", getattr(self.nv, "nvmlDeviceGetComputeRunningProcesses", None),
                           self.handle(index))
        if value is None:
            return None
        out: List[Dict[str, Any]] = []
        for proc in sorted(value, key=lambda p: int(p.pid)):
            entry: Dict[str, Any] = {"pid": int(proc.pid)}
            used = getattr(proc, "usedGpuMemory", None)
            if used is not None:
                entry["used_memory_mb"] = int(used) // (1024 * 1024)
            out.append(entry)
        return out

    def health(self, index: int, nvlinks: int = 0) -> Dict[str, Any]:
        """dcgm-exporter's health fields: energy, PCIe replays, memory temperature, time held back per perf policy,
        NVLink state and error counters (`nvlinks` links, from `static()`). Each is left out where the GPU cannot
        report it (NOT_SUPPORTED on older parts): absent, never 0."""
        nv, h = self.nv, self.handle(index)
        out: Dict[str, Any] = {}
        energy = self._call(index, "energy", getattr(nv, "nvmlDeviceGetTotalEnergyConsumption", None), h)
        if energy is not None:
            out["energy_j"] = int(energy) / 1000.0  # millijoules since the driver loaded
        replay = self._call(index, "pcie_replay", getattr(nv, "nvmlDeviceGetPcieReplayCounter", None), h)
        if replay is not None:
            out["pcie_replay_errors"] = int(replay)
        fields = self._call(index, "field_values", getattr(nv, "nvmlDeviceGetFieldValues", None), h,
                            [FI_DEV_MEMORY_TEMP])
        if fields:
            fv = fields[0]
            if int(fv.nvmlReturn) == 0:  # each field carries its own status; NOT_SUPPORTED on GDDR parts
                out["memory_temperature_c"] = int(fv.value.uiVal)
        viol: Dict[str, float] = {}
        for policy, reason in PERF_POLICIES.items():
            vt = self._call(index, f"violation_{reason}", getattr(nv, "nvmlDeviceGetViolationStatus", None), h,
                            policy)
            if vt is not None:
                viol[reason] = int(vt.violationTime) / 1e9  # nanoseconds -> seconds
        if viol:
            out["throttle_seconds"] = viol
        # per link, indexed by link number (None: that link did not answer), compact for the JSONL: an NVSwitch
        # GPU has 18 links
        ups: List[Optional[int]] = []
        errors: Dict[str, List[Optional[int]]] = {}
        for link in range(nvlinks):
            state = self._call(index, f"nvlink{link}", nv.nvmlDeviceGetNvLinkState, h, link)
            ups.append(None if state is None else int(bool(state)))
            for counter, name in NVLINK_ERROR_COUNTERS.items():
                value = None if state is None else self._call(
                    index, f"nvlink{link}_{name}", nv.nvmlDeviceGetNvLinkErrorCounter, h, link, counter)
                errors.setdefault(name, []).append(None if value is None else int(value))
        if any(v is not None for v in ups):
            out["nvlink_up"] = ups
            kept = {name: vals for name, vals in errors.items() if any(v is not None for v in vals)}
            if kept:
                out["nvlink_errors"] = kept
        return out

    # ---- critical XID events ------------------------------------------------------------------------------------
    def xid_events(self, indexes: List[int]) -> "XidEvents":
        """An event set registered for critical XIDs on every GPU in `indexes` that supports them (see XidEvents)."""
        return XidEvents(self, indexes)


def _same_device(a: Any, b: Any) -> bool:
    """NVML's nvmlDevice_t is a pointer: one GPU's handles hold one address, whichever Python object holds it."""
    try:
        return bool(ctypes.cast(a, ctypes.c_void_p).value == ctypes.cast(b, ctypes.c_void_p).value)
    except (TypeError, ctypes.ArgumentError):  # not a ctypes pointer: the handle's own equality
        return bool(a == b)


class XidEvents:
    """Critical XIDs through NVML's event API: nvmlEventSetCreate, nvmlDeviceRegisterEvents(nvmlEventTypeXidCritical
    Error) on each GPU whose nvmlDeviceGetSupportedEventTypes has it, and `poll()` drains nvmlEventSetWait_v2 (which
    raises NVML_ERROR_TIMEOUT when nothing is pending). `gpus` is the list of GPU indexes registered; empty when no
    GPU supports the events (then the caller falls back to the kernel log). The XID is the event's eventData; the
    GPU is found by the event's device UUID or, where the GPU answers no query (XID 79: it fell off the bus), by
    its handle, the pointer registered for it."""

    def __init__(self, session: Nvml, indexes: List[int]) -> None:
        self.session = session
        nv = session.nv
        self.gpus: List[int] = []
        self.by_uuid: Dict[str, int] = {}
        self.handles: List[Tuple[Any, int]] = []
        self.why = ""
        self.set: Any = None
        try:
            self.set = nv.nvmlEventSetCreate()
        except (nv.NVMLError, AttributeError) as exc:
            self.why = f"nvmlEventSetCreate: {exc}"
            return
        for i in indexes:
            h = session.handle(i)
            try:
                supported = int(nv.nvmlDeviceGetSupportedEventTypes(h))
                if not supported & EVENT_TYPE_XID_CRITICAL:
                    self.why = self.why or f"GPU {i} does not report XID events"
                    continue
                nv.nvmlDeviceRegisterEvents(h, EVENT_TYPE_XID_CRITICAL, self.set)
                self.by_uuid[_text(nv.nvmlDeviceGetUUID(h))] = i
                self.handles.append((h, i))
            except nv.NVMLError as exc:
                if _code(exc) == ERR_GPU_IS_LOST:
                    continue
                self.why = self.why or f"GPU {i}: nvmlDeviceRegisterEvents: {exc}"
                continue
            self.gpus.append(i)

    def poll(self, timeout_ms: int = 0, limit: int = 64) -> List[Tuple[int, int]]:
        """(GPU index, XID) for the events pending now, at most `limit` (a storm must not stall the sampler); waits
        up to `timeout_ms` for the first one only."""
        out: List[Tuple[int, int]] = []
        if self.set is None or not self.gpus:
            return out
        nv = self.session.nv
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
        for n in range(limit):
            try:
                data = wait(self.set, timeout_ms if n == 0 else 0)
            except nv.NVMLError as exc:
                if _code(exc) in (ERR_TIMEOUT, ERR_GPU_IS_LOST):
                    break
                raise
            if not int(data.eventType) & EVENT_TYPE_XID_CRITICAL:
                continue
            try:
                index = self.by_uuid.get(_text(nv.nvmlDeviceGetUUID(data.device)), -1)
            except nv.NVMLError:  # a GPU off the bus answers nothing; its handle is still the one registered
                index = next((i for h, i in self.handles if _same_device(h, data.device)), -1)
            out.append((index, int(data.eventData)))
        return out

    def close(self) -> None:
        if self.set is not None:
            try:
                self.session.nv.nvmlEventSetFree(self.set)
            except Exception:  # noqa: BLE001 - freeing at shutdown must not fail the caller
                pass
            self.set = None
