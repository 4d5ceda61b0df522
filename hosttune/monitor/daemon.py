"""The monitor daemon: one composition root that wires the readers, the alerts and the sinks, and the loop.

Lifetime: NVML is initialised once and `static()` read once per GPU; each tick reads the host and `sample()`s
every GPU that is not lost, appends the JSONL line, rewrites the textfile and prints events. Faults are survived,
not fatal: no NVML (host metrics only, said once), a lost GPU (event, never asked again), a full disk (sample
dropped, error at most once a minute), SIGHUP (reopen the log). SIGTERM/SIGINT end the loop, flush, exit 0.
Under systemd (Type=notify) it sends READY=1, WATCHDOG=1 and STOPPING=1 over $NOTIFY_SOCKET itself.

Tunables: every `tune_check_interval` it runs `hosttune.tune.verify` (read-only; the unit's ProtectSystem=strict
and ProtectKernelTunables= still allow reading /proc/sys and /sys) and logs a drift once, and its clear. With
`reapply: true` it stays unprivileged: it rewrites `tune-reapply` in its own RuntimeDirectory (/run/hosttune-monitor,
never root's /run/hosttune), and hosttune-tune-reapply.path starts the root oneshot hosttune-tune-reapply.service,
which re-applies what `tune apply` saved.
The file's content is for people; root reads nothing the monitor wrote.
"""

import errno
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path
from typing import IO, Any, Dict, List, Mapping, Optional, Set

from hosttune import fsio, nvml
from hosttune.errors import UserError
from hosttune.monitor import jobs, sinks
from hosttune.monitor.config import MonitorConfig
from hosttune.monitor.events import PRIORITY, Alerts, Event
from hosttune.monitor.podresources import PodResources
from hosttune.monitor.sample import HostReader, gpu_fields, now_fields
from hosttune.monitor.sinks import (
    DIR_MODE,
    JSONL_NAME,
    JsonlSink,
    TextfileSink,
    render_stopped,
    render_textfile,
    trusted_dir,
)
from hosttune.monitor.textfile import publish, resolve_textfile_dir, store_dir, write_dir
from hosttune.monitor.xid import KmsgXids, describe
from hosttune.policy import dirs

ERROR_PERIOD_S = 60.0  # a repeating error is printed at most this often
RUNTIME_DIR = sinks.RUNTIME_DIR  # the unit's RuntimeDirectory=hosttune-monitor; systemd passes $RUNTIME_DIRECTORY
REAPPLY_NAME = "tune-reapply"  # watched by systemd/hosttune-tune-reapply.path
KMSG = "/dev/kmsg"  # the XID fallback where NVML does not deliver XID events
XID_WAIT_MS = 1  # nvmlEventSetWait_v2's timeout per sample: pending events return at once, none costs 1 ms
# NVLink state and error counters are 6 NVML calls per link (18 links on an NVSwitch GPU: 864 calls a sample on 8
# GPUs, 4 ms of CPU in the Python wrapper alone): read at most this often and repeated in between (they are counters,
# and the alert on a link down waits minutes)
NVLINK_PERIOD_S = 30.0


def runtime_dir(environ: Mapping[str, str]) -> str:
    """The monitor's runtime directory: the first of systemd's $RUNTIME_DIRECTORY (systemd >= 240, colon-separated,
    absolute), else RUNTIME_DIR. Root's own runtime directory is never it, whoever passed it."""
    given = environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    if not given.startswith("/") or os.path.normpath(given) == os.path.normpath(dirs.runtime_dir(environ)):
        return RUNTIME_DIR
    return given


