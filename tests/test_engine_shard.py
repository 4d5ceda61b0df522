"""Sharded training (issue 14): `shard=zero1` and `shard=fsdp` (FSDP2, with `offload=cpu`) in real 2-rank gloo runs
(the ranks as torchrun starts them, tests/_ranks.py): they learn, compute the same training as DDP, resume bitwise
from a torch.distributed.checkpoint (DCP) checkpoint, and an fsdp run resumes on one rank; the export of an fsdp run
gathers the full model. In-process: DCP's pickled metadata from a checkpoint directory is never run, an incomplete
sharded checkpoint is skipped, a checkpoint written unsharded is refused by a sharded run in one line; as root, a
dcp/.metadata planted in another user's run directory runs nothing (a real 1-rank fsdp run through the engine).

gloo and FSDP2 on CPU: FSDP2 reduce-scatters gradients with dist.reduce_scatter_tensor, which ProcessGroupGloo
implements in torch 2.13 (these runs are the proof), and all-gathers parameters with all_gather_into_tensor.
"""

import json
import os
import pickle
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict

import pytest

torch = pytest.importorskip("torch")

from _enginehelp import TINY, assert_one_line_error, engine  # noqa: E402
from _enginemainhelp import engine_here  # noqa: E402
from _ranks import run_ranks  # noqa: E402
from test_engine_integration import metrics, summary  # noqa: E402

from hosttune.engine import checkpoint as ckpt  # noqa: E402
from hosttune.engine import shard  # noqa: E402
from hosttune.engine.config import ConfigError, load_config  # noqa: E402
from hosttune.engine.models import GPT  # noqa: E402
from hosttune.engine.oom import oom_advice  # noqa: E402

# gpt-tiny shrunk for 2 ranks on 2 shared cores; dropout, so a disturbed RNG stream shows in the weights.
TINY_GPT = ["--preset", "gpt-tiny", "--set", "n_layer=2", "--set", "n_embd=32", "--set", "n_head=2",
            "--set", "block_size=16", "--set", "dropout=0.1",
            "--set", "warmup_steps=2", "--set", "eval_batches=1", "--set", "amp=off", "--set", "device=cpu",
            "--set", "steps=8", "--set", "ckpt_interval=4", "--set", "log_interval=2",
            "--set", "micro_batch_size=2", "--set", "grad_accum=2"]  # accumulation: DDP's and FSDP's no_sync


def sets(*items: str) -> list:
    return [a for s in items for a in ("--set", s)]


def dcp_contents(step_dir: Path, tmp: Path) -> Dict[str, Any]:
    """Everything in a sharded checkpoint's dcp/ (model and optimizer), gathered into plain tensors by torch's own
    converter: an independent reading of what the engine wrote."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    out = tmp / f"{step_dir.parent.parent.name}-{step_dir.name}.pt"
    dcp_to_torch_save(str(step_dir / "dcp"), str(out))
    return torch.load(out, weights_only=False)


def assert_same(a: Any, b: Any, where: str = "") -> int:
    """Bitwise equality of nested dicts of tensors; returns how many values were compared."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), (where, set(a) ^ set(b))
        return sum(assert_same(a[k], b[k], f"{where}.{k}") for k in a)
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{where} differs (max {(a.float() - b.float()).abs().max().item():.3g})"
        return 1
    assert a == b, where
    return 1


def cut_back(done: Path, at_step: int, dst: Path) -> Path:
    shutil.copytree(done, dst)
    for p in (dst / "checkpoints").glob("step-*"):
        if ckpt.step_of(p) > at_step:
            shutil.rmtree(p)
    return dst


def losses(run_dir: Path) -> list:
    return [m["loss"] for m in metrics(run_dir) if "loss" in m]


