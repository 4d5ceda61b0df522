"""When a job hangs: `hosttune exec --hang-timeout` (hosttune/launch/hang.py, the hook's arm_stacks) on real jobs: a
2-rank torchrun job whose rank 1 never reaches the all_reduce rank 0 waits in, and a plain job; plus the progress
marker, the stacks parser and the one-line summary on plain values."""

import faulthandler
import io
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import List

import pytest
from conftest import TORCHRUN, OtherUser, job_processes, run_cli, torchrun_env

from hosttune.launch import hang
from hosttune.launch.hang import Frame, Progress, parse_stacks, summarize, where
from hosttune.profile import settings

PY = sys.executable

# Every rank says it is alive until it reaches its place (so the hang clock starts only once both are there, however
# slowly torch imports on a busy host); then rank 1 sleeps before the collective that rank 0 blocks in.
HANG_JOB = r'''
import os, sys, threading, time
ready = threading.Event()

def beat():
    while not ready.wait(0.2):
        print("alive", flush=True)

threading.Thread(target=beat, daemon=True).start()
import torch
import torch.distributed as dist
dist.init_process_group("gloo")

def late_rank():
    time.sleep(3600)

t = torch.ones(1)
ready.set()
if dist.get_rank() == 1:
    late_rank()
dist.all_reduce(t)
print("all_reduce returned", flush=True)
'''

PLAIN_JOB = r'''
import threading

def waits_forever():
    threading.Event().wait()

print("started", flush=True)
waits_forever()
'''


def _exec(tmp: Path, argv: List[str], *, timeout: str = "5") -> "subprocess.CompletedProcess[str]":
    env = torchrun_env(HANG_TEST=str(tmp))
    return subprocess.run([PY, "-m", "hosttune", "exec", "--hang-timeout", timeout, "--", *argv], env=env, cwd=tmp,
                          capture_output=True, text=True, timeout=600)


