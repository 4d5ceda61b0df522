"""Root safety of the monitor (issue 11, items 8-10): a hostile monitor.yaml or log line is one line, never a
traceback or a 1.4 GB message; links another user plants where the monitor writes are never followed.

The other-user tests run as root and play `nobody` (conftest's `other_user`); the files they aim at are root's and
must come out byte for byte unchanged.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import FAKES, REPO, OtherUser, cli_runner

from hosttune.cli import cli
from hosttune.errors import UserError
from hosttune.monitor import config as mconfig
from hosttune.monitor import sinks, textfile


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"):
        env.pop(key, None)
    env["PYTHONPATH"] = os.pathsep.join([str(FAKES), str(REPO)])  # the fake pynvml with no scenario: no GPU
    return env


def _monitor(*args: str, timeout: float = 30) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "hosttune", "monitor", *args], env=_env(), capture_output=True,
                          text=True, timeout=timeout, cwd="/")


def _one_error_line(res: "subprocess.CompletedProcess[str]") -> str:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hosttune: error: "), res.stderr[-2000:]
    return lines[0]


# ---- item 8: billion laughs ------------------------------------------------------------------------------------
def _laughs(levels: int) -> str:
    doc = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for i in range(1, levels):
        doc += f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n"
    return doc + f"interval: *l{levels - 1}\n"


def test_billion_laughs_under_interval_is_refused_in_one_short_line(tmp_path: Path) -> None:
    # Six levels (9**6 leaves) keep the old failure cheap to see: its message printed the expanded value, megabytes
    # long (nine levels cost 30 s and 1.4 GB).
    f = tmp_path / "monitor.yaml"
    f.write_text(_laughs(6))
    assert len(f.read_bytes()) < 700
    with pytest.raises(UserError) as exc:
        mconfig.load(str(f))
    msg = str(exc.value)
    assert msg.startswith(f"{f}:") and "alias" in msg and "\n" not in msg and len(msg) < 400, msg[:400]


def test_a_huge_value_is_quoted_briefly_in_the_message(tmp_path: Path) -> None:
    f = tmp_path / "monitor.yaml"
    f.write_text("interval: " + "x" * 500_000 + "\n")
    with pytest.raises(UserError) as exc:
        mconfig.load(str(f))
    msg = str(exc.value)
    assert "interval: expected a number" in msg and len(msg) < 400, msg[:400]


# ---- item 9: one line, not a traceback -------------------------------------------------------------------------
@pytest.mark.parametrize("content,needle", [
    (b"interval: 5\nlog_dir: /var/log/\xff\xfehosttune\n", "not UTF-8"),
    (b"interval: " + b"[" * 900 + b"]" * 900 + b"\n", "nested deeper than"),
    (b'log_dir: "/var/log/host\\0tune"\n', "log_dir: "),
    (b'textfile_dir: "/run/host\\0tune"\n', "textfile_dir: "),
    (b'disks: ["/", "/da\\0ta"]\n', "disks: "),
], ids=["non-utf8", "900-deep", "nul-log-dir", "nul-textfile-dir", "nul-disk"])
def test_bad_monitor_yaml_is_one_line_and_exit_2(tmp_path: Path, content: bytes, needle: str) -> None:
    f = tmp_path / "monitor.yaml"
    f.write_bytes(content)
    line = _one_error_line(_monitor("--config", str(f)))
    assert str(f) in line and needle in line, line


def test_monitor_yaml_that_is_a_fifo_is_one_line_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "monitor.yaml"
    os.mkfifo(fifo)
    line = _one_error_line(_monitor("--config", str(fifo), timeout=20))
    assert "not a regular file" in line, line


def _good(ts: float, temp: float = 60.0) -> str:
    return json.dumps({"ts": ts, "host": {"mem_used_pct": 40.0},
                       "gpus": [{"index": 0, "temperature_c": temp, "memory_used_pct": 10.0}]}) + "\n"


BAD_LINES = [
    "[" * 100_000 + "\n",                                   # json.loads: RecursionError
    '{"ts": 1700000001, "gpus": ' + "[" * 5000 + "\n",     # deep and malformed
    '{"ts": 1700000002, "host": [1, 2]}\n',                 # parses, wrong shape: host is not a mapping
    '{"ts": 1700000003, "gpus": [{"temperature_c": 50}]}\n',  # a GPU without an index
    '{"ts": 1700000004, "gpus": [{"index": 0, "temperature_c": NaN}]}\n',
    '{"ts": 1e400}\n',                                      # inf
    '{"ts": 9' + "9" * 5000 + "}\n",                        # a 5000-digit number
    '{"ts": "yesterday"}\n',
    '{"ts": 1700000005, "events": ["x"]}\n',
    '{"ts": 1700000006, "host": {"disks": {"/": [1]}}}\n',
    "x" * (4 << 20) + "\n",                                # longer than any sample: skipped unread
]


def test_report_counts_malformed_deep_and_overlong_lines(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    with open(log / "monitor.jsonl", "wb") as f:
        f.write(_good(1700000000).encode())
        for line in BAD_LINES:
            f.write(line.encode())
        f.write(b"\xff\xfe not utf-8\n")
        f.write(_good(1700000010, 70).encode())
    res = cli_runner().invoke(cli, ["monitor", "report", "--json", "--log-dir", str(log), "--config", os.devnull])
    assert res.exit_code == 0, (res.output, res.stderr, res.exception)
    out = json.loads(res.output)
    assert out["samples"] == 2 and out["unreadable_lines"] == len(BAD_LINES) + 1
    assert out["metrics"]["gpu0.temperature_c"]["max"] == 70.0
    text = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull])
    assert text.exit_code == 0 and f"{len(BAD_LINES) + 1} unreadable lines skipped" in text.output


def test_report_shows_control_characters_in_events_escaped(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    rec = json.loads(_good(1700000000))
    rec["events"] = [{"level": "warning", "state": "start", "message": "GPU 0 \x1b]2;pwned\x07 hot"}]
    (log / "monitor.jsonl").write_text(json.dumps(rec) + "\n")
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull])
    assert res.exit_code == 0 and "\x1b" not in res.output and "\\x1b]2;pwned" in res.output


@pytest.mark.parametrize("kind", ["fifo", "link-to-dev-zero"])
def test_report_refuses_a_fifo_or_link_at_a_log_name_in_one_line(tmp_path: Path, kind: str) -> None:
    log = tmp_path / "log"
    log.mkdir()
    (log / "monitor.jsonl").write_text(_good(1700000000))
    if kind == "fifo":
        os.mkfifo(log / "monitor.jsonl.1")  # the old reader blocked here forever
    else:
        os.symlink("/dev/zero", log / "monitor.jsonl.1")  # ... or read without end
    res = _monitor("report", "--log-dir", str(log), "--config", os.devnull, timeout=20)
    line = _one_error_line(res)
    assert "monitor.jsonl.1" in line, line


# ---- item 10: planted links ------------------------------------------------------------------------------------
def _targets(tmp_path: Path, names: List[str]) -> Dict[str, Path]:
    """Root-owned files in a root-only directory, one per planted link: what the other user aims at."""
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700, exist_ok=True)
    out = {}
    for name in names:
        p = vault / name.strip(".").replace(".", "-")
        p.write_text(f"root's {name}: must not change\n")
        os.chmod(p, 0o600)
        out[name] = p
    return out


def _snapshot(paths: Dict[str, Path]) -> Dict[str, Tuple[bytes, int, int]]:
    return {n: (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns) for n, p in paths.items()}


def _old_predictable_names() -> List[str]:
    pid = os.getpid()  # the sinks run in this process below, so the old names were exactly these
    return [f".hosttune.prom.{pid}.probe", f".hosttune.prom.{pid}.tmp"]


def _plant_links(user: OtherUser, rel_dir: str, targets: Dict[str, Path]) -> Path:
    d = user.home / rel_dir
    cmd = f'mkdir -p "{d}" && chmod 755 "{d}"'
    for name, target in targets.items():
        cmd += f' && ln -s "{target}" "{d}/{name}"'
    res = user.run(["sh", "-c", cmd])
    assert res.returncode == 0, res.stderr
    return d


def test_sinks_refuse_a_directory_another_user_owns_and_follow_none_of_their_links(
        tmp_path: Path, other_user: OtherUser) -> None:
    names = ["monitor.jsonl", "hosttune.prom", *_old_predictable_names()]
    targets = _targets(tmp_path, names)
    before = _snapshot(targets)
    d = _plant_links(other_user, "mon", targets)
    with pytest.raises(UserError, match=r"refusing log dir .* owned by nobody"):
        sinks.JsonlSink(str(d), 1 << 20, 2)
    with pytest.raises(UserError, match=r"refusing textfile dir .* owned by nobody"):
        sinks.TextfileSink(str(d))
    assert _snapshot(targets) == before


@pytest.mark.parametrize("mode", [0o1777, 0o775, 0o757])
def test_sinks_refuse_a_root_directory_others_can_write(tmp_path: Path, other_user: OtherUser, mode: int) -> None:
    """World-writable even with the sticky bit (as /tmp): anybody may plant a name the monitor writes."""
    d = other_user.home / "shared"  # under a directory the other user can reach; root's own, opened up by `mode`
    d.mkdir()
    os.chmod(d, mode)
    targets = _targets(tmp_path, ["monitor.jsonl", "hosttune.prom", *_old_predictable_names()])
    before = _snapshot(targets)
    if mode & 0o002:
        for name, target in targets.items():
            assert other_user.run(["ln", "-s", str(target), str(d / name)]).returncode == 0
    for make in (lambda: sinks.JsonlSink(str(d), 1 << 20, 2), lambda: sinks.TextfileSink(str(d))):
        with pytest.raises(UserError, match="writable by"):
            make()
    assert _snapshot(targets) == before


def test_daemon_refuses_a_log_dir_another_user_owns_in_one_line(tmp_path: Path, other_user: OtherUser) -> None:
    targets = _targets(tmp_path, ["monitor.jsonl"])
    before = _snapshot(targets)
    d = _plant_links(other_user, "var-log", targets)
    line = _one_error_line(_monitor("--log-dir", str(d), "--textfile-dir", "", "--interval", "0.1",
                                    "--config", os.devnull))
    assert "refusing log dir" in line and "owned by nobody" in line, line
    # not hosttune's directory: the fix is another one, never a chown of the other user's (issue 22 item 9)
    assert "fix: use another log dir (--log-dir" in line and "chown" not in line and "chmod" not in line, line
    assert _snapshot(targets) == before


def test_a_link_at_the_log_name_in_a_trusted_dir_is_refused_not_followed(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    targets = _targets(tmp_path, ["monitor.jsonl"])
    before = _snapshot(targets)
    os.symlink(targets["monitor.jsonl"], log / "monitor.jsonl")  # left from when the directory was open to others
    line = _one_error_line(_monitor("--log-dir", str(log), "--textfile-dir", "", "--config", os.devnull))
    assert "refusing" in line and "monitor.jsonl" in line and "link" in line, line
    assert _snapshot(targets) == before


def test_textfile_replaces_a_link_at_its_name_and_leaves_the_target(tmp_path: Path) -> None:
    tf = tmp_path / "tf"
    tf.mkdir()
    targets = _targets(tmp_path, ["hosttune.prom"])
    before = _snapshot(targets)
    os.symlink(targets["hosttune.prom"], tf / "hosttune.prom")
    sink = sinks.TextfileSink(str(tf))
    sink.write("hosttune_up 1\n")
    assert not os.path.islink(tf / "hosttune.prom") and (tf / "hosttune.prom").read_text() == "hosttune_up 1\n"
    assert os.listdir(tf) == ["hosttune.prom"]  # no probe or temp file left behind
    assert _snapshot(targets) == before


def test_rotation_moves_links_never_writes_through_them(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    targets = _targets(tmp_path, ["monitor.jsonl.1", "monitor.jsonl.2"])
    before = _snapshot(targets)
    for name, target in targets.items():
        os.symlink(target, log / name)
    sink = sinks.JsonlSink(str(log), 4096, 2)
    for i in range(60):  # a few rotations
        sink.write({"ts": 1700000000 + i, "pad": "x" * 200})
    sink.close()
    assert _snapshot(targets) == before
    assert not any(os.path.islink(log / n) for n in os.listdir(log))  # the links rotated out of the backups


def test_a_directory_owned_by_the_monitors_own_user_is_accepted(tmp_path: Path, other_user: OtherUser) -> None:
    """DynamicUser=: the state directory belongs to the dynamic uid, which is the monitor's own euid."""
    d = other_user.home / "state"
    assert other_user.run(["mkdir", "-m", "750", str(d)]).returncode == 0
    with pytest.raises(UserError, match="owned by nobody"):  # as root: another user's directory
        sinks.TextfileSink(str(d))
    os.setegid(other_user.gid)
    os.seteuid(other_user.uid)
    try:
        sink = sinks.JsonlSink(str(d), 1 << 20, 2)
        sink.write({"ts": 1700000000})
        sink.close()
        sinks.TextfileSink(str(d)).write("a 1\n")
    finally:
        os.seteuid(0)
        os.setegid(0)
    assert (d / "monitor.jsonl").stat().st_uid == other_user.uid
    assert (d / "hosttune.prom").read_text() == "a 1\n"


