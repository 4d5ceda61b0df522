"""hosttune/execcache/recorder.py in-process (issue 21): what a miss records and what spoils it. Which paths become
inputs (cwd-relative, bytes, PathLike; load files and directory-fd-relative paths spoil; cgroup files by content;
/proc, /sys, /dev never), what the streams keep, each audit event's rule (a write spoils, an exclusive create is
harmless until it stays, a listing marks the directory, a side effect stops the recording), and the entry written at
the exec (environment set and deleted, the launch marker, affinity only when changed, every ancestor of every input,
no entry for a relative exe or a racily clean file)."""

import io
import os
import sys
from pathlib import Path
from typing import Any, List

import pytest

from hosttune import execcache, jobrecord
from hosttune.execcache import recorder as R

DIG = b"d" * 32


@pytest.fixture
def rec(tmp_path: Path) -> R.Recorder:
    return R.Recorder(["--", "true"], str(tmp_path / "cache" / ("e" * 32)), DIG)


def audit(rec: R.Recorder, event: str, args: Any) -> None:
    """One audit event with `rec` the current recorder, for that call only: once any test of this process started a
    recorder, the hook is installed for good, and pytest's own opens and environment changes must not reach it."""
    R.Recorder.current = rec
    try:
        R._audit(event, args)
    finally:
        R.Recorder.current = None


# ---- saw -----------------------------------------------------------------------------------------------------------
def test_saw_normalises_relative_bytes_and_pathlike(rec: R.Recorder, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rec.saw("a/../b")
    rec.saw(b"/etc/hosttune/x.yaml")
    rec.saw(Path("/opt/./y"))
    rec.saw(3)  # an fd: its open was seen
    rec.saw(None)
    assert rec.paths == {f"{tmp_path}/b", "/etc/hosttune/x.yaml", "/opt/y"} and rec.listed == set()
    rec.saw("/srv", listed=True)
    assert "/srv" in rec.listed and rec.spoiled is None


def test_saw_never_keeps_proc_sys_dev_and_keys_cgroups_by_content(rec: R.Recorder) -> None:
    for p in ("/proc/self/status", "/sys/devices/system/cpu/online", "/dev/null", "/proc", "/sys"):
        rec.saw(p)
    rec.saw("/sys/fs/cgroup/cpu.max")
    assert rec.paths == set() and rec.contents == {"/sys/fs/cgroup/cpu.max"} and rec.spoiled is None
    rec.saw("/procfs/x")  # only the directory itself is volatile, not a name that starts like it
    assert rec.paths == {"/procfs/x"}


@pytest.mark.parametrize("path", ["/proc/loadavg", "/proc/stat", "/proc/schedstat", "/proc/pressure/cpu"])
def test_reading_the_load_spoils(rec: R.Recorder, path: str) -> None:
    rec.saw(path)
    assert rec.spoiled == f"read {path}: a plan that follows the current load is made afresh every run"


def test_a_path_relative_to_a_directory_fd_spoils(rec: R.Recorder) -> None:
    rec.saw("/abs", dir_fd=3)
    assert rec.spoiled is None and "/abs" in rec.paths
    rec.saw("rel", dir_fd=3)
    assert rec.spoiled == "a path relative to a directory descriptor" and len(rec.paths) == 1


def test_the_first_reason_stays(rec: R.Recorder) -> None:
    rec.spoil("one")
    rec.spoil("two")
    assert rec.spoiled == "one"


# ---- streams -------------------------------------------------------------------------------------------------------
def test_tee_keeps_stderr_text_and_forwards_it(rec: R.Recorder) -> None:
    out = io.StringIO()
    tee = R._Tee(out, rec, "stderr")
    assert tee.write("warn\n") == 5
    tee.writelines(["a", "b"])
    assert out.getvalue() == "warn\nab" and rec.err == ["warn\n", "a", "b"] and rec.spoiled is None
    assert tee.getvalue() == "warn\nab"  # anything else is the stream's


@pytest.mark.parametrize("attr", ["buffer", "fileno"])
def test_bytes_around_the_tee_spoil(rec: R.Recorder, attr: str) -> None:
    class Stream:
        buffer = object()

        def fileno(self) -> int:
            return 2

    getattr(R._Tee(Stream(), rec, "stderr"), attr)
    assert rec.spoiled == f"stderr.{attr}"


def test_wrote(rec: R.Recorder) -> None:
    rec.wrote("stdout", "")
    assert rec.spoiled is None and rec.err == [""]
    rec.wrote("stderr", b"x")
    assert rec.spoiled == "wrote bytes to stderr"
    r2 = R.Recorder([], "/x", DIG)
    r2.wrote("stdout", "plan\n")
    assert r2.spoiled == "wrote to stdout" and r2.err == []


def test_recorded_stat_tells_the_recorder_while_active(rec: R.Recorder, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    wrapped = rec._wrap(os.stat)
    assert wrapped(str(tmp_path)).st_ino == os.stat(tmp_path).st_ino
    assert str(tmp_path) in rec.paths
    wrapped("/etc", dir_fd=None)
    assert "/etc" in rec.paths
    monkeypatch.setattr(jobrecord, "_busy", True)
    wrapped("/usr")
    monkeypatch.setattr(jobrecord, "_busy", False)
    rec.active = False
    wrapped("/var")
    assert "/usr" not in rec.paths and "/var" not in rec.paths


# ---- the audit hook ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [("/etc/x", "w", 0), ("/etc/x", "a", 0), ("/etc/x", "r+", 0),
                                  ("/etc/x", None, os.O_WRONLY), ("/etc/x", None, os.O_RDWR),
                                  ("/etc/x", None, os.O_APPEND), ("/etc/x", None, os.O_TRUNC),
                                  ("/etc/x", None, os.O_CREAT)])