def _hang_dir(tmp: Path) -> Path:
    dirs = sorted(tmp.glob(hang.DIR_PREFIX + "*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


@pytest.mark.integration
def test_a_rank_that_never_reaches_the_collective_is_named_and_the_job_stopped_with_124(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "job.py").write_text(HANG_JOB)
    res = _exec(tmp_path, [*TORCHRUN, "--nproc_per_node=2", str(tmp_path / "job.py")], timeout="10s")
    assert res.returncode == hang.EXIT_HUNG, res.stderr[-3000:]
    assert "alive" in res.stdout  # the job's own output went through hosttune
    d = _hang_dir(tmp_path)
    assert f"every rank's Python stacks are in {d.name}/" in res.stderr
    stacks = {p.name.split("-")[1]: p.read_text() for p in d.glob("stacks-rank*-pid*.txt")}
    assert set(stacks) == {"rank0", "rank1"}, sorted(os.listdir(d))
    assert " in all_reduce" in stacks["rank0"] and " in late_rank" in stacks["rank1"]
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("hosttune: hang: "))
    assert line.startswith("hosttune: hang: rank 1 is in late_rank (job.py:"), line  # the odd rank first
    assert "rank 0 is in all_reduce (distributed_c10d.py:" in line
    assert line[len("hosttune: hang: "):] in (d / "summary.txt").read_text()
    assert "all_reduce returned" not in res.stdout
    assert not job_processes(f"HANG_TEST={tmp_path}")  # nothing of the job is left


@pytest.mark.integration
def test_a_plain_job_is_watched_too_and_its_one_process_named(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(PLAIN_JOB)
    res = _exec(tmp_path, [PY, str(tmp_path / "job.py")], timeout="5")
    assert res.returncode == hang.EXIT_HUNG, res.stderr[-3000:]
    assert "started" in res.stdout
    d = _hang_dir(tmp_path)
    (stacks,) = d.glob("stacks-rank0-pid*.txt")
    assert " in waits_forever" in stacks.read_text()
    assert "hosttune: hang: rank 0 is in waits_forever (job.py:" in res.stderr
    assert not job_processes(f"HANG_TEST={tmp_path}")


@pytest.mark.integration
def test_a_job_that_ends_keeps_its_status_and_output_and_leaves_no_hang_directory(tmp_path: Path) -> None:
    script = tmp_path / "ok.py"
    script.write_text("import sys\nprint('out line')\nprint('err line', file=sys.stderr)\nsys.exit(3)\n")
    res = _exec(tmp_path, [PY, str(script)], timeout="1h")
    assert res.returncode == 3, res.stderr
    assert "out line" in res.stdout and "err line" in res.stderr
    assert not list(tmp_path.glob(hang.DIR_PREFIX + "*"))


def test_a_bad_hang_timeout_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bad value through the CLI in this process (the cases are independent checks of one parser: an
    interpreter start each cost ~1 s here, issue 21), and one of them through a real `python -m hosttune`, whose
    exit status and stderr are the user's."""
    monkeypatch.chdir(tmp_path)
    for value in ("0x", "-5", "inf", "nan", "5 minutes", ""):
        res = run_cli(["exec", "--hang-timeout", value, "--", "true"], env=torchrun_env())
        assert res.returncode == 2 and "--hang-timeout" in res.stderr and "Traceback" not in res.stderr, (value,
                                                                                                         res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, (value, res.stderr)
        assert not list(tmp_path.glob(hang.DIR_PREFIX + "*")), value
    real = subprocess.run([PY, "-m", "hosttune", "exec", "--hang-timeout", "5 minutes", "--", "true"],
                          env=torchrun_env(), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert real.returncode == 2 and "--hang-timeout" in real.stderr and "Traceback" not in real.stderr, real.stderr
    assert len(real.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob(hang.DIR_PREFIX + "*"))


def test_hang_timeout_is_a_profile_setting_read_by_the_one_duration_reader() -> None:
    from hosttune import profile

    assert settings.BY_NAME["hang_timeout"].kind == "duration"
    assert [settings.duration_s(v) for v in ("90s", "10m", "1h", "600", 7, 0.5)] == [90, 600, 3600, 600, 7, 0.5]
    for bad in ("0", "-1", "inf", "nan", "x", True, None, [], "1e999"):
        with pytest.raises(ValueError):
            settings.duration_s(bad)
    assert profile.load_text("hang_timeout: 90s\n").hang_timeout == "90s"
    assert settings.duration_or_off(profile.load_text("hang_timeout: off\n").hang_timeout) is None  # YAML's false
    assert settings.duration_or_off(profile.load("throughput").hang_timeout) is None  # off unless a profile says
    assert profile.load("debug").hang_timeout is not None
    with pytest.raises(Exception, match="hang_timeout: must be a duration"):
        profile.load_text("hang_timeout: soon\n")


def test_the_profiles_hang_timeout_is_the_default_and_off_turns_it_off() -> None:
    from hosttune.commands.exec import _hang_seconds
    from hosttune.errors import UserError

    prof = type("P", (), {"hang_timeout": "2m"})()
    assert _hang_seconds(None, prof) == 120 and _hang_seconds("5", prof) == 5
    assert _hang_seconds("off", prof) is None and _hang_seconds(None, None) is None
    with pytest.raises(UserError, match="--hang-timeout '0'"):
        _hang_seconds("0", prof)
    with pytest.raises(UserError, match="the profile's hang_timeout"):
        _hang_seconds(None, type("P", (), {"hang_timeout": "later"})())


# ---- the progress marker, the stacks and the summary on plain values ------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_starts_at_the_first_move_and_each_move_resets_it() -> None:
    clock = _Clock()
    p = Progress(clock)
    clock.now += 1000
    assert p.idle_s() == 0  # a launcher still starting is not a hang
    p.moved()
    clock.now += 4
    assert p.idle_s() == 4
    p.moved()
    assert p.idle_s() == 0


def test_a_watch_is_stalled_only_after_its_timeout_without_output_or_a_newly_armed_process(tmp_path: Path) -> None:
    clock = _Clock()
    w = hang.Watch(5.0, str(tmp_path))
    w.progress = Progress(clock)
    assert not w.stalled()
    (tmp_path / "stacks-rank0-pid1.txt").write_text("")  # a rank armed: the clock starts
    assert not w.stalled()
    clock.now += 4.9
    assert not w.stalled()
    (tmp_path / "stacks-rank1-pid2.txt").write_text("")  # another: the clock starts again
    assert not w.stalled()
    clock.now += 4.9
    assert not w.stalled()
    clock.now += 0.2
    assert w.stalled()


def test_output_through_the_watch_is_copied_and_moves_the_marker(tmp_path: Path) -> None:
    clock = _Clock()
    w = hang.Watch(5.0, str(tmp_path))
    w.progress = Progress(clock)
    r, wfd = os.pipe()
    out_r, out_w = os.pipe()
    t = threading.Thread(target=w._copy, args=(r, out_w))
    t.start()
    os.write(wfd, b"step 1\n")
    os.close(wfd)
    t.join(60)
    os.close(out_w)
    assert os.read(out_r, 100) == b"step 1\n" and w.progress.last == clock.now
    os.close(out_r)


def _dump(fn_name: str) -> str:
    """A real faulthandler dump of this process, taken inside a function called `fn_name`, with a second thread."""
    buf = io.StringIO()
    stop = threading.Event()

    def idle_helper() -> None:
        stop.wait()

    other = threading.Thread(target=idle_helper)
    other.start()
    try:
        import tempfile

        with tempfile.TemporaryFile("w+") as fh:
            ns: dict = {"faulthandler": faulthandler, "fh": fh}
            exec(f"def {fn_name}():\n    faulthandler.dump_traceback(fh, all_threads=True)\n{fn_name}()\n", ns)
            fh.seek(0)
            buf.write(fh.read())
    finally:
        stop.set()
        other.join()
    return buf.getvalue()


def test_the_stacks_of_a_real_dump_put_the_signalled_thread_first_and_skip_the_stdlib() -> None:
    stacks = parse_stacks(_dump("in_the_step"))
    assert len(stacks) >= 2 and stacks[0][0].func == "in_the_step"
    waiting = [s for s in stacks[1:] if s and s[0].func == "wait"]
    assert waiting  # the other thread, innermost first
    assert [f.func for f in waiting[0]][:2] == ["wait", "wait"]
    assert where([waiting[0]]) == next(f for f in waiting[0] if f.func == "idle_helper")  # past threading.py
    twice = _dump("first") + _dump("second")
    assert parse_stacks(twice)[0][0].func == "second"  # of two dumps, the last
    assert parse_stacks("") == [] and where([]) is None


def _at(func: str, path: str = "/home/u/job.py", line: int = 3) -> Frame:
    return Frame(path, line, func)


C10D = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


def test_the_summary_names_the_rank_the_others_wait_for_first() -> None:
    places: dict = {f"rank{r}": _at("all_reduce", C10D, 2950) for r in (0, 1, 3)}
    places["rank2"] = _at("load_batch", line=40)
    assert summarize(places) == ("rank 2 is in load_batch (job.py:40); ranks 0,1,3 are in all_reduce "
                                 "(distributed_c10d.py:2950)")
    # two ranks: the one outside torch.distributed is the odd one, whatever its number
    two = {"rank0": _at("all_reduce", C10D, 2950), "rank1": _at("late_rank", line=12)}
    assert summarize(two).startswith("rank 1 is in late_rank (job.py:12); rank 0 is in all_reduce")


def test_the_summary_when_all_agree_and_when_some_gave_nothing() -> None:
    same = {"rank0": _at("barrier", C10D, 10), "rank1": _at("barrier", C10D, 10), "rank2": None}
    assert summarize(same).startswith("all 2 ranks are in barrier (distributed_c10d.py:10); rank 2 gave no stacks")
    assert summarize({}) == "no process of the job could give its stacks"
    one: dict = {"rank0": _at("step")}
    assert summarize(one) == "rank 0 is in step (job.py:3)"


def test_only_live_processes_of_this_launch_that_armed_are_signalled(tmp_path: Path) -> None:
    w = hang.Watch(1.0, str(tmp_path))
    (tmp_path / f"stacks-rank0-pid{os.getpid()}.txt").write_text("")  # alive, but not carrying the marker
    (tmp_path / "stacks-rank1-pid999999999.txt").write_text("")  # gone
    (tmp_path / "stacks-junk.txt").write_text("")
    assert w._armed(f"no-such-launch-{os.getpid()}") == {}


def test_labels_tell_apart_two_live_processes_of_one_rank() -> None:
    labels = hang.Watch._labels({10: "/d/stacks-rank0-pid10.txt", 11: "/d/stacks-rank0-pid11.txt",
                                 12: "/d/stacks-rank1-pid12.txt", 13: "/d/stacks-proc-pid13.txt"})
    assert set(labels) == {"rank0/pid10", "rank0/pid11", "rank1", "proc"}


# ---- the trust boundary: $HOSTTUNE_HANG_DIR arms only in the caller's own private directory -------------------------


def _arm_in(d: str) -> "subprocess.CompletedProcess[str]":
    """arm_stacks in a fresh interpreter (faulthandler's registration must not stay in this one)."""
    code = ("import sys; from hosttune.launch import hook; "
            "print(hook.arm_stacks({'HOSTTUNE_HANG_DIR': sys.argv[1], 'RANK': '0'}, ['x.py']))")
    return subprocess.run([PY, "-c", code, d], env=torchrun_env(), capture_output=True, text=True, timeout=120)


def test_a_rank_arms_in_its_own_private_directory_only(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    res = _arm_in(str(mine))
    assert res.returncode == 0 and res.stdout.strip().startswith(str(mine / "stacks-rank0-pid")), res.stderr
    (armed,) = mine.iterdir()
    assert (armed.stat().st_mode & 0o777) == 0o600 and armed.read_text().startswith("# rank0 pid ")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o700)
    shared.chmod(0o777)  # others could plant or swap what is in it
    link = tmp_path / "link"
    link.symlink_to(mine)  # a link to a private directory: not the directory hosttune made
    for d in (shared, link):
        res = _arm_in(str(d))
        assert res.stdout.strip() == "None", res.stderr
    assert not list(shared.iterdir()) and len(list(mine.iterdir())) == 1


def test_root_arms_nothing_in_a_directory_the_other_user_owns(tmp_path: Path, other_user: OtherUser) -> None:
    theirs = other_user.home / "hang"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, other_user.uid, other_user.gid)
    res = _arm_in(str(theirs))
    assert res.stdout.strip() == "None", res.stderr
    assert not list(theirs.iterdir())


def test_a_hang_directory_swapped_after_the_start_changes_nothing_hosttune_reads_or_removes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env: dict = {}
    w = hang.Watch.start(5.0, "4242-abcd", env)
    made = Path(env["HOSTTUNE_HANG_DIR"])
    assert made.parent == tmp_path and (made.stat().st_mode & 0o777) == 0o700
    assert env["PYTHONUNBUFFERED"] == "1" and env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"].startswith(str(made) + "/")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "stacks-rank0-pid1.txt").write_text("not hosttune's")
    made.rename(tmp_path / "moved")
    made.symlink_to(other)  # the name now leads elsewhere
    assert w._names("") == []  # hosttune still sees its own (empty) directory
    w.finish()
    assert (other / "stacks-rank0-pid1.txt").exists() and made.is_symlink()
    with pytest.raises(Exception, match="cannot make"):
        hang.Watch.start(5.0, "4242-abcd", {})  # a name already there is never reused


def test_the_flight_recorder_is_asked_through_each_ranks_pipe_that_has_a_reader(tmp_path: Path) -> None:
    """ProcessGroupNCCL's DumpPipe: a FIFO `<TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe` it reads non-blocking; a
    write asks for the dump. Played here by a reader of our own (no GPU needed to check what hosttune writes)."""
    env: dict = {}
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        w = hang.Watch.start(5.0, "77-pipes", env)
    finally:
        os.chdir(old)
    stem = env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"]
    os.mkfifo(f"{stem}0.pipe", 0o666)
    reader = os.open(f"{stem}0.pipe", os.O_RDONLY | os.O_NONBLOCK)  # rank 0's process group is alive
    os.mkfifo(f"{stem}1.pipe", 0o666)  # rank 1's is gone: nobody reads
    Path(f"{stem}2.pipe").write_text("")  # not a FIFO: never written
    try:
        assert w._poke_nccl() == 1
        assert os.read(reader, 10) == b"1\n"
    finally:
        os.close(reader)
    assert Path(f"{stem}2.pipe").read_text() == ""
    assert env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == env["TORCH_FR_DUMP_TEMP_FILE"] == os.path.join(
        env["HOSTTUNE_HANG_DIR"], hang.NCCL_TRACE)
    w.finish()  # no hang: the pipes go, a file the job left (here the non-FIFO) keeps the directory
    assert sorted(os.listdir(env["HOSTTUNE_HANG_DIR"])) == [os.path.basename(f"{stem}2.pipe")]
