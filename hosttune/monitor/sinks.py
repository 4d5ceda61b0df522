"""Where samples go: a size-rotated JSONL log and a Prometheus textfile for node_exporter.

JSONL: one whole line per sample or nothing. The line is written with a single write(2) on an O_APPEND descriptor;
a short write (disk full, RLIMIT_FSIZE) is cut back with ftruncate so the file never holds a partial line, and the
sample is dropped with an OSError for the caller to report. `reopen()` (SIGHUP) lets logrotate move the file away.

Textfile: the Prometheus text exposition format 0.0.4 written by hand (prometheus_client is not packaged on EL9),
with `fsio.atomic_write` (a random dot-temp name in the same directory, renamed over `hosttune.prom`), so
node_exporter's textfile collector (which reads only *.prom) never sees half a file. No timestamps, base units
(celsius, bytes, watts, hertz, ratio).

Links: the monitor may run as root, so nothing at a name in its directories is trusted. The log is opened with
O_NOFOLLOW (a link planted at monitor.jsonl is refused, never appended through), rotation only renames (rename(2)
moves a link, never its target), temp and probe names are random and O_EXCL, and each directory must pass
`trust.problem(kind="dir")` for the monitor's own user: owned by root or by that user, not writable by group or
others. Under DynamicUser= the state directories belong to the dynamic uid, which is then the monitor's own.
"""

import errno
import json
import math
import os
import stat
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Tuple

from hosttune import fsio, nvml, trust
from hosttune.errors import UserError
from hosttune.monitor import diskio
from hosttune.policy import dirs

JSONL_NAME = "monitor.jsonl"
TEXTFILE_NAME = "hosttune.prom"


def jsonl_files(log_dir: str) -> List[str]:
    """The log files oldest first: monitor.jsonl.N ... monitor.jsonl.1, monitor.jsonl."""
    backups: List[Tuple[int, str]] = []
    try:
        names = os.listdir(log_dir)
    except OSError:
        return []
    for name in names:
        if name.startswith(JSONL_NAME + "."):
            suffix = name[len(JSONL_NAME) + 1:]
            if suffix.isdigit():
                backups.append((int(suffix), os.path.join(log_dir, name)))
    out = [path for _, path in sorted(backups, reverse=True)]
    if JSONL_NAME in names:
        out.append(os.path.join(log_dir, JSONL_NAME))
    return out


DIR_MODE = 0o755  # new directories: readable by `monitor report` and node_exporter, whatever the umask


class UntrustedDir(UserError):
    """A log or textfile directory another user could write to (and so plant links or files in)."""


# The monitor's own runtime directory (the unit's RuntimeDirectory=hosttune-monitor, watched by
# hosttune-tune-reapply.path): never root's (policy/dirs.runtime_dir: handoffs, exec cache), which systemd would chown
# to the dynamic user at start and delete at stop.
RUNTIME_DIR = "/run/hosttune-monitor"


def own_dirs() -> Tuple[str, ...]:
    """The directories hosttune makes for the monitor (and so may tell an admin to chown or chmod)."""
    return (dirs.log_dir(), dirs.state_dir(), RUNTIME_DIR)


def _is_own(path: str) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in map(os.path.normpath, own_dirs()))


def trusted_dir(path: str, what: str, option: str = "") -> None:
    """Refuse (one line) a directory another user could write to: the root trust rule of `trust.problem`, with the
    monitor's own euid also trusted (its DynamicUser= state directory is owned by it).

    The fix names a chown or chmod only for a directory hosttune itself makes (`own_dirs`): anything else belongs to
    someone (/var/lib/prometheus to Prometheus, /var/log to syslog on Ubuntu), and changing its owner or mode would
    break them. There the fix is another directory, through `option`."""
    owners = frozenset({0, os.geteuid()})
    real, why = trust.problem(path, kind="dir", owners=owners)
    if why is None:
        return
    shown = path if real == path else f"{path} (-> {real})"
    bad = why[len("its directory "):].split(" is ", 1)[0] if why.startswith("its directory ") else real
    if _is_own(bad):
        fix = trust.fix_for(why, real)
    else:
        fix = (f"use another {what}{' (' + option + ')' if option else ''} that only root or the monitor's user can "
               f"write; hosttune never changes the owner or mode of {bad}, which it did not create")
    raise UntrustedDir(f"refusing {what} {shown}: {why}, so another user could plant links or files where the "
                       f"monitor writes; fix: {fix}")


