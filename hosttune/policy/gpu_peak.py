"""The ONE table of GPU dense peak TFLOP/s (doctor --deep's compute check and the engine's MFU both read it).

Every figure is DENSE (without 2:4 structured sparsity): NVIDIA datasheets print the sparse figure with an
asterisk; the dense one is half of it. bf16/fp16/tf32 are tensor-core figures (fp16 with fp32 accumulate where a
card runs that at a lower rate, which is what torch's matmul uses); fp32 is the non-tensor-core CUDA-core figure.
None means the GPU has no such hardware path (Volta/Turing have no bf16 or tf32 tensor cores: torch emulates bf16
there, far below any peak), so there is nothing to compare against.

Names: `match()` takes what NVML or `torch.cuda.get_device_name()` prints (both give the same string), e.g.
"NVIDIA H100 80GB HBM3" (SXM), "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA A100-SXM4-80GB",
"NVIDIA A100 80GB PCIe", "Tesla V100-SXM2-32GB", "Tesla T4", "NVIDIA L40S", "NVIDIA L4", "NVIDIA A10G",
"NVIDIA RTX 6000 Ada Generation". Hopper SXM parts carry no "SXM" in their NVML name, so an H100/H200 without a
PCIe or NVL marker is the SXM part.
"""

import re
from dataclasses import dataclass
from typing import Optional, Tuple

DTYPES = ("bf16", "fp16", "tf32", "fp32")
_ALIASES = {
    "bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16", "torch.half": "fp16",
    "tf32": "tf32",
    "fp32": "fp32", "float32": "fp32", "float": "fp32", "torch.float32": "fp32", "torch.float": "fp32",
}


@dataclass(frozen=True)
class GpuPeak:
    """One GPU model's dense peaks in TFLOP/s and where they come from."""

    key: str  # our name for the model, e.g. "H100 SXM"
    bf16: Optional[float]
    fp16: Optional[float]
    tf32: Optional[float]
    fp32: Optional[float]
    source: str  # the document the figures come from

    def tflops(self, dtype: str) -> Optional[float]:
        d = normalize_dtype(dtype)
        return getattr(self, d) if d else None

    def to_dict(self) -> dict:
        return {"key": self.key, "bf16": self.bf16, "fp16": self.fp16, "tf32": self.tf32, "fp32": self.fp32,
                "source": self.source}


def normalize_dtype(dtype: str) -> Optional[str]:
    """"bf16" | "fp16" | "tf32" | "fp32" for the usual spellings (torch dtype names included), else None."""
    return _ALIASES.get(str(dtype).strip().lower())


_HOPPER_SXM = "NVIDIA H100 Tensor Core GPU datasheet (SXM column; sparse/2)"
_HOPPER_PCIE = "NVIDIA H100 Tensor Core GPU datasheet (PCIe column; sparse/2)"
_HOPPER_NVL = "NVIDIA H100 NVL / H200 NVL datasheets (per GPU; sparse/2)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (sparse/2; same peaks for SXM4 and PCIe, 40 and 80 GB)"
_ADA = "NVIDIA Ada GPU architecture whitepaper, appendix tables (dense column)"
_AMPERE_GA10X = "NVIDIA Ampere GA102 GPU architecture whitepaper, appendix tables (dense column)"

