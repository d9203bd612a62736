"""GPUs: the memory each part reports and how many sit in a node."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from generator.errors import InputError


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str
    memory_gib: float  # what torch.cuda reports as total memory (nvidia-smi MiB / 1024)
    gpus_per_node: int = 8
    note: str = ""


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
_GPU_ALIASES = {"a100": "a100-80g", "h100-80g": "h100", "h100-sxm": "h100", "a800-80g": "a800",
                "h20-96g": "h20", "h200-141g": "h200"}
DEFAULT_GPU = "h100"


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
    return GpuSpec(key, memory, note=note)
