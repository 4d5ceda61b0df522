"""Checks of the PyTorch install and this shell's environment: torch version, debug switches, allocator config,
CUDA_VISIBLE_DEVICES (read by hosttune.policy.cuda_visible), venv."""

import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from hosttune.detect import torchenv
from hosttune.detect.hostio import HostIO, small_int
from hosttune.doctor.context import Context, gpus, version_tuple
from hosttune.doctor.fixes import install, shell_path
from hosttune.doctor.model import Finding
from hosttune.policy import cuda_visible, onednn


def check_torch_version(ctx: Context) -> Finding:
    """torch is installed and at least 2.6.

    torch < 2.6 has CVE-2025-32434: `torch.load(..., weights_only=True)` can still run code from a crafted
    checkpoint. 2.6 also made weights_only the default. Older versions work with hosttune's launcher but not with
    loading untrusted checkpoints safely.
    """
    t = ctx.facts.torch
    if t is None:
        if not ctx.live:
            return Finding(status="skip", actual="torch not probed on a captured host", expected=">= 2.6")
        where = ctx.python or "the first python3 on PATH"
        return Finding(status="warn", actual=f"no torch in {where}", expected=">= 2.6",
                       fix="python3 -m venv ~/venv && ~/venv/bin/pip install torch   # then: hosttune doctor "
                       "--python ~/venv/bin/python")
    py = shell_path(t.python)
    note = "" if py else "   # with your training interpreter"
    if t.error or not t.version:
        return Finding(status="warn", actual=f"{t.python}: torch probe failed: {t.error or 'no version'}",
                       expected=">= 2.6", fix=f"{py or 'python3'} -c 'import torch'   # shows the error"
                       + ("" if py else "; run it with your training interpreter"))
    if version_tuple(t.version)[:2] < (2, 6):
        return Finding(status="warn", actual=f"{t.version} ({t.python})", expected=">= 2.6",
                       fix=f"{py or 'python3'} -m pip install --upgrade 'torch>=2.6'{note}")
    return Finding(status="pass", actual=f"{t.version} ({t.python})", expected=">= 2.6")


DEBUG_SWITCHES: Tuple[Tuple[str, Callable[[str], bool], str], ...] = (
    ("CUDA_LAUNCH_BLOCKING", lambda v: v not in ("", "0"), "serialises every kernel launch"),
    ("NCCL_DEBUG", lambda v: v.upper() in ("INFO", "TRACE"), "logs every collective"),
    ("NCCL_DEBUG_SUBSYS", lambda v: v != "", "verbose NCCL subsystems"),
    ("TORCH_DISTRIBUTED_DEBUG", lambda v: v.upper() in ("DETAIL", "INFO"), "wraps collectives with checks"),
    ("PYTORCH_NO_CUDA_MEMORY_CACHING", lambda v: v not in ("", "0"), "disables the caching allocator"),
    ("TORCH_COMPILE_DEBUG", lambda v: v not in ("", "0"), "dumps compiler artefacts"),
    ("TORCH_LOGS", lambda v: v != "", "extra torch logging"),
    ("TORCH_SHOW_CPP_STACKTRACES", lambda v: v not in ("", "0"), "C++ stack traces on every error"),
    ("TORCH_USE_CUDA_DSA", lambda v: v not in ("", "0"), "device-side assertions"),
    ("CUDA_DEVICE_DEBUG", lambda v: v not in ("", "0"), "CUDA debugger mode"),
    ("PYTORCH_DEBUG", lambda v: v not in ("", "0"), "debug mode"),
)


def check_debug_env(ctx: Context) -> Finding:
    """No debugging switches are left on in the environment.

    CUDA_LAUNCH_BLOCKING=1 (every kernel synchronous), NCCL_DEBUG=INFO/TRACE, TORCH_DISTRIBUTED_DEBUG=DETAIL,
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 (a cudaMalloc per tensor), TORCH_COMPILE_DEBUG, TORCH_LOGS and friends cost
    from a few percent to several times the step time. Autograd anomaly detection is switched on in code
    (torch.autograd.set_detect_anomaly), not by an environment variable: search your script for it.
    """
    on = [f"{k}={ctx.env[k]}" for k, bad, _ in DEBUG_SWITCHES if k in ctx.env and bad(ctx.env[k])]
    if on:
        names = " ".join(s.split("=")[0] for s in on)
        return Finding(status="warn", actual=" ".join(on), expected="none set",
                       fix=f"unset {names}   # and remove them from ~/.bashrc, /etc/environment, job scripts")
    return Finding(status="pass", actual="none set", expected="none set")