class JsonlSink:
    def __init__(self, log_dir: str, max_bytes: int, backups: int) -> None:
        self.dir = log_dir
        self.path = os.path.join(log_dir, JSONL_NAME)
        self.max_bytes = max_bytes
        self.backups = backups
        self.fd: Optional[int] = None
        self.size = 0
        fsio.makedirs_private(log_dir, DIR_MODE)
        trusted_dir(log_dir, "log dir", "--log-dir, monitor.yaml log_dir")
        self.open()

    def open(self) -> None:
        fd = fsio.open_append_nofollow(self.path, 0o640)  # a link at the name: ELOOP, never its target
        self.fd, self.size = fd, os.fstat(fd).st_size

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.fsync(self.fd)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None

    def reopen(self) -> None:
        """SIGHUP: logrotate (or an admin) moved the file; continue in a new one at the same path."""
        self.close()
        fsio.makedirs_private(self.dir, DIR_MODE)
        self.open()

    def _rotate(self) -> None:
        self.close()
        if self.backups == 0:
            os.unlink(self.path)
        else:
            for n in range(self.backups - 1, 0, -1):
                src = f"{self.path}.{n}"
                if os.path.lexists(src):  # rename moves a link itself; nothing here opens or follows one
                    os.replace(src, f"{self.path}.{n + 1}")
            os.replace(self.path, f"{self.path}.1")
        self.open()

    def write(self, record: Dict[str, Any]) -> None:
        data = (json.dumps(record, separators=(",", ":"), sort_keys=False) + "\n").encode()
        if self.fd is None:
            self.open()
        assert self.fd is not None
        # One fstat per sample: the size as it really is (logrotate's copytruncate may have emptied the file, and a
        # stale size would make _cut() extend it with zeros), and whether someone deleted the file under us.
        st = os.fstat(self.fd)
        if st.st_nlink == 0:
            self.reopen()
            st = os.fstat(self.fd)  # type: ignore[arg-type]
        self.size = st.st_size
        if self.size > 0 and self.size + len(data) > self.max_bytes:
            self._rotate()
        assert self.fd is not None
        before = self.size
        try:
            written = os.write(self.fd, data)
        except OSError:
            self._cut(before)
            raise
        if written != len(data):
            self._cut(before)
            raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)")
        self.size = before + written

    def _cut(self, size: int) -> None:
        """Remove a partial line: the file must end at a line boundary whatever happened."""
        assert self.fd is not None
        try:
            os.ftruncate(self.fd, size)
        except OSError:
            pass
        try:
            self.size = os.fstat(self.fd).st_size
        except OSError:
            self.size = size


# ---- Prometheus exposition ------------------------------------------------------------------------------------
def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    f = float(value)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    return repr(f)


def _labels(labels: Dict[str, Any]) -> str:
    return ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())


class _Exposition:
    def __init__(self) -> None:
        self.families: Dict[str, Tuple[str, str, List[str]]] = {}

    def add(self, name: str, kind: str, help_text: str, labels: Any, value: Any) -> None:
        """`labels`: a dict, or label text already rendered by `_labels` (per GPU, once per sample)."""
        if value is None:
            return
        fam = self.families.get(name)
        if fam is None:
            fam = self.families[name] = (kind, help_text, [])
        label_text = labels if isinstance(labels, str) else _labels(labels)
        fam[2].append(f"{name}{{{label_text}}} {_num(value)}" if label_text else f"{name} {_num(value)}")

    def text(self) -> str:
        lines: List[str] = []
        for name, (kind, help_text, samples) in self.families.items():
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(samples)
        return "\n".join(lines) + "\n"


