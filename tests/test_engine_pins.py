"""Engine behaviours pinned at unit level (issue 21, "Tests that catch real bugs"): each test here fails when the
behaviour it names breaks - single process, tiny models, CPU, no torchrun.

- gradients are zeroed after every optimizer step (else each step adds the previous steps' gradients);
- a checkpoint saved again at the same step keeps the old copy until the new one is in place;
- no rank writes into the staging directory before all ranks agree that rank 0 made it;
- under fp16 the gradients are clipped after GradScaler.unscale_ (else the clip sees scaled gradients);
- a resume restores the DataLoader worker generator (the workers' base seeds);
- the process group the engine made is destroyed by teardown (gloo threads gone), with every collective's tensor
  still referenced while it is destroyed.
"""

import os
import sys
import time
import types
import weakref
from datetime import timedelta
from pathlib import Path
from typing import Any, List

import pytest

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine import optim, runtime, state  # noqa: E402
from hosttune.engine.config import Config  # noqa: E402

CPU = torch.device("cpu")


def state_for(model: torch.nn.Module, optimizer: Any, scaler: Any = None) -> "state.TrainState":
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    scaler = scaler or torch.amp.GradScaler("cpu", enabled=False)
    return state.TrainState(model, optimizer, scheduler, scaler, torch.Generator().manual_seed(0))


# ---- the optimizer step ----

def test_gradients_are_zeroed_after_every_step() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    st = state_for(model, torch.optim.SGD(model.parameters(), lr=0.1))
    model(torch.randn(4, 3)).sum().backward()
    optim.optimizer_step(st, Config(grad_clip=0.0))
    # The next backward must write fresh gradients, not add to these.
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    assert torch.equal(model.bias.grad, torch.ones(2))  # d(sum)/d(bias) of one sample, nothing left over


