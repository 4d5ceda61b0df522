"""The shared homes every command relies on: the root trust rule, the one atomic write and bounded read, the one
YAML loader, terminal-safe text, and the policies (CUDA_VISIBLE_DEVICES, GPU health, CPU budget)."""

import os
import stat
import threading
from pathlib import Path

import pytest
from conftest import OtherUser

from hosttune import fsio, trust, yamlio
from hosttune.errors import UserError
from hosttune.facts import Cgroup, Cpu, Gpu
from hosttune.policy import cpu as cpu_policy
from hosttune.policy import cuda_visible, gpu_health
from hosttune.term import printable

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="ownership rules as root need root")


# ---- trust ------------------------------------------------------------------------------------------------------
@needs_root
def test_trust_accepts_roots_file_below_a_sticky_world_writable_ancestor(tmp_path: Path) -> None:
    # tmp_path lives under /tmp (1777): nobody else can rename the root-owned, 0700 directories below it
    f = tmp_path / "p.yaml"
    f.write_text("x: 1\n")
    assert trust.problem(f) == (str(f), None)


@needs_root
def test_trust_refuses_a_file_whose_own_directory_others_can_write_even_sticky(tmp_path: Path) -> None:
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)
    f = d / "p.yaml"
    f.write_text("x: 1\n")
    real, why = trust.problem(f)
    assert why and "writable by group and others" in why
    assert "to a directory only root can write" in trust.fix_for(why, real)


@needs_root
@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777])
def test_trust_refuses_a_non_sticky_writable_ancestor(tmp_path: Path, mode: int) -> None:
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    f = top / "sub" / "p.yaml"
    f.write_text("x: 1\n")
    os.chmod(top, mode)
    with pytest.raises(trust.Untrusted, match=f"its directory {top} is writable"):
        trust.check_path(f, "profile")


