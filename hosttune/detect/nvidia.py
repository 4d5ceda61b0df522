"""NVIDIA software on the host: driver, CUDA toolkit, system cuDNN and NCCL, Fabric Manager."""

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from hosttune.detect.hostio import HostIO
from hosttune.facts import Nvidia

LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/powerpc64le-linux-gnu",
            "/usr/lib64", "/usr/lib", "/usr/local/lib", "/usr/local/cuda/lib64",
            "/usr/local/cuda/targets/x86_64-linux/lib",
            "/usr/local/cuda/targets/sbsa-linux/lib")
INCLUDE_DIRS = ("/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu",
                "/usr/local/cuda/include")


def parse_proc_driver_version(text: Optional[str]) -> Optional[str]:
    """/proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..."."""
    m = re.search(r"Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)", text or "")
    return m.group(1) if m else None


def parse_cuda_version_json(text: Optional[str]) -> Optional[str]:
    """/usr/local/cuda/version.json: {"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, ...}."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    cuda = data.get("cuda") if isinstance(data, dict) else None
    version = cuda.get("version") if isinstance(cuda, dict) else None
    return str(version) if version else None


def parse_cuda_version_txt(text: Optional[str]) -> Optional[str]:
    """Old toolkits' version.txt: "CUDA Version 10.2.89"; nvcc: "Cuda compilation tools, release 12.4, V12.4.131"."""
    m = re.search(r"CUDA Version\s+(\d+(?:\.\d+)*)", text or "")
    if m:
        return m.group(1)
    m = re.search(r"release\s+\d+\.\d+,\s*V(\d+(?:\.\d+)*)", text or "")
    if m:
        return m.group(1)
    m = re.search(r"release\s+(\d+\.\d+)", text or "")
    return m.group(1) if m else None


def parse_header_version(text: Optional[str], prefix: str) -> Optional[str]:
    """#define CUDNN_MAJOR 9 / CUDNN_MINOR 1 / CUDNN_PATCHLEVEL 0 -> "9.1.0" (NCCL: NCCL_MAJOR/MINOR/PATCH)."""
    parts: Dict[str, str] = {}
    for m in re.finditer(rf"#define\s+{prefix}_(MAJOR|MINOR|PATCHLEVEL|PATCH)\s+(\d+)\b", text or ""):
        parts.setdefault(m.group(1), m.group(2))
    if "MAJOR" not in parts:
        return None
    patch = parts.get("PATCHLEVEL", parts.get("PATCH"))
    return ".".join(p for p in (parts["MAJOR"], parts.get("MINOR"), patch) if p is not None)


def soname_version(names: List[str], stem: str) -> Optional[str]:
    """["libcudnn.so.9.1.0", "libcudnn.so.9"] -> "9.1.0": the most specific version among matching names; of two
    as specific (cuDNN 8 and 9 side by side), the higher by number, whatever order the names are listed in."""
    pattern = re.compile(rf"{re.escape(stem)}\.so\.(\d{{1,9}}(?:\.\d{{1,9}})*)")
    found = [m.group(1) for m in (pattern.fullmatch(n) for n in names if n.startswith(stem)) if m]
    return max(found, key=lambda v: (v.count("."), tuple(int(p) for p in v.split("."))), default=None)


def _version_key(path: str) -> Tuple[Tuple[int, ...], str]:
    """/usr/local/cuda-12.4 -> ((12, 4), path): toolkit folders ordered by their version's numbers."""
    return tuple(int(n) for n in re.findall(r"\d{1,9}", path.rsplit("cuda-", 1)[-1])), path


def _toolkit(io: HostIO) -> Dict[str, Optional[str]]:
    """version.json (CUDA >= 11.1), else version.txt, in /usr/local/cuda then /usr/local/cuda-X.Y; nvcc last (live)."""
    # Newest first by number: cuda-12.4 before cuda-9.2 (a string sort puts "9" after "1").
    candidates = ["/usr/local/cuda"] + sorted((f"/usr/local/{n}" for n in io.listdir("/usr/local")
                                               if n.startswith("cuda-")), key=_version_key, reverse=True)
    for base in candidates:
        version = parse_cuda_version_json(io.read(f"{base}/version.json"))
        if version is None:
            version = parse_cuda_version_txt(io.read(f"{base}/version.txt"))
        if version:
            return {"version": version, "path": io.realpath(base) or base}
    nvccs = [f"{base}/bin/nvcc" for base in candidates if io.exists(f"{base}/bin/nvcc")]
    found = io.which("nvcc") if io.live else None
    for nvcc in nvccs + ([found] if found else []):
        done = io.run([str(io.path(nvcc)) if not io.live else nvcc, "--version"], timeout=10)
        version = parse_cuda_version_txt(done.stdout) if done is not None and done.returncode == 0 else None
        if version:
            base = nvcc.rsplit("/bin/", 1)[0]
            return {"version": version, "path": io.realpath(base) or base}
    return {"version": None, "path": None}


def _library_version(io: HostIO, header_names: List[str], macro: str, stem: str) -> Optional[str]:
    for d in INCLUDE_DIRS:
        for h in header_names:
            version = parse_header_version(io.read(f"{d}/{h}"), macro)
            if version:
                return version
    for d in LIB_DIRS:
        version = soname_version(io.listdir(d), stem)
        if version:
            return version
    return None


# The kernel truncates a process's comm to 15 characters (TASK_COMM_LEN 16 with the NUL): "nv-fabricmanage".
FABRIC_MANAGER_COMM = "nv-fabricmanager"[:15]


def fabric_manager_running(io: HostIO) -> Optional[bool]:
    """Live only: a process whose comm is nv-fabricmanager (as truncated by the kernel)."""
    if not io.live:
        return None
    for pid in io.listdir("/proc"):
        if pid.isdigit() and io.read(f"/proc/{pid}/comm") == FABRIC_MANAGER_COMM:
            return True
    return False


def probe(io: HostIO, base: Dict[str, Any]) -> Nvidia:
    """`base` holds what the GPU probe learnt from NVML (driver, cuda_driver, nvml status) and the NVSwitch count."""
    driver = base.get("driver") or parse_proc_driver_version(io.read("/proc/driver/nvidia/version"))
    toolkit = _toolkit(io)
    fm_installed = any(io.exists(p) for p in ("/usr/bin/nv-fabricmanager", "/usr/sbin/nv-fabricmanager"))
    return Nvidia(
        driver=driver,
        cuda_driver=base.get("cuda_driver"),
        nvml=base.get("nvml", "skipped"),
        nvml_error=base.get("nvml_error"),
        cuda_toolkit=toolkit["version"],
        cuda_toolkit_path=toolkit["path"],
        cudnn=_library_version(io, ["cudnn_version.h", "cudnn_version_v9.h", "cudnn_version_v8.h", "cudnn.h"],
                               "CUDNN", "libcudnn"),
        nccl=_library_version(io, ["nccl.h"], "NCCL", "libnccl"),
        fabric_manager_installed=fm_installed,
        fabric_manager_running=(fabric_manager_running(io) if fm_installed else False) if io.live else None,
        nvswitches=int(base.get("nvswitches", 0)),
    )
