"""`hosttune monitor` as a real process: sinks, faults it survives, signals, sd_notify, and the systemd unit.

Each test runs the daemon for a second or two at a short interval into temp dirs. GPU scenarios use the fake
pynvml (tests/fakes), whose scenario file the tests rewrite under the running daemon.
"""

import ctypes
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest
from conftest import FAKES, REPO, a100, boot_in_nspawn
from prometheus_client.parser import text_string_to_metric_families

UNIT = REPO / "systemd" / "hosttune-monitor.service"
HANG_S = 600  # wait_for's least guard


def _env(base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(base if base is not None else os.environ)
    for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"):
        env.pop(key, None)
    if base is None:  # no scenario: the fake behaves like a host without libnvidia-ml
        env["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(REPO)])
    return env


class Daemon:
    def __init__(self, tmp: Path, env: Dict[str, str], interval: float = 0.1, extra: str = "",
                 preexec: Optional[Callable[[], None]] = None, log_dir: Optional[Path] = None,
                 stderr: Any = subprocess.PIPE, prefix: Optional[List[str]] = None) -> None:
        self.log = log_dir or tmp / "log"
        self.tf = tmp / "textfile"
        cfg = tmp / "monitor.yaml"
        # tune checks off: this host's own tunables are not what these tests watch (test_monitor_tune.py does)
        base = {"interval": interval, "log_dir": self.log, "textfile_dir": self.tf, "tune_check_interval": 0}
        # `extra` may override a base key: monitor.yaml refuses duplicate keys
        lines = [f"{k}: {v}\n" for k, v in base.items() if not re.search(rf"^{k}:", extra, re.MULTILINE)]
        cfg.write_text("".join(lines) + extra)
        self.proc = subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "hosttune", "monitor", "--config", str(cfg)], env=env, cwd=str(tmp),
            stdout=subprocess.PIPE, stderr=stderr, text=True, preexec_fn=preexec)
        self.out = ""
        self.err = ""

    @property
    def jsonl(self) -> Path:
        return self.log / "monitor.jsonl"

    def lines(self, path: Optional[Path] = None) -> List[Dict[str, Any]]:
        p = path or self.jsonl
        try:
            text = p.read_text()
        except FileNotFoundError:  # not yet written, or rotated away this instant
            return []
        complete = text[: text.rfind("\n") + 1]  # a line being appended right now is not ours to judge
        return [json.loads(line) for line in complete.splitlines()]

    def wait_lines(self, n: int, timeout: float = 15.0, path: Optional[Path] = None) -> List[Dict[str, Any]]:
        return wait_for(lambda: (lambda ls: ls if len(ls) >= n else None)(self.lines(path)), timeout,
                        f"{n} JSONL lines", self)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        self.proc.send_signal(sig)
        self.out, self.err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.out, self.err = self.proc.communicate()