# (pattern over the normalized name, entry). Order matters: the first match wins, so longer/more specific names
# (L40S before L40 before L4, A100/A10G before A10, V100S before V100, H100 PCIe/NVL before H100) come first.
_TABLE: Tuple[Tuple[str, GpuPeak], ...] = (
    # Blackwell. HGX B200 datasheet gives 8-GPU totals with sparsity: 36 PF fp16/bf16, 18 PF tf32, 600 TF fp32.
    (r"\bGB200\b", GpuPeak("GB200", 2500.0, 2500.0, 1250.0, 80.0,
                           "NVIDIA GB200 NVL72 datasheet (rack totals /72 GPUs; sparse/2)")),
    (r"\bB200\b", GpuPeak("B200", 2250.0, 2250.0, 1100.0, 75.0,
                          "NVIDIA HGX B200 datasheet (8-GPU totals /8; sparse/2)")),
    # Hopper. Grace Hopper carries the H100 SXM GPU (GH200 datasheet: 989 TF bf16 dense, 67 TF fp32).
    (r"\bGH200\b", GpuPeak("GH200", 989.4, 989.4, 494.7, 67.0, "NVIDIA GH200 Grace Hopper Superchip datasheet")),
    (r"\bH200\b.*\bNVL\b", GpuPeak("H200 NVL", 835.5, 835.5, 417.5, 60.0, _HOPPER_NVL)),
    (r"\bH200\b", GpuPeak("H200 SXM", 989.4, 989.4, 494.7, 67.0,
                          "NVIDIA H200 Tensor Core GPU datasheet (SXM column; sparse/2)")),
    (r"\bH[18]00\b.*\bNVL\b", GpuPeak("H100 NVL", 835.5, 835.5, 417.5, 60.0, _HOPPER_NVL)),
    (r"\bH[18]00\b.*(\bPCIE\b|\bHBM2E\b)", GpuPeak("H100 PCIe", 756.5, 756.5, 378.0, 51.2, _HOPPER_PCIE)),
    (r"\bH[18]00\b", GpuPeak("H100 SXM", 989.4, 989.4, 494.7, 66.9, _HOPPER_SXM)),
    # Ampere datacenter. A800 is an A100 with a cut-down NVLink; its compute is the A100's.
    (r"\bA[18]00\b.*\bPCIE\b.*\b80\s?GB\b|\bA[18]00\b.*\b80\s?GB\b.*\bPCIE\b",
     GpuPeak("A100 PCIe 80GB", 312.0, 312.0, 156.0, 19.5, _A100)),
    (r"\bA[18]00\b.*\bPCIE\b", GpuPeak("A100 PCIe 40GB", 312.0, 312.0, 156.0, 19.5, _A100)),
    (r"\bA[18]00\b.*\b80\s?GB\b", GpuPeak("A100 SXM 80GB", 312.0, 312.0, 156.0, 19.5, _A100)),
    (r"\bA[18]00\b", GpuPeak("A100 SXM 40GB", 312.0, 312.0, 156.0, 19.5, _A100)),
    # A10G (AWS G5): the A10's GA102 with GeForce-rate tensor cores for fp32 accumulate; NVIDIA publishes no
    # datasheet, figures as AWS and NVIDIA quote them to customers (70 TF fp16/bf16 dense, 35 TF tf32, 31.2 fp32).
    (r"\bA10G\b", GpuPeak("A10G", 70.0, 70.0, 35.0, 31.2, "AWS EC2 G5 documentation / NVIDIA A10G spec sheet")),
    (r"\bA10\b", GpuPeak("A10", 125.0, 125.0, 62.5, 31.2, "NVIDIA A10 Tensor Core GPU datasheet (sparse/2)")),
    (r"\bA30\b", GpuPeak("A30", 165.0, 165.0, 82.0, 10.3, "NVIDIA A30 Tensor Core GPU datasheet (sparse/2)")),
    (r"\bA40\b", GpuPeak("A40", 149.7, 149.7, 74.8, 37.4, "NVIDIA A40 datasheet (sparse/2)")),
    (r"\bRTX A6000\b", GpuPeak("RTX A6000", 154.8, 154.8, 77.4, 38.7, _AMPERE_GA10X)),
    # Ada
    (r"\bL40S\b", GpuPeak("L40S", 362.05, 362.05, 183.0, 91.6, "NVIDIA L40S datasheet (sparse/2)")),
    (r"\bL40\b", GpuPeak("L40", 181.0, 181.0, 90.5, 90.5, "NVIDIA L40 datasheet (dense column)")),
    (r"\bL4\b", GpuPeak("L4", 121.0, 121.0, 60.0, 30.3, "NVIDIA L4 Tensor Core GPU datasheet (sparse/2)")),
    (r"\bRTX 6000 ADA\b", GpuPeak("RTX 6000 Ada", 364.2, 364.2, 182.1, 91.1, _ADA)),
    (r"\bRTX 4090\b", GpuPeak("RTX 4090", 165.2, 165.2, 82.6, 82.6, _ADA + " (fp16 with fp32 accumulate)")),
    # Volta / Turing: fp16 tensor cores only.
    (r"\bV100S\b", GpuPeak("V100S PCIe", None, 130.0, None, 16.4, "NVIDIA V100S datasheet")),
    (r"\bV100\b.*\bPCIE\b", GpuPeak("V100 PCIe", None, 112.0, None, 14.0, "NVIDIA V100 datasheet (PCIe column)")),
    (r"\bV100\b", GpuPeak("V100 SXM2", None, 125.0, None, 15.7, "NVIDIA V100 datasheet (SXM2 column)")),
    (r"\bT4\b", GpuPeak("T4", None, 65.0, None, 8.1, "NVIDIA T4 Tensor Core GPU datasheet")),
)
_COMPILED = tuple((re.compile(p), e) for p, e in _TABLE)


def _normalize(name: str) -> str:
    # "NVIDIA A100-SXM4-80GB" -> "NVIDIA A100 SXM4 80GB": dashes and underscores separate words in NVML names.
    return " ".join(re.sub(r"[-_/,()]", " ", str(name)).upper().split())


def match(device_name: str) -> Optional[GpuPeak]:
    """The table entry for a device name as NVML or torch prints it, or None for a GPU the table does not know."""
    norm = _normalize(device_name)
    for rx, entry in _COMPILED:
        if rx.search(norm):
            return entry
    return None


def dense_peak_tflops(device_name: str, dtype: str = "bf16") -> Optional[float]:
    """Dense peak TFLOP/s of `device_name` in `dtype` (bf16|fp16|tf32|fp32 or a torch dtype name), or None when
    the GPU is unknown or has no hardware path for that dtype."""
    entry = match(device_name)
    return entry.tflops(dtype) if entry else None