def test_trust_resolves_links_and_returns_the_target(tmp_path: Path) -> None:
    target = tmp_path / "real.yaml"
    target.write_text("x: 1\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    assert trust.check_path(link, "profile") == str(target)


def test_trust_refuses_what_another_user_owns(other_user: OtherUser) -> None:
    planted = other_user.write("p.yaml", "x: 1\n")
    with pytest.raises(trust.Untrusted, match=r"is owned by nobody.*fix: move it .* such as /etc/hosttune"):
        trust.check_path(planted, "profile")


@needs_root
def test_trust_fix_blesses_a_file_in_place_only_in_roots_own_directories(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("x: 1\n")
    os.chown(f, 65534, 65534)
    with pytest.raises(trust.Untrusted, match=r"fix: check its contents, then: chown root: .*p.yaml && chmod go-w"):
        trust.check_path(f, "profile")


def test_trust_env_refuses_code_and_checks_every_path_entry(other_user: OtherUser, tmp_path: Path) -> None:
    if not IS_ROOT:
        pytest.skip("root only")
    with pytest.raises(UserError, match="NODE_OPTIONS"):
        trust.check_env_value("NODE_OPTIONS", "--require /x", "p.yaml:3")
    assert trust.check_env_value("PYTHONPATH", str(tmp_path), "p.yaml:3") == str(tmp_path)
    with pytest.raises(UserError, match="owned by nobody"):
        trust.check_env_value("PYTHONPATH", f"{tmp_path}:{other_user.home}", "p.yaml:3")
    with pytest.raises(UserError, match="current directory"):
        trust.check_env_value("PATH", "/usr/bin::/bin", "p.yaml:3")
    assert trust.check_env_value("OMP_NUM_THREADS", "4", "p.yaml:3") == "4"


def test_interpreter_env_as_root_drops_what_another_user_left(other_user: OtherUser, tmp_path: Path) -> None:
    env, dropped = trust.interpreter_env({"PYTHONPATH": str(other_user.home), "PYTHONSTARTUP": "/x.py",
                                          "PYTHONINSPECT": "1", "HOME": "/root"})
    assert set(dropped) == {"PYTHONPATH", "PYTHONSTARTUP", "PYTHONINSPECT"} and env == {"HOME": "/root"}
    env, dropped = trust.interpreter_env({"PYTHONPATH": str(tmp_path)})
    assert env == {"PYTHONPATH": str(tmp_path)} and not dropped


def test_private_dir_refuses_one_someone_else_made_first(other_user: OtherUser, tmp_path: Path) -> None:
    d = other_user.home / "run"
    other_user.run(["mkdir", "-m", "700", str(d)])
    with pytest.raises(trust.Untrusted, match="owned by nobody"):
        trust.private_dir(d)
    mine = trust.private_dir(tmp_path / "mine")
    assert stat.S_IMODE(os.lstat(mine).st_mode) == 0o700


def test_check_library_wants_elf_and_returns_the_resolved_path(tmp_path: Path) -> None:
    libs = [p for p in ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/lib/x86_64-linux-gnu/libc.so.6")
            if os.path.exists(p)]
    if not libs:
        pytest.skip("no system library to check against")
    assert trust.check_library(libs[0]) == os.path.realpath(libs[0])
    fake = tmp_path / "libfake.so"
    fake.write_bytes(b"#!/bin/sh\n")
    with pytest.raises(trust.Untrusted, match="not an ELF"):
        trust.check_library(str(fake))
    with pytest.raises(trust.Untrusted, match="not an absolute path"):
        trust.check_library("libc.so.6")


# ---- fsio -------------------------------------------------------------------------------------------------------
def test_atomic_write_failure_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "state"
    fsio.atomic_write(target, b"old")
    with pytest.raises(RuntimeError):
        with fsio.atomic_writer(target) as fh:
            fh.write(b"half of the new")
            raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["state"]


def test_atomic_write_exclusive_never_replaces(tmp_path: Path) -> None:
    target = tmp_path / "profile.yaml"
    fsio.atomic_write(target, "first\n", exclusive=True)
    with pytest.raises(FileExistsError):
        fsio.atomic_write(target, "second\n", exclusive=True)
    assert target.read_text() == "first\n"


def test_atomic_write_replaces_a_link_at_its_name_and_never_writes_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    target = tmp_path / "out.prom"
    target.symlink_to(victim)
    fsio.atomic_write(target, "metrics\n", 0o644)
    assert victim.read_text() == "root's file\n"
    assert not target.is_symlink() and target.read_text() == "metrics\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_read_bounded_refuses_a_fifo_at_once_and_bounds_the_size(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result: list = []
    t = threading.Thread(target=lambda: result.append(_err(lambda: fsio.read_bounded(fifo, 100))), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive() and isinstance(result[0], OSError)  # refused, not blocked waiting for a writer
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(3 << 30)  # a 3 GiB sparse file
    with pytest.raises(fsio.TooLarge):
        fsio.read_bounded(big, 1 << 20)
    assert fsio.read_bounded("/proc/self/status", 1 << 20).startswith(b"Name:")  # size-0 proc files still read
    link = tmp_path / "link"
    link.symlink_to(big)
    with pytest.raises(OSError):
        fsio.read_bounded(link, 100, nofollow=True)


def _err(fn):  # type: ignore[no-untyped-def]
    try:
        fn()
    except OSError as exc:
        return exc
    return None


def test_read_user_text_is_one_line_for_every_bad_file(tmp_path: Path) -> None:
    (tmp_path / "latin1.yaml").write_bytes(b"steps: \xff\n")
    for path, what in ((tmp_path / "latin1.yaml", "not UTF-8"), (Path("/dev/zero"), "cannot read"),
                       (tmp_path, "cannot read"), (tmp_path / "absent", "cannot read")):
        with pytest.raises(UserError, match=what) as info:
            fsio.read_user_text(path, "config")
        assert "\n" not in str(info.value)


def test_append_log_refuses_a_link_at_its_name(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("x\n")
    log = tmp_path / "monitor.jsonl"
    log.symlink_to(victim)
    with pytest.raises(OSError):
        fsio.open_append_nofollow(log)
    assert victim.read_text() == "x\n"


def test_makedirs_private_ignores_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        fsio.makedirs_private(tmp_path / "a" / "b", 0o755)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o755


# ---- yamlio / term ----------------------------------------------------------------------------------------------
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")) + "threads: *i\n"


@pytest.mark.parametrize("text, problem", [
    (LAUGHS, "anchor of a list or mapping"),
    ("a: 1\nb: 2\na: 3\n", ":3: duplicate key 'a' (first at line 1)"),
    ("{a: 1, a: 2}\n", "duplicate key 'a'"),
    ("[" * 900 + "]" * 900, "nested deeper than 32"),
    ("a: [1, 2\n", "not valid YAML"),
    ("- 1\n", "must be a YAML mapping"),
])
def test_yaml_loader_refuses_in_one_bounded_line(text: str, problem: str) -> None:
    with pytest.raises(UserError, match=problem.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")) as info:
        yamlio.load_mapping(text, "f.yaml", "a profile")
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_yaml_loader_keeps_aliases_of_plain_values() -> None:
    assert yamlio.load_mapping("x: &v 3\ny: *v\n", "f.yaml", "config")[0] == {"x": 3, "y": 3}


def test_brief_is_bounded_for_any_value() -> None:
    huge = [[list(range(1000))] * 1000]
    assert len(yamlio.brief(huge)) <= 60 and len(yamlio.brief("x" * 10**6)) <= 60
    assert "\x1b" not in yamlio.brief("\x1b[2J")


def test_printable_escapes_terminal_controls() -> None:
    assert printable("a\x1b[31mb\nc\u202ed\te") == "a\\x1b[31mb\\nc\\u202ed\te"


# ---- policies ---------------------------------------------------------------------------------------------------
def _gpus() -> list:
    return [Gpu(index=1, pci_bus_id="0000:3b:00.0", uuid="GPU-0aaa"), Gpu(index=0, pci_bus_id="0000:1a:00.0",
                                                                          uuid="GPU-0abb")]


@pytest.mark.parametrize("raw, buses, stopped", [
    (None, ["0000:1a:00.0", "0000:3b:00.0"], None),
    ("", [], ""),
    ("1,0", ["0000:3b:00.0", "0000:1a:00.0"], None),
    ("0,7,1", ["0000:1a:00.0"], "7"),
    ("GPU-0", [], "GPU-0"),  # an ambiguous UUID prefix: CUDA rejects it
    ("GPU-0ab", ["0000:1a:00.0"], None),
    ("gpu-0aa", ["0000:3b:00.0"], None),
    ("0aa", ["0000:3b:00.0"], None),
    ("0,0", ["0000:1a:00.0"], "0"),
    ("-1", [], "-1"),
    ("0,,1", ["0000:1a:00.0"], ""),
])
def test_cuda_visible_devices_is_read_as_cuda_reads_it(raw: str, buses: list, stopped: str) -> None:
    v = cuda_visible.select(_gpus(), raw)
    assert [g.pci_bus_id for g in v.known] == buses
    assert v.stopped_at == stopped
    assert v.hides_all == (raw is not None and not buses)


def test_mig_instance_keeps_its_parent_or_stays_unknown() -> None:
    v = cuda_visible.select(_gpus(), "MIG-GPU-0aaa/1/0,MIG-8f3a")
    assert [g.pci_bus_id if g else None for g in v.gpus] == ["0000:3b:00.0", None] and v.notes


@pytest.mark.parametrize("temp, slowdown, level", [
    (74, None, ""), (75, None, "warning"), (84.9, None, "warning"), (85, None, "critical"),
    (79, 90, ""), (80, 90, "warning"), (90, 90, "critical"),
])
def test_gpu_temperature_lines_are_at_the_line(temp: float, slowdown: int, level: str) -> None:
    assert gpu_health.temperature(temp, slowdown) == level


def test_clock_events_rank_hardware_first() -> None:
    events = gpu_health.clock_events(0x4 | 0x20 | 0x80 | 0x1)
    assert [(kind, level) for kind, level, _bits, _what in events] == [
        ("gpu_throttle_hw", "critical"), ("gpu_throttle_thermal", "warning"), ("gpu_throttle_power", "notice")]
    assert gpu_health.clock_events(0x1 | 0x10) == []  # idle and sync boost are normal
    assert [gpu_health.doctor_status(lv) for lv in ("critical", "warning", "notice", "")] == [
        "fail", "warn", "warn", "pass"]


def test_cpu_budget_rounds_a_quota_down_and_never_exceeds_the_cpuset() -> None:
    cpu = Cpu(logical=8, allowed_cpus=(0, 1, 2, 3), cgroup=Cgroup(quota_cpus=2.5))
    assert cpu_policy.quota(cpu) == 2.5 and cpu_policy.thread_budget(cpu) == 2
    assert cpu_policy.thread_budget(Cpu(logical=8, allowed_cpus=(0, 1), quota_cpus=6.0)) == 2
    assert cpu_policy.thread_budget(Cpu(logical=8)) == 8 and cpu_policy.thread_budget(Cpu()) is None
    assert cpu_policy.quota_threads(0.3) == 1


def test_facts_count_the_devices_cuda_visible_devices_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """The detector's inferred torch device count follows the same reading of CUDA_VISIBLE_DEVICES as the planner."""
    from hosttune import detect
    from hosttune.detect import torchenv

    seen = {}

    def fake_from_probe(target, data, cuda_driver, visible):  # type: ignore[no-untyped-def]
        seen["n"] = len(visible)
        return None

    monkeypatch.setattr(torchenv, "from_probe", fake_from_probe)
    monkeypatch.setattr(torchenv, "run_probe", lambda io, target: {})
    monkeypatch.setattr(detect.gpu, "probe", lambda *a, **k: (tuple(_gpus()), {"nvml": "ok"}, 0))
    for raw, n in ((None, 2), ("1", 1), ("GPU-0", 0), ("MIG-8f3a", 1), ("", 0)):
        if raw is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", raw)
        detect.collect(python="/bin/true")
        assert seen["n"] == n, raw