class Notifier:
    """sd_notify(3) without libsystemd: one AF_UNIX datagram per message to $NOTIFY_SOCKET ('@' = abstract)."""

    def __init__(self, environ: Optional[Dict[str, str]] = None) -> None:
        env = os.environ if environ is None else environ
        addr = env.get("NOTIFY_SOCKET", "")
        self.addr = ("\0" + addr[1:]) if addr.startswith("@") else addr
        self.sock: Optional[socket.socket] = None
        if self.addr:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            except OSError:
                self.sock = None
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        # WATCHDOG_PID names the process the watchdog is meant for; another process must not ping for it.
        ok = usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid()))
        self.watchdog_s: Optional[float] = int(usec) / 1e6 if ok else None

    def send(self, message: str) -> None:
        if self.sock is None:
            return
        try:
            self.sock.sendto(message.encode(), self.addr)
        except OSError:
            pass  # systemd gone or not listening: nothing useful to do about it

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def connected_to_journal(stream: IO[str], journal_stream: str) -> bool:
    """systemd.exec(5): $JOURNAL_STREAM is "DEV:INODE" of the journal connection; the stream is the journal only
    when its fstat matches (a child that redirected its output must not write "<N>" prefixes into a file)."""
    try:
        dev, ino = (int(v) for v in journal_stream.split(":"))
        st = os.fstat(stream.fileno())
    except (ValueError, OSError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


class Say:
    """Lines for the journal: events on stdout, problems on stderr; repeated problems rate-limited per key.

    Under systemd each line written to the journal starts with a "<N>" syslog priority, which journald turns into
    the entry's PRIORITY, so `journalctl -p warning -u hosttune-monitor` shows exactly the warnings.
    """

    def __init__(self, out: IO[str], err: IO[str], journal_stream: str = "") -> None:
        self.out, self.err = out, err
        self.journal = {id(s): connected_to_journal(s, journal_stream) for s in (out, err)} if journal_stream else {}
        self._last: Dict[str, float] = {}
        self._suppressed: Dict[str, int] = {}

    def _line(self, stream: IO[str], level: str, text: str) -> None:
        journal = self.journal.get(id(stream), False)
        prefix = f"<{PRIORITY.get(level, 6)}>" if journal else f"hosttune monitor: {level}: "
        try:
            stream.write(prefix + text + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def event(self, ev: Event) -> None:
        tag = {"start": "", "clear": "cleared: ", "once": ""}[ev.state]
        self._line(self.out, ev.level, f"{tag}{ev.message}")

    def problem(self, level: str, text: str, key: Optional[str] = None) -> None:
        if key is None:
            self._line(self.err, level, text)
            return
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < ERROR_PERIOD_S:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return
        more = self._suppressed.pop(key, 0)
        self._last[key] = now
        self._line(self.err, level, text + (f" ({more} more since the last report)" if more else ""))

    def recovered(self, key: str, text: str) -> None:
        if key in self._last:
            more = self._suppressed.pop(key, 0)
            del self._last[key]
            self._line(self.err, "notice", text + (f" ({more} more failures were not printed)" if more else ""))


class Monitor:
    def __init__(self, cfg: MonitorConfig, out: IO[str] = sys.stdout, err: IO[str] = sys.stderr,
                 environ: Optional[Dict[str, str]] = None, root: Path = Path("/"), kmsg: str = KMSG) -> None:
        """`root`: where the tune check reads the tunables and "auto" looks for node_exporter's textfile directory
        (a test's tree); nothing else uses it.
        `kmsg`: the kernel log read for XIDs where NVML's events are not available."""
        self.cfg = cfg
        env = os.environ if environ is None else environ
        self.root = Path(root)
        self.reapply_path = os.path.join(runtime_dir(env), REAPPLY_NAME)
        self.tune_drift: Dict[str, bool] = {}  # last tune check: tunable id -> drifted (for the textfile)
        self._tune_unchecked = ""  # why the last tune check could not run (said once until a check works)
        self.say = Say(out, err, env.get("JOURNAL_STREAM", ""))
        self.alerts = Alerts(cfg.thresholds)
        self.nv: Optional[nvml.Nvml] = None
        self.nvml_status = "ok"
        self.gpus: List[Dict[str, Any]] = []  # static identity per GPU
        self.lost: Set[int] = set()
        self.host: Optional[HostReader] = None
        self.jsonl: Optional[JsonlSink] = None
        self.textfile: Optional[TextfileSink] = None
        self.stats: Dict[str, Any] = {"samples": 0, "write_errors": {"jsonl": 0, "textfile": 0}}
        self.driver: Dict[str, str] = {}
        self.nvlinks: Dict[int, int] = {}  # GPU index -> NVLink count (static)
        self.kmsg_path = kmsg
        self.xid_nvml: Optional[nvml.XidEvents] = None
        self.xid_kmsg: Optional[KmsgXids] = None
        self.xid_source: Dict[int, str] = {}  # GPU index -> "nvml" | "kmsg": where its XIDs are watched
        self.xid_counts: Dict[int, int] = {}  # XIDs seen per GPU since the monitor started
        self.last_xid: Dict[int, int] = {}
        self.last_ts: Optional[float] = None
        self.job_records = jobs.Records(environ=env)  # the jobs `hosttune exec` runs (hosttune/jobrecord.py)
        self.pods = PodResources()  # the kubelet's GPU -> pod assignments, where its socket answers
        self._nvlink_read: Dict[int, float] = {}  # GPU index -> monotonic time of its last NVLink read
        self._nvlink_last: Dict[int, Dict[str, Any]] = {}  # GPU index -> its last nvlink_up/nvlink_errors

    # ---- setup ----------------------------------------------------------------------------------------------
    def open_sinks(self) -> None:
        """Fail at start, with one line and exit 2, when the log or textfile directory cannot be written or is not
        trusted (sinks.trusted_dir), or a link or non-regular file sits at the log's name."""
        try:
            self.jsonl = JsonlSink(self.cfg.log_dir, self.cfg.max_bytes, self.cfg.backups)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EINVAL):
                raise UserError(f"refusing {os.path.join(self.cfg.log_dir, JSONL_NAME)}: a link or a non-regular "
                                f"file is at the log's name; the monitor never writes through one: remove it") from None
            raise UserError(f"log dir {self.cfg.log_dir} is not writable: {exc.strerror or exc}") from None
        target = resolve_textfile_dir(self.cfg.textfile_dir, str(self.root))
        if target:
            where = self._textfile_route(target)
            try:
                self.textfile = TextfileSink(where)
            except OSError as exc:
                shown = where if where == target else f"{where} (linked from {target})"
                raise UserError(f"textfile dir {shown} is not writable: {exc.strerror or exc}") from None
            for warning in self.textfile.warnings:
                self.say.problem("warning", warning)
        if self.cfg.reapply:
            where = os.path.dirname(self.reapply_path)
            try:
                fsio.makedirs_private(where, DIR_MODE)
                trusted_dir(where, "runtime dir (reapply: true)", "the unit's RuntimeDirectory=")
                if not os.access(where, os.W_OK):
                    raise PermissionError(errno.EACCES, "Permission denied")
            except OSError as exc:
                raise UserError(f"reapply: true, but the runtime dir {where} is not writable: "
                                f"{exc.strerror or exc}") from None

    def _textfile_route(self, target: str) -> str:
        """Where the textfile is written for node_exporter to find it in `target`. As root, the packaged unit's route
        (`publish`): root's own store in hosttune's state directory and a link to it in `target`, so root writes no
        file in node_exporter's directory, whose parent belongs to user prometheus (Debian, Fedora), and asks nobody
        to change that. Otherwise the store when root's `setup-textfile` linked it (the unit), else `target`."""
        store = store_dir()
        if os.geteuid() != 0:
            return write_dir(target, store)
        try:
            _done, warnings = publish(target, 0, 0, store)
        except OSError as exc:
            shown = f" ({exc.filename})" if exc.filename and exc.filename != target else ""
            raise UserError(f"textfile dir {target} is not usable: {exc.strerror or exc}{shown}") from None
        for warning in warnings:
            self.say.problem("warning", warning)
        return store

    # ---- tunables -------------------------------------------------------------------------------------------
    def check_tune(self, record: Dict[str, Any]) -> None:
        """One `hosttune.tune.verify`; its events join `record`'s. No tune state (nothing was ever applied) is
        quiet; a verify that fails is one notice, then quiet until a check works."""
        try:
            import importlib

            # lazily: not on the way to READY=1. verify compares with the profile whether or not anything was
            # applied; a host where `tune apply` never ran (no saved state) is not drifting, it is not tuned.
            # where `tune apply` saves it: on the live host in dirs.state_dir() ($HOSTTUNE_STATE_DIR), in a tree
            # under the tree's var/lib/hosttune (tune.model.state_file)
            model = importlib.import_module("hosttune.tune.model")
            state_file = getattr(model, "state_file", None)
            state = state_file(self.root) if state_file is not None else str(
                self.root / getattr(model, "STATE_FILE", "var/lib/hosttune/tune-state.json"))
            if not os.path.lexists(state):
                self.tune_drift = {}
                return
            statuses = list(importlib.import_module("hosttune.tune").verify(self.root))
        except Exception as exc:  # noqa: BLE001 - verify's failure must not stop the sampling
            self.tune_drift = {}
            why = str(exc) or type(exc).__name__
            if not self._tune_unchecked:
                self.say.problem("notice", f"tunables not checked: {why}")
            self._tune_unchecked = why
            return
        if self._tune_unchecked:
            self._tune_unchecked = ""
            self.say.problem("notice", "tunables checked again")
        self.tune_drift = {str(st.id): st.state == "drift" for st in statuses if st.state in ("ok", "drift")}
        events = self.alerts.tune(statuses)
        if not events:
            return
        record.setdefault("events", []).extend(ev.to_dict() for ev in events)
        for ev in events:
            self.say.event(ev)
        started = [ev.subject for ev in events if ev.state == "start"]
        if started and self.cfg.reapply:
            self.request_reapply(started)

    def request_reapply(self, ids: List[str]) -> None:
        """Ask root's hosttune-tune.service to re-apply: rewrite (rename over) the file the .path unit watches."""
        try:
            fsio.atomic_write(self.reapply_path, "drifted: " + " ".join(ids) + "\n", 0o644, durable=False)
        except OSError as exc:
            self.say.problem("error", f"cannot request a re-apply through {self.reapply_path}: {exc.strerror or exc}",
                             key="reapply")
            return
        self.say.problem("notice", f"re-apply of {', '.join(ids)} requested from hosttune-tune.service "
                                   f"(through {self.reapply_path})")

    def open_sources(self) -> None:
        self.host = HostReader(disks=self.cfg.disks)
        try:
            self.nv = nvml.Nvml()
        except nvml.NvmlUnavailable as exc:
            self.nvml_status = exc.status
            self.say.problem("notice", f"NVML unavailable ({exc.status}: {exc}); sampling host metrics only")
            return
        count = self.nv.count()
        if count == 0:
            self.say.problem("notice", "NVML found no GPU; sampling host metrics only")
        for i in range(count):
            try:
                self.gpus.append(self.nv.static(i))
                self.nvlinks[i] = self.nv.nvlink_count(i)
            except nvml.GpuLost:
                self.gpus.append({"index": i, "uuid": None})
                self.lost.add(i)
            except Exception as exc:  # noqa: BLE001 - one broken GPU must not stop the others being watched
                self.say.problem("error", f"GPU {i}: cannot read its identity ({exc}); not sampled")
        for key, value in (("driver_version", self.nv.driver_version()),
                           ("cuda_driver_version", self.nv.cuda_driver_version())):
            if value is not None:
                self.driver[key] = value
        self.open_xid_watch()

    def open_xid_watch(self) -> None:
        """Critical XIDs from NVML's event set; GPUs it cannot cover are watched in the kernel log where that is
        readable. Whatever stays unwatched is said once."""
        assert self.nv is not None
        indexes = [st["index"] for st in self.gpus if st["index"] not in self.lost]
        if not indexes:
            return
        self.xid_nvml = self.nv.xid_events(indexes)
        for i in self.xid_nvml.gpus:
            self.xid_source[i] = "nvml"
        rest = [i for i in indexes if i not in self.xid_source]
        if not rest:
            return
        try:
            self.xid_kmsg = KmsgXids(self.kmsg_path)
        except OSError as exc:
            why = self.xid_nvml.why or "no NVML XID events"
            self.say.problem("notice", f"XID errors not watched on GPU {', '.join(map(str, rest))}: {why}, and "
                                       f"{self.kmsg_path} is not readable ({exc.strerror or exc})")
            return
        for i in rest:
            self.xid_source[i] = "kmsg"

    def _nvlinks_due(self, i: int) -> int:
        """How many NVLinks to read for GPU `i` this sample: all of them every NVLINK_PERIOD_S, else none (the last
        reading is repeated; `take` keeps it in _nvlink_last)."""
        links = self.nvlinks.get(i, 0)
        now = time.monotonic()
        if not links or now - self._nvlink_read.get(i, -NVLINK_PERIOD_S) < NVLINK_PERIOD_S:
            return 0
        self._nvlink_read[i] = now
        self._nvlink_last.pop(i, None)
        return links

    def poll_xids(self) -> List[Any]:
        """New XIDs since the last sample, counted per GPU; one event each with NVIDIA's meaning of the code."""
        found: List[Any] = []
        if self.xid_nvml is not None:
            try:
                found += [(i, x) for i, x in self.xid_nvml.poll(XID_WAIT_MS) if self.xid_source.get(i) == "nvml"]
            except Exception as exc:  # noqa: BLE001 - a broken event set must not stop the sampling
                self.say.problem("error", f"XID events: {exc}", key="xid")
        if self.xid_kmsg is not None:
            by_bus = {str(st.get("pci_bus_id") or "").rsplit(".", 1)[0]: st["index"] for st in self.gpus}
            for bus, xid in self.xid_kmsg.poll():
                i = by_bus.get(bus)
                if i is not None and self.xid_source.get(i) == "kmsg":
                    found.append((i, xid))
        events = []
        uuids = {st["index"]: st.get("uuid") for st in self.gpus}
        for i, xid in found:
            self.xid_counts[i] = self.xid_counts.get(i, 0) + 1
            self.last_xid[i] = xid
            level, text = describe(xid)
            name = f"GPU {i}" + (f" ({uuids[i]})" if uuids.get(i) else "")
            events.append(Event("gpu_xid", f"gpu{i}", level, "once", f"{name}: {text}", float(xid)))
        return events

    # ---- one sample -----------------------------------------------------------------------------------------
    def take(self) -> Dict[str, Any]:
        started = time.monotonic()
        record = now_fields()
        record["nvml"] = self.nvml_status
        assert self.host is not None
        record["host"] = self.host.read()
        gpus: List[Dict[str, Any]] = []
        for st in self.gpus:
            i = st["index"]
            if i in self.lost:
                gpus.append({"index": i, "uuid": st.get("uuid"), "lost": True})
                continue
            assert self.nv is not None
            try:
                entry = gpu_fields(st, self.nv.sample(i, health=True, nvlinks=self._nvlinks_due(i)))
                if "nvlink_up" in entry:  # read now: remember for the samples until the next read
                    self._nvlink_last[i] = {k: entry[k] for k in ("nvlink_up", "nvlink_errors") if k in entry}
                elif i in self._nvlink_last:
                    entry.update(self._nvlink_last[i])
                if i in self.xid_source:
                    entry["xid_source"] = self.xid_source[i]
                    entry["xid_errors"] = self.xid_counts.get(i, 0)
                    if i in self.last_xid:
                        entry["last_xid"] = self.last_xid[i]
                gpus.append(entry)
            except nvml.GpuLost:
                self.lost.add(i)
                gpus.append({"index": i, "uuid": st.get("uuid"), "lost": True})
            except Exception as exc:  # noqa: BLE001 - an unexpected NVML error skips this GPU for this sample
                self.say.problem("error", f"GPU {i}: sample failed: {exc}", key=f"gpu{i}")
        if self.driver:
            record["driver"] = dict(self.driver)
        xids = self.poll_xids()
        for ev in xids:  # counted now, shown in this sample's entries
            g = next((g for g in gpus if f"gpu{g['index']}" == ev.subject and not g.get("lost")), None)
            if g is not None:
                i = g["index"]
                g["xid_errors"], g["last_xid"] = self.xid_counts[i], self.last_xid[i]
        if gpus:  # the jobs `hosttune exec` runs, on the GPUs their ranks were given (monitor/jobs.py)
            jobs.add_records(gpus, self.gpus, self.job_records.read())
            jobs.add_pods(gpus, self.pods.assignments())
        record["gpus"] = gpus
        events = xids + self.alerts.update(record)
        if events:
            record["events"] = [ev.to_dict() for ev in events]
            for ev in events:
                self.say.event(ev)
        self.stats["sample_seconds"] = round(time.monotonic() - started, 6)
        return record

    def emit(self, record: Dict[str, Any]) -> None:
        self.stats["samples"] += 1
        self.last_ts = record["ts"]
        if self.jsonl is not None:
            try:
                self.jsonl.write(record)
                self.say.recovered("jsonl", f"writing {self.jsonl.path} again")
            except OSError as exc:
                self.stats["write_errors"]["jsonl"] += 1
                self.say.problem("error", f"sample dropped: cannot write {self.jsonl.path}: {exc.strerror or exc}",
                                 key="jsonl")
        if self.textfile is not None:
            try:
                self.textfile.write(render_textfile(record, self.stats, self.gpus, self.tune_drift))
                self.say.recovered("textfile", f"writing {self.textfile.path} again")
            except OSError as exc:
                self.stats["write_errors"]["textfile"] += 1
                self.say.problem("error", f"cannot write {self.textfile.path}: {exc.strerror or exc}",
                                 key="textfile")

    def stopped(self) -> None:
        """The last textfile: `hosttune_monitor_up 0` (and when it last sampled), so that node_exporter keeps
        serving a valid file and an alert sees "monitor down", never a scrape error or stale GPU readings."""
        if self.textfile is None:
            return
        try:
            self.textfile.write(render_stopped(self.last_ts, self.stats))
        except OSError as exc:
            self.say.problem("error", f"cannot write {self.textfile.path} at stop: {exc.strerror or exc}")

    def close(self) -> None:
        if self.jsonl is not None:
            self.jsonl.close()
        if self.xid_nvml is not None:
            self.xid_nvml.close()
        if self.xid_kmsg is not None:
            self.xid_kmsg.close()
        if self.nv is not None:
            self.nv.close()


class _Signals:
    """SIGTERM/SIGINT/SIGHUP set flags; a self-pipe (signal.set_wakeup_fd) wakes the sleeping select()."""

    def __init__(self) -> None:
        self.stop = False
        self.reopen = False
        self.rfd, self.wfd = os.pipe()
        for fd in (self.rfd, self.wfd):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wfd)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, self._hup)
        # RLIMIT_FSIZE (and some filesystems) signal SIGXFSZ on an oversized write; we want EFBIG instead.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    def _stop(self, signum: int, frame: Any) -> None:
        self.stop = True

    def _hup(self, signum: int, frame: Any) -> None:
        self.reopen = True

    def wait(self, seconds: float) -> None:
        if seconds > 0 and not self.stop:
            try:
                ready, _, _ = select.select([self.rfd], [], [], seconds)
            except InterruptedError:
                ready = []
            if ready:
                try:
                    while os.read(self.rfd, 512):
                        pass
                except BlockingIOError:
                    pass


