"""Issue 14: the engine exact in every case (MFU on, DataLoader workers with random augmentation, streaming after
SIGKILL, SIGTERM to one of two ranks), right on every GPU generation (amp=auto and the MFU peak decided from the
compute capability and device name given as inputs), and the smaller defects (logged lr, checkpoint time in the
throughput, non-finite JSON, fit() errors, the caller's process group, vocab padding, fused AdamW, OOM advice,
length bucketing). The 2-rank tests run gloo ranks, a handful of steps of tiny models: under real torchrun where
torchrun is in the subject (a restart after SIGKILL, SIGTERM to one worker), else started as torchrun starts them
(tests/_ranks.py: no agent process)."""

import json
import math
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import List

import pytest

torch = pytest.importorskip("torch")

from _ranks import engine_ranks, run_ranks  # noqa: E402
from test_engine_integration import (  # noqa: E402
    _worker_pid,
    assert_bitwise_equal,
    env,
    final_params,
    metrics,
    summary,
    torchrun_argv,
)

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine import errors, oom, optim, precision, runtime, task, train  # noqa: E402
from hosttune.engine.api import fit  # noqa: E402
from hosttune.engine.config import Config, ConfigError, load_config  # noqa: E402
from hosttune.engine.data import CharLines, EpochBatches, pad_collate  # noqa: E402
from hosttune.engine.metrics import Metrics, peak_tflops  # noqa: E402
from hosttune.policy.gpu_peak import dense_peak_tflops  # noqa: E402

CPU = torch.device("cpu")
# gpt-tiny shrunk for 2 ranks on 2 shared cores; dropout, so a disturbed RNG stream shows in the weights.
TINY_GPT_SETS = ["n_layer=1", "n_embd=32", "n_head=2", "block_size=16", "micro_batch_size=4", "dropout=0.1",
                 "warmup_steps=2", "eval_batches=1", "amp=off", "device=cpu"]
TINY_GPT = ["--preset", "gpt-tiny", *[a for s in TINY_GPT_SETS for a in ("--set", s)]]


def sets(*items: str) -> List[str]:
    return [a for s in items for a in ("--set", s)]


def strict_json(line: str) -> dict:
    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


# ---- GPU-only decisions, from the capability and device name given as inputs ----

@pytest.mark.parametrize("capability, want", [((7, 0), torch.float16), ((7, 5), torch.float16),
                                              ((8, 0), torch.bfloat16), ((8, 9), torch.bfloat16),
                                              ((9, 0), torch.bfloat16)])
def test_amp_auto_follows_compute_capability(capability: tuple, want: torch.dtype) -> None:
    # V100 (7.0) and T4 (7.5) report is_bf16_supported() on current torch, but their bf16 is emulated.
    assert precision.resolve_amp("auto", torch.device("cuda", 0), capability) == want
    assert precision.resolve_amp("bf16", torch.device("cuda", 0), capability) == torch.bfloat16  # asked for: honoured


def test_amp_is_decided_after_set_device(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """On rank 3, the capability query must come after set_device(3), or it opens a context on GPU 0."""
    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)  # a 4-GPU host, every GPU visible to every rank
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: calls.append(("set_device", torch.device(d).index)))
    monkeypatch.setattr(torch.cuda, "get_device_capability",
                        lambda d=None: calls.append(("capability", torch.device(d).index)) or (7, 5))
    monkeypatch.setenv("LOCAL_RANK", "3")
    rt = runtime.setup(Config(device="cuda", run_dir=str(tmp_path), deterministic=False))
    assert rt.amp_dtype == torch.float16  # a T4: fp16 with a GradScaler, not emulated bf16
    assert calls == [("set_device", 3), ("capability", 3)]


def test_mfu_peak_from_the_one_table_by_device_name() -> None:
    def peak(name: str, dtype: str = "bf16") -> float:
        return peak_tflops(0.0, torch.device("cuda", 0), dtype, device_name=name)

    assert peak("NVIDIA H100 80GB HBM3") == dense_peak_tflops("NVIDIA H100 80GB HBM3", "bf16")
    assert peak("NVIDIA H100 80GB HBM3") > peak("NVIDIA H100 PCIe")  # SXM is not the PCIe part
    assert peak("NVIDIA L40") != peak("NVIDIA L4") and peak("NVIDIA A10G") != peak("NVIDIA A10")
    assert peak("Tesla T4", "fp16") == dense_peak_tflops("Tesla T4", "fp16")
    assert peak_tflops(0.0, CPU, "fp32") is None and peak_tflops(2.5, CPU, "fp32") == 2.5


