"""GPUs: the memory each part reports, how many sit in a node, and the speeds the planner's
step-time estimate uses (generator.plan.step_time)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from generator.base.errors import InputError


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str
    memory_gib: float  # what torch.cuda reports as total memory (nvidia-smi MiB / 1024)
    gpus_per_node: int = 8
    note: str = ""
    # Speeds for the step-time estimate (nominal vendor spec-sheet figures, see _SPEEDS). A GPU
    # given only by --gpu-mem is assumed to be H100-like.
    peak_tflops: float = 989.0  # dense bf16 tensor-core TFLOP/s (no sparsity)
    hbm_tb_s: float = 3.35  # HBM bandwidth, TB/s
    host_gb_s: float = 64.0  # host link per GPU, one direction, GB/s (PCIe Gen5 x16 = 64)
    peer_gb_s: float = 450.0  # GPU-to-GPU inside a node, one direction, GB/s (NVLink 4: 900 both ways)
    net_gb_s: float = 50.0  # GPU-to-GPU across nodes, per GPU, one direction, GB/s (one 400 Gb/s NIC per GPU)


# nvidia-smi "Total" memory of each part, in MiB.
_GPUS: dict[str, tuple[int, str]] = {
    "h100": (81559, "H100 SXM 80 GB"),
    "h800": (81559, "H800 80 GB"),
    "h100-nvl": (95830, "H100 NVL 94 GB"),
    "h20": (97871, "H20 96 GB"),
    "h200": (143771, "H200 141 GB"),
    "h800-96g": (97871, "96 GB variant"),
    "a100-80g": (81920, "A100 80 GB"),
    "a100-40g": (40960, "A100 40 GB"),
    "a800": (81920, "A800 80 GB"),
    "l40s": (46068, "L40S 48 GB"),
    "l40": (46068, "L40 48 GB"),
    "l20": (46068, "L20 48 GB"),
    "a6000": (49140, "RTX A6000 48 GB"),
    "a10g": (23028, "A10G 24 GB"),
    "rtx4090": (24564, "RTX 4090 24 GB"),
    "b200": (183359, "B200 180 GB"),
    "gb200": (189471, "GB200 186 GB"),
    "mi300x": (196592, "MI300X 192 GB"),
    "mi325x": (262144, "MI325X 256 GB"),
}
# Nominal speeds per part: (dense bf16 TFLOP/s, HBM TB/s, host link GB/s, in-node peer GB/s), from
# the vendors' data sheets (NVIDIA H100/H200/H20/A100/L40S/B200, AMD MI300X/MI325X). Host links are
# PCIe x16 per direction (Gen4 32, Gen5 64 GB/s; GB200's NVLink-C2C 450); parts without NVLink use
# PCIe for peers too. China-market parts: H800's NVLink is 400 GB/s both ways, A800's 400.
_SPEEDS: dict[str, tuple[float, float, float, float]] = {
    "h100": (989, 3.35, 64, 450), "h800": (989, 3.35, 64, 200), "h100-nvl": (835, 3.9, 64, 300),
    "h20": (148, 4.0, 64, 450), "h200": (989, 4.8, 64, 450), "h800-96g": (989, 4.0, 64, 200),
    "a100-80g": (312, 2.04, 32, 300), "a100-40g": (312, 1.56, 32, 300), "a800": (312, 2.04, 32, 200),
    "l40s": (362, 0.864, 32, 32), "l40": (181, 0.864, 32, 32), "l20": (119.5, 0.864, 32, 32),
    "a6000": (155, 0.768, 32, 32), "a10g": (70, 0.6, 32, 32), "rtx4090": (165, 1.0, 32, 32),
    "b200": (2250, 8.0, 64, 900), "gb200": (2500, 8.0, 450, 900),
    "mi300x": (1307, 5.3, 64, 448), "mi325x": (1307, 6.0, 64, 448),
}
# Scale-out network per GPU, GB/s one direction: the reference clusters' one NIC per GPU (DGX H100/H200
# and HGX H20/H800: ConnectX-7 400 Gb/s; DGX A100: ConnectX-6 200 Gb/s; DGX B200: ConnectX-7 400 Gb/s,
# GB200 NVL72 ConnectX-8 800 Gb/s); PCIe workstation parts: one 100 Gb/s NIC per node of 8 assumed.
_NETWORK_GB_S: dict[str, float] = {"a100-80g": 25, "a100-40g": 25, "a800": 25, "l40s": 1.6, "l40": 1.6, "l20": 1.6,
                                   "a6000": 1.6, "a10g": 1.6, "rtx4090": 1.6, "gb200": 100}
_GPU_ALIASES = {"a100": "a100-80g", "h100-80g": "h100", "h100-sxm": "h100", "a800-80g": "a800",
                "h20-96g": "h20", "h200-141g": "h200"}
DEFAULT_GPU = "h100"


def gpu_names() -> list[str]:
    """The GPU types `--gpu` accepts by name (its aliases aside)."""
    return list(_GPUS)


def gpu_spec(name: str | None, mem_gb: float | None = None) -> GpuSpec:
    """A GPU by name (`h100`, `h20`, `a100-40g`…), optionally with `--gpu-mem` (GiB) overriding its memory."""
    if mem_gb is not None and not (0 < mem_gb < 4096):
        raise InputError(f"--gpu-mem must be a positive number of GiB, got {mem_gb}")
    if name is None:
        if mem_gb is not None:
            return GpuSpec(f"{mem_gb:g}GiB", float(mem_gb), note="custom memory size")
        name = DEFAULT_GPU
    key = re.sub(r"[\s_]+", "-", name.strip().lower()).replace("nvidia-", "")
    key = _GPU_ALIASES.get(key, key)
    if key not in _GPUS:
        close = difflib.get_close_matches(key, list(_GPUS), n=3, cutoff=0.4)
        raise InputError(
            f"unknown GPU '{name}'; known: {', '.join(close or list(_GPUS)[:8])} (or give --gpu-mem GB)"
        )
    mib, note = _GPUS[key]
    memory = float(mem_gb) if mem_gb is not None else round(mib / 1024, 1)
    tflops, hbm, host, peer = _SPEEDS[key]
    return GpuSpec(key, memory, note=note, peak_tflops=tflops, hbm_tb_s=hbm, host_gb_s=host, peer_gb_s=peer,
                   net_gb_s=_NETWORK_GB_S.get(key, 50.0))