# (sample key, metric name, type, help, scale)
_GPU_METRICS: Tuple[Tuple[str, str, str, str, float], ...] = (
    ("temperature_c", "hosttune_gpu_temperature_celsius", "gauge", "GPU core temperature.", 1),
    ("memory_used_mb", "hosttune_gpu_memory_used_bytes", "gauge", "GPU memory in use.", 1024 * 1024),
    ("memory_total_mb", "hosttune_gpu_memory_total_bytes", "gauge", "GPU memory size.", 1024 * 1024),
    ("utilization_gpu_pct", "hosttune_gpu_utilization_ratio", "gauge",
     "Fraction of the last sample period in which a kernel ran.", 0.01),
    ("utilization_memory_pct", "hosttune_gpu_memory_utilization_ratio", "gauge",
     "Fraction of the last sample period in which device memory was read or written.", 0.01),
    ("power_w", "hosttune_gpu_power_watts", "gauge", "GPU board power draw.", 1),
    ("power_limit_w", "hosttune_gpu_power_limit_watts", "gauge", "Enforced GPU power limit.", 1),
    ("ecc_uncorrected_volatile", "hosttune_gpu_ecc_uncorrected_errors_total", "counter",
     "Uncorrected ECC errors since the driver loaded (volatile counter).", 1),
    ("retired_pages_pending", "hosttune_gpu_retired_pages_pending", "gauge",
     "1 when retired pages wait for a GPU reset.", 1),
    ("remapped_rows_correctable", "hosttune_gpu_remapped_rows_correctable_total", "counter",
     "Rows remapped for correctable errors.", 1),
    ("remapped_rows_uncorrectable", "hosttune_gpu_remapped_rows_uncorrectable_total", "counter",
     "Rows remapped for uncorrectable errors.", 1),
    ("remapped_rows_pending", "hosttune_gpu_remapped_rows_pending", "gauge",
     "1 when a row remapping waits for a GPU reset.", 1),
    ("remapped_rows_failure", "hosttune_gpu_remapped_rows_failure", "gauge", "1 when a row remapping failed.", 1),
    ("pcie_gen", "hosttune_gpu_pcie_link_generation", "gauge", "Current PCIe link generation.", 1),
    ("pcie_width", "hosttune_gpu_pcie_link_width", "gauge", "Current PCIe link width (lanes).", 1),
    ("memory_temperature_c", "hosttune_gpu_memory_temperature_celsius", "gauge",
     "GPU memory (HBM) temperature (NVML field NVML_FI_DEV_MEMORY_TEMP).", 1),
    ("energy_j", "hosttune_gpu_energy_joules_total", "counter",
     "Energy the GPU used since the driver loaded (nvmlDeviceGetTotalEnergyConsumption).", 1),
    ("pcie_replay_errors", "hosttune_gpu_pcie_replay_errors_total", "counter",
     "PCIe replays (link-level retries) since the driver loaded (nvmlDeviceGetPcieReplayCounter).", 1),
    ("xid_errors", "hosttune_gpu_xid_errors_total", "counter",
     "Critical XID errors seen since the monitor started (NVML XID events or the kernel log).", 1),
    ("last_xid", "hosttune_gpu_last_xid", "gauge", "Code of the last XID error seen since the monitor started.", 1),
)

_CLOCK_REASON_HELP = "1 while NVML reports this clock event (throttle) reason."
_THROTTLE_HELP = ("Time the GPU was held below its clocks by this limiter since the driver loaded "
                  "(nvmlDeviceGetViolationStatus).")
_NVLINK_HELP = "NVLink data-link errors since the driver loaded, by type (nvmlDeviceGetNvLinkErrorCounter)."
_UP_HELP = "1 while the monitor runs; 0 in the file it leaves when it stops."
_JOB_HELP = ("A job (Slurm job id, Kubernetes pod namespace/name or UID, container id, or hosttune exec's own id, by "
             "kind) has a process on the GPU or was given it (value is always 1): join on gpu/uuid.")


def render_textfile(sample: Dict[str, Any], stats: Dict[str, Any], gpu_info: Iterable[Dict[str, Any]] = (),
                    tune_drift: Optional[Dict[str, bool]] = None) -> str:
    """The textfile for one sample. `stats` holds the daemon's own counters; `gpu_info` the static GPU identity;
    `tune_drift` the last tune check, tunable id -> drifted (skipped tunables are not in it)."""
    ex = _Exposition()
    _monitor_metrics(ex, sample, stats)
    for info in gpu_info:
        ex.add("hosttune_gpu_info", "gauge", "GPU identity (value is always 1).",
               {"gpu": info["index"], "uuid": info.get("uuid") or "", "name": info.get("name") or "",
                "pci_bus_id": info.get("pci_bus_id") or ""}, 1)
        # absent for a GPU that does not report it (the monitor's lines are then the table's 75/85 C)
        ex.add("hosttune_gpu_slowdown_temperature_celsius", "gauge",
               "Temperature at which the GPU starts its hardware slowdown (NVML): its default critical line.",
               {"gpu": info["index"], "uuid": info.get("uuid") or ""}, info.get("temp_slowdown_c"))
    for gpu in sample.get("gpus") or []:
        _gpu_metrics(ex, gpu)
    host = sample.get("host") or {}
    _host_metrics(ex, host)
    for tunable, drifted in sorted((tune_drift or {}).items()):
        ex.add("hosttune_tune_drift", "gauge", "1 while the tunable differs from what `hosttune tune apply` set.",
               {"tunable": tunable}, drifted)
    for path, usage in sorted((host.get("disks") or {}).items()):
        ex.add("hosttune_filesystem_size_bytes", "gauge", "Size of a configured filesystem.", {"path": path},
               usage["total_bytes"])
        ex.add("hosttune_filesystem_used_bytes", "gauge", "Bytes used on a configured filesystem.", {"path": path},
               usage["used_bytes"])
    return ex.text()