def run(cfg: MonitorConfig, out: IO[str] = sys.stdout, err: IO[str] = sys.stderr) -> int:
    """The daemon. Returns the exit code (0 after SIGTERM/SIGINT); raises UserError when it cannot start."""
    mon = Monitor(cfg, out, err)
    mon.open_sinks()
    sig = _Signals()
    notify = Notifier()
    mon.open_sources()
    n_gpu = len(mon.gpus) - len(mon.lost)
    notify.send(f"READY=1\nSTATUS=sampling {n_gpu} GPU(s) and the host every {cfg.interval:g} s")
    watchdog = notify.watchdog_s / 2 if notify.watchdog_s else None
    next_sample = time.monotonic()
    next_ping = next_sample
    next_tune: Optional[float] = next_sample if cfg.tune_check_interval else None
    try:
        while not sig.stop:
            if sig.reopen:
                sig.reopen = False
                if mon.jsonl is not None:
                    try:
                        mon.jsonl.reopen()
                    except OSError as exc:
                        mon.say.problem("error", f"cannot reopen {mon.jsonl.path}: {exc.strerror or exc}",
                                        key="jsonl")
            now = time.monotonic()
            if now >= next_sample:
                record = mon.take()
                if next_tune is not None and now >= next_tune:
                    mon.check_tune(record)
                    next_tune = time.monotonic() + cfg.tune_check_interval
                mon.emit(record)
                # keep a fixed cadence; after a stall (suspend, a slow NVML call) skip the missed ticks
                next_sample += cfg.interval
                if next_sample <= time.monotonic():
                    next_sample = time.monotonic() + cfg.interval
            if watchdog is not None and time.monotonic() >= next_ping:
                notify.send("WATCHDOG=1")
                next_ping = time.monotonic() + watchdog
            wake = next_sample if watchdog is None else min(next_sample, next_ping)
            sig.wait(wake - time.monotonic())
    finally:
        notify.send("STOPPING=1")
        mon.stopped()
        mon.close()
        notify.close()
    return 0


def once(cfg: MonitorConfig, out: IO[str] = sys.stdout, err: IO[str] = sys.stderr) -> Dict[str, Any]:
    """One sample, no sinks. CPU utilisation needs two readings of /proc/stat, so it waits a quarter second."""
    mon = Monitor(cfg, out=err, err=err)  # events go to stderr here: stdout carries the JSON
    try:
        mon.open_sources()
        time.sleep(0.25)
        return mon.take()
    finally:
        mon.close()


def dumps(record: Dict[str, Any]) -> str:
    return json.dumps(record, indent=2)
