"""What a link or a device should deliver: nccl-tests bus bandwidth, PCIe per generation and width, NVLink per GPU
model, sequential reads per disk kind; and the lines below which doctor --deep warns. Units: GB/s = 1e9 bytes/s
(what nccl-tests, bandwidthTest and nvbandwidth print)."""

from typing import Optional

from hosttune.policy import gpu_peak

# ---- collectives (NVIDIA/nccl-tests doc/PERFORMANCE.md) -----------------------------------------------------------


def algbw_gbps(size_bytes: float, seconds: float) -> float:
    """Algorithm bandwidth: `algbw = S / t` (size of the buffer each rank reduces over the time of one operation)."""
    return size_bytes / seconds / 1e9 if seconds > 0 else 0.0


def allreduce_busbw_gbps(size_bytes: float, seconds: float, ranks: int) -> float:
    """Bus bandwidth of an all-reduce: `busbw = algbw * 2*(n-1)/n`. An all-reduce needs 2(n-1) transfers per element
    over n links, so busbw is comparable with one link's hardware bandwidth whatever the rank count."""
    if ranks < 1:
        return 0.0
    return algbw_gbps(size_bytes, seconds) * 2.0 * (ranks - 1) / ranks


# ---- PCIe ---------------------------------------------------------------------------------------------------------
# Per lane, per direction, after line coding (PCI-SIG base specs): gen1/2 use 8b/10b at 2.5/5 GT/s, gen3-5
# 128b/130b at 8/16/32 GT/s, gen6 PAM4 FLIT mode at 64 GT/s (242/256 of the FLIT carries TLPs).
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8, 5: 32 * 128 / 130 / 8,
                  6: 64 * 242 / 256 / 8}
# Transaction-layer overhead (TLP headers and DLLPs at a 256-byte max payload) leaves about 80% of the coded rate
# for data: what CUDA's bandwidthTest and nvbandwidth reach for pinned copies on a healthy link (gen4 x16: ~25 of
# 31.5 GB/s; gen5 x16: ~50 of 63).
PCIE_EFFICIENCY = 0.80
# Pinned copies below this share of the realistic figure mean a slow link (downtrained, riser, wrong slot) or a
# copy that crosses sockets.
PCIE_WARN_FRACTION = 0.75


def pcie_raw_gbps(gen: Optional[int], width: Optional[int]) -> Optional[float]:
    if not gen or not width or gen not in PCIE_LANE_GBPS:
        return None
    return PCIE_LANE_GBPS[gen] * width


def pcie_expected_gbps(gen: Optional[int], width: Optional[int]) -> Optional[float]:
    """What a pinned host<->device copy should reach on a gen x width link, one direction; None when unknown."""
    raw = pcie_raw_gbps(gen, width)
    return raw * PCIE_EFFICIENCY if raw is not None else None


# ---- NVLink (per GPU, one direction: half the datasheet's bidirectional total) --------------------------------------
NVLINK_GBPS = {
    "V100 SXM2": 150.0,  # NVLink 2, 300 GB/s total (V100 datasheet)
    "A100 SXM 40GB": 300.0, "A100 SXM 80GB": 300.0,  # NVLink 3, 600 GB/s (A100 datasheet)
    "H100 SXM": 450.0, "H200 SXM": 450.0, "GH200": 450.0,  # NVLink 4, 900 GB/s (H100/H200/GH200 datasheets)
    "H100 NVL": 300.0, "H200 NVL": 450.0,  # NVLink bridges: 600 / 900 GB/s (H100 NVL / H200 NVL datasheets)
    "B200": 900.0, "GB200": 900.0,  # NVLink 5, 1.8 TB/s (HGX B200 / GB200 NVL72 datasheets)
}
# nccl-tests all-reduce on NVSwitch systems reaches about 70-85% of the one-direction NVLink figure (8x A100:
# ~230 of 300 GB/s; 8x H100: ~350-480 of 450 with NVLS); below 60% something is off (a link down, NCCL fell back
# to PCIe or sockets: NCCL_P2P_DISABLE, a container without IPC).
NVLINK_WARN_FRACTION = 0.60
# All-reduce over PCIe (P2P through a switch or the root complex): about 60-80% of the link's realistic figure.
PCIE_ALLREDUCE_WARN_FRACTION = 0.40
# A peer copy over NVLink with one copy engine reaches well under the link total; below 40% of it is wrong.
P2P_NVLINK_WARN_FRACTION = 0.40
P2P_PCIE_WARN_FRACTION = 0.50


def nvlink_gbps(device_name: str) -> Optional[float]:
    """One-direction NVLink bandwidth per GPU for the models that have NVLink, else None (PCIe cards)."""
    entry = gpu_peak.match(device_name)
    return NVLINK_GBPS.get(entry.key) if entry else None


# ---- storage ------------------------------------------------------------------------------------------------------
# Sequential read, page cache bypassed, MB/s (1e6). Lines are the slow end of each kind, not its datasheet:
# nvme: even a PCIe gen3 x4 QLC drive streams > 1500 MB/s; SATA SSDs 400-550 (6 Gb/s link); a 7200 rpm disk
# 100-250 (inner to outer tracks); network: 1 GbE carries ~117 MB/s; tmpfs is memory.
DISK_READ_MBPS = {"nvme": 1000.0, "ssd": 300.0, "hdd": 100.0, "network": 100.0, "tmpfs": 2000.0}
SHM_MBPS = 1000.0  # /dev/shm (tmpfs) write or read below 1 GB/s: memory under pressure or a tiny cgroup


def disk_expected_mbps(kind: Optional[str]) -> Optional[float]:
    return DISK_READ_MBPS.get(kind or "")