def test_fp16_gradients_are_clipped_after_unscaling() -> None:
    """The clip and the reported norm see the true gradients: scaled ones are 1024x larger, so clipping them to 1
    and then unscaling would shrink every update 1024-fold, and the logged grad_norm would be the scaled one."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -2.0, 3.0, 0.5]]))
    before = model.weight.detach().clone()
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)  # fp16's scaler, run on CPU
    st = state_for(model, torch.optim.SGD(model.parameters(), lr=1.0), scaler)
    x = torch.tensor([[3.0, 0.0, 4.0, 0.0]])  # d(out)/dw = x: the true gradient's norm is 5
    scaler.scale(model(x).sum()).backward()
    norm = optim.optimizer_step(st, Config(grad_clip=1.0))
    assert float(norm) == pytest.approx(5.0)
    # The update is the true gradient clipped to norm 1: x / 5 (SGD, lr 1).
    assert torch.allclose(before - model.weight.detach(), x / 5.0, atol=1e-6)


# ---- checkpoints ----

def shared(step: int, value: float) -> dict:
    return {"model": {"w": torch.full((2,), value)}, "optimizer": {}, "scheduler": {}, "scaler": {}, "step": step,
            "epoch": 0, "pos": 0}


def saved_value(path: Path) -> float:
    return float(ckpt.load(path, 0, CPU)["model"]["w"][0])


def test_resaving_a_step_keeps_the_old_copy_until_the_new_one_is_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "checkpoints"
    ckpt.save(d, 10, 0, lambda: shared(10, 1.0), {}, keep=3)
    # At every rename of the second save, step 10 is listed and loads (the old copy or the new one).
    real_replace = os.replace
    seen: List[float] = []

    def checked_replace(src: Any, dst: Any) -> None:
        listed = [p for p in ckpt.list_checkpoints(d) if ckpt.step_of(p) == 10]
        assert listed, f"no step 10 while renaming {src} -> {dst}"
        seen.append(saved_value(listed[0]))
        real_replace(src, dst)

    monkeypatch.setattr(ckpt.os, "replace", checked_replace)
    ckpt.save(d, 10, 0, lambda: shared(10, 2.0), {}, keep=3)
    monkeypatch.setattr(ckpt.os, "replace", real_replace)
    assert seen and saved_value(d / "step-0000010") == 2.0
    assert [p.name for p in d.iterdir()] == ["step-0000010"]  # the old copy is gone once the new one is in place

    # The new copy's rename fails: the old copy is back under its name, intact.
    def failing_replace(src: Any, dst: Any) -> None:
        if Path(src).name.startswith(ckpt.STAGE_PREFIX):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(ckpt.os, "replace", failing_replace)
    with pytest.raises(ckpt.CheckpointError, match="cannot save checkpoint step-0000010"):
        ckpt.save(d, 10, 0, lambda: shared(10, 3.0), {}, keep=3)
    monkeypatch.setattr(ckpt.os, "replace", real_replace)
    assert saved_value(d / "step-0000010") == 2.0

    # A crash between moving the old copy aside and renaming the new one: the old copy is still what loads.
    def crash_replace(src: Any, dst: Any) -> None:
        if Path(src).name.startswith(ckpt.STAGE_PREFIX):
            raise KeyboardInterrupt  # stands for the process dying here
        real_replace(src, dst)

    monkeypatch.setattr(ckpt.os, "replace", crash_replace)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save(d, 10, 0, lambda: shared(10, 4.0), {}, keep=3)
    monkeypatch.setattr(ckpt.os, "replace", real_replace)
    assert [saved_value(p) for p in ckpt.list_checkpoints(d)] == [2.0]


def test_no_rank_writes_before_all_agree_that_rank_0_made_the_staging_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "checkpoints"
    events: List[Any] = []
    real_save = ckpt.atomic_save
    monkeypatch.setattr(ckpt, "atomic_save", lambda obj, path: (events.append(("write", path.name)),
                                                               real_save(obj, path)))

    # Rank 1, and rank 0 could not make the directory: the first agreement says no; rank 1 writes nothing.
    def rank0_failed(ok: bool) -> bool:
        events.append(("agree", ok))
        return False

    with pytest.raises(ckpt.CheckpointError, match="rank 0 could not create it"):
        ckpt.save(d, 5, 1, lambda: shared(5, 1.0), {"rng": 1}, keep=2, agree=rank0_failed)
    assert not [e for e in events if e[0] == "write"], events
    assert not d.exists() or not any(d.iterdir())

    # Rank 1, rank 0 made it: rank 1's file is written only after the first agreement.
    events.clear()
    (d / f"{ckpt.STAGE_PREFIX}0000005").mkdir(parents=True)  # what rank 0 made

    def all_ok(ok: bool) -> bool:
        events.append(("agree", ok))
        return ok

    ckpt.save(d, 5, 1, lambda: shared(5, 1.0), {"rng": 1}, keep=2, agree=all_ok)
    assert events[0] == ("agree", True) and ("write", "rng-rank1.pt") in events, events
    assert events.index(("write", "rng-rank1.pt")) > 0


# ---- resume: the loader's generator ----

def test_resume_restores_the_dataloader_worker_generator() -> None:
    model = torch.nn.Linear(2, 2)
    st = state_for(model, torch.optim.SGD(model.parameters(), lr=0.1))
    torch.randint(0, 1 << 30, (5,), generator=st.loader_gen)  # some epochs' worker seeds drawn
    saved = st.rank_state(False)
    expected = torch.randint(0, 1 << 30, (8,), generator=st.loader_gen)  # what the run drew next
    resumed = state_for(torch.nn.Linear(2, 2), torch.optim.SGD(model.parameters(), lr=0.1))
    assert resumed.load_rank(saved, False)
    assert torch.equal(torch.randint(0, 1 << 30, (8,), generator=resumed.loader_gen), expected)
    # The DataLoader takes its workers' base seed from that generator: the same seed after the resume.
    loader = torch.utils.data.DataLoader(list(range(4)), num_workers=0, generator=resumed.loader_gen)
    assert loader.generator is resumed.loader_gen


# ---- the engine's process group ----

def test_setup_imports_the_group_default_modules_before_making_the_group(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    events: List[str] = []

    class Stop(Exception):
        pass

    def fake_init(*args: Any) -> None:
        events.append("init_process_group")
        raise Stop

    monkeypatch.setattr(runtime, "import_group_default_modules", lambda sharded: events.append("import"))
    monkeypatch.setattr(runtime, "init_process_group", fake_init)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(Stop):
        runtime.setup(Config(device="cpu", run_dir=str(tmp_path)))
    assert events == ["import", "init_process_group"]
    assert set(runtime.GROUP_DEFAULT_MODULES) >= {"torch.distributed.nn.functional"}  # the one DDP imports


def test_unpin_group_resets_defaults_that_hold_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    group = object()
    other = object()
    fake = types.ModuleType("torch._hosttune_pin_test")
    exec("def f(x, group=G, o=O):\n    return group\n"
         "def k(*, group=G):\n    return group\n"
         "class C:\n    def m(self, group=G):\n        return group\n", {"G": group, "O": other}, fake.__dict__)
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    assert runtime.unpin_group(group) == 3
    assert fake.f(1) is None and fake.k() is None and fake.C().m() is None
    assert fake.f.__defaults__[1] is other  # only the group is released


def gloo_threads() -> int:
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            names.append(Path(f"/proc/self/task/{tid}/comm").read_text().strip())
        except OSError:
            continue
    return sum("gloo" in n for n in names)


@pytest.mark.skipif(not dist.is_available(), reason="torch without distributed")
def test_teardown_destroys_the_engines_group_with_ddp_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-rank gloo group in this process, used by DDP as the engine does: after teardown the group object is
    freed (its gloo threads joined) and the last collectives' tensors were still referenced while it went."""
    assert not dist.is_initialized(), "an earlier test in this process left a process group"
    threads_before = gloo_threads()
    runtime.import_group_default_modules(False)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    rt = runtime.Runtime(1, 0, 0, CPU, None, False, owns_group=True)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
    model(torch.randn(2, 3)).sum().backward()
    rt.all_reduce(torch.ones(2))
    del model
    # What a torch module imported after the group exists does (`def f(..., group=group.WORLD)`): pins it.
    late = types.ModuleType("torch._hosttune_late_import_test")
    late.G = dist.group.WORLD
    exec("def f(group=G):\n    return group\n", late.__dict__)
    del late.G  # only the default holds it now
    monkeypatch.setitem(sys.modules, late.__name__, late)
    group = weakref.ref(dist.group.WORLD)
    held: List[int] = []
    real_destroy = dist.destroy_process_group
    monkeypatch.setattr(dist, "destroy_process_group", lambda *a: (held.append(len(rt._recent)), real_destroy(*a)))
    runtime.teardown(rt, finished=True)
    assert not dist.is_initialized()
    assert group() is None, "the gloo group outlived teardown"
    # A gloo thread can still be in /proc a moment after the group is freed (1 run in 6 on a busy 2-core box,
    # before the engine's split too): wait for the count to come back, with a generous deadline.
    deadline = time.monotonic() + 30
    while gloo_threads() > threads_before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gloo_threads() == threads_before
    assert held == [1] and len(rt._recent) == 0  # referenced while destroyed, released after
    assert late.f() is None


