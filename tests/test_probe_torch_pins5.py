"""hosttune/doctor/deep/probe_torch.py in-process (issue 21): the JSON line protocol hosttune parses (start, result,
error, end; only rank 0 speaks, except errors), the timed loop's stopping rule, the bounded walk that picks the files
a disk read covers, the O_DIRECT / fadvise read and its stopping rules on real files, the /dev/shm write-read, which
measurements the torch groups ask for (a stand-in `torch` module: no torch import, no GPU here), the torchrun command
line a worker gets, and main()'s options. The child-interpreter runs stay in test_doctor_deep.py."""

import json
import os
import sys
import types
from typing import Any, Dict, List, Tuple

import pytest

from hosttune.doctor.deep import probe_torch as p

MiB = 1 << 20


class Out:
    """What the probe wrote to stdout so far (pytest's capture, read as it grows)."""

    def __init__(self, capsys: pytest.CaptureFixture) -> None:
        self.capsys, self.text = capsys, ""

    def getvalue(self) -> str:
        self.text += self.capsys.readouterr().out
        return self.text


@pytest.fixture
def out(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> Out:
    monkeypatch.setattr(p, "JSON", True)
    monkeypatch.setattr(p, "RANK", 0)
    return Out(capsys)


def lines(buf: Out) -> List[Dict[str, Any]]:
    return [json.loads(x) for x in buf.getvalue().splitlines()]


# ---- emit / measure ------------------------------------------------------------------------------------------------
def test_emit_json_line_is_sorted_and_carries_event_what_and_data(out: Out) -> None:
    p.emit("result", "disk /x", bytes=3.0, files=2)
    assert out.getvalue() == '{"bytes": 3.0, "event": "result", "files": 2, "what": "disk /x"}\n'


def test_emit_text_mode_start_and_result(out: Out, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(p, "JSON", False)
    p.emit("start", "shm")
    p.emit("result", "shm", write_s=1, bytes=2)
    assert out.getvalue() == "... shm\nresult shm: bytes=2, write_s=1\n"


def test_only_rank_zero_reports_but_every_rank_reports_errors(out: Out,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(p, "RANK", 1)
    p.emit("start", "allreduce gloo")
    p.emit("result", "allreduce gloo", seconds=1.0)
    p.emit("end", "")
    assert out.getvalue() == ""
    p.emit("error", "allreduce gloo", error="E")
    assert lines(out) == [{"event": "error", "what": "allreduce gloo", "error": "E"}]


def test_short_error_names_the_type_folds_whitespace_and_caps_at_600() -> None:
    assert p.short_error(ValueError("a\n  b\tc")) == "ValueError: a b c"
    long = p.short_error(OSError("x" * 1000))
    assert len(long) == 600 and long.startswith("OSError: xxx")


def test_measure_result_between_start_and_result(out: Out) -> None:
    assert p.measure("w", lambda a, b: {"sum": a + b}, 2, 3) == {"sum": 5}
    assert lines(out) == [{"event": "start", "what": "w"}, {"event": "result", "what": "w", "sum": 5}]


def test_measure_none_result_is_an_empty_result(out: Out) -> None:
    assert p.measure("w", lambda: None) is None
    assert lines(out)[-1] == {"event": "result", "what": "w"}


def test_measure_error_is_reported_and_returns_none(out: Out) -> None:
    def boom() -> Dict[str, Any]:
        raise RuntimeError("no  device")

    assert p.measure("gpu", boom) is None
    assert lines(out) == [{"event": "start", "what": "gpu"},
                          {"event": "error", "what": "gpu", "error": "RuntimeError: no device"}]


# ---- timed_loop ----------------------------------------------------------------------------------------------------
class Clock:
    """perf_counter that moves `step` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def test_timed_loop_doubles_its_batch_until_time_is_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(p.time, "perf_counter", Clock(1.0))
    calls: List[int] = []
    # reads: start=1, then 2 (elapsed 1), 3 (2), 4 (3): batches 1, 2, 4
    iters, elapsed = p.timed_loop(lambda: calls.append(1), 3.0)
    assert (iters, elapsed) == (7, 3.0) and len(calls) == 7


def test_timed_loop_runs_min_iters_even_when_time_is_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(p.time, "perf_counter", Clock(10.0))
    iters, _ = p.timed_loop(lambda: None, 0.0, min_iters=3)
    assert iters == 3  # batches 1, 2: 3 >= 3
    iters, _ = p.timed_loop(lambda: None, 0.0, min_iters=1)
    assert iters == 1


def test_timed_loop_batch_is_capped_at_64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(p.time, "perf_counter", Clock(1.0))
    iters, _ = p.timed_loop(lambda: None, 9.0)
    assert iters == 1 + 2 + 4 + 8 + 16 + 32 + 64 + 64 + 64


def test_timed_loop_syncs_before_the_clock_and_after_each_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(p.time, "perf_counter", Clock(1.0))
    log: List[str] = []
    p.timed_loop(lambda: log.append("s"), 2.0, sync=lambda: log.append("y"))
    assert log == ["y", "s", "y", "s", "s", "y"]


# ---- files_to_read -------------------------------------------------------------------------------------------------
def test_a_file_is_read_itself(tmp_path: Any) -> None:
    f = tmp_path / "one"
    f.write_bytes(b"x")
    assert p.files_to_read(str(f), 1) == [str(f)]


def test_a_directory_gives_its_largest_regular_files_until_the_limit(tmp_path: Any) -> None:
    (tmp_path / "sub").mkdir()
    sizes = {"a": 10, "b": 30, "sub/c": 20, "empty": 0}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(b"x" * size)
    os.symlink(tmp_path / "b", tmp_path / "link")  # a link is not read (lstat)
    os.mkfifo(tmp_path / "fifo")  # nor a fifo
    d = str(tmp_path)
    assert p.files_to_read(d, 1000) == [f"{d}/b", f"{d}/sub/c", f"{d}/a"]
    assert p.files_to_read(d, 30) == [f"{d}/b"]  # 30 >= 30: stops there
    assert p.files_to_read(d, 31) == [f"{d}/b", f"{d}/sub/c"]


def test_the_walk_stops_after_max_entries(tmp_path: Any) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_bytes(b"x" * (i + 1))
    got = p.files_to_read(str(tmp_path), 10 ** 9, max_entries=3)
    assert len(got) == 3
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "big").write_bytes(b"x" * 100)
    # the top directory's 5 names already pass the bound: the subdirectory is never walked
    assert str(tmp_path / "z" / "big") not in p.files_to_read(str(tmp_path), 10 ** 9, max_entries=5)
    assert str(tmp_path / "z" / "big") in p.files_to_read(str(tmp_path), 10 ** 9, max_entries=6)


# ---- disk_read -----------------------------------------------------------------------------------------------------
def _files(tmp_path: Any, *sizes: int) -> str:
    for i, size in enumerate(sizes):
        (tmp_path / f"f{i}").write_bytes(b"y" * size)
    return str(tmp_path)


def test_disk_read_without_direct_reads_every_byte_with_fadvise(tmp_path: Any) -> None:
    d = _files(tmp_path, 3 * 4096, 4096 + 100)
    got = p.disk_read(d, 10 * MiB, 60.0, block=4096, direct=False)
    assert got["bytes"] == 4 * 4096 + 100 and got["files"] == 2
    assert got["method"] == "fadvise" and got["path"] == d and got["seconds"] > 0


def test_disk_read_drops_the_cache_with_fadvise_dontneed(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _files(tmp_path, 4096)
    seen: List[Tuple[int, int, int]] = []
    monkeypatch.setattr(p.os, "posix_fadvise", lambda fd, off, n, advice: seen.append((off, n, advice)))
    p.disk_read(d, MiB, 60.0, block=4096, direct=False)
    assert seen == [(0, 0, os.POSIX_FADV_DONTNEED)]


def test_disk_read_stops_at_the_byte_limit(tmp_path: Any) -> None:
    d = _files(tmp_path, 8 * 4096, 8 * 4096)
    got = p.disk_read(d, 2 * 4096, 60.0, block=4096, direct=False)
    assert got["bytes"] == 2 * 4096


def test_disk_read_stops_at_the_time_limit(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _files(tmp_path, 8 * 4096, 8 * 4096)
    monkeypatch.setattr(p.time, "perf_counter", Clock(1.0))
    got = p.disk_read(d, 10 * MiB, 1.5, block=4096, direct=False)
    # start=1; after the first block 2 (0.5? no: 1 s elapsed < 1.5), after the second 3 (2 s): stop
    assert got["bytes"] == 2 * 4096


def test_disk_read_opens_with_o_direct_and_cloexec_then_falls_back(tmp_path: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    d = _files(tmp_path, 4096)
    flags: List[int] = []
    real_open = os.open

    def fake_open(name: str, fl: int, *a: Any) -> int:
        flags.append(fl)
        if fl & os.O_DIRECT:
            raise OSError(22, "EINVAL")
        return real_open(name, fl, *a)

    monkeypatch.setattr(p.os, "open", fake_open)
    got = p.disk_read(d, MiB, 60.0, block=4096)
    assert flags == [os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC, os.O_RDONLY | os.O_CLOEXEC]
    assert got["method"] == "fadvise" and got["bytes"] == 4096


def test_disk_read_direct_when_the_file_system_takes_it(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _files(tmp_path, 2 * 4096)
    real_open = os.open
    # O_DIRECT is dropped below the probe (tmpfs may refuse it); the probe still believes it read directly
    monkeypatch.setattr(p.os, "open", lambda name, fl, *a: real_open(name, fl & ~os.O_DIRECT, *a))
    got = p.disk_read(d, MiB, 60.0, block=4096)
    assert got["method"] == "O_DIRECT" and got["bytes"] == 2 * 4096


def test_disk_read_failing_first_read_closes_and_falls_back(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _files(tmp_path, 4096, 4096)
    real_open, real_readv, real_close = os.open, os.readv, os.close
    refused: List[int] = []  # the O_DIRECT descriptor whose first read fails (EINVAL: unaligned, say)
    closed: List[int] = []

    def fake_open(name: str, fl: int, *a: Any) -> int:
        return real_open(name, fl & ~os.O_DIRECT, *a)

    def fake_readv(fd: int, bufs: Any) -> int:
        if not refused:
            refused.append(fd)
            raise OSError(22, "EINVAL")
        return real_readv(fd, bufs)

    def fake_close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(p.os, "open", fake_open)
    monkeypatch.setattr(p.os, "readv", fake_readv)
    monkeypatch.setattr(p.os, "close", fake_close)
    got = p.disk_read(d, MiB, 60.0, block=4096)
    assert closed[0] == refused[0] and len(closed) == 3  # the refused descriptor is closed, then each file's
    assert got["method"] == "mixed" and got["bytes"] == 2 * 4096


# ---- shm_speed -----------------------------------------------------------------------------------------------------
def test_shm_speed_writes_reads_and_removes_its_file(tmp_path: Any) -> None:
    d = tmp_path / "shm"
    d.mkdir()
    got = p.shm_speed(3 * 4096 + 1, directory=str(d), block=4096)
    assert got["dir"] == str(d) and got["bytes"] == 4 * 4096  # whole blocks, at least nbytes
    assert got["write_s"] >= 0 and got["read_s"] >= 0
    assert list(d.iterdir()) == []


def test_shm_speed_reads_back_what_it_wrote(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    got_bytes: List[int] = []
    real_readv = os.readv

    def readv(fd: int, bufs: Any) -> int:
        n = real_readv(fd, bufs)
        got_bytes.append(n)
        return n

    monkeypatch.setattr(p.os, "readv", readv)
    p.shm_speed(2 * 4096, directory=str(tmp_path), block=4096)
    assert got_bytes == [4096, 4096]  # stops when all it wrote is read, without a read at the end of file


def test_shm_speed_file_is_named_for_hosttune(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    names: List[str] = []
    real = os.unlink
    monkeypatch.setattr(p.os, "unlink", lambda n: (names.append(n), real(n)))
    p.shm_speed(1, directory=str(tmp_path), block=4096)
    assert len(names) == 1 and os.path.basename(names[0]).startswith("hosttune-deep-")


# ---- run_torch_groups with a stand-in torch ------------------------------------------------------------------------
def fake_torch(threads: int = 4) -> types.ModuleType:
    t = types.ModuleType("torch")
    t.get_num_threads = lambda: threads  # type: ignore[attr-defined]
    return t


def devices(*caps: Tuple[int, int], bad: Tuple[int, ...] = ()) -> Dict[str, Any]:
    devs = []
    for i, c in enumerate(caps):
        d: Dict[str, Any] = {"index": i, "capability": list(c)}
        if i in bad:
            d["error"] = "E"
        devs.append(d)
    return {"devices": devs}


def run_groups(monkeypatch: pytest.MonkeyPatch, groups: str, info: Any, small: bool = True, threads: int = 4,
               seconds: float = 0.5) -> List[Tuple[str, Tuple[Any, ...]]]:
    calls: List[Tuple[str, Tuple[Any, ...]]] = []
    monkeypatch.setitem(sys.modules, "torch", fake_torch(threads))
    monkeypatch.setattr(p, "torch_info", lambda: info)
    for name in ("cpu_matmul", "cpu_triad", "cpu_bf16", "gpu_matmul", "gpu_copy", "p2p_matrix", "p2p_copy"):
        monkeypatch.setattr(p, name, (lambda n: lambda *a: calls.append((n, a)) or {})(name))
    args = types.SimpleNamespace(small=small, seconds=seconds)
    p.run_torch_groups(set(groups.split(",")), args)
    return calls


def test_cpu_group_sizes_small(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls = run_groups(monkeypatch, "cpu", devices())
    assert calls == [("cpu_matmul", (256, 0.5)), ("cpu_triad", (1 << 21, 0.5)), ("cpu_bf16", (256, 0.5))]


@pytest.mark.parametrize("threads,n", [(8, 1024), (9, 2048), (32, 2048), (33, 4096)])
def test_cpu_matmul_size_follows_the_thread_count(monkeypatch: pytest.MonkeyPatch, out: Out,
                                                  threads: int, n: int) -> None:
    calls = run_groups(monkeypatch, "cpu", devices(), small=False, threads=threads)
    assert calls == [("cpu_matmul", (n, 0.5)), ("cpu_triad", (1 << 25, 0.5)), ("cpu_bf16", (384, 0.5))]


def test_info_alone_measures_nothing_else(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    assert run_groups(monkeypatch, "info", devices((9, 0), (9, 0))) == []
    assert [r["what"] for r in lines(out)] == ["info", "info"]


def test_failed_info_stops_the_torch_groups(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls: List[str] = []
    monkeypatch.setitem(sys.modules, "torch", fake_torch())

    def broken() -> Dict[str, Any]:
        raise ImportError("no torch")

    monkeypatch.setattr(p, "torch_info", broken)
    monkeypatch.setattr(p, "cpu_matmul", lambda *a: calls.append("mm"))
    p.run_torch_groups({"info", "cpu"}, types.SimpleNamespace(small=True, seconds=0.1))
    assert calls == [] and lines(out)[-1]["event"] == "error"


def test_a_systemexit_from_torch_import_is_an_error_line(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    def exits() -> Dict[str, Any]:
        raise SystemExit(3)

    monkeypatch.setattr(p, "torch_info", exits)
    p.run_torch_groups({"info"}, types.SimpleNamespace(small=True, seconds=0.1))
    assert lines(out) == [{"event": "start", "what": "info"},
                          {"event": "error", "what": "info", "error": "SystemExit: 3"}]


def test_gpu_compute_skips_bf16_and_tf32_before_ampere_and_broken_devices(monkeypatch: pytest.MonkeyPatch,
                                                                          out: Out) -> None:
    calls = run_groups(monkeypatch, "gpu_compute", devices((7, 0), (8, 0), (9, 0), bad=(2,)))
    assert calls == [("gpu_matmul", (0, "fp16", 2048, 0.5)),
                     ("gpu_matmul", (1, "bf16", 2048, 0.5)), ("gpu_matmul", (1, "fp16", 2048, 0.5)),
                     ("gpu_matmul", (1, "tf32", 2048, 0.5))]
    unsupported = [r for r in lines(out) if r.get("unsupported")]
    assert unsupported == [{"event": "result", "what": "gpu_compute gpu0 bf16", "gpu": 0, "dtype": "bf16",
                            "unsupported": True},
                           {"event": "result", "what": "gpu_compute gpu0 tf32", "gpu": 0, "dtype": "tf32",
                            "unsupported": True}]


def test_gpu_compute_full_size(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls = run_groups(monkeypatch, "gpu_compute", devices((9, 0)), small=False)
    assert [c[1][2] for c in calls] == [8192, 8192, 8192]
    assert [r["what"] for r in lines(out) if r["event"] == "start"][1:] == [
        "gpu_compute gpu0 bf16", "gpu_compute gpu0 fp16", "gpu_compute gpu0 tf32"]


def test_gpu_copies_every_kind_and_direction_for_half_the_time(monkeypatch: pytest.MonkeyPatch,
                                                               out: Out) -> None:
    calls = run_groups(monkeypatch, "gpu_copies", devices((9, 0), (9, 0), bad=(0,)))
    assert calls == [("gpu_copy", (1, k, d, 32 * MiB, 0.25)) for k in ("pinned", "pageable")
                     for d in ("h2d", "d2h")]
    assert [r["what"] for r in lines(out) if r["event"] == "start"][1] == "gpu_copies gpu1 pinned h2d"
    big = run_groups(monkeypatch, "gpu_copies", devices((9, 0)), small=False)
    assert {c[1][3] for c in big} == {256 * MiB}


def test_p2p_needs_two_working_gpus(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    assert run_groups(monkeypatch, "p2p", devices((9, 0))) == []
    assert run_groups(monkeypatch, "p2p", devices((9, 0), (9, 0), bad=(1,))) == []


def test_p2p_two_gpus_copy_once(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls = run_groups(monkeypatch, "p2p", devices((9, 0), (9, 0)))
    assert calls == [("p2p_matrix", ()), ("p2p_copy", (0, 1, 32 * MiB, 0.25))]
    assert "p2p gpu0->gpu1" in [r["what"] for r in lines(out)]


def test_p2p_ring_over_the_working_gpus(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls = run_groups(monkeypatch, "p2p", devices((9, 0), (9, 0), (9, 0), (9, 0), bad=(1,)), small=False)
    assert calls == [("p2p_matrix", ()), ("p2p_copy", (0, 2, 256 * MiB, 0.25)),
                     ("p2p_copy", (2, 3, 256 * MiB, 0.25)), ("p2p_copy", (3, 0, 256 * MiB, 0.25))]


# ---- start_torchrun / main -----------------------------------------------------------------------------------------
def fake_torchrun(monkeypatch: pytest.MonkeyPatch) -> List[List[str]]:
    got: List[List[str]] = []
    run = types.ModuleType("torch.distributed.run")
    run.main = lambda argv: got.append(list(argv))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    monkeypatch.setitem(sys.modules, "torch.distributed", types.ModuleType("torch.distributed"))
    monkeypatch.setitem(sys.modules, "torch.distributed.run", run)
    return got


def test_torchrun_standalone_drops_the_launch_options(monkeypatch: pytest.MonkeyPatch) -> None:
    got = fake_torchrun(monkeypatch)
    monkeypatch.setattr(sys, "path", list(sys.path))
    argv = ["--json", "--torchrun", "2", "--measure", "allreduce", "--nnodes=1", "--bytes", "8"]
    assert p.main(argv) == 0
    assert got == [["--standalone", "--nnodes", "1", "--nproc_per_node", "2", os.path.abspath(p.__file__),
                    "--json", "--measure", "allreduce", "--bytes", "8"]]


def test_torchrun_rendezvous_over_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    got = fake_torchrun(monkeypatch)
    monkeypatch.setattr(sys, "path", list(sys.path))
    p.main(["--torchrun", "4", "--nnodes", "2", "--rdzv-endpoint", "h:29400", "--rdzv-conf", "timeout=9",
            "--local-addr", "10.0.0.1", "--measure", "allreduce"])
    assert got == [["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:29400",
                    "--rdzv-id", "hosttune-doctor", "--max-restarts", "0", "--rdzv-conf", "timeout=9",
                    "--local-addr", "10.0.0.1", "--nproc_per_node", "4", os.path.abspath(p.__file__),
                    "--measure", "allreduce"]]
    got.clear()
    p.main(["--torchrun", "1", "--rdzv-endpoint", "h:1", "--rdzv-id", "job7"])
    assert got == [["--nnodes", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--rdzv-id", "job7",
                    "--max-restarts", "0", "--nproc_per_node", "1", os.path.abspath(p.__file__)]]


def test_main_puts_paths_first_once_each(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    monkeypatch.setattr(sys, "path", ["orig"])
    assert p.main(["--json", "--measure", "none", "--path", "/a", "--path", "", "--path", "/b",
                   "--path", "/a"]) == 0
    assert sys.path == ["/a", "/b", "orig"]
    assert lines(out) == [{"event": "end", "what": ""}]


def test_main_rank_from_local_rank_then_rank(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("RANK", "3")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    p.main(["--json", "--measure", "none"])
    assert p.RANK == 3 and out.getvalue() == ""  # rank 3 keeps quiet, even its end line
    monkeypatch.setenv("LOCAL_RANK", "0")
    p.main(["--json", "--measure", "none"])
    assert p.RANK == 0 and lines(out) == [{"event": "end", "what": ""}]


def test_main_text_mode_unless_json(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    p.main(["--measure", ""])
    assert out.getvalue() == "end : \n"


def record(monkeypatch: pytest.MonkeyPatch, *names: str) -> List[Tuple[str, Tuple[Any, ...]]]:
    calls: List[Tuple[str, Tuple[Any, ...]]] = []
    for name in names:
        monkeypatch.setattr(p, name, (lambda n: lambda *a: calls.append((n, a)) or {})(name))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    return calls


def test_main_disk_defaults_and_options(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls = record(monkeypatch, "disk_read", "run_torch_groups")
    p.main(["--json", "--measure", " disk ,", "--file", "/a", "--file", "/b"])
    assert calls == [("disk_read", ("/a", 512 * MiB, 2.0, 4 * MiB, True)),
                     ("disk_read", ("/b", 512 * MiB, 2.0, 4 * MiB, True))]
    assert [r["what"] for r in lines(out)] == ["disk /a", "disk /a", "disk /b", "disk /b", ""]
    calls.clear()
    p.main(["--json", "--measure", "disk", "--file", "/a", "--small", "--no-direct", "--bytes", "7"])
    assert calls == [("disk_read", ("/a", 7, 0.5, 4 * MiB, False))]
    calls.clear()
    p.main(["--json", "--measure", "disk", "--file", "/a", "--small", "--disk-seconds", "9"])
    assert calls == [("disk_read", ("/a", 512 * MiB, 9.0, 4 * MiB, True))]


def test_main_shm_and_allreduce_defaults(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls = record(monkeypatch, "shm_speed", "allreduce", "run_torch_groups")
    p.main(["--json", "--measure", "shm,allreduce"])
    assert calls == [("allreduce", ("gloo", 16 * MiB, 5, None)), ("shm_speed", (256 * MiB,))]
    calls.clear()
    p.main(["--json", "--measure", "allreduce,shm", "--backend", "nccl", "--bytes", "64", "--tag", '{"a": 1}'])
    assert calls == [("allreduce", ("nccl", 64, 20, {"a": 1})), ("shm_speed", (64,))]
    calls.clear()
    p.main(["--json", "--measure", "allreduce", "--backend", "nccl", "--iters", "3"])
    assert calls == [("allreduce", ("nccl", 256 * MiB, 3, None))]
    assert "allreduce nccl" in [r["what"] for r in lines(out)]


@pytest.mark.parametrize("group", ["info", "cpu", "gpu_compute", "gpu_copies", "p2p"])
def test_main_any_torch_group_runs_the_torch_groups(monkeypatch: pytest.MonkeyPatch, out: Out,
                                                    group: str) -> None:
    calls = record(monkeypatch, "run_torch_groups", "shm_speed")
    p.main(["--json", "--measure", f"{group},shm", "--small", "--seconds", "0.7"])
    assert [c[0] for c in calls] == ["run_torch_groups", "shm_speed"] and calls[0][1][0] == {group, "shm"}
    assert calls[0][1][1].small is True and calls[0][1][1].seconds == 0.7


def test_main_default_measures_every_torch_group(monkeypatch: pytest.MonkeyPatch, out: Out) -> None:
    calls = record(monkeypatch, "run_torch_groups", "shm_speed", "disk_read", "allreduce")
    p.main(["--json"])
    assert [c[0] for c in calls] == ["run_torch_groups"]
    assert calls[0][1][0] == {"info", "cpu", "gpu_compute", "gpu_copies", "p2p"}
    assert calls[0][1][1].seconds == 0.3 and calls[0][1][1].small is False


# ---- the torch measurements with a stand-in torch (no GPU here; the arithmetic and the calls are the probe's) --------
class Props:
    def __init__(self, major: int, bus: Any = None) -> None:
        self.name, self.major, self.minor, self.total_memory = f"GPU{major}", major, 5, 3 * MiB + 7
        if bus is not None:
            self.pci_bus_id, self.pci_domain_id, self.pci_device_id = bus, 1, 2


def stand_in_torch(monkeypatch: pytest.MonkeyPatch, cuda: Any = "12.4", props: Tuple[Props, ...] = (),
                   init_error: Any = None, bad_device: int = -1) -> types.ModuleType:
    t = types.ModuleType("torch")
    log: List[Any] = []
    t.log = log  # type: ignore[attr-defined]
    t.__version__ = "2.9.0"  # type: ignore[attr-defined]
    t.version = types.SimpleNamespace(cuda=cuda)  # type: ignore[attr-defined]
    t.get_num_threads = lambda: 6  # type: ignore[attr-defined]
    t.backends = types.SimpleNamespace(  # type: ignore[attr-defined]
        cpu=types.SimpleNamespace(get_cpu_capability=lambda: "AVX2"),
        cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=None)))
    t.distributed = types.SimpleNamespace(is_available=lambda: True, is_gloo_available=lambda: True,  # type: ignore
                                          is_nccl_available=lambda: False)

    def init() -> None:
        if init_error is not None:
            raise init_error

    class Tensor:
        def add_(self, x: Any) -> "Tensor":
            return self

    def zeros(n: int, device: str) -> Tensor:
        if device == f"cuda:{bad_device}":
            raise RuntimeError("CUDA error: no kernel image")
        return Tensor()

    t.zeros = zeros  # type: ignore[attr-defined]
    t.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: bool(props), init=init, device_count=lambda: len(props),
        get_device_properties=lambda i: props[i], synchronize=lambda i=None: log.append(("sync", i)),
        empty_cache=lambda: log.append("empty_cache"), get_device_name=lambda i: f"name{i}",
        can_device_access_peer=lambda i, j: (i + j) % 2 == 1)
    t.bfloat16, t.float16, t.float32, t.uint8 = "bf16", "fp16", "fp32", "u8"  # type: ignore[attr-defined]
    t.device = lambda kind, i=None: (kind, i)  # type: ignore[attr-defined]
    t.randn = lambda *shape, **kw: log.append(("randn", shape, kw)) or object()  # type: ignore[attr-defined]
    t.rand = lambda n: object()  # type: ignore[attr-defined]
    t.empty = lambda *a, **kw: log.append(("empty", a, kw)) or types.SimpleNamespace(  # type: ignore[attr-defined]
        pin_memory=lambda: log.append("pin") or types.SimpleNamespace(copy_=lambda *x, **k: log.append("pinned copy")),
        copy_=lambda *x, **k: None)
    t.mm = lambda a, b: None  # type: ignore[attr-defined]
    t.add = lambda *a, **kw: None  # type: ignore[attr-defined]
    t.autocast = lambda dev, dtype: log.append(("autocast", dev, dtype)) or _Ctx()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", t)
    return t


class _Ctx:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def test_torch_info_devices_bf16_memory_and_bus_id(monkeypatch: pytest.MonkeyPatch) -> None:
    t = stand_in_torch(monkeypatch, props=(Props(8, bus=0x1a), Props(7)), bad_device=1)
    info = p.torch_info()
    assert info["version"] == "2.9.0" and info["cuda"] == "12.4" and info["threads"] == 6
    assert info["python"] == sys.executable and info["import_s"] >= 0
    assert info["cpu_capability"] == "AVX2" and info["gloo"] is True and info["nccl"] is False
    assert info["cuda_available"] is True and info["cuda_error"] is None
    assert info["devices"] == [
        {"index": 0, "name": "GPU8", "capability": [8, 5], "bf16": True, "memory_mb": 3, "pci_bus_id": "0001:1a:02.0"},
        {"index": 1, "name": "GPU7", "capability": [7, 5], "bf16": False, "memory_mb": 3,
         "error": "RuntimeError: CUDA error: no kernel image"}]
    assert ("sync", 0) in t.log and ("sync", 1) not in t.log


def test_torch_info_cuda_init_error_is_the_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in_torch(monkeypatch, props=(Props(9),), init_error=RuntimeError("driver too old"))
    info = p.torch_info()
    assert info["devices"] == [] and info["cuda_error"] == "RuntimeError: driver too old"


def test_torch_info_cpu_only_wheel_asks_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    t = stand_in_torch(monkeypatch, cuda=None, props=(Props(9),), init_error=AssertionError("never called"))
    t.backends.cpu = None
    t.distributed = None
    info = p.torch_info()
    assert info["devices"] == [] and info["cuda_error"] is None and info["cpu_capability"] is None
    assert info["gloo"] is False and info["nccl"] is False


def fixed_loop(monkeypatch: pytest.MonkeyPatch) -> List[Tuple[float, int]]:
    calls: List[Tuple[float, int]] = []

    def loop(step: Any, seconds: float, sync: Any = None, min_iters: int = 1) -> Tuple[int, float]:
        step()
        if sync:
            sync()
        calls.append((seconds, min_iters))
        return 10, 2.0

    monkeypatch.setattr(p, "timed_loop", loop)
    return calls


def test_cpu_measurements_arithmetic(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in_torch(monkeypatch)
    loops = fixed_loop(monkeypatch)
    assert p.cpu_matmul(100, 0.8) == {"n": 100, "iters": 10, "seconds": 2.0, "flops": 2.0 * 100 ** 3 * 10,
                                      "threads": 6}
    assert loops == [(0.2, 3), (0.8, 1)]
    loops.clear()
    assert p.cpu_triad(1000, 0.8) == {"elems": 1000, "iters": 10, "seconds": 2.0, "bytes": 3.0 * 4 * 1000 * 10,
                                      "threads": 6}
    assert loops == [(0.8, 3)]
    loops.clear()
    got = p.cpu_bf16(100, 0.8)
    assert got == {"n": 100, "fp32_gflops": 2.0 * 100 ** 3 * 10 / 2.0 / 1e9,
                   "bf16_gflops": 2.0 * 100 ** 3 * 10 / 2.0 / 1e9}
    assert loops == [(0.2, 3), (0.8, 1), (0.2, 2), (0.8, 1)]


def test_cpu_bf16_runs_the_second_matmul_under_bf16_autocast(monkeypatch: pytest.MonkeyPatch) -> None:
    t = stand_in_torch(monkeypatch)
    fixed_loop(monkeypatch)
    p.cpu_bf16(64, 0.1)
    assert ("autocast", "cpu", "bf16") in t.log


@pytest.mark.parametrize("dtype,torch_dtype,tf32", [("bf16", "bf16", False), ("fp16", "fp16", False),
                                                    ("tf32", "fp32", True)])
def test_gpu_matmul_dtype_and_tf32_switch(monkeypatch: pytest.MonkeyPatch, dtype: str, torch_dtype: str,
                                          tf32: bool) -> None:
    t = stand_in_torch(monkeypatch)
    loops = fixed_loop(monkeypatch)
    got = p.gpu_matmul(1, dtype, 64, 0.5)
    assert got == {"gpu": 1, "dtype": dtype, "n": 64, "iters": 10, "seconds": 2.0, "flops": 2.0 * 64 ** 3 * 10,
                   "name": "name1"}
    assert t.backends.cuda.matmul.allow_tf32 is tf32
    assert [x for x in t.log if x[0] == "randn"] == [("randn", (64, 64), {"device": ("cuda", 1),
                                                                          "dtype": torch_dtype})] * 2
    assert t.log[0] == "empty_cache" and ("sync", ("cuda", 1)) in t.log and loops == [(0.5, 1)]


@pytest.mark.parametrize("kind", ["pinned", "pageable"])
def test_gpu_copy(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    t = stand_in_torch(monkeypatch)
    loops = fixed_loop(monkeypatch)
    got = p.gpu_copy(0, kind, "d2h", 1000, 0.5)
    assert got == {"gpu": 0, "kind": kind, "direction": "d2h", "bytes": 10000.0, "seconds": 2.0}
    assert ("pin" in t.log) is (kind == "pinned") and loops == [(0.5, 3)]
    # the copy goes to the pinned buffer: once before the timed loop (the first copy pays set-up), once per step
    assert t.log.count("pinned copy") == (2 if kind == "pinned" else 0)
    assert ("empty", (1000,), {"dtype": "u8", "device": ("cuda", 0)}) in t.log


def test_p2p_matrix_and_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in_torch(monkeypatch, props=(Props(9), Props(9), Props(9)))
    assert p.p2p_matrix() == {"n": 3, "matrix": [[True, True, False], [True, True, True], [False, True, True]]}
    t = sys.modules["torch"]
    loops = fixed_loop(monkeypatch)
    assert p.p2p_copy(0, 1, 100, 0.5) == {"src": 0, "dst": 1, "bytes": 1000.0, "seconds": 2.0, "peer": True}
    assert p.p2p_copy(0, 2, 100, 0.5)["peer"] is False
    assert ("sync", 0) in t.log and ("sync", 1) in t.log and loops[0] == (0.5, 3)  # type: ignore[attr-defined]


def test_shm_speed_closes_its_descriptor(tmp_path: Any) -> None:
    d = tmp_path / "shm"
    d.mkdir()
    before = sorted(os.listdir("/proc/self/fd"))
    p.shm_speed(4096, directory=str(d), block=4096)
    assert sorted(os.listdir("/proc/self/fd")) == before


class T:
    """A stand-in tensor: `n` elements all equal to `v`."""

    def __init__(self, v: float, n: int = 1) -> None:
        self.v, self.n = float(v), n

    def __eq__(self, other: Any) -> "T":  # type: ignore[override]
        return T(float(self.v == other), self.n)

    def all(self) -> "T":
        return self

    def item(self) -> float:
        return self.v

    def numel(self) -> int:
        return self.n


def stand_in_dist(monkeypatch: pytest.MonkeyPatch, world: int, rank: int, took: float = 2.0,
                  wrong: bool = False) -> List[Any]:
    log: List[Any] = []
    t = stand_in_torch(monkeypatch)
    t.full = lambda shape, v, device=None: T(v, shape[0])  # type: ignore[attr-defined]
    t.ones = lambda n, dtype=None, device=None: T(1.0, n)  # type: ignore[attr-defined]
    t.tensor = lambda xs, dtype=None, device=None: T(xs[0])  # type: ignore[attr-defined]
    t.float64 = "f64"  # type: ignore[attr-defined]
    t.cuda.set_device = lambda dev: log.append(("set_device", dev))
    dist = types.ModuleType("torch.distributed")

    def all_reduce(x: T, op: Any = None) -> None:
        log.append(("all_reduce", op))
        if op == "MAX":
            x.v = took
        elif x.n == 1024:
            x.v = world * (world + 1) / 2.0 + (1 if wrong else 0)

    def gather(out: List[Any], obj: Any) -> None:
        out[:] = [obj] * world

    dist.init_process_group = lambda backend, timeout=None: log.append(("init", backend, timeout))  # type: ignore
    dist.get_world_size = lambda: world  # type: ignore[attr-defined]
    dist.get_rank = lambda: rank  # type: ignore[attr-defined]
    dist.all_reduce = all_reduce  # type: ignore[attr-defined]
    dist.all_gather_object = gather  # type: ignore[attr-defined]
    dist.barrier = lambda: log.append("barrier")  # type: ignore[attr-defined]
    dist.destroy_process_group = lambda: log.append("destroy")  # type: ignore[attr-defined]
    dist.ReduceOp = types.SimpleNamespace(MAX="MAX")  # type: ignore[attr-defined]
    t.distributed = dist
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    return log


def test_allreduce_gloo_result(monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime

    log = stand_in_dist(monkeypatch, world=4, rank=0, took=6.0)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    got = p.allreduce("gloo", 4096, 3)
    assert got == {"backend": "gloo", "world": 4, "bytes": 4096.0, "iters": 3, "seconds": 2.0, "correct": True}
    assert log[0] == ("init", "gloo", datetime.timedelta(seconds=60)) and log[-1] == "destroy"
    ops = [x for x in log if isinstance(x, tuple) and x[0] == "all_reduce"]
    assert len(ops) == 1 + 2 + 3 + 1 and ops[-1] == ("all_reduce", "MAX")  # check, 2 warm-ups, 3 timed, the max
    assert "barrier" in log and not any(isinstance(x, tuple) and x[0] == "set_device" for x in log)


def test_allreduce_nccl_on_the_local_rank_with_tags(monkeypatch: pytest.MonkeyPatch) -> None:
    log = stand_in_dist(monkeypatch, world=2, rank=1, took=1.0, wrong=True)
    monkeypatch.setenv("LOCAL_RANK", "1")
    got = p.allreduce("nccl", 4000, 4, tag={"mtu": 9000})
    assert got["correct"] is False and got["tags"] == [{"mtu": 9000}] * 2 and got["seconds"] == 0.25
    assert got["bytes"] == 4000.0 and ("set_device", ("cuda", 1)) in log
    ops = [x for x in log if isinstance(x, tuple) and x[0] == "all_reduce"]
    assert len(ops) == 1 + 5 + 4 + 1  # nccl warms up 5 times
    assert ("sync", ("cuda", 1)) in sys.modules["torch"].log  # type: ignore[attr-defined]


def test_allreduce_destroys_the_group_when_it_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    log = stand_in_dist(monkeypatch, world=2, rank=0)

    def broken(x: Any, op: Any = None) -> None:
        raise RuntimeError("peer gone")

    sys.modules["torch.distributed"].all_reduce = broken  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError):
        p.allreduce("gloo", 64, 1)
    assert log[-1] == "destroy"
