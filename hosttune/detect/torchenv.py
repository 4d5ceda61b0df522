"""torch as the user's interpreter has it, found by running that interpreter once with a probe that never imports
torch (importing it costs ~2 s; `python -m torch.utils.collect_env` does, which is why it is slow).

What the probe reads: where `torch` is (importlib.util.find_spec), `torch/version.py` as text (`__version__`, `cuda`),
the cuDNN and NCCL that torch loads (the `nvidia-cudnn-cu*` / `nvidia-nccl-cu*` wheels' versions, else the sonames
bundled in `torch/lib/` or the env's lib dir), the oneDNN version from the headers torch ships
(`torch/include/oneapi/dnnl/dnnl_version.h`), and whether it runs in a venv or conda env.

`cuda_available` and `device_count` are inferred, not asked of torch: a CUDA build of torch, NVML-visible GPUs
(after CUDA_VISIBLE_DEVICES), and a driver whose CUDA version is at least torch's CUDA major (CUDA's minor-version
compatibility). This is what `torch.cuda.is_available()` would answer on a healthy host; a broken CUDA install
that NVML cannot see is the case it cannot tell apart.
"""

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.facts import Gpu, TorchInstall
from hosttune.programs import trusted_which
from hosttune.trust import interpreter_env

PROBE_TIMEOUT_S = 10.0

# Runs under the target interpreter (Python 3.6+) as `python -I -c PROBE [PYTHONPATH entries...]` from "/": -I keeps
# the caller's directory, PYTHON* variables and user site out of sys.path, so nothing a user planted there is
# imported (as root that would run their code as uid 0). The standard library it needs is imported first; only
# then are the allowed PYTHONPATH entries (argv) put in front of sys.path, where the interpreter would have put
# them, so that a torch installed through PYTHONPATH is still found. The PYTHONPATH in the probe's own environment
# is honoured too: we pass only allowed entries (`HostIO.run` cleans the environment as root), so anything else
# there was set by a wrapper script the caller chose as --python (`module load`-style), which runs as its code
# anyway. Standard library only, no torch import.
PROBE = r'''
import json, os, re, sys
import importlib.util
extra = sys.argv[1:] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
sys.path[0:0] = [p for i, p in enumerate(extra) if p and p not in extra[:i]]
out = {"executable": sys.executable, "prefix": sys.prefix,
       "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix) or bool(os.environ.get("CONDA_PREFIX")),
       "torch": None}
try:
    spec = importlib.util.find_spec("torch")
except Exception as exc:
    spec = None
    out["find_error"] = "%s: %s" % (type(exc).__name__, exc)
if spec is not None and spec.origin:
    d = os.path.dirname(spec.origin)
    t = {"path": d}
    try:
        with open(os.path.join(d, "version.py")) as fh:
            text = fh.read(1 << 20)
    except (OSError, ValueError):
        text = ""
    for key in ("__version__", "cuda", "hip"):
        m = re.search(r"^%s\s*(?::[^=\n]*)?=\s*(.+)$" % key, text, re.M)
        v = m.group(1).strip() if m else "None"
        t[key] = None if v == "None" else v.strip("'\"")
    # The wheels torch loads its cuDNN/NCCL from; their dist-info folder names carry the version. (Scanning is
    # cheaper than importing importlib.metadata, which costs ~0.1 s.)
    dists = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry) if entry else []
        except OSError:
            continue
        for n in names:
            m = re.match(r"(nvidia_(?:cudnn|nccl)_cu\d+)-([0-9.]+)\.dist-info$", n)
            if m:
                dists.setdefault(m.group(1).replace("_", "-"), m.group(2))
    t["dists"] = dists
    libs = []
    for ld in (os.path.join(d, "lib"), os.path.join(sys.prefix, "lib")):
        try:
            libs += [n for n in os.listdir(ld) if n.startswith(("libcudnn.so", "libnccl.so"))]
        except OSError:
            pass
    t["libs"] = libs
    # E1: the oneDNN torch was built with, from the headers the wheel ships (what torch.__config__.show() names)
    dnnl = {}
    try:
        with open(os.path.join(d, "include", "oneapi", "dnnl", "dnnl_version.h")) as fh:
            dnnl = dict(re.findall(r"#define DNNL_VERSION_(MAJOR|MINOR|PATCH) +(\d+)", fh.read(1 << 16)))
    except (OSError, ValueError):
        pass
    t["onednn"] = "%s.%s.%s" % (dnnl["MAJOR"], dnnl["MINOR"], dnnl["PATCH"]) if len(dnnl) == 3 else None
    out["torch"] = t
print(json.dumps(out))
'''


def default_python(io: Optional[HostIO] = None) -> Optional[str]:
    """The first `python3` on PATH; as root, on PATH's trusted directories only (skipped ones are noted in `io`)."""
    if io is not None:
        return io.which("python3") if io.live else None
    return trusted_which("python3")[0]


def probe_path(environ: Mapping[str, str]) -> Tuple[List[str], List[str]]:
    """(PYTHONPATH entries the probe may search, names of variables dropped). As an ordinary user their PYTHONPATH
    as is; as root only when every entry passes the root trust rule (`trust.interpreter_env`)."""
    env, dropped = interpreter_env(environ)
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p], dropped