@pytest.mark.skipif(not dist.is_available(), reason="torch without distributed")
def test_teardown_destroys_the_group_when_the_final_barrier_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer that died after finishing makes the final barrier raise: the group is still destroyed (else gloo
    aborts the process at interpreter exit), the tensors kept until it is gone, and the error still propagates
    (train._run's finally lets it out, as before)."""
    assert not dist.is_initialized(), "an earlier test in this process left a process group"
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    # world=2 so that teardown meets the peers in a barrier; the in-process group itself has one rank.
    rt = runtime.Runtime(2, 0, 0, CPU, None, False, owns_group=True)
    rt.all_reduce(torch.ones(2))
    group = weakref.ref(dist.group.WORLD)

    def dead_peer() -> None:
        raise RuntimeError("Connection closed by peer")

    monkeypatch.setattr(rt, "barrier", dead_peer)
    held: List[int] = []
    real_destroy = dist.destroy_process_group
    monkeypatch.setattr(dist, "destroy_process_group", lambda *a: (held.append(len(rt._recent)), real_destroy(*a)))
    with pytest.raises(RuntimeError, match="Connection closed by peer"):
        runtime.teardown(rt, finished=True)
    assert not dist.is_initialized(), "the group outlived a teardown whose barrier raised"
    assert group() is None
    assert held == [1] and len(rt._recent) == 0 and not rt.owns_group


@pytest.mark.skipif(not dist.is_available(), reason="torch without distributed")
def test_each_engine_group_of_one_process_gets_fresh_store_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A script that calls fit() twice under torchrun makes two engine groups in one elastic attempt: torch names
    the second default group as it named the first, so without a prefix of its own the second reads the first one's
    gloo addresses in the agent's store (a hang). Rank 0 (here) hosts no store to wait for."""
    assert not dist.is_initialized(), "an earlier test in this process left a process group"
    monkeypatch.setattr(runtime, "_groups_made", [0])
    for name, value in {"TORCHELASTIC_RESTART_COUNT": "3", "TORCHELASTIC_USE_AGENT_STORE": "False",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}.items():
        monkeypatch.setenv(name, value)
    prefixes: List[Any] = []
    real_prefix = dist.PrefixStore
    monkeypatch.setattr(dist, "PrefixStore", lambda p, s: prefixes.append(p) or real_prefix(p, s))
    for _ in range(2):
        assert runtime.init_process_group("gloo", 0, 1) is None
        assert dist.get_world_size() == 1
        dist.destroy_process_group()
    assert prefixes == ["hosttune/attempt_3/group_0", "hosttune/attempt_3/group_1"]


class _RecordingStore:
    """Rank 0's store as another rank holds it: records each wait; raises what a closing server raises."""

    def __init__(self) -> None:
        self.waits: List[Any] = []

    def wait(self, keys: List[str], timeout: timedelta) -> None:
        self.waits.append((keys, timeout))
        raise dist.DistNetworkError("Failed to recv, got 0 bytes. Connection was likely closed.")


def test_only_a_finished_ranks_teardown_waits_for_rank_0s_store() -> None:
    """Where rank 0 hosts the store, another rank's teardown after a finished run waits (on a key nobody sets, so
    only the server's closing ends it, or the bound) before fit() returns; a failed run's rank just leaves. The
    ordering itself, on real ranks: tests/test_engine_train.py's DDP job."""
    for finished, waits in ((False, []), (True, [(["hosttune/never-set"], runtime.STORE_CLOSE_WAIT)])):
        store = _RecordingStore()
        rt = runtime.Runtime(2, 1, 1, CPU, None, False, master_store=store)
        runtime.teardown(rt, finished=finished)
        assert store.waits == waits and rt.master_store is None


@pytest.mark.skipif(not dist.is_available(), reason="torch without distributed")
def test_the_wait_for_rank_0s_store_ends_when_it_closes_or_at_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real TCPStores: a client whose server is gone returns from await_store_close (torch's DistNetworkError,
    swallowed); one whose server stays returns at STORE_CLOSE_WAIT (DistStoreError, swallowed)."""
    monkeypatch.setattr(runtime, "STORE_CLOSE_WAIT", timedelta(milliseconds=200))
    server = dist.TCPStore("127.0.0.1", 0, 2, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=60))
    client = dist.TCPStore("127.0.0.1", server.port, 2, is_master=False, timeout=timedelta(seconds=60))
    runtime.await_store_close(client)  # the server is still there: the bound ends it
    del server
    runtime.await_store_close(client)  # closed: the connection drops