# ---- small defects, in process ----

def test_nonfinite_metrics_are_null_with_a_flag(tmp_path: Path) -> None:
    m = Metrics(tmp_path, True, 1, 0)
    m.write({"step": 1, "loss": float("inf"), "grad_norm": float("nan"), "lr": 0.1})
    m.close()
    rec = strict_json((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert rec["loss"] is None and rec["grad_norm"] is None and rec["lr"] == 0.1
    assert sorted(rec["nonfinite"]) == ["grad_norm", "loss"]


def test_oom_advice_suggests_the_next_step_from_what_is_on() -> None:
    base = load_config("gpt-tiny", None, ["micro_batch_size=8", "activation_checkpointing=true"])
    advice = " | ".join(oom.oom_advice(base))  # no `shard` field yet: treated as none
    assert "--set shard=zero1" in advice and "micro_batch_size=4" in advice
    assert "activation_checkpointing=true" not in advice  # already on
    zero1 = SimpleNamespace(**{**base.to_dict(), "shard": "zero1"})
    advice = " | ".join(oom.oom_advice(zero1))
    assert "shard=zero1" not in advice and "--set shard=fsdp" in advice
    fsdp = SimpleNamespace(**{**base.to_dict(), "shard": "fsdp", "offload": "none"})
    advice = " | ".join(oom.oom_advice(fsdp))
    assert "shard=" not in advice and "--set offload=cpu" in advice


def test_fit_reports_a_misspelt_setting_before_anything_else() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'setps' \(did you mean 'steps'\?\)"):
        fit(config=Config(), setps=3)
    with pytest.raises(ConfigError, match="missing: loss_fn"):
        fit(torch.nn.Linear(2, 2), [1, 2])


def test_gpt_tiny_vocab_is_padded_to_64_and_optimizer_is_fused_on_cpu(tmp_path: Path) -> None:
    cfg = load_config("gpt-tiny", None, ["n_layer=1", "device=cpu"])
    model = task.build_preset_task(cfg).model
    assert model.tok.num_embeddings == 64 and model.head.out_features == 64  # the text has 62 characters
    rt = runtime.Runtime(1, 0, 0, CPU, None, False, tmp_path)
    opt = optim.build_optimizer(model, cfg, rt)
    assert optim.fused_optimizer_ok(CPU) is True  # torch 2.13 has the CPU kernel
    assert all(g["fused"] for g in opt.param_groups)


def _toy(n: int = 64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())


def test_logged_lr_is_the_steps_own_and_checkpoints_do_not_count_as_step_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_save = ckpt.save
    skew = [0.0]

    class EngineClock:
        """The engine's `time`, on which every checkpoint save lasts 1000 s more than it did: no real sleep, and a
        margin no machine's speed comes near."""

        def __getattr__(self, name: str):
            return getattr(time, name)

        def perf_counter(self) -> float:
            return time.perf_counter() + skew[0]

    def slow_save(*a, **k):
        skew[0] += 1000.0
        return real_save(*a, **k)

    monkeypatch.setattr(ckpt, "save", slow_save)
    monkeypatch.setattr(train, "time", EngineClock())
    fit(torch.nn.Linear(4, 2), _toy(), torch.nn.functional.cross_entropy, steps=6, micro_batch_size=8,
        warmup_steps=4, lr=1.0, min_lr=0.1, log_interval=1, ckpt_interval=2, device="cpu", num_workers=0,
        run_dir=str(tmp_path / "run"))
    cfg = Config(steps=6, warmup_steps=4, lr=1.0, min_lr=0.1)
    logs = [r for r in metrics(tmp_path / "run") if "loss" in r]
    assert [r["lr"] for r in logs] == pytest.approx([optim.lr_at(s, cfg) for s in range(6)])
    # A 1000-second checkpoint after steps 2 and 4 is reported as such, and left out of the next step's time.
    after = [r for r in logs if r["step"] in (3, 5)]
    assert all(r["checkpoint_s"] >= 1000 and r["step_time_s"] < 1000 for r in after), after
    assert all("checkpoint_s" not in r for r in logs if r["step"] not in (3, 5))


def test_fit_streams_an_iterable_dataset_and_refuses_one_without_len(tmp_path: Path) -> None:
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            for i in range(40):
                x = torch.tensor([float(i % 7), 1.0, -1.0, 0.5])
                yield x, torch.tensor(i % 2)

    s = fit(torch.nn.Linear(4, 2), Stream(), torch.nn.functional.cross_entropy, val_set=Stream(), steps=12,
            micro_batch_size=8, log_interval=4, device="cpu", num_workers=0, run_dir=str(tmp_path / "run"))
    assert s["step"] == 12 and s["val_samples"] > 0  # 12 x 8 samples from 40: the stream repeats

    class NoLen(torch.utils.data.Dataset):
        def __getitem__(self, i):
            return torch.zeros(4), torch.tensor(0)

    with pytest.raises(errors.EngineError, match="has no len.*IterableDataset"):
        fit(torch.nn.Linear(4, 2), NoLen(), torch.nn.functional.cross_entropy, steps=1, device="cpu",
            run_dir=str(tmp_path / "run2"))


def test_cudnn_benchmark_has_its_own_switch(tmp_path: Path) -> None:
    try:
        runtime.setup(Config(cudnn_benchmark=False, deterministic=False, device="cpu", run_dir=str(tmp_path)))
        assert torch.backends.cudnn.benchmark is False
        runtime.setup(Config(deterministic=False, device="cpu", run_dir=str(tmp_path)))
        assert torch.backends.cudnn.benchmark is True  # the default without deterministic mode
    finally:
        torch.backends.cudnn.benchmark = False
    with pytest.raises(ConfigError, match="cudnn_benchmark=true contradicts deterministic=true"):
        Config(cudnn_benchmark=True, deterministic=True)


def test_bucketing_batches_cover_each_epoch_once_per_rank() -> None:
    ds = CharLines(64, "train")
    lengths = ds.lengths()
    seen = []
    for rank in (0, 1):
        b = EpochBatches(ds, 2, rank, 7, 4, lengths)
        b.set_epoch(1)
        batches = [[i for _, _, i in keys] for keys in b]
        assert len(batches) == b.epoch_len // 4
        seen += [i for batch in batches for i in batch]
        b.set_epoch(1, skip=8)
        assert [[i for _, _, i in keys] for keys in b] == batches[2:]  # resumes at the very next batch
    assert len(seen) == len(set(seen))  # disjoint across ranks, no repeats


# ---- 2 gloo ranks ----

# The length-bucketing run: padded lines, bucketed by length, 8 steps logged every 4.
LINES_SETS = ["data=lines", "block_size=64", "length_bucketing=true", "micro_batch_size=8", "steps=8",
              "log_interval=4"]

RANKS_SCRIPT = '''
import os, random, sys
import numpy as np, torch, torch.distributed as dist
from torch import nn
from hosttune.engine.api import fit
from hosttune.engine.config import load_config

run_dir, resume = sys.argv[1], len(sys.argv) > 2

# 1. A bundled preset through fit() while the script has no process group: fit() makes the gloo group, and must
# really destroy it before returning (the caller's process goes on): not initialized, gloo's threads gone.
fit(config=load_config("gpt-tiny", None, __LINES__ + ["run_dir=" + run_dir + "-lines"]))
names = []
for tid in os.listdir("/proc/self/task"):
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            names.append(f.read().strip())
    except OSError:
        pass
gloo = sorted(n for n in names if "gloo" in n)
sys.stdout.write(f"AFTER_FIT rank={os.environ['RANK']} initialized={dist.is_initialized()} gloo={gloo}\\n")
sys.stdout.flush()


# 2. The script's own group and its own model, with a dataset that augments.
class Augmented(torch.utils.data.Dataset):
    """Random noise from all three RNGs on every fetch, as image augmentation would."""
    def __init__(self, n=256):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x[:, 0] > 0).long()
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        noise = 0.3 * torch.randn(8) + random.random() + float(np.random.rand())
        return self.x[i] + noise, self.y[i]

dist.init_process_group("gloo")  # the script's own group: fit() must use it and leave it alive
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Dropout(0.2), nn.ReLU(), nn.Linear(32, 2))
# peak_tflops: MFU on, with a peak low enough that this model's ~15 kFLOP steps do not round to an MFU of 0
fit(model, Augmented(), nn.functional.cross_entropy, steps=8, micro_batch_size=8, num_workers=2,
    persistent_workers=True, ckpt_interval=4, log_interval=4, warmup_steps=1, device="cpu", amp="off",
    peak_tflops=1e-7, run_dir=run_dir, resume=resume)
if dist.is_initialized():
    t = torch.ones(1)
    dist.all_reduce(t)
    sys.stdout.write(f"GROUP_ALIVE {int(t.item())}\\n")  # one write: two ranks share the pipe
    sys.stdout.flush()
    dist.destroy_process_group()
'''.replace("__LINES__", repr(TINY_GPT_SETS + LINES_SETS))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One 2-rank run set shared by the length-bucketing, group, MFU and workers + augmentation tests (issue 21:
    one script on 2 ranks with torchrun's environment (tests/_ranks.py), twice, instead of three 2-rank runs and a
    resume): the user's script above.
    First a bundled preset through fit() with no group of the script's (padded lines bucketed by length: `lines`),
    so fit() makes the group and must destroy it; then the script's own group and model, MFU on (peak_tflops),
    2 DataLoader workers per rank drawing from all three RNGs, dropout: `ref` runs 8 steps; `resumed` is its copy
    cut back to the step-4 checkpoint and resumed (the preset run before it again, into a new directory, so both
    processes do the same things up to the resume)."""
    cwd = tmp_path_factory.mktemp("ranks")
    script = cwd / "ranks.py"
    script.write_text(RANKS_SCRIPT)
    first = run_ranks([str(script), "a"], cwd)  # the 2 ranks as torchrun starts them, without its agent
    shutil.copytree(cwd / "a", cwd / "b")
    shutil.rmtree(cwd / "b" / "checkpoints" / "step-0000008")
    second = run_ranks([str(script), "b", "--resume"], cwd)
    return SimpleNamespace(lines=cwd / "a-lines", ref=cwd / "a", resumed=cwd / "b", outputs=(first, second))


def _after_resume(run_dir: Path) -> List[dict]:
    """The step logs the resumed process wrote (after its resume event)."""
    recs = metrics(run_dir)
    at = max(i for i, m in enumerate(recs) if m.get("event") == "resume")
    return [m for m in recs[at:] if "loss" in m]


@pytest.mark.integration
@pytest.mark.slow
def test_resume_is_bitwise_with_mfu_on(ranks: SimpleNamespace) -> None:
    before = [m for m in metrics(ranks.ref) if "loss" in m]
    after = _after_resume(ranks.resumed)
    # MFU measured in both processes: FLOPs counted at start-up (again on the resume) change no RNG stream.
    assert [m["step"] for m in before] == [4, 8] and [m["step"] for m in after] == [8], (before, after)
    assert all(0 < m["mfu"] for m in before + after), (before, after)
    assert [m["step"] for m in metrics(ranks.resumed) if m.get("event") == "resume"] == [4]
    assert_bitwise_equal(final_params(ranks.resumed), final_params(ranks.ref))


@pytest.mark.integration
@pytest.mark.slow
def test_resume_is_bitwise_with_two_workers_and_random_augmentation(ranks: SimpleNamespace) -> None:
    assert metrics(ranks.ref)[0]["loader"]["num_workers"] == 2  # the workers' RNG streams are in play
    assert [m["step"] for m in metrics(ranks.resumed) if m.get("event") == "resume"] == [4]
    assert_bitwise_equal(final_params(ranks.resumed), final_params(ranks.ref))
    for r in ranks.outputs:  # the caller's process group outlives fit() on both ranks
        assert r.stdout.count("GROUP_ALIVE 2") == 2, r.stdout + r.stderr[-2000:]


@pytest.mark.integration
@pytest.mark.slow
def test_fit_destroys_the_group_it_made_before_returning(ranks: SimpleNamespace) -> None:
    """fit() under torchrun makes the gloo group and must really destroy it before returning (the caller's process
    goes on): not initialized any more, and gloo's worker and transport threads (pt_gloo_runloop, gloo_tcp_loop)
    gone. A group kept alive past destroy_process_group() died at interpreter shutdown instead: SIGABRT."""
    for r in ranks.outputs:  # both processes of each rank, in both runs
        lines = sorted(line for line in r.stdout.splitlines() if line.startswith("AFTER_FIT"))
        assert lines == [f"AFTER_FIT rank={rank} initialized=False gloo=[]" for rank in (0, 1)], \
            r.stdout + r.stderr[-2000:]


@pytest.mark.integration
@pytest.mark.slow
def test_streaming_resumes_exactly_after_sigkill(tmp_path: Path) -> None:
    """The bundled shards streamed by 2 ranks x 2 workers; rank 1 SIGKILLed, torchrun restarts the job, which
    continues at each reader's next unseen sample and ends bitwise equal to a run that never stopped."""
    # 60 steps (issue 21: not 150): the kill lands after the step-10 checkpoint, 50 steps before the end; the log
    # lines at 20, 40, 60 show the learning (seeds 1337, 1, 2: loss 3.26 -> 2.99, 3.28 -> 2.65, 3.26 -> 2.60).
    stream = sets("data=shards", "num_workers=2", "steps=60", "ckpt_interval=10", "log_interval=20",
                  "n_embd=64", "block_size=32", "micro_batch_size=8")
    engine_ranks([*TINY_GPT, *stream, "--run-dir", "ref"], tmp_path)  # the reference: agentless ranks
    logs = [m for m in metrics(tmp_path / "ref") if "loss" in m]
    assert logs[-1]["loss"] < logs[0]["loss"]  # it learns from the stream
    proc = subprocess.Popen(torchrun_argv([*TINY_GPT, *stream, "--run-dir", "run"], "--max-restarts=1"),
                            cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (tmp_path / "run" / "checkpoints" / "step-0000010").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.02)
        os.kill(_worker_pid(proc.pid, 1), signal.SIGKILL)
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out[-3000:]
    resumes = [m for m in metrics(tmp_path / "run") if m.get("event") == "resume"]
    assert len(resumes) == 1 and resumes[0]["elastic_restart"] == 1 and resumes[0]["step"] < 60, resumes
    assert summary(tmp_path / "run")["step"] == 60
    assert_bitwise_equal(final_params(tmp_path / "run"), final_params(tmp_path / "ref"))


@pytest.mark.integration
def test_sigterm_to_one_rank_stops_both_at_that_step(tmp_path: Path) -> None:
    """No log line for 1000 steps: the stop cannot wait for one. Both ranks stop within a step and checkpoint."""
    argv = torchrun_argv([*TINY_GPT, *sets("steps=1000", "ckpt_interval=5", "log_interval=1000"), "--run-dir",
                          "run"])
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (tmp_path / "run" / "checkpoints" / "step-0000005").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.02)
        os.kill(_worker_pid(proc.pid, 1), signal.SIGTERM)
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out[-3000:]
    s = summary(tmp_path / "run")
    assert s["stopped_early"] and 5 <= s["step"] < 1000, s
    assert (tmp_path / "run" / "checkpoints" / f"step-{s['step']:07d}" / "rng-rank1.pt").exists()
    assert "checkpoint saved; run again with --resume" in out


@pytest.mark.integration
@pytest.mark.slow
def test_length_bucketing_lowers_the_padding_fraction(ranks: SimpleNamespace) -> None:
    lines_run = ranks.lines
    bucketed = [m["padding_frac"] for m in metrics(lines_run) if "loss" in m]
    # The same 8 steps of rank 0 without bucketing (the sampler alone: no training needed to count padding).
    ds = CharLines(64, "train")
    plain = EpochBatches(ds, 2, 0, Config().seed, 8)
    plain.set_epoch(0)
    pads = []
    for keys, _ in zip(plain, range(8)):
        _, y = pad_collate([ds[i] for _, _, i in keys])
        pads.append(float((y == -100).float().mean()))
    assert len(bucketed) == 2 and all(0 <= b for b in bucketed)
    assert sum(bucketed) / 2 < 0.5 * sum(pads) / len(pads), (bucketed, pads)
    assert summary(lines_run)["val_samples"] > 0 and math.isfinite(summary(lines_run)["val_loss"])