def _monitor_metrics(ex: _Exposition, sample: Dict[str, Any], stats: Dict[str, Any]) -> None:
    """The monitor's own health, and the driver."""
    ex.add("hosttune_monitor_up", "gauge", _UP_HELP, {}, 1)
    ex.add("hosttune_monitor_last_success_timestamp_seconds", "gauge",
           "Unix time of the last sample the monitor completed.", {}, sample["ts"])
    ex.add("hosttune_monitor_samples_total", "counter", "Samples taken since the monitor started.", {},
           stats.get("samples", 0))
    for sink, count in sorted((stats.get("write_errors") or {}).items()):
        ex.add("hosttune_monitor_write_errors_total", "counter", "Samples a sink could not write (e.g. disk full).",
               {"sink": sink}, count)
    ex.add("hosttune_monitor_sample_duration_seconds", "gauge", "Time the last sample took to read.", {},
           stats.get("sample_seconds"))
    ex.add("hosttune_monitor_nvml_up", "gauge", "1 when NVML is initialised.", {}, sample.get("nvml") == "ok")
    driver = sample.get("driver") or {}
    if driver:
        ex.add("hosttune_driver_info", "gauge", "NVIDIA driver and the CUDA version it supports (value is always 1).",
               {"driver_version": driver.get("driver_version", ""),
                "cuda_driver_version": driver.get("cuda_driver_version", "")}, 1)


def _gpu_metrics(ex: _Exposition, gpu: Dict[str, Any]) -> None:
    """One GPU's readings; a lost GPU only says it is down."""
    labels = _labels({"gpu": gpu["index"], "uuid": gpu.get("uuid") or ""})
    ex.add("hosttune_gpu_up", "gauge", "1 while the GPU answers NVML, 0 once it is lost.", labels, not gpu.get("lost"))
    if gpu.get("lost"):
        return
    for key, name, kind, help_text, scale in _GPU_METRICS:
        if key in gpu:
            value = gpu[key]
            ex.add(name, kind, help_text, labels, value if scale == 1 else value * scale)
    for key, clock in (("sm_clock_mhz", "sm"), ("mem_clock_mhz", "memory")):
        if key in gpu:
            ex.add("hosttune_gpu_clock_hertz", "gauge", "Current GPU clock.", f'{labels},clock="{clock}"',
                   gpu[key] * 1_000_000)
    if "clock_event_reasons" in gpu:
        mask = gpu["clock_event_reasons"]
        for bit, reason in nvml.CLOCK_REASONS.items():
            ex.add("hosttune_gpu_clock_event_reason", "gauge", _CLOCK_REASON_HELP, f'{labels},reason="{reason}"',
                   1 if mask & bit else 0)
    for reason, seconds in (gpu.get("throttle_seconds") or {}).items():
        ex.add("hosttune_gpu_throttle_seconds_total", "counter", _THROTTLE_HELP,
               f'{labels},reason="{_escape(reason)}"', seconds)
    for job in gpu.get("jobs") or []:
        ex.add("hosttune_job_info", "gauge", _JOB_HELP, {"gpu": gpu["index"], "uuid": gpu.get("uuid") or "",
                                                         "job": job["job"], "kind": job["kind"],
                                                         "user": job.get("user", "")}, 1)
    for link, up in enumerate(gpu.get("nvlink_up") or []):
        ex.add("hosttune_gpu_nvlink_up", "gauge", "1 while the NVLink is active (nvmlDeviceGetNvLinkState).",
               f'{labels},link="{link}"', up)
    for kind, counts in sorted((gpu.get("nvlink_errors") or {}).items()):
        for link, count in enumerate(counts):
            ex.add("hosttune_gpu_nvlink_errors_total", "counter", _NVLINK_HELP,
                   f'{labels},link="{link}",type="{_escape(kind)}"', count)