# The engine's CLI run several times in one process per rank. Each run has a rendezvous store of its own: rank 0
# finds a free port right before the run (as torchrun --standalone does) and hands it to the other rank in a file,
# so a rank that finished one run first never meets the store of the run before, which its rank 0 may still be
# closing. The engine makes its gloo group for each run and destroys it after (test_engine_exact.py checks that).
RUNS_SCRIPT = """
import json, os, socket, sys, time
from hosttune.engine.__main__ import main
for i, args in enumerate(json.loads(sys.argv[1])):
    note = f"port-{i}"
    if os.environ["RANK"] == "0":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with open(note + ".part", "w") as f:
            f.write(str(port))
        os.replace(note + ".part", note)
    while not os.path.exists(note):  # a rank that fails ends the job (tests/_ranks.py): no endless wait
        time.sleep(0.05)
    with open(note) as f:
        os.environ["MASTER_PORT"] = f.read()
    rc = main(args)
    if rc:
        sys.exit(rc)
"""


def engine_runs(cwd: Path, *runs: list) -> None:
    """2 ranks as torchrun starts them (tests/_ranks.py) that run the engine's CLI once for each of `runs` (its
    arguments), one after the other: an interpreter and a torch import per rank for all of them (issue 21)."""
    script = cwd / "engine_runs.py"
    script.write_text(RUNS_SCRIPT)
    run_ranks([str(script), json.dumps([list(args) for args in runs])], cwd)