def run_probe(io: HostIO, python: str, timeout: float = PROBE_TIMEOUT_S) -> Dict[str, Any]:
    """The probe's JSON, or {"error": why}. Live hosts only (io.run refuses a foreign root)."""
    return _run_json_probe(io, python, PROBE, timeout, note_dropped=True)


def _run_json_probe(io: HostIO, python: str, script: str, timeout: float, note_dropped: bool) -> Dict[str, Any]:
    """Run `script` in `python -I` (through HostIO's program gateway) and return the JSON object of its last line,
    or {"error": why}."""
    if not io.live:
        return {"error": "not probed with a foreign root"}
    paths, dropped = probe_path(os.environ)
    if note_dropped and "PYTHONPATH" in dropped:
        io.note("torch", "PYTHONPATH not searched as root: it names a path another user could write")
    done = io.run([python, "-I", "-c", script, *paths], timeout=timeout, note=False)
    if done is None:
        return {"error": f"probe: {io.last_error}"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {"error": f"probe failed: {tail[:200]}"}
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "probe printed no JSON"}
    return data if isinstance(data, dict) else {"error": "probe printed no JSON object"}


def _short(version: str, parts: int = 3) -> str:
    return ".".join(version.split("+")[0].split(".")[:parts])


def _lib_version(torch: Dict[str, Any], what: str) -> Optional[str]:
    for name, version in sorted(torch.get("dists", {}).items()):
        if name.startswith(f"nvidia-{what}-cu"):
            return _short(str(version))
    best: Optional[str] = None
    for lib in torch.get("libs", []):
        if lib.startswith(f"lib{what}.so."):
            v = lib[len(f"lib{what}.so."):]
            if all(p.isdigit() for p in v.split(".")) and (best is None or v.count(".") > best.count(".")):
                best = v
    return best


def _major(version: Optional[str]) -> Optional[int]:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return None


def infer_cuda(torch_cuda: Optional[str], driver_cuda: Optional[str], gpus: Sequence[Gpu]) -> bool:
    """CUDA build + visible GPUs + the driver's CUDA major >= torch's (minor-version compatibility)."""
    tm, dm = _major(torch_cuda), _major(driver_cuda)
    return bool(torch_cuda and gpus and tm is not None and dm is not None and dm >= tm)


def from_probe(python: str, data: Dict[str, Any], driver_cuda: Optional[str],
               visible_gpus: Sequence[Gpu]) -> Optional[TorchInstall]:
    if "error" in data:
        return TorchInstall(python=python, error=str(data["error"]))
    torch = data.get("torch")
    if not torch:
        return None
    cuda = torch.get("cuda")
    available = infer_cuda(cuda, driver_cuda, visible_gpus)
    return TorchInstall(
        python=str(data.get("executable") or python),
        version=torch.get("__version__"),
        cuda=cuda,
        cudnn=_lib_version(torch, "cudnn") if cuda else None,
        nccl=_lib_version(torch, "nccl") if cuda else None,
        cuda_available=available,
        device_count=len(visible_gpus) if available else 0,
        in_venv=data.get("in_venv"),
        onednn=str(torch["onednn"]) if torch.get("onednn") else None,
    )


def env_lib_dirs(data: Dict[str, Any]) -> Sequence[str]:
    """The target interpreter's env lib dir (venv/conda), searched for allocators before the system dirs."""
    prefix = data.get("prefix")
    return [os.path.join(prefix, "lib")] if prefix else []


# ---- IMG: the image decoders the training python has (doctor's torch.image_decoder) ----
# Run only by that check (not by `facts`): unlike PROBE it imports Pillow (PIL.features) and PyTurboJPEG (which
# imports numpy and loads libturbojpeg), in the training interpreter, never in hosttune's process. Same
# `python -I -c PROBE [PYTHONPATH entries...]` rules as PROBE.
IMAGE_PROBE = r'''
import json, os, sys
extra = sys.argv[1:] + os.environ.get("PYTHONPATH", "").split(os.pathsep)
sys.path[0:0] = [p for i, p in enumerate(extra) if p and p not in extra[:i]]
def first(exc):
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
out = {"executable": sys.executable, "pillow": None, "turbojpeg": None}
try:
    import PIL
    from PIL import features
    v = str(getattr(PIL, "__version__", "") or "?")
    try:
        turbo = bool(features.check_feature("libjpeg_turbo"))
    except Exception:
        turbo = False
    out["pillow"] = {"version": v, "libjpeg_turbo": turbo, "simd": ".post" in v}
except Exception as exc:
    out["pillow_error"] = first(exc)
try:
    import turbojpeg
    t = {"version": str(getattr(turbojpeg, "__version__", "") or "?"), "library": False}
    try:
        turbojpeg.TurboJPEG()
        t["library"] = True
    except Exception as exc:
        t["error"] = first(exc)
    out["turbojpeg"] = t
except Exception as exc:
    out["turbojpeg_error"] = first(exc)
print(json.dumps(out))
'''


def run_image_probe(io: HostIO, python: str, timeout: float = PROBE_TIMEOUT_S) -> Dict[str, Any]:
    """IMAGE_PROBE's JSON ({"pillow": {...} or None, "turbojpeg": {...} or None}), or {"error": why}."""
    return _run_json_probe(io, python, IMAGE_PROBE, timeout, note_dropped=False)
# ---- end IMG ----