def _host_metrics(ex: _Exposition, host: Dict[str, Any]) -> None:
    """CPU temperatures and load, host memory, swap and /dev/shm, disk I/O and iowait."""
    for sensor, temp in sorted((host.get("cpu_temps_c") or {}).items()):
        ex.add("hosttune_cpu_temperature_celsius", "gauge", "CPU package temperature (hwmon).", {"sensor": sensor},
               temp)
    if "cpu_util_pct" in host:
        ex.add("hosttune_cpu_utilization_ratio", "gauge", "Busy fraction of all CPUs over the last interval.", {},
               host["cpu_util_pct"] / 100.0)
    for n in ("1", "5", "15"):
        ex.add(f"hosttune_load{n}", "gauge", f"{n}-minute load average.", {}, host.get(f"load{n}"))
    for key, name, help_text in (
        ("mem_total_bytes", "hosttune_memory_total_bytes", "Host memory size (MemTotal)."),
        ("mem_available_bytes", "hosttune_memory_available_bytes", "Host memory available (MemAvailable)."),
        ("mem_used_bytes", "hosttune_memory_used_bytes", "Host memory in use (MemTotal - MemAvailable)."),
        ("swap_total_bytes", "hosttune_swap_total_bytes", "Swap size."),
        ("swap_used_bytes", "hosttune_swap_used_bytes", "Swap in use."),
        ("shm_total_bytes", "hosttune_shm_size_bytes", "Size of /dev/shm."),
        ("shm_used_bytes", "hosttune_shm_used_bytes", "Bytes used in /dev/shm."),
    ):
        ex.add(name, "gauge", help_text, {}, host.get(key))
    for name, kind, help_text, labels, value in diskio.textfile_rows(host):  # disk I/O and iowait (issue 25)
        ex.add(name, kind, help_text, labels, value)


def render_stopped(last_ts: Optional[float], stats: Dict[str, Any]) -> str:
    """The textfile a stopped monitor leaves: valid, with `hosttune_monitor_up 0` and no (stale) readings."""
    ex = _Exposition()
    ex.add("hosttune_monitor_up", "gauge", _UP_HELP, {}, 0)
    ex.add("hosttune_monitor_last_success_timestamp_seconds", "gauge",
           "Unix time of the last sample the monitor completed.", {}, last_ts)
    ex.add("hosttune_monitor_samples_total", "counter", "Samples taken since the monitor started.", {},
           stats.get("samples", 0))
    return ex.text()


# ---- a directory at the textfile's name ----------------------------------------------------------------------
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def set_aside(dir_fd: int, shown_dir: str, name: str = TEXTFILE_NAME) -> Optional[str]:
    """A directory at the textfile's name (an admin's mkdir, a broken package) would fail every write, and every
    start of the unit: rename it aside (never delete what someone put there). The warning to print, or None."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    aside = f"{name}.aside-{os.urandom(4).hex()}"  # not *.prom: node_exporter reads only those
    os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    return (f"a directory was at {os.path.join(shown_dir, name)}, where the textfile goes; renamed it to {aside} "
            f"(look inside, then remove it)")


class TextfileSink:
    def __init__(self, textfile_dir: str) -> None:
        self.dir = textfile_dir
        self.path = os.path.join(textfile_dir, TEXTFILE_NAME)
        self.warnings: List[str] = []  # for the caller to print once
        fsio.makedirs_private(textfile_dir, DIR_MODE)
        trusted_dir(textfile_dir, "textfile dir", "--textfile-dir, monitor.yaml textfile_dir")
        fd = os.open(os.path.realpath(textfile_dir), os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
        try:
            moved = set_aside(fd, textfile_dir)
        finally:
            os.close(fd)
        if moved:
            self.warnings.append(moved)
        # fail now, not at the first sample, when the directory is not writable (a random O_EXCL name: a link
        # planted at a predictable probe name would otherwise be followed and truncated)
        fd, probe = tempfile.mkstemp(prefix=f".{TEXTFILE_NAME}.", suffix=".probe", dir=textfile_dir)
        os.close(fd)
        os.unlink(probe)

    def write(self, text: str) -> None:
        # mode 0644: node_exporter runs as another user, and the unit's UMask must not hide the file from it.
        # Not fsynced: it is rewritten every interval; the JSONL is the record.
        fsio.atomic_write(self.path, text, 0o644, durable=False)