def test_plot_is_written_atomically_through_no_predictable_temp_name(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.mkdir()
    (log / "monitor.jsonl").write_text(_good(1700000000) + _good(1700000010, 70))
    out = tmp_path / "plots"
    out.mkdir()
    targets = _targets(tmp_path, [f"p.svg.{os.getpid()}.tmp"])
    before = _snapshot(targets)
    os.symlink(targets[f"p.svg.{os.getpid()}.tmp"], out / f"p.svg.{os.getpid()}.tmp")  # the old temp name
    res = cli_runner().invoke(cli, ["monitor", "report", "--log-dir", str(log), "--config", os.devnull,
                                    "--plot", str(out / "p.svg")])
    assert res.exit_code == 0, (res.output, res.stderr)
    assert (out / "p.svg").read_text().startswith("<svg") and _snapshot(targets) == before



# ---- issue 22 item 9: a root monitor beside node_exporter ------------------------------------------------------
PROM = "var/lib/prometheus"
NODE_EXPORTER = "var/lib/prometheus/node-exporter"


def _prometheus_tree(base: Path, user: OtherUser, layout: str) -> Path:
    """node_exporter's textfile directory as the distributions ship it, under a stand-in root `base/host`:
    /var/lib/prometheus belongs to user prometheus (played by the other user); node-exporter is root's 0755 (Debian)
    or prometheus's (Fedora/EPEL). The real /var/lib/prometheus is never touched."""
    root = base / "host"
    (root / "var/lib").mkdir(parents=True)
    for d in (root, root / "var", root / "var/lib"):
        os.chmod(d, 0o755)
    prom, ne = root / PROM, root / NODE_EXPORTER
    prom.mkdir()
    ne.mkdir()
    for d in (prom, ne):
        os.chmod(d, 0o755)
    os.chown(prom, user.uid, user.gid)
    if layout == "fedora":
        os.chown(ne, user.uid, user.gid)
    return root


def _owners(*paths: Path) -> List[Tuple[int, int, int]]:
    return [(os.lstat(p).st_uid, os.lstat(p).st_gid, os.lstat(p).st_mode) for p in paths]


@pytest.mark.parametrize("layout", ["debian", "fedora"])
def test_root_monitor_links_its_own_store_into_node_exporters_directory(
        tmp_path: Path, other_user: OtherUser, layout: str) -> None:
    """Root, textfile_dir auto, node_exporter's directory below user prometheus's /var/lib/prometheus: the old
    monitor refused to start (exit 2) and told the admin to `chown root: /var/lib/prometheus`, which breaks
    Prometheus. Now it takes the unit's route: root's store in hosttune's state directory, a root-owned link in
    node_exporter's directory, nothing else written or re-owned there, and nothing to fix."""
    import io

    from hosttune.monitor import daemon
    from hosttune.policy import dirs

    root = _prometheus_tree(tmp_path, other_user, layout)
    prom, ne = root / PROM, root / NODE_EXPORTER
    before = _owners(prom, ne)
    cfg = mconfig.MonitorConfig(log_dir=str(tmp_path / "log"), textfile_dir="auto", tune_check_interval=0)
    out, err = io.StringIO(), io.StringIO()
    mon = daemon.Monitor(cfg, out, err, root=root)
    try:
        mon.open_sinks()
        store = Path(dirs.state_dir()) / "textfile"
        assert mon.textfile is not None and mon.textfile.path == str(store / "hosttune.prom")
        mon.textfile.write("hosttune_monitor_up 1\n")
        link = ne / "hosttune.prom"
        assert os.readlink(link) == str(store / "hosttune.prom") and os.lstat(link).st_uid == 0
        assert link.read_text() == "hosttune_monitor_up 1\n"  # node_exporter reads the store through the link
        mon.stopped()
        assert "hosttune_monitor_up 0" in link.read_text()
    finally:
        mon.close()
    assert os.listdir(ne) == ["hosttune.prom"] and _owners(prom, ne) == before
    assert store.stat().st_uid == 0 and (store / "hosttune.prom").stat().st_uid == 0
    assert out.getvalue() == "" and err.getvalue() == ""  # nothing to say, and no chown to suggest


def _wait_for(check: Any, timeout: float, what: str) -> Any:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def test_root_hosttune_monitor_without_config_starts_beside_node_exporter(
        tmp_path: Path, other_user: OtherUser) -> None:
    """The command itself, as root, with no monitor.yaml (conftest's $HOSTTUNE_ETC_DIR is empty) and the log and
    state directories of this test ($HOSTTUNE_LOG_DIR, $HOSTTUNE_STATE_DIR): it runs (exit 0 after SIGTERM, not 2)
    and node_exporter's directory shows its samples through the link."""
    import signal

    from hosttune.policy import dirs

    root = _prometheus_tree(tmp_path, other_user, "debian")
    ne = root / NODE_EXPORTER
    assert not os.path.exists(mconfig.default_config())
    proc = subprocess.Popen([sys.executable, "-m", "hosttune", "monitor", "--interval", "0.2", "--textfile-dir",
                             str(ne)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        _wait_for(lambda: proc.poll() is not None or "hosttune_monitor_samples_total 2" in _read(ne / "hosttune.prom"),
                  60, "two samples in node_exporter's directory")
        assert proc.poll() is None, proc.communicate()[1][-2000:]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _out, err_text = proc.communicate(timeout=60)
    assert proc.returncode == 0, err_text[-2000:]
    assert "chown" not in err_text and "chmod" not in err_text, err_text
    assert os.readlink(ne / "hosttune.prom") == os.path.join(dirs.state_dir(), "textfile", "hosttune.prom")
    assert "hosttune_monitor_up 0" in (ne / "hosttune.prom").read_text()
    assert Path(dirs.log_dir(), "monitor.jsonl").read_text().count("\n") >= 2


def test_a_link_prometheus_plants_for_node_exporters_directory_is_never_followed(
        tmp_path: Path, other_user: OtherUser) -> None:
    """User prometheus owns /var/lib/prometheus, so it can swap node-exporter for a link to a directory of root's:
    root's monitor must not make (or replace) hosttune.prom there. One line, exit 2, root's file unchanged."""
    root = _prometheus_tree(other_user.home, other_user, "debian")
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    precious = vault / "hosttune.prom"
    precious.write_text("root's own textfile\n")
    before = _snapshot({"p": precious})
    moved = other_user.run(["sh", "-c", f'mv "{root / NODE_EXPORTER}" "{root / PROM}/old" && '
                                        f'ln -s "{vault}" "{root / NODE_EXPORTER}"'])
    assert moved.returncode == 0, moved.stderr
    line = _one_error_line(_monitor("--textfile-dir", str(root / NODE_EXPORTER), "--interval", "0.2"))
    assert "textfile dir" in line and "never followed" in line and "chown" not in line, line
    assert os.listdir(vault) == ["hosttune.prom"] and _snapshot({"p": precious}) == before
    # the unit's route, `setup-textfile` as root before each start: the old one replaced root's file with its link
    with pytest.raises(OSError, match="never followed"):
        textfile.publish(str(root / NODE_EXPORTER), 0, 0, store=str(tmp_path / "state" / "textfile"))
    assert os.listdir(vault) == ["hosttune.prom"] and _snapshot({"p": precious}) == before


def test_a_link_prometheus_plants_at_the_textfile_name_is_replaced_not_followed(
        tmp_path: Path, other_user: OtherUser) -> None:
    """Fedora's node-exporter directory is prometheus's own: a link planted at hosttune.prom is renamed over."""
    root = _prometheus_tree(other_user.home, other_user, "fedora")
    ne = root / NODE_EXPORTER
    targets = _targets(tmp_path, ["hosttune.prom"])
    before = _snapshot(targets)
    assert other_user.run(["ln", "-s", str(targets["hosttune.prom"]), str(ne / "hosttune.prom")]).returncode == 0
    store = tmp_path / "state" / "textfile"
    done, warnings = textfile.publish(str(ne), 0, 0, store=str(store))
    assert os.readlink(ne / "hosttune.prom") == str(store / "hosttune.prom") and warnings == []
    assert _snapshot(targets) == before


def test_an_admins_root_link_on_the_way_to_node_exporter_is_followed(tmp_path: Path) -> None:
    """/var/lib/prometheus -> /srv/prometheus, made by root in a root-only directory: a trusted link."""
    real = tmp_path / "srv/prometheus/node-exporter"
    real.mkdir(parents=True)
    lib = tmp_path / "host/var/lib"
    lib.mkdir(parents=True)
    os.symlink(tmp_path / "srv/prometheus", lib / "prometheus")
    store = tmp_path / "state" / "textfile"
    textfile.publish(str(lib / "prometheus/node-exporter"), 0, 0, store=str(store))
    assert os.readlink(real / "hosttune.prom") == str(store / "hosttune.prom")


def test_only_hosttunes_own_directories_get_a_chown_or_chmod_fix(tmp_path: Path) -> None:
    from hosttune.policy import dirs

    own = Path(dirs.log_dir())
    own.mkdir(parents=True)
    os.chmod(own, 0o777)
    with pytest.raises(UserError, match=r"fix: chmod go-w "):
        sinks.JsonlSink(str(own), 1 << 20, 2)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chmod(theirs, 0o777)
    with pytest.raises(UserError) as exc:
        sinks.JsonlSink(str(theirs), 1 << 20, 2)
    assert "chmod" not in str(exc.value) and "chown" not in str(exc.value) and "use another log dir" in str(exc.value)


# ---- issue 22, low: a directory at the textfile's place ---------------------------------------------------------
def test_a_directory_at_the_textfile_name_is_renamed_aside_once_for_the_unit(tmp_path: Path) -> None:
    """The store (the dynamic user can make anything in it) and node_exporter's directory: a directory at
    hosttune.prom made `setup-textfile` fail, so the unit never started. Now it is renamed aside, one warning
    each, its contents kept."""
    from hosttune.policy import dirs

    if os.geteuid() != 0:
        pytest.skip("setup-textfile runs as root")
    target = tmp_path / "node-exporter"
    store = Path(dirs.state_dir()) / "textfile"
    for d in (target, store):
        (d / "hosttune.prom").mkdir(parents=True)
        (d / "hosttune.prom" / "keep").write_text("someone's\n")
    cfg = tmp_path / "monitor.yaml"
    cfg.write_text(f"textfile_dir: {target}\n")
    res = _monitor("setup-textfile", "--owner", "root", "--config", str(cfg))
    assert res.returncode == 0, res.stderr
    warnings = res.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("hosttune: warning: a directory was at ") for w in warnings)
    for d in (target, store):
        aside = [n for n in os.listdir(d) if n.startswith("hosttune.prom.aside-")]
        assert len(aside) == 1 and (d / aside[0] / "keep").read_text() == "someone's\n", os.listdir(d)
    assert "hosttune_monitor_up 0" in (target / "hosttune.prom").read_text()
    res = _monitor("setup-textfile", "--owner", "root", "--config", str(cfg))  # the next start: nothing to say
    assert res.returncode == 0 and res.stderr == "", res.stderr


def test_a_directory_at_the_textfile_name_does_not_stop_the_sink(tmp_path: Path) -> None:
    tf = tmp_path / "tf"
    (tf / "hosttune.prom").mkdir(parents=True)
    sink = sinks.TextfileSink(str(tf))
    assert len(sink.warnings) == 1 and "renamed it to hosttune.prom.aside-" in sink.warnings[0]
    sink.write("a 1\n")
    assert (tf / "hosttune.prom").read_text() == "a 1\n"


def test_a_state_dir_another_user_owns_gets_no_store_from_root(tmp_path: Path, other_user: OtherUser) -> None:
    """$HOSTTUNE_STATE_DIR survives `sudo -E`: root chowns and writes the store below it, so it must be root's."""
    state = other_user.home / "state"
    assert other_user.run(["mkdir", "-m", "755", str(state)]).returncode == 0
    with pytest.raises(UserError, match=r"refusing state dir .* owned by nobody") as exc:
        textfile.publish(str(tmp_path / "node-exporter"), 0, 0, store=str(state / "textfile"))
    assert "chown" not in str(exc.value)
    assert os.listdir(state) == [] and not (tmp_path / "node-exporter").exists()