SHARD = {"none": sets("shard=none"), "zero1": sets("shard=zero1"), "fsdp": sets("shard=fsdp", "offload=cpu")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-rank run each of shard=none, zero1 and fsdp (with offload=cpu): the same data, seed and batches, so
    the three must train alike; one after the other in the same two rank processes (engine_runs)."""
    cwd = tmp_path_factory.mktemp("shard")
    engine_runs(cwd, *[[*TINY_GPT, *SHARD[mode], "--run-dir", mode] for mode in ("none", "zero1", "fsdp")])
    return cwd


@pytest.mark.integration
@pytest.mark.slow  # the `runs` fixture: three 2-rank runs
@pytest.mark.parametrize("mode", ["zero1", "fsdp"])
def test_sharded_runs_learn_like_ddp_and_checkpoint_through_dcp(runs: Path, mode: str) -> None:
    s = summary(runs / mode)
    assert s["world_size"] == 2 and s["step"] == 8 and not s["stopped_early"]
    got, ddp = losses(runs / mode), losses(runs / "none")
    assert got[-1] < got[0] - 0.3, got  # it learns: 8 steps take the loss from ~4.1 to ~3.7 nats
    # The same training as DDP up to float summation order (ZeRO: the same math on partitions; FSDP: the same
    # gradients through reduce-scatter, the parameters all-gathered for each block).
    assert max(abs(a - b) for a, b in zip(got, ddp)) < 2e-3, (got, ddp)
    last = runs / mode / "checkpoints" / "step-0000008"
    state = torch.load(last / "state.pt", weights_only=True)
    assert state["shard"] == mode and state["model"] == {} and state["optimizer"] == {}  # they live in dcp/
    meta = shard.safe_reader(last / "dcp").read_metadata()
    qkv = meta.state_dict_metadata["model.blocks.0.attn.qkv.weight"]
    # FSDP: every parameter is split between the ranks' files; ZeRO: parameters are whole, the AdamW state of
    # each parameter is held (and written) by one rank only.
    assert len(qkv.chunks) == (2 if mode == "fsdp" else 1)
    files: Dict[str, set] = {}
    for index, info in meta.storage_data.items():
        if index.fqn.startswith("optim.") and index.fqn.endswith(".exp_avg"):
            files.setdefault(index.fqn, set()).add(info.relative_path)
    per_key = {len(f) for f in files.values()}
    assert per_key == ({2} if mode == "fsdp" else {1}), files  # zero1: each statistic lives on one rank...
    assert set().union(*files.values()) == {"__0_0.distcp", "__1_0.distcp"}  # ... and both ranks hold some
    assert sorted(p.name for p in (last / "dcp").iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    full = dcp_contents(last, runs)
    assert set(full["optim"]) == {n for n, _ in GPT(64, 16, 2, 2, 32).named_parameters()}
    assert set(full["optim"]["tok.weight"]) == {"step", "exp_avg", "exp_avg_sq"}


@pytest.fixture(scope="module")
def resumed(runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zero1 and fsdp runs cut back to their step-4 checkpoint and resumed to step 8: both resumes in two fresh
    rank processes (engine_runs), not those that wrote the checkpoints."""
    cwd = tmp_path_factory.mktemp("resumed")
    for mode in ("zero1", "fsdp"):
        cut_back(runs / mode, 4, cwd / mode)
    engine_runs(cwd, *[[*TINY_GPT, *SHARD[mode], "--run-dir", mode, "--resume"] for mode in ("zero1", "fsdp")])
    return cwd


@pytest.mark.integration
@pytest.mark.slow  # the `runs` fixture: three 2-rank runs
@pytest.mark.parametrize("mode", ["zero1", "fsdp"])
def test_sharded_run_resumes_bitwise(runs: Path, resumed: Path, mode: str, tmp_path: Path) -> None:
    run_dir = resumed / mode
    assert [m["step"] for m in metrics(run_dir) if m.get("event") == "resume"] == [4]
    n = assert_same(dcp_contents(run_dir / "checkpoints" / "step-0000008", tmp_path),
                    dcp_contents(runs / mode / "checkpoints" / "step-0000008", tmp_path))
    assert n > 50  # every parameter and every AdamW statistic


@pytest.mark.integration
@pytest.mark.slow  # the `runs` fixture: three 2-rank runs
def test_fsdp_run_resumes_on_one_rank(runs: Path, tmp_path: Path) -> None:
    resumed = cut_back(runs / "fsdp", 4, tmp_path / "one")
    # The one rank in this process (issue 21: an interpreter and a torch import fewer); what it prints, warnings
    # included, is checked as the process's stderr (tests/_enginemainhelp.py).
    r = engine_here(*TINY_GPT, *sets("shard=fsdp", "steps=10"), "--run-dir", "one", "--resume", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "checkpoint was written by 2 rank(s), this run has 1" in r.stderr
    assert "Traceback" not in r.stderr and "torch.distributed is disabled" not in r.stderr
    assert [m["step"] for m in metrics(resumed) if m.get("event") == "resume"] == [4]
    s = summary(resumed)
    assert s["world_size"] == 1 and s["step"] == 10 and s["final_train_loss"] < losses(runs / "fsdp")[0]
    # the 2-rank checkpoint's parameters were what the 1-rank run started from: its step-10 checkpoint differs
    # from step 4 by 6 optimizer steps, not by a fresh initialisation
    start = dcp_contents(resumed / "checkpoints" / "step-0000004", tmp_path)["model"]
    end = dcp_contents(resumed / "checkpoints" / "step-0000010", tmp_path)["model"]
    assert all((end[k] - start[k]).abs().max() < 0.05 for k in start)


@pytest.mark.integration
@pytest.mark.slow  # the `runs` fixture: three 2-rank runs
def test_export_of_an_fsdp_run_gathers_the_full_model(runs: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from hosttune.engine import export

    # torch.export's model.pt2 is the subject (the gathered parameters); the ONNX trace of the same model would
    # add a minute and check nothing about the gathering (test_engine_export.py checks the ONNX path)
    monkeypatch.setattr(export, "_missing_onnx_modules", lambda: ["onnxscript"])
    lines: list = []
    checks = export.export_run(runs / "fsdp", tmp_path / "out", lines.append)
    assert checks[0].format == "torch.export" and checks[0].ok and checks[0].samples == 16, lines
    program = torch.export.load(str(tmp_path / "out" / "model.pt2"))
    saved = dcp_contents(runs / "fsdp" / "checkpoints" / "step-0000008", tmp_path)["model"]
    params = program.state_dict
    assert params["blocks.0.attn.qkv.weight"].shape == (96, 32)  # whole, not a rank's half
    for name, value in params.items():
        assert torch.equal(value, saved[name]), name


# ---- in-process ----

def _tiny_dcp(where: Path) -> GPT:
    torch.manual_seed(0)
    model = GPT(64, 16, 1, 2, 32)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.zeros(1, 4, dtype=torch.long)).sum().backward()
    opt.step()
    shard.save(model, opt, where)
    return model


def test_dcp_metadata_pickle_from_the_checkpoint_is_never_run(tmp_path: Path) -> None:
    _tiny_dcp(tmp_path / "dcp")
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (tmp_path / "dcp" / ".metadata").write_bytes(pickle.dumps(Payload()))
    with pytest.raises(RuntimeError, match="posix.system is not allowed"):
        shard.load_model(GPT(64, 16, 1, 2, 32), tmp_path / "dcp")
    assert not marker.exists()


def test_dcp_roundtrip_into_a_fresh_model_and_optimizer(tmp_path: Path) -> None:
    model = _tiny_dcp(tmp_path / "dcp")
    fresh = GPT(64, 16, 1, 2, 32)
    opt = torch.optim.AdamW(fresh.parameters(), lr=1e-3)
    shard.load(fresh, opt, tmp_path / "dcp")
    assert_same(fresh.state_dict(), model.state_dict())
    assert int(opt.state[fresh.tok.weight]["step"]) == 1


def test_sharded_checkpoint_without_its_dcp_part_is_unusable(tmp_path: Path) -> None:
    step = tmp_path / "step-0000004"
    step.mkdir()
    ckpt.atomic_save({"model": {}, "optimizer": {}, "scheduler": {}, "scaler": {}, "step": 4, "epoch": 0, "pos": 1,
                      "shard": "fsdp"}, step / "state.pt")
    with pytest.raises(ckpt.Unusable, match="dcp/.metadata is missing"):
        ckpt.load(step, 0, torch.device("cpu"))


def test_a_sharded_run_refuses_an_unsharded_checkpoint_in_one_line(tmp_path: Path) -> None:
    from hosttune.engine.api import fit

    def data(n: int = 32):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(n, 4, generator=g)
        return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

    common = dict(steps=2, micro_batch_size=4, warmup_steps=1, device="cpu", amp="off", run_dir=str(tmp_path))
    fit(model(), data(), torch.nn.functional.cross_entropy, **common)
    from hosttune.engine.errors import EngineError

    with pytest.raises(EngineError, match="written with shard=none; resume it with shard=none"):
        fit(model(), data(), torch.nn.functional.cross_entropy, shard="fsdp", resume=True, **dict(common, steps=4))


def test_shard_settings_are_checked_and_oom_advice_follows_them() -> None:
    with pytest.raises(ConfigError, match="offload=cpu needs shard=fsdp"):
        load_config("gpt-tiny", None, ["offload=cpu", "shard=zero1"])
    with pytest.raises(ConfigError, match="shard must be one of none, zero1, fsdp"):
        load_config("gpt-tiny", None, ["shard=zero3"])
    base = ["micro_batch_size=1", "amp=bf16", "activation_checkpointing=true"]
    advice = "\n".join(oom_advice(load_config("gpt-tiny", None, base)))
    assert "--set shard=zero1" in advice and "--set shard=fsdp" in advice and "offload" not in advice
    advice = "\n".join(oom_advice(load_config("gpt-tiny", None, base + ["shard=zero1"])))
    assert "shard=zero1" not in advice and "--set shard=fsdp" in advice
    advice = "\n".join(oom_advice(load_config("gpt-tiny", None, base + ["shard=fsdp"])))
    assert "--set offload=cpu" in advice and "shard=fsdp" not in advice
    advice = "\n".join(oom_advice(load_config("gpt-tiny", None, base + ["shard=fsdp", "offload=cpu"])))
    assert "more GPUs" in advice and "--set" not in advice.split("reduce fragmentation")[0]


def test_a_failed_sharded_save_keeps_the_last_checkpoint_and_is_one_line(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The DCP part goes through checkpoint.save's staging: a full disk while writing it leaves no step dir, no
    staging dir, the previous checkpoint in place, and one line naming the cause."""
    import errno

    from hosttune.engine.api import fit
    from hosttune.engine.errors import EngineError

    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    data = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    common = dict(micro_batch_size=4, warmup_steps=1, device="cpu", amp="off", shard="fsdp", run_dir=str(tmp_path))
    fit(model, data, torch.nn.functional.cross_entropy, steps=2, **common)  # one rank: DCP format all the same
    assert (tmp_path / "checkpoints" / "step-0000002" / "dcp" / ".metadata").is_file()
    real_save = shard.save

    def full_disk(model, optimizer, where):
        real_save(model, optimizer, where)  # the files are there, then the disk fills up
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(shard, "save", full_disk)
    with pytest.raises(EngineError, match="cannot save checkpoint step-0000004 .*No space left on device.*"
                                          "step-0000002, is kept"):
        fit(model, data, torch.nn.functional.cross_entropy, steps=4, resume=True, **common)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-0000002"]


def test_dcp_metadata_with_a_dotted_name_is_refused(tmp_path: Path) -> None:
    """Issue 22: ("torch.distributed.checkpoint.filesystem", "os.system") walked to os.system under the old
    module-prefix rule. Exact pairs only now, through hosttune/unpickle.py."""
    _tiny_dcp(tmp_path / "dcp")
    marker = tmp_path / "ran"

    def text(s: str) -> bytes:
        b = s.encode()
        return b"\x8c" + bytes([len(b)]) + b

    (tmp_path / "dcp" / ".metadata").write_bytes(
        b"\x80\x04" + text("torch.distributed.checkpoint.filesystem") + text("os.system") + b"\x93"
        + text(f"touch {marker}") + b"\x85R.")
    with pytest.raises(RuntimeError, match=r"^dcp/\.metadata: torch\.distributed\.checkpoint\.filesystem\.os\.system "
                                           r"is not allowed in a checkpoint's metadata$"):
        shard.load_model(GPT(64, 16, 1, 2, 32), tmp_path / "dcp")
    assert not marker.exists()


def test_dcp_globals_are_exact_pairs_and_cover_what_dcp_writes(tmp_path: Path) -> None:
    """Every global a real DCP checkpoint names (model + AdamW state; plain values too) is on the list, and the
    list has no module-wide rule or dotted name."""
    import torch.distributed.checkpoint as dcp

    _tiny_dcp(tmp_path / "dcp")
    with shard._one_process_quiet():
        dcp.save({"a": torch.zeros(2, dtype=torch.bfloat16), "b": torch.zeros(3, dtype=torch.int64), "c": 3,
                  "d": torch.zeros(2, 2).t()}, storage_writer=dcp.FileSystemWriter(str(tmp_path / "extra")))
    seen = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            seen.add((module, name))
            return super().find_class(module, name)

    for d in ("dcp", "extra"):
        with open(tmp_path / d / ".metadata", "rb") as f:
            Recording(f).load()
        shard.read_dcp_metadata(tmp_path / d)
    assert seen <= shard.DCP_METADATA_GLOBALS, seen - shard.DCP_METADATA_GLOBALS
    assert all("." not in name for _, name in shard.DCP_METADATA_GLOBALS)


def _rewrite_metadata(where: Path, change: Any) -> None:
    meta = shard.read_dcp_metadata(where)
    change(meta)
    (where / ".metadata").write_bytes(pickle.dumps(meta, protocol=4))


@pytest.mark.parametrize("name", ["../state.pt", "/etc/hostname", "."])
def test_dcp_data_files_outside_the_checkpoint_are_refused(tmp_path: Path, name: str) -> None:
    """A planted .metadata could name any file as a data file: as root that reads e.g. /etc/shadow into a model
    that is then exported where the planter can read it."""
    _tiny_dcp(tmp_path / "dcp")

    def elsewhere(meta: Any) -> None:
        for info in meta.storage_data.values():
            info.relative_path = name

    _rewrite_metadata(tmp_path / "dcp", elsewhere)
    with pytest.raises(RuntimeError, match="is not a plain name in the checkpoint directory"):
        shard.load_model(GPT(64, 16, 1, 2, 32), tmp_path / "dcp")


def test_a_link_planted_as_a_dcp_data_file_or_metadata_is_not_followed(tmp_path: Path) -> None:
    _tiny_dcp(tmp_path / "dcp")
    data = next((tmp_path / "dcp").glob("*.distcp"))
    data.rename(tmp_path / "real.distcp")
    data.symlink_to(tmp_path / "real.distcp")
    with pytest.raises(RuntimeError, match="dcp/: .*(Too many levels of symbolic links|ELOOP|symbolic)"):
        shard.load_model(GPT(64, 16, 1, 2, 32), tmp_path / "dcp")
    data.unlink()
    (tmp_path / "real.distcp").rename(data)
    meta = tmp_path / "dcp" / ".metadata"
    meta.rename(tmp_path / "real.metadata")
    meta.symlink_to(tmp_path / "real.metadata")
    with pytest.raises(RuntimeError, match=r"dcp/\.metadata: .*symbolic links"):
        shard.load_model(GPT(64, 16, 1, 2, 32), tmp_path / "dcp")


# ---- issue 22 item 1: a planted sharded checkpoint (DCP .metadata) never runs code as root ----

def _dotted_payload(marker: Path) -> bytes:
    """Protocol 4: STACK_GLOBAL("torch.distributed.checkpoint.filesystem", "os.system")("touch MARKER"). The
    dotted name walks from an allowed module to os.system (what a module-prefix allow-list let through)."""
    def text(s: str) -> bytes:
        b = s.encode()
        return b"\x8c" + bytes([len(b)]) + b  # SHORT_BINUNICODE

    return (b"\x80\x04" + text("torch.distributed.checkpoint.filesystem") + text("os.system") + b"\x93"
            + text(f"touch {marker}") + b"\x85R.")


class _SystemPayload:
    """A plain os.system global (posix.system)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def sharded_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 1-rank shard=fsdp run (checkpoints step-1 and step-2, each with dcp/.metadata), run in this
    process: it is the input here, not the subject."""
    cwd = tmp_path_factory.mktemp("sharded")
    r = engine_here(*TINY, "--set", "shard=fsdp", "--run-dir", "run", cwd=cwd)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (cwd / "run" / "checkpoints" / "step-0000002" / "dcp" / ".metadata").is_file()
    return cwd / "run"


# The dotted-name cases run the real engine process end to end (what an admin sees: exit status and stderr of the
# interpreter), so they are integration tests; the os.system cases run in this process and stay in `make check`.
@pytest.mark.parametrize("payload, command", [
    pytest.param("dotted-name", "--resume", marks=pytest.mark.integration),
    pytest.param("dotted-name", "--export", marks=pytest.mark.integration),
    ("os.system", "--resume"),
    ("os.system", "--export"),
])
@pytest.mark.slow
def test_a_planted_dcp_metadata_in_another_users_run_dir_runs_nothing_as_root(
        other_user: Any, sharded_run: Path, payload: str, command: str) -> None:
    """The run directory is the other user's (an admin resuming or exporting a user's model is the normal case);
    they replace step-2's dcp/.metadata with a pickle that would create a marker. As root: no marker, and one
    line naming the refused global, exit 2 (DCP's metadata is read when the model is loaded, after the
    checkpoint was chosen: the engine stops rather than training on from a checkpoint it cannot read)."""
    run = other_user.home / "run"
    shutil.copytree(sharded_run, run)
    subprocess.run(["chown", "-R", f"{other_user.uid}:{other_user.gid}", str(run)], check=True)
    marker = other_user.home / "owned"
    blob = _dotted_payload(marker) if payload == "dotted-name" else pickle.dumps(_SystemPayload(marker), protocol=4)
    staged = other_user.home / "payload.pkl"
    staged.write_bytes(blob)
    staged.chmod(0o644)
    meta = run / "checkpoints" / "step-0000002" / "dcp" / ".metadata"
    done = other_user.run(["cp", str(staged), str(meta)])  # written by them, into their own run directory
    assert done.returncode == 0, done.stderr
    # Each command once as the real process (what an admin sees), once in this process (issue 21: the unpickler
    # is the same for both payloads; an interpreter and a torch import fewer).
    runner = engine if payload == "dotted-name" else engine_here
    if command == "--resume":
        r = runner(*TINY, "--set", "shard=fsdp", "--set", "steps=3", "--run-dir", str(run), "--resume",
                   cwd=other_user.home)
    else:
        r = runner("--export", str(other_user.home / "out"), "--run-dir", str(run), cwd=other_user.home)
    assert not marker.exists(), "the planted pickle ran as root"
    refused = ("torch.distributed.checkpoint.filesystem.os.system" if payload == "dotted-name"
               else "posix.system")
    assert_one_line_error(r, "step-0000002", f"{refused} is not allowed in a checkpoint's metadata")