def wait_for(fn: Callable[[], Any], timeout: float, what: str, daemon: Optional[Daemon] = None) -> Any:
    """fn's first truthy value. `timeout` is a hang guard, never a speed bound: it is at least HANG_S, so a daemon
    slowed by a loaded machine (load 20+ on 2 cores) is waited for; a daemon that exits ends the wait at once."""
    end = time.monotonic() + max(timeout, HANG_S)
    while time.monotonic() < end:
        value = fn()
        if value:
            return value
        if daemon is not None and daemon.proc.poll() is not None:
            daemon.out, daemon.err = daemon.proc.communicate()
            raise AssertionError(f"daemon exited {daemon.proc.returncode} waiting for {what}: {daemon.err}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def rewrite(env: Dict[str, str], scenario: Dict[str, Any]) -> None:
    """Change the fake host under the running daemon (atomically, so it never reads half a file)."""
    path = env["HOSTTUNE_FAKE_NVML"]
    Path(path + ".new").write_text(json.dumps(scenario))
    os.replace(path + ".new", path)


@pytest.fixture
def daemons() -> Any:
    started: List[Daemon] = []
    yield started
    for d in started:
        d.kill()


def scenario(*devices: Dict[str, Any]) -> Dict[str, Any]:
    return {"driver": "550.54.15", "cuda_driver": 12040, "devices": list(devices)}


# ---- the normal case -------------------------------------------------------------------------------------------
def test_jsonl_and_textfile_carry_the_fields(tmp_path: Path, fake_nvml: Any, daemons: List[Daemon]) -> None:
    env = _env(fake_nvml(scenario(a100(0, "3B"), a100(1, "5E", temperature_c=45))))
    d = Daemon(tmp_path, env)
    daemons.append(d)
    lines = d.wait_lines(4)
    prom = wait_for(lambda: (d.tf / "hosttune.prom").exists() and (d.tf / "hosttune.prom").read_text(), 10,
                    "textfile", d)
    assert d.stop() == 0
    assert d.out == "" and d.err == ""  # healthy: no events, no problems
    last = lines[-1]
    assert last["nvml"] == "ok" and isinstance(last["ts"], float)
    host = last["host"]
    for key in ("cpu_util_pct", "load1", "mem_total_bytes", "mem_used_pct", "swap_total_bytes", "shm_total_bytes"):
        assert key in host, key
    assert "/" in host["disks"]
    g0, g1 = last["gpus"]
    assert g0["uuid"] == "GPU-00000000-1111-2222-3333-444444444444" and g1["temperature_c"] == 45
    for key in ("temperature_c", "memory_used_mb", "memory_total_mb", "utilization_gpu_pct", "power_w",
                "power_limit_w", "sm_clock_mhz", "mem_clock_mhz", "clock_event_reasons", "ecc_uncorrected_volatile",
                "retired_pages_pending", "remapped_rows_uncorrectable", "pcie_gen", "pcie_width"):
        assert key in g0, key
    assert g0["clock_event_reason_names"] == ["gpu_idle"]
    fams = {f.name: f for f in text_string_to_metric_families(prom)}
    temps = {s.labels["gpu"]: s.value for s in fams["hosttune_gpu_temperature_celsius"].samples}
    assert temps == {"0": 38, "1": 45}
    assert fams["hosttune_monitor_last_success_timestamp_seconds"].samples[0].value > 1.6e9
    assert [n for n in os.listdir(d.tf)] == ["hosttune.prom"]  # no temp files left behind


def test_rotation_at_the_size_limit_with_n_backups(tmp_path: Path, fake_nvml: Any, daemons: List[Daemon]) -> None:
    env = _env(fake_nvml(scenario(a100(0, "3B"))))
    d = Daemon(tmp_path, env, interval=0.05, extra="max_bytes: 4096\nbackups: 2\n")
    daemons.append(d)
    # a line is ~1.1 KB: 3 per file, so 12 samples have rotated more than twice
    wait_for(lambda: (d.log / "monitor.jsonl.2").exists() and len(d.lines()) >= 2, 20, "two rotations", d)
    time.sleep(0.5)  # and a few more, which must push the oldest out rather than make a .3
    assert d.stop() == 0, d.err
    names = sorted(os.listdir(d.log))
    assert names == ["monitor.jsonl", "monitor.jsonl.1", "monitor.jsonl.2"]
    ts: List[float] = []
    for n in ["monitor.jsonl.2", "monitor.jsonl.1", "monitor.jsonl"]:
        assert (d.log / n).stat().st_size <= 4096
        ts += [r["ts"] for r in d.lines(d.log / n)]
    assert ts == sorted(ts)


# ---- faults ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["no_library", "driver_not_loaded", "no_gpu"])
def test_no_nvml_or_no_gpu_still_logs_host_metrics_and_says_so_once(
        tmp_path: Path, fake_nvml: Any, daemons: List[Daemon], case: str) -> None:
    if case == "no_library":
        env = _env()
    elif case == "driver_not_loaded":
        env = _env(fake_nvml({"init_error": "DRIVER_NOT_LOADED"}))
    else:
        env = _env(fake_nvml(scenario()))
    d = Daemon(tmp_path, env)
    daemons.append(d)
    lines = d.wait_lines(4)
    assert d.stop() == 0
    assert all(r["gpus"] == [] and r["host"]["mem_total_bytes"] > 0 for r in lines)
    expected = {"no_library": "library_not_found", "driver_not_loaded": "driver_not_loaded", "no_gpu": "ok"}[case]
    assert lines[-1]["nvml"] == expected
    problem = d.err.strip().splitlines()
    assert len(problem) == 1, d.err
    assert ("NVML unavailable" if case != "no_gpu" else "NVML found no GPU") in problem[0]
    assert "Traceback" not in d.err


def test_gpu_lost_mid_run_and_threshold_events_start_and_clear_once(
        tmp_path: Path, fake_nvml: Any, daemons: List[Daemon]) -> None:
    slow = {"slowdown": 87, "shutdown": 92}  # GPU 0's own slowdown threshold: its critical line
    env = _env(fake_nvml(scenario(a100(0, "3B", temperature_thresholds=slow), a100(1, "5E"))))
    d = Daemon(tmp_path, env)
    daemons.append(d)
    d.wait_lines(3)
    # GPU 0 runs hot and throttles (software thermal slowdown and the hardware power brake); GPU 1 falls off the bus
    rewrite(env, scenario(a100(0, "3B", temperature_c=88, clock_event_reasons=0x20 | 0x80,
                               temperature_thresholds=slow), a100(1, "5E", lost=True)))
    wait_for(lambda: sum(1 for r in d.lines() if r["gpus"][0].get("temperature_c") == 88) >= 4, 15, "hot", d)
    rewrite(env, scenario(a100(0, "3B", temperature_c=50, temperature_thresholds=slow), a100(1, "5E", lost=True)))
    wait_for(lambda: sum(1 for r in d.lines() if r["gpus"][0].get("temperature_c") == 50) >= 4, 15, "cool", d)
    assert d.stop() == 0
    lines = d.lines()
    after = [r for r in lines if r["gpus"][1].get("lost")]
    assert after and all("temperature_c" in r["gpus"][0] for r in after)  # GPU 0 still sampled
    assert all(set(r["gpus"][1]) == {"index", "uuid", "lost"} for r in after)  # GPU 1 no longer asked
    out = d.out.splitlines()
    assert len([x for x in out if "GPU 1" in x and "is lost" in x]) == 1, d.out
    hot = ("critical: GPU 0 (GPU-00000000-1111-2222-3333-444444444444) temperature 88 C (critical threshold: "
           ">= 87 C, the GPU's slowdown threshold)")
    assert len([x for x in out if hot in x]) == 1, d.out
    assert len([x for x in out if "GPU 0" in x and "temperature back to 50 C" in x]) == 1, d.out
    assert len([x for x in out if "warning: GPU 0" in x and "thermal slowdown: sw_thermal_slowdown" in x]) == 1, d.out
    assert len([x for x in out if "software thermal slowdown ended" in x]) == 1, d.out
    assert len([x for x in out if x.startswith("hosttune monitor: critical: GPU 0") and "hw_power_brake" in x]) == 1
    events = [e["kind"] for r in lines for e in r.get("events", [])]
    assert events.count("gpu_lost") == 1 and events.count("gpu_throttle_thermal") == 2
    assert events.count("gpu_throttle_hw") == 2  # start and clear
    assert all(r["gpus"][0].get("temp_slowdown_c") == 87 for r in lines)
    assert d.err == ""


def test_not_supported_fields_are_omitted_without_errors(
        tmp_path: Path, fake_nvml: Any, daemons: List[Daemon]) -> None:
    gpu = a100(0, "3B", errors={"nvmlDeviceGetPowerUsage": "NOT_SUPPORTED", "nvmlDeviceGetUtilizationRates":
                                "NOT_SUPPORTED"}, ecc=None, remapped_rows=None, pcie=None)
    env = _env(fake_nvml(scenario(gpu)))
    d = Daemon(tmp_path, env)
    daemons.append(d)
    lines = d.wait_lines(5)
    assert d.stop() == 0
    for r in lines:
        g = r["gpus"][0]
        assert "temperature_c" in g and "memory_used_mb" in g
        for key in ("power_w", "utilization_gpu_pct", "ecc_uncorrected_volatile", "remapped_rows_pending",
                    "pcie_gen"):
            assert key not in g
    assert d.err == "" and d.out == ""


def test_unwritable_log_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a regular file: nothing, not even root, can create a directory under it\n")
    cfg = tmp_path / "m.yaml"
    cfg.write_text(f"log_dir: {blocker / 'logs'}\ntextfile_dir: ''\n")
    res = subprocess.run([sys.executable, "-m", "hosttune", "monitor", "--config", str(cfg)], env=_env(),
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [f"hosttune: error: log dir {blocker / 'logs'} is not writable: Not a directory"]
    res = subprocess.run([sys.executable, "-m", "hosttune", "monitor", "--config", str(cfg), "--log-dir",
                          str(tmp_path / "ok"), "--textfile-dir", str(blocker / "tf")], env=_env(),
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith("hosttune: error: textfile dir ")
    assert len(res.stderr.splitlines()) == 1


def _fsize_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _check_disk_full(d: Daemon) -> None:
    data = d.jsonl.read_bytes()
    assert data.endswith(b"\n")  # never a partial line
    for line in data.decode().splitlines():
        json.loads(line)
    assert d.err.count("sample dropped") == 1, d.err  # rate-limited: once a minute, not once per sample
    assert "Traceback" not in d.err


def test_disk_full_drops_samples_never_writes_half_a_line(
        tmp_path: Path, fake_nvml: Any, daemons: List[Daemon]) -> None:
    """The real write path under RLIMIT_FSIZE: write(2) stops at the limit (short write, then EFBIG)."""
    env = _env(fake_nvml(scenario(a100(0, "3B"))))
    d = Daemon(tmp_path, env, interval=0.05, extra="textfile_dir: ''\n", preexec=_fsize_limit(5000))
    daemons.append(d)
    wait_for(lambda: d.jsonl.exists() and d.jsonl.stat().st_size > 3000, 15, "log grows", d)
    time.sleep(1.0)  # ~20 more samples, all dropped
    assert d.proc.poll() is None  # still running
    assert d.stop() == 0
    _check_disk_full(d)
    assert d.jsonl.stat().st_size <= 5000


def test_disk_full_on_a_real_tmpfs_then_recovers(tmp_path: Path, fake_nvml: Any, daemons: List[Daemon]) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    try:
        filler = mnt / "filler"
        env = _env(fake_nvml(scenario(a100(0, "3B"))))
        log = mnt / "log"
        log.mkdir()
        with open(filler, "wb") as f:  # leave about 3 lines of room
            f.write(b"\0" * (64 * 1024 - 3 * 1200 - 4096))
        d = Daemon(tmp_path, env, interval=0.05, extra="textfile_dir: ''\n", log_dir=log)
        daemons.append(d)
        wait_for(lambda: d.jsonl.exists() and d.jsonl.stat().st_size > 0, 15, "first lines", d)
        time.sleep(1.0)
        n_full = len(d.lines())
        filler.unlink()  # space again: writing resumes
        wait_for(lambda: len(d.lines()) > n_full + 3, 15, "writes resume", d)
        assert d.stop() == 0
        _check_disk_full(d)
        assert "writing" in d.err and "again" in d.err
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_flush_and_exit_0(tmp_path: Path, sig: int, daemons: List[Daemon]) -> None:
    d = Daemon(tmp_path, _env(), interval=30)  # a long interval: the signal must wake the sleep
    daemons.append(d)
    d.wait_lines(1)
    start = time.monotonic()
    assert d.stop(sig) == 0
    assert time.monotonic() - start < 10  # not the 30 s interval
    assert d.jsonl.read_text().endswith("\n")


def test_sighup_reopens_the_log(tmp_path: Path, daemons: List[Daemon]) -> None:
    d = Daemon(tmp_path, _env())
    daemons.append(d)
    d.wait_lines(2)
    moved = d.log / "monitor.jsonl.moved"
    os.rename(d.jsonl, moved)  # what logrotate does before it sends HUP
    time.sleep(0.3)
    grew_before_hup = len(d.lines(moved))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_lines(2)  # the new file at the old path
    n_moved = len(d.lines(moved))
    time.sleep(0.5)
    assert len(d.lines(moved)) == n_moved  # nothing more goes to the moved file after the reopen
    assert grew_before_hup >= 2
    assert d.stop() == 0 and d.err.count("NVML unavailable") == 1


def _unit_exec_prefix() -> List[str]:
    """What the unit's ExecStart= runs before `/usr/bin/hosttune monitor` (the early-signal guard)."""
    m = re.search(r"^ExecStart=(.*?)/usr/bin/hosttune monitor$", UNIT.read_text(), re.MULTILINE)
    assert m, "ExecStart= must end in /usr/bin/hosttune monitor"
    return m.group(1).split()


def _unit_forces_restart_on(code: int) -> bool:
    """Whether the unit restarts after a death by signal -code (Popen's return code), whatever Restart= says."""
    m = re.search(r"^RestartForceExitStatus=(.*)$", UNIT.read_text(), re.MULTILINE)
    return m is not None and signal.Signals(-code).name in m.group(1).split()


# systemd counts these deaths by signal as a clean exit (systemd.service(5), SuccessExitStatus=): no restart.
CLEAN_TO_SYSTEMD = {0, -signal.SIGHUP, -signal.SIGINT, -signal.SIGTERM, -signal.SIGPIPE}


def _hup_disposition(pid: int) -> str:
    """'default', 'ignored' or 'caught', from /proc/PID/status (SigIgn/SigCgt are hex masks, bit 0 = SIGHUP)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    if int(fields["SigIgn"], 16) & 1:
        return "ignored"
    return "caught" if int(fields["SigCgt"], 16) & 1 else "default"


def test_the_units_prefix_ignores_sighup_before_hosttune_runs_and_a_death_by_it_is_a_restart() -> None:
    """The inner loop's part of the start-up sweep below (integration): the unit's ExecStart= prefix really starts
    its program with SIGHUP ignored (read from the program's own /proc status, a shell here: no daemon started), and
    the unit restarts after a death by SIGHUP, which systemd would otherwise count as a clean exit."""
    prefix = _unit_exec_prefix()
    done = subprocess.run([*prefix, "/bin/sh", "-c", "grep '^SigIgn:' /proc/$$/status"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split(":", 1)[1], 16) & 1, done.stdout  # bit 0: SIGHUP
    assert -signal.SIGHUP in CLEAN_TO_SYSTEMD and _unit_forces_restart_on(-signal.SIGHUP)


# integration: 15 real daemons started as the unit starts them, each sent a SIGHUP at a growing delay (the service's
# start-up end to end as real processes, 5 CPU-s; make check leaves it out, make test runs it)
@pytest.mark.integration
def test_sighup_in_the_first_moments_never_ends_the_daemon_cleanly(tmp_path: Path, daemons: List[Daemon]) -> None:
    """A SIGHUP (logrotate's postrotate, a stray `kill -HUP`) during start-up, started as the unit starts it: once
    anything of ours runs, SIGHUP is ignored or caught and the daemon goes on; before that (env(1)'s first
    millisecond) a death by SIGHUP must be one the unit restarts (RestartForceExitStatus=), as systemd otherwise
    counts it as a clean exit. The disposition is read from /proc at the moment of the kill, so no timing is
    assumed; delays run from 0 to past the point where the daemon's own handler is in place."""
    prefix = _unit_exec_prefix()
    seen = set()
    for n, delay in enumerate([0, 0, 0.001, 0.003, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0]):
        sub = tmp_path / f"run{n}"
        sub.mkdir()
        d = Daemon(sub, _env(), interval=0.1, prefix=prefix)
        daemons.append(d)
        time.sleep(delay)
        state = _hup_disposition(d.proc.pid)
        d.proc.send_signal(signal.SIGHUP)
        seen.add(state)
        try:
            d.wait_lines(1)  # it goes on sampling
        except AssertionError:
            code = d.proc.returncode
            if code is None:
                raise
            # dead: only in env's first instant, and then in a way the unit restarts
            assert state == "default", (delay, state, code, d.err)
            assert code not in CLEAN_TO_SYSTEMD or (code == -signal.SIGHUP and _unit_forces_restart_on(code)), \
                f"a SIGHUP {delay} s after start ended it with {code}, which systemd takes for a clean exit"
            continue
        assert d.stop() == 0, (delay, d.err)
    # and once it samples, its own handler is in place, however slow the start was on a busy machine (no delay
    # above is sure to get there): the SIGHUP is caught and the sampling goes on
    (tmp_path / "sampling").mkdir()
    d = Daemon(tmp_path / "sampling", _env(), interval=0.1, prefix=prefix)
    daemons.append(d)
    d.wait_lines(1, timeout=60)
    state = _hup_disposition(d.proc.pid)
    d.proc.send_signal(signal.SIGHUP)
    seen.add(state)
    d.wait_lines(3, timeout=60)
    assert d.stop() == 0, d.err
    assert "caught" in seen  # the run reached the daemon's own handler


@pytest.mark.parametrize("abstract", [False, True])
def test_sd_notify_ready_watchdog_stopping(tmp_path: Path, daemons: List[Daemon], abstract: bool) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"@hosttune-test-{os.getpid()}-{time.monotonic_ns()}" if abstract else str(tmp_path / "notify")
    sock.bind(("\0" + name[1:]) if abstract else name)
    sock.settimeout(10)
    env = _env()
    # stderr goes to a pipe standing in for journald's stream; JOURNAL_STREAM names it as systemd would
    err_r, err_w = os.pipe()
    st = os.fstat(err_w)
    env.update(NOTIFY_SOCKET=name, WATCHDOG_USEC="200000", JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    d = Daemon(tmp_path, env, interval=30, stderr=err_w)
    os.close(err_w)
    daemons.append(d)
    try:
        msgs = [sock.recv(4096).decode()]
        assert msgs[0].startswith("READY=1\nSTATUS=sampling 0 GPU(s)")
        while msgs.count("WATCHDOG=1") < 3:  # every WATCHDOG_USEC/2 although the sample interval is 30 s
            msgs.append(sock.recv(4096).decode())
        assert d.stop() == 0
        while "STOPPING=1" not in msgs:
            msgs.append(sock.recv(4096).decode())
    finally:
        sock.close()
        with os.fdopen(err_r) as f:
            err = f.read()
    assert err.startswith("<5>NVML unavailable"), err  # journal priority prefix on the journal's stream
    assert d.out == ""


def test_once_prints_one_sample(fake_nvml: Any, tmp_path: Path) -> None:
    env = _env(fake_nvml(scenario(a100(0, "3B", temperature_c=90))))
    res = subprocess.run([sys.executable, "-m", "hosttune", "monitor", "--once", "--config", os.devnull],
                         env=env, capture_output=True, text=True, timeout=30, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert rec["gpus"][0]["temperature_c"] == 90 and "cpu_util_pct" in rec["host"]
    assert rec["events"][0]["kind"] == "gpu_temperature" and "critical" in res.stderr
    # JOURNAL_STREAM inherited from a systemd session but output redirected: no "<N>" prefixes in the file
    env["JOURNAL_STREAM"] = "8:12345"
    res = subprocess.run([sys.executable, "-m", "hosttune", "monitor", "--once", "--config", os.devnull],
                         env=env, capture_output=True, text=True, timeout=30, cwd=str(tmp_path))
    assert res.stderr.startswith("hosttune monitor: critical: GPU 0"), res.stderr


def test_runs_under_memory_deny_write_execute(tmp_path: Path) -> None:
    """The unit sets MemoryDenyWriteExecute=yes; the kernel's PR_SET_MDWE is the same rule. The real pynvml
    (ctypes, with its import-time callback) and the sampler must work under it."""
    libc = ctypes.CDLL(None, use_errno=True)

    def mdwe() -> None:
        if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN (Linux >= 6.3)
            os._exit(77)

    env = _env(dict(os.environ))
    env["PYTHONPATH"] = str(REPO)  # without tests/fakes: the real nvidia-ml-py
    res = subprocess.run([sys.executable, "-c", "import mmap\ntry:\n mmap.mmap(-1, 4096, prot=7)\nexcept OSError:"
                          "\n raise SystemExit(0)\nraise SystemExit(1)"], preexec_fn=mdwe, capture_output=True)
    if res.returncode == 77:
        pytest.skip("kernel without PR_SET_MDWE")
    assert res.returncode == 0  # W+X mappings really are refused in the child
    res = subprocess.run([sys.executable, "-m", "hosttune", "monitor", "--once", "--config", os.devnull], env=env,
                         preexec_fn=mdwe, capture_output=True, text=True, timeout=30, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["host"]["mem_total_bytes"] > 0


# ---- the unit --------------------------------------------------------------------------------------------------
def _unit_copy(tmp_path: Path) -> Path:
    exe = shutil.which("hosttune") or str(Path(sys.executable).parent / "hosttune")
    assert os.path.exists(exe)
    text = UNIT.read_text().replace(" /usr/bin/hosttune monitor", f" {exe} monitor")
    text = text.replace("=+/usr/bin/hosttune monitor", f"=+{exe} monitor")
    assert exe in text and "/usr/bin/hosttune" not in text
    path = tmp_path / UNIT.name
    path.write_text(text)
    return path


def test_unit_file_verifies_clean(tmp_path: Path) -> None:
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", str(_unit_copy(tmp_path))],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == "" and res.stderr == "", res.stdout + res.stderr


def test_unit_security_rating_is_ok_or_better(tmp_path: Path) -> None:
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed")
    res = subprocess.run(["systemd-analyze", "security", "--offline=true", str(_unit_copy(tmp_path))],
                         capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\w+)", res.stdout)
    assert m, res.stdout + res.stderr
    assert float(m.group(1)) <= 2.5 and m.group(2) in ("SAFE", "OK"), m.group(0)
    unit = UNIT.read_text()
    for line in ("Type=notify", "WatchdogSec=", "DynamicUser=yes", "/usr/bin/hosttune monitor\n",
                 "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service", "MemoryMax=",
                 "LogsDirectory=hosttune", "ProtectSystem=strict", "ProtectHome=yes",
                 "PrivateTmp=yes", "NoNewPrivileges=yes", "RestrictAddressFamilies=AF_UNIX", "UMask=0077",
                 "SyslogIdentifier=hosttune\n"):
        assert line in unit, line
    settings = [line for line in unit.splitlines() if not line.startswith("#")]
    # /var/lib/hosttune holds root's tune state: DynamicUser= would migrate it and chown it to the monitor's user
    assert not [line for line in settings if line.startswith("StateDirectory=")]
    assert "PrivateDevices=yes" not in settings  # it would hide /dev/nvidia* (see the unit's comment)
    assert not [line for line in settings if line.startswith("ProcSubset=")]  # it hides /proc/meminfo, /proc/stat
    assert not [line for line in settings if line.startswith("PrivateUsers=")]


NSPAWN_TEST = r"""set -x
r=/mnt/out/result
mkdir -p /var/lib/prometheus/node-exporter  # node_exporter's textfile directory as Debian ships it (root, 0755)
# root's runtime directory with a running job's handoff in it: the monitor must neither take it nor remove it
mkdir -m 700 /run/hosttune && echo handoff > /run/hosttune/job.handoff
systemctl start hosttune-monitor.service; echo "start_rc=$?" >> $r
i=0
while [ $i -lt 40 ] && [ "$(cat /var/log/hosttune/monitor.jsonl 2>/dev/null | wc -l)" -lt 3 ]; do
    sleep 0.5; i=$((i + 1))
done
echo "active=$(systemctl is-active hosttune-monitor.service)" >> $r
pid=$(systemctl show -p MainPID --value hosttune-monitor.service)
grep -E "^(Uid|Groups|CapEff|NoNewPrivs|Seccomp):" /proc/$pid/status | tr -d '\t' | sed 's/:/=/' >> $r
tf=/var/lib/prometheus/node-exporter/hosttune.prom
echo "textfile_link=$(readlink $tf)" >> $r
echo "textfile_mode=$(stat -L -c %a $tf)" >> $r
echo "textfile_owner_is_main=$([ "$(stat -L -c %u $tf)" = "$(stat -c %u /proc/$pid)" ] && echo yes)" >> $r
echo "store_mode=$(stat -c %a /var/lib/hosttune/textfile)" >> $r
echo "up_running=$(runuser -u nobody -- grep '^hosttune_monitor_up ' $tf)" >> $r
echo "roots_runtime_running=$(stat -c %u:%a /run/hosttune)" >> $r
echo "own_runtime_is_main=$([ "$(stat -c %u /run/hosttune-monitor)" = "$(stat -c %u /proc/$pid)" ] && echo yes)" >> $r
cp /var/log/hosttune/monitor.jsonl /mnt/out/
systemctl reload hosttune-monitor.service; echo "reload_rc=$?" >> $r
sleep 1
echo "active_after_reload=$(systemctl is-active hosttune-monitor.service)" >> $r
systemctl stop hosttune-monitor.service
echo "$(systemctl show -p Result hosttune-monitor.service)" >> $r
echo "$(systemctl show -p ExecMainStatus hosttune-monitor.service)" >> $r
echo "up_stopped=$(runuser -u nobody -- grep '^hosttune_monitor_up ' $tf)" >> $r
echo "roots_handoff_after_stop=$(cat /run/hosttune/job.handoff)" >> $r
echo "own_runtime_after_stop=$(ls -d /run/hosttune-monitor 2>/dev/null)" >> $r
echo "gpu_lines_stopped=$(grep -c '^hosttune_gpu_' $tf)" >> $r
journalctl -u hosttune-monitor.service --no-pager -o json > /mnt/out/journal.json
# SIGHUP while it starts (the unit ignores it until the daemon's handler is in place): never a clean death
systemctl start --no-block hosttune-monitor.service
i=0
while [ $i -lt 30 ]; do
    systemctl kill -s HUP --kill-who=main hosttune-monitor.service 2>/dev/null; sleep 0.02; i=$((i + 1))
done
i=0  # "activating" while it starts or waits RestartSec= to restart; "inactive" would be a clean death
while [ $i -lt 50 ] && [ "$(systemctl is-active hosttune-monitor.service)" = activating ]; do
    sleep 0.5; i=$((i + 1))
done
echo "active_after_early_hup=$(systemctl is-active hosttune-monitor.service)" >> $r
echo "early_hup_$(systemctl show -p NRestarts hosttune-monitor.service)" >> $r
echo done=1 >> $r
systemctl poweroff --no-block
"""


@pytest.mark.slow
@pytest.mark.integration
def test_unit_runs_under_real_systemd_in_nspawn(tmp_path: Path) -> None:
    """Boot systemd 252 in a container (the host's /usr, a tmpfs root) and run the shipped unit, sandbox and all:
    Type=notify start, DynamicUser without capabilities, seccomp, the textfile world-readable through the link that
    ExecStartPre=+ puts in node_exporter's directory (up 1, then up 0 after the stop),
    events in the journal with their priority, reload (SIGHUP) and a clean stop."""
    nspawn = shutil.which("systemd-nspawn")
    if nspawn is None or os.geteuid() != 0:
        pytest.skip("needs systemd-nspawn and root")
    if sys.prefix != sys.base_prefix or not os.path.islink("/bin") or not os.path.exists("/usr/lib/systemd/systemd"):
        pytest.skip("needs a merged-/usr host with systemd and a non-venv interpreter to lend the container")
    out = tmp_path / "out"
    units = tmp_path / "units"
    out.mkdir()
    units.mkdir()
    (out / "nvml.json").write_text(json.dumps(scenario(a100(0, "3B", temperature_c=88, clock_event_reasons=0x40))))
    (out / "test.sh").write_text(NSPAWN_TEST)
    py = Path(sys.executable).resolve()
    prefix = Path(sys.base_prefix).resolve()
    unit = re.sub(
        r"^(ExecStart=.*?)/usr/bin/hosttune monitor$",
        lambda m: f"{m.group(1)}/opt/py/{py.relative_to(prefix)} -m hosttune monitor --interval 0.5\n"
        "Environment=PYTHONPATH=/opt/src/tests/fakes:/opt/src LD_LIBRARY_PATH=/opt/py/lib "
        "HOSTTUNE_FAKE_NVML=/mnt/out/nvml.json", UNIT.read_text(), flags=re.MULTILINE)
    unit = unit.replace("=+/usr/bin/hosttune monitor", f"=+/opt/py/{py.relative_to(prefix)} -m hosttune monitor")
    assert "/opt/py/" in unit and "/usr/bin/hosttune" not in unit
    (units / UNIT.name).write_text(unit)
    result, log = boot_in_nspawn(tmp_path, out, units, [f"--bind-ro={prefix}:/opt/py", f"--bind-ro={REPO}:/opt/src"])
    ctx = f"{result}\n{log[-2000:]}"
    assert result.get("done") == "1" and result["start_rc"] == "0" and result["active"] == "active", ctx
    assert result["Uid"].split()[0] != "0" and result["CapEff"] == "0000000000000000", ctx
    assert result["NoNewPrivs"] == "1" and result["Seccomp"] == "2", ctx
    # the textfile: linked from node_exporter's directory to the dynamic user's persistent store, readable by
    # another user, up 1 while running and a valid file with up 0 (and no stale GPU readings) after the stop
    assert result["textfile_link"] == "/var/lib/hosttune/textfile/hosttune.prom", ctx
    assert result["textfile_mode"] == "644" and result["store_mode"] == "755", ctx
    assert result["textfile_owner_is_main"] == "yes", ctx
    assert result["up_running"] == "hosttune_monitor_up 1" and result["up_stopped"] == "hosttune_monitor_up 0", ctx
    assert result["gpu_lines_stopped"] == "0", ctx
    # issue 22 item 5: the monitor's runtime directory is its own; root's /run/hosttune (handoffs, exec cache) stays
    # root's 0700 while it runs and keeps its files when it stops (RuntimeDirectory=hosttune chowned and removed it)
    assert result["roots_runtime_running"] == "0:700" and result["own_runtime_is_main"] == "yes", ctx
    assert result["roots_handoff_after_stop"] == "handoff" and result["own_runtime_after_stop"] == "", ctx
    assert result["reload_rc"] == "0" and result["active_after_reload"] == "active", ctx
    assert result["Result"] == "success" and result["ExecMainStatus"] == "0", ctx
    assert result["active_after_early_hup"] == "active", ctx
    samples = [json.loads(line) for line in (out / "monitor.jsonl").read_text().splitlines()]
    assert len(samples) >= 3 and samples[-1]["gpus"][0]["temperature_c"] == 88
    journal = [json.loads(line) for line in (out / "journal.json").read_text().splitlines() if line.strip()]
    mine = [(e.get("PRIORITY"), e.get("MESSAGE")) for e in journal if e.get("_COMM", "").startswith("python")]
    assert ("2", "GPU 0 (GPU-00000000-1111-2222-3333-444444444444) temperature 88 C (critical threshold: >= 85 C, "
                 "default)") in mine, mine
    # HW thermal slowdown (0x40) is critical, as doctor fails it
    assert [m for p, m in mine if p == "2" and "hardware slowdown" in str(m) and "hw_thermal_slowdown" in str(m)], mine