ALLOC_KEYS: Dict[str, str] = {
    "backend": "choice:native,cudaMallocAsync",
    "max_split_size_mb": "int>20",
    "max_non_split_rounding_mb": "int",
    "roundup_power2_divisions": "divisions",
    "garbage_collection_threshold": "fraction",
    "expandable_segments": "bool",
    "pinned_use_cuda_host_register": "bool",
    "pinned_num_register_threads": "pow2<=128",
    "pinned_use_background_threads": "bool",
    "pinned_max_round_threshold_mb": "int",
    "pinned_max_cached_size_mb": "int",
    "release_lock_on_cudamalloc": "bool",
    "graph_capture_record_stream_reuse": "bool",
    "per_process_memory_fraction": "fraction1",
}


def _split_top(text: str) -> List[str]:
    """Split on commas that are not inside [...] (roundup_power2_divisions takes a bracketed list)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse_alloc_conf(text: str) -> Tuple[List[str], List[str]]:
    """PYTORCH_CUDA_ALLOC_CONF -> (errors that make torch refuse it, keys this table does not know)."""
    errors: List[str] = []
    unknown: List[str] = []
    for item in _split_top(text):
        item = item.strip()
        if not item:
            continue
        if ":" not in item:
            errors.append(f"{item!r} is not key:value")
            continue
        key, value = (s.strip() for s in item.split(":", 1))
        kind = ALLOC_KEYS.get(key)
        if kind is None:
            unknown.append(key)
            continue
        ok = True
        n = small_int(value) if value.isdigit() else None  # unsigned: small_int takes a sign
        if kind == "bool":
            ok = value in ("True", "False", "true", "false", "1", "0")
        elif kind.startswith("int"):
            ok = n is not None and (kind != "int>20" or n > 20)
        elif kind == "pow2<=128":
            ok = n is not None and 0 < n <= 128 and n & (n - 1) == 0
        elif kind.startswith("fraction"):
            try:
                f = float(value)
                ok = 0.0 < f < 1.0 or (kind == "fraction1" and f == 1.0)
            except ValueError:
                ok = False
        elif kind == "divisions":
            if value.startswith("["):
                ok = value.endswith("]") and all(
                    re.fullmatch(r"(\d+|>):\d+", p.strip()) for p in value[1:-1].split(",") if p.strip())
            else:
                ok = n is not None and n & (n - 1) == 0
        elif kind.startswith("choice:"):
            ok = value in kind[len("choice:"):].split(",")
        if not ok:
            errors.append(f"{key}:{value} ({kind.replace('choice:', 'one of ')})")
    return errors, unknown


def check_alloc_conf(ctx: Context) -> Finding:
    """PYTORCH_CUDA_ALLOC_CONF (and PYTORCH_ALLOC_CONF) parses.

    torch parses it at the first CUDA allocation and aborts the run on a malformed value ("Unrecognized
    CachingAllocator option", "Expected a single True/False argument"), i.e. after the model is built and data is
    loading. Known keys: backend, max_split_size_mb (> 20), roundup_power2_divisions (power of 2 or
    [size:div,...,>:div]), garbage_collection_threshold (0..1), expandable_segments, pinned_use_cuda_host_register,
    pinned_num_register_threads (power of 2 <= 128), release_lock_on_cudamalloc, pinned_use_background_threads ...
    A key this table does not know may be from a newer torch: a warning, not a failure.
    """
    names = [k for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF") if ctx.env.get(k)]
    if not names:
        return Finding(status="pass", actual="unset", expected="unset or valid")
    errors, unknown = [], []
    for name in names:
        e, u = parse_alloc_conf(ctx.env[name])
        errors += [f"{name}: {x}" for x in e]
        unknown += [f"{name}: {x}" for x in u]
    actual = "; ".join(f"{n}={ctx.env[n]}" for n in names)
    if errors:
        return Finding(status="fail", actual=actual + " -> " + "; ".join(errors),
                       expected="key:value,... with known keys",
                       fix="fix or unset it, e.g. export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    if unknown:
        return Finding(status="warn", actual=actual + " -> unknown key " + ", ".join(unknown), expected="known keys",
                       fix="check the spelling against https://pytorch.org/docs/stable/notes/cuda.html "
                       "(optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
    return Finding(status="pass", actual=actual, expected="valid")


def check_cuda_visible(ctx: Context) -> Finding:
    """CUDA_VISIBLE_DEVICES names GPUs that exist, the way CUDA reads it.

    It may hold indices (PCI bus order), GPU UUIDs or a unique prefix of one (with or without "GPU-"), or MIG ids.
    CUDA stops at the first entry it cannot resolve (an index past the end, a UUID prefix that matches no GPU or
    several, a GPU named twice) and ignores the rest, so "0,1,7" on a 4-GPU host silently gives 2 GPUs, "GPU-0"
    on a host whose UUIDs all start with "GPU-0" gives none, and an empty value hides all GPUs. The reading is
    hosttune.policy.cuda_visible's, the one `hosttune exec` plans with.
    """
    raw = ctx.env.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return Finding(status="pass", actual="unset (all GPUs visible)", expected="unset or existing GPUs")
    found = gpus(ctx)
    if raw.strip() == "" or raw.strip() == "-1":
        status = "warn" if found else "pass"
        return Finding(status=status, actual=f"CUDA_VISIBLE_DEVICES={raw!r} hides every GPU",
                       expected="existing GPUs", fix="unset CUDA_VISIBLE_DEVICES" if found else "")
    if not found:
        return Finding(status="warn", actual=f"CUDA_VISIBLE_DEVICES={raw} on a host without NVIDIA GPUs",
                       expected="unset", fix="unset CUDA_VISIBLE_DEVICES")
    visible = cuda_visible.select(found, raw)
    notes = "".join(f"; {n}" for n in visible.notes)
    known = sum(g is not None for g in visible.gpus)
    # a MIG instance of a GPU not known here is a device CUDA may see, not one of this host's GPUs
    migs = f" and {len(visible.gpus) - known} MIG instance(s) not known here" if known < len(visible.gpus) else ""
    if visible.stopped_at is not None:
        indices = ",".join(str(i) for i in range(len(found)))
        return Finding(status="fail",
                       actual=f"CUDA_VISIBLE_DEVICES={raw}: no GPU {visible.stopped_at} ({visible.why}; CUDA stops "
                       f"there and sees {known} of {len(found)} GPUs{migs}){notes}",
                       expected=f"entries among {indices} or unique GPU UUID prefixes",
                       fix=f"export CUDA_VISIBLE_DEVICES={indices}")
    return Finding(status="pass", actual=f"CUDA_VISIBLE_DEVICES={raw} ({known} GPUs{migs}){notes}",
                   expected="existing GPUs")


# ---- E1: oneDNN and the CPU ISA torch uses ----
def check_onednn(ctx: Context) -> Finding:
    """torch's CPU kernels may use every instruction set this CPU has, bf16 included.

    Reports torch's oneDNN (the version of the headers its wheel ships, as torch.__config__.show() names it), the
    ISA oneDNN dispatches to (the CPU's best, capped by ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA), ATen's capability
    (torch.backends.cpu.get_cpu_capability(): ATEN_CPU_CAPABILITY, else AVX512 or AVX2 by the CPU) and the bf16
    path: AMX tiles (amx_bf16), AVX-512 BF16, or emulated (x0.03-0.10 of fp32: hosttune's engine trains such a CPU
    in fp32). A cap below what the CPU has is a warning (every matmul or vectorised op runs narrower; a cap under
    AVX512_CORE_BF16 turns bf16 into emulation); ATEN_CPU_CAPABILITY above the CPU is a failure: torch takes it
    as given and dies of an illegal instruction at the first vectorised op. The rule: hosttune.policy.onednn.
    """
    t = ctx.facts.torch
    if t is None or t.error or not t.version:
        return Finding(status="skip", actual="no torch probed", expected="no ISA cap below the CPU")
    if ctx.facts.cpu.arch not in (None, "x86_64"):
        return Finding(status="skip", actual=f"oneDNN ISA caps are x86 ones; this CPU is {ctx.facts.cpu.arch}",
                       expected="no ISA cap below the CPU")
    flags = ctx.facts.cpu.flags
    actual = onednn.summary(t.onednn, flags, ctx.env)
    caps = onednn.caps(flags, ctx.env)
    said = "; ".join(f"{c.var}={c.value} {'above' if c.over else 'below'} this CPU's {c.has}" for c in caps)
    unset = " ".join(c.var for c in caps)
    them = "them" if len(caps) > 1 else "it"
    fix = f"unset {unset}   # and remove {them} from ~/.bashrc, /etc/environment and job scripts"
    if any(c.over for c in caps):
        return Finding(status="fail", actual=f"{actual}; {said}", expected="no ISA cap above the CPU", fix=fix)
    if caps:
        return Finding(status="warn", actual=f"{actual}; {said}", expected="no ISA cap below the CPU", fix=fix)
    return Finding(status="pass", actual=actual, expected="no ISA cap below the CPU")


def check_venv(ctx: Context) -> Finding:
    """The training python is a virtual environment or conda env, not the system python.

    `pip install` into the system interpreter fights the distro's python3-* packages (Debian 12+ refuses it:
    "externally-managed-environment") and an OS upgrade can break torch. A venv also pins what `--python` means.
    """
    t = ctx.facts.torch
    if t is None or t.in_venv is None:
        return Finding(status="skip", actual="no torch interpreter probed", expected="a venv or conda env")
    if t.in_venv:
        return Finding(status="pass", actual=f"{t.python} (venv/conda)", expected="a venv or conda env")
    return Finding(status="warn", actual=f"{t.python} is not in a venv or conda env", expected="a venv or conda env",
                   fix="python3 -m venv /opt/train && /opt/train/bin/pip install torch   # then train with "
                   "/opt/train/bin/python")



# ---- IMG: torch.image_decoder ----
def training_python(ctx: Context) -> Optional[str]:
    """--python, else the interpreter the torch probe ran, else the first python3 on PATH."""
    if ctx.python:
        return ctx.python
    if ctx.facts.torch is not None and ctx.facts.torch.python:
        return ctx.facts.torch.python
    return torchenv.default_python()


def check_image_decoder(ctx: Context) -> Finding:
    """The training python has a fast JPEG decoder for image-folder data (the engine's image_decoder).

    libjpeg-turbo decodes JPEG several times faster than libjpeg (SIMD), and both it and Pillow decode at 1/2, 1/4
    or 1/8 of the size when the model wants small images (DCT scaling). Found, in the training interpreter (a
    probe runs it: Pillow and PyTurboJPEG are never imported into hosttune): PyTurboJPEG with a libturbojpeg it can
    load (image_decoder=auto picks it), Pillow built with libjpeg-turbo (PIL.features.check_feature
    ("libjpeg_turbo"): the PyPI wheels are), pillow-simd. PyTurboJPEG 2.x needs libjpeg-turbo 3.0; the distros'
    libturbojpeg (Debian 12, Ubuntu 24.04, RHEL 9) is 2.x, which PyTurboJPEG 1.x drives. A python with neither
    Pillow nor PyTurboJPEG is not set up for image data at all: a skip that still says how.
    """
    if not ctx.live:
        return Finding(status="skip", actual="the training python is not probed on a captured host",
                       expected="a fast JPEG decoder")
    python = training_python(ctx)
    if python is None:
        return Finding(status="skip", actual="no python3 on PATH (name one with --python)",
                       expected="a fast JPEG decoder")
    return image_decoder_finding(ctx, python, torchenv.run_image_probe(HostIO(Path("/")), python))


def image_decoder_finding(ctx: Context, python: str, data: Dict[str, Any]) -> Finding:
    """The finding for IMAGE_PROBE's answer `data` about `python`."""
    expected = "PyTurboJPEG + libturbojpeg, or Pillow with libjpeg-turbo"
    py = shell_path(str(data.get("executable") or python)) or "python3"
    if "error" in data:
        return Finding(status="warn", actual=f"{python}: image decoder probe failed: {data['error']}",
                       expected=expected, fix=f"{py} -c 'import PIL, turbojpeg'   # shows the error")
    pil, turbo = data.get("pillow") or {}, data.get("turbojpeg") or {}
    parts = []
    if turbo:
        lib = "libturbojpeg" if turbo.get("library") else f"no usable libturbojpeg ({turbo.get('error', '?')})"
        parts.append(f"PyTurboJPEG {turbo.get('version', '?')} + {lib}")
    if pil:
        kind = "pillow-simd" if pil.get("simd") else "Pillow"
        build = "libjpeg-turbo" if pil.get("libjpeg_turbo") else "libjpeg, not libjpeg-turbo"
        parts.append(f"{kind} {pil.get('version', '?')} ({build})")
    actual = "; ".join(parts) or "no Pillow, no PyTurboJPEG"
    lib_fix = install(ctx, "libturbojpeg0", "turbojpeg")
    if turbo and not turbo.get("library"):
        pin = "'PyTurboJPEG<2'" if "3.0" in str(turbo.get("error", "")) else "PyTurboJPEG"
        fix = f"{lib_fix}\n{py} -m pip install {pin}   # PyTurboJPEG 2 needs libjpeg-turbo 3, 1.x drives 2.x"
        return Finding(status="warn", actual=f"{actual}: image_decoder=turbojpeg fails", expected=expected, fix=fix)
    if turbo or pil.get("libjpeg_turbo") or pil.get("simd"):
        return Finding(status="pass", actual=actual, expected=expected)
    fix = f"{lib_fix}\n{py} -m pip install 'PyTurboJPEG<2' Pillow   # then image_decoder=auto uses it"
    if not pil:  # no image library at all: this python is not set up for image data; say how, do not warn
        return Finding(status="skip", actual=f"{actual} in {python}: needed only to train on image folders",
                       expected=expected, fix=fix)
    return Finding(status="warn", actual=f"{actual}: JPEG decoding without SIMD", expected=expected, fix=fix)