def test_an_open_for_writing_spoils(rec: R.Recorder, args: Any) -> None:
    audit(rec, "open", args)
    assert rec.spoiled == "opened '/etc/x' for writing" and rec.created == set()


@pytest.mark.parametrize("args", [("/tmp/t", "x", 0), ("/tmp/t", "xb", 0),
                                  ("/tmp/t", None, os.O_WRONLY | os.O_CREAT | os.O_EXCL)])
def test_an_exclusive_create_is_harmless_once_removed(rec: R.Recorder, args: Any) -> None:
    audit(rec, "open", args)
    assert rec.spoiled is None and rec.created == {"/tmp/t"}
    audit(rec, "os.remove", ("/tmp/t", -1))
    assert rec.created == set() and rec.spoiled is None
    audit(rec, "os.remove", ("/tmp/t", -1))  # removing what it did not create: a side effect
    assert rec.spoiled == "os.remove" and not rec.active


def test_a_read_open_and_a_listing_are_inputs(rec: R.Recorder, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    audit(rec, "open", ("/etc/hosttune/p.yaml", "r", os.O_RDONLY))
    audit(rec, "open", ("/etc/hosttune/q.yaml",))
    audit(rec, "os.listdir", ("/etc/hosttune/profiles",))
    audit(rec, "os.scandir", ("/usr/share/hosttune",))
    monkeypatch.chdir(tmp_path)
    audit(rec, "os.scandir", (None,))
    assert rec.paths == {"/etc/hosttune/p.yaml", "/etc/hosttune/q.yaml", "/etc/hosttune/profiles",
                         "/usr/share/hosttune", str(tmp_path)}
    assert rec.listed == {"/etc/hosttune/profiles", "/usr/share/hosttune", str(tmp_path)} and rec.spoiled is None


def test_mkdir_of_what_exists_is_a_read(rec: R.Recorder, tmp_path: Path) -> None:
    audit(rec, "os.mkdir", (str(tmp_path), 0o700, -1))
    assert str(tmp_path) in rec.paths and rec.spoiled is None
    audit(rec, "os.mkdir", (str(tmp_path / "new"), 0o700, -1))
    assert rec.spoiled == "os.mkdir" and not rec.active


def test_mkdir_relative_to_a_directory_fd_is_a_side_effect(rec: R.Recorder, tmp_path: Path) -> None:
    audit(rec, "os.mkdir", (str(tmp_path), 0o700, 5))
    assert rec.spoiled == "os.mkdir"


@pytest.mark.parametrize("event", ["subprocess.Popen", "os.fork", "os.kill", "os.rename", "os.chmod",
                                   "socket.connect", "tempfile.mkstemp", "os.putenv"])
def test_a_side_effect_stops_the_recording(rec: R.Recorder, event: str, monkeypatch: pytest.MonkeyPatch,
                                           capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    audit(rec, event, ("ARG", 1))
    assert rec.spoiled == event and rec.active is False
    assert f"hosttune: exec cache: not recorded: {event} ARG\n" in capfd.readouterr().err
    audit(rec, "open", ("/etc/later", "r", 0))  # stopped: nothing more is seen
    assert rec.paths == set()


def test_nothing_is_seen_while_the_job_record_is_written(rec: R.Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobrecord, "_busy", True)
    audit(rec, "open", ("/etc/x", "w", 0))
    audit(rec, "os.fork", ())
    assert rec.spoiled is None and rec.active


def test_an_error_inside_the_hook_spoils(rec: R.Recorder) -> None:
    audit(rec, "os.listdir", (object(),))  # not a path: ignored
    assert rec.spoiled is None
    audit(rec, "os.mkdir", ())  # args[0] raises IndexError inside the hook
    assert rec.spoiled == "recorder error"


def test_exec_event_finishes(rec: R.Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    got: List[Any] = []
    monkeypatch.setattr(rec, "finish", lambda *a: got.append(a))
    audit(rec, "os.exec", ("/bin/true", ["true"], {"A": "1"}, "extra"))
    assert got == [("/bin/true", ["true"], {"A": "1"})]


# ---- start / stop --------------------------------------------------------------------------------------------------
def test_start_wraps_and_stop_restores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saved = (os.stat, os.lstat, os.access, os.readlink, sys.stderr, sys.stdout)
    monkeypatch.setattr(R.Recorder, "current", None)
    r = R.Recorder.start(["--", "true"], str(tmp_path / "e"), DIG)
    try:
        assert r is not None and R.Recorder.current is r
        assert all(isinstance(getattr(os, n), R._Recorded) for n in ("stat", "lstat", "access", "readlink"))
        assert isinstance(sys.stderr, R._Tee) and isinstance(sys.stdout, R._Tee)
        os.lstat(str(tmp_path))
        os.access(str(tmp_path / "x"), os.R_OK)
        assert {str(tmp_path), str(tmp_path / "x")} <= r.paths
    finally:
        if r is not None:
            r.stop()
    assert (os.stat, os.lstat, os.access, os.readlink, sys.stderr, sys.stdout) == saved
    assert R.Recorder.current is None and r is not None and not r.active
    r.stop()  # twice: nothing


def test_start_refuses_without_streams_or_a_readable_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R.Recorder, "current", None)
    monkeypatch.setattr(sys, "stdout", None)
    assert R.Recorder.start([], str(tmp_path / "e"), DIG) is None
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(R, "get_mempolicy", lambda: None)
    assert R.Recorder.start([], str(tmp_path / "e"), DIG) is None and R.Recorder.current is None
    assert not isinstance(os.stat, R._Recorded)


# ---- the entry -----------------------------------------------------------------------------------------------------
@pytest.fixture
def calm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execcache, "RACY_NS", -(10 ** 18))  # nothing counts as racily clean: the entry is written


def test_entry_fields(rec: R.Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calm: None) -> None:
    inp = tmp_path / "in" / "profile.yaml"
    inp.parent.mkdir()
    inp.write_text("x")
    quota = tmp_path / "cpu.max"
    quota.write_bytes(b"max 100000\n")
    rec.environ = {"KEEP": "1", "CHANGE": "old", "DROP": "x", "PATH": "/usr/bin:relative"}
    rec.paths = {str(inp), str(tmp_path / "in" / "gone"), str(tmp_path / "x.pyc"),
                 os.path.dirname(rec.path) + "/" + "f" * 32}
    rec.contents = {str(quota)}
    rec.listed = {str(tmp_path / "in")}
    rec.err = ["a", "b"]
    env = {"KEEP": "1", "CHANGE": "new", "NEW": "2", "PATH": "/usr/bin:relative", execcache.LAUNCH_ID: "L"}
    e = rec._entry(b"/bin/true", [b"true", "x"], env)
    assert e is not None
    magic, dig, stats, contents, exe, argv, env_set, env_del, cpus, mempol, err, marker = e
    assert (magic, dig, exe, argv) == (execcache.VERSION, DIG, "/bin/true", ("true", "x"))
    assert env_set == (("CHANGE", "new"), ("NEW", "2")) and env_del == ("DROP",) and marker is True
    assert cpus is None and mempol is None and err == "ab"
    assert contents == ((str(quota), b"max 100000\n"),)
    deps = {p: f for p, f, _ in stats}
    assert deps[str(inp)] is False and deps[str(tmp_path / "in")] is True  # listed
    assert deps[str(tmp_path / "in" / "gone")] is False and dict(stats_key(stats))[str(tmp_path / "in" / "gone")] \
        is None
    assert deps["/usr/bin"] is True and deps["/bin/true"] is False and deps["/bin"] is False and deps["/"] is False
    assert str(tmp_path / "x.pyc") not in deps and os.path.dirname(rec.path) + "/" + "f" * 32 not in deps
    assert R.__file__ in deps  # the code that ran
    assert [p for p, _, _ in stats] == sorted(deps)
    assert stats[[p for p, _, _ in stats].index(str(inp))][2] == R._stat_key(str(inp))


def stats_key(stats: Any) -> Any:
    return [(p, k) for p, _, k in stats]


def test_a_missing_paths_parents_are_listed_up_to_one_that_exists(rec: R.Recorder, tmp_path: Path,
                                                                 calm: None) -> None:
    rec.environ = {}
    rec.paths = {str(tmp_path / "a" / "b" / "c")}
    e = rec._entry("/bin/true", ["true"], {})
    assert e is not None
    deps = {p: f for p, f, _ in e[2]}
    assert deps[str(tmp_path / "a" / "b")] is True and deps[str(tmp_path / "a")] is True
    assert deps[str(tmp_path)] is True  # the first that exists: its entries show the creation
    assert deps[os.path.dirname(str(tmp_path))] is False


def test_the_launch_marker_is_ours_only_when_the_caller_had_none(rec: R.Recorder, calm: None) -> None:
    rec.environ = {execcache.LAUNCH_ID: "outer"}
    e = rec._entry("/bin/true", ["true"], {execcache.LAUNCH_ID: "inner"})
    assert e is not None and e[11] is False and e[6] == ((execcache.LAUNCH_ID, "inner"),)


def test_changed_affinity_and_policy_are_recorded(rec: R.Recorder, calm: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rec.environ = {}
    rec.cpus = {999}
    rec.mempol = (9, 9)
    e = rec._entry("/bin/true", ["true"], {})
    assert e is not None and e[8] == tuple(sorted(os.sched_getaffinity(0))) and e[9] == R.get_mempolicy()
    monkeypatch.setattr(R, "get_mempolicy", lambda: None)
    assert rec._entry("/bin/true", ["true"], {}) is None


def test_a_relative_exe_is_never_recorded(rec: R.Recorder, calm: None, monkeypatch: pytest.MonkeyPatch,
                                          capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    assert rec._entry("true", ["true"], {}) is None
    assert "not recorded: the exec of 'true' is not a path the program gateway resolved" in capfd.readouterr().err


def test_a_racily_clean_input_is_not_recorded(rec: R.Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    fresh = tmp_path / "fresh"
    fresh.write_text("x")
    rec.environ = {}
    rec.paths = {str(fresh)}
    monkeypatch.setattr(execcache, "RACY_NS", 10 ** 18)  # everything is young
    assert rec._entry("/bin/true", ["true"], {}) is None
    assert "not recorded yet: " in capfd.readouterr().err
    monkeypatch.setattr(execcache, "RACY_NS", -(10 ** 18))
    e = rec._entry("/bin/true", ["true"], {})
    assert e is not None and str(fresh) in [p for p, _, _ in e[2]]


def test_finish_stores_or_explains(rec: R.Recorder, monkeypatch: pytest.MonkeyPatch, calm: None,
                                   capfd: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("HOSTTUNE_EXEC_CACHE", "explain")
    stored: List[Any] = []
    monkeypatch.setattr(R, "_store", lambda path, entry: stored.append((path, entry)))
    rec.environ = {}
    rec.finish("/bin/true", ["true"], {})
    assert len(stored) == 1 and stored[0][0] == rec.path and stored[0][1][4] == "/bin/true" and not rec.active
    r2 = R.Recorder([], "/x", DIG)
    r2.created = {"/tmp/b", "/tmp/a"}
    r2.finish("/bin/true", ["true"], {})
    assert len(stored) == 1 and "not recorded: created /tmp/a\n" in capfd.readouterr().err
    r3 = R.Recorder([], "/x", DIG)
    r3.finish("/bin/true", ["true"], {b"\xff": 1})  # not a str: TypeError from fsdecode
    assert len(stored) == 1 and "not recorded: " in capfd.readouterr().err
