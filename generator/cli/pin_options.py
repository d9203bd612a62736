"""The 18 layout and knob pins `gen plan` and `gen recipe` both take (--tp ... --fused-kernels),
written once: `with_pin_options` adds them to a typer command, which receives them as one
`pin_values` mapping (option name -> value, None = not pinned; generator.layout.pins.pins_from_options
turns them into the planner's typed Pins)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Optional

import typer

# option name -> (type, flag, help). The names are generator.layout.pins.OPTION_FIELDS' keys.
PINS: dict[str, tuple[Any, str, str]] = {
    "tp": (Optional[int], "--tp", "Pin tensor parallel (the rest is planned)."),
    "pp": (Optional[int], "--pp", "Pin pipeline parallel."),
    "cp": (Optional[int], "--cp", "Pin context parallel."),
    "ep": (Optional[int], "--ep", "Pin expert parallel (MoE models)."),
    "etp": (Optional[int], "--etp", "Pin expert tensor parallel (MoE models)."),
    "vpp": (Optional[int], "--vpp", "Pin virtual pipeline stages per rank."),
    "first_stage_layers": (Optional[int], "--first-stage-layers", "Layers on the first pipeline stage (uneven split)."),
    "last_stage_layers": (Optional[int], "--last-stage-layers", "Layers on the last pipeline stage (uneven split)."),
    "rollout_tp": (Optional[int], "--rollout-tp", "Pin the rollout engine's TP."),
    "micro_batch_per_gpu": (Optional[int], "--micro-batch-per-gpu", "Pin ppo_micro_batch_size_per_gpu."),
    "token_budget": (Optional[int], "--token-budget", "Pin ppo_max_token_len_per_gpu (dynamic batch size)."),
    "dynamic_bsz": (Optional[bool], "--dynamic-bsz/--no-dynamic-bsz",
                    "Force use_dynamic_bsz on or off (default: on for long sequences)."),
    "gpu_memory_utilization": (Optional[float], "--gpu-memory-utilization",
                               "Pin rollout.gpu_memory_utilization (0-1)."),
    "param_offload": (Optional[bool], "--param-offload/--no-param-offload", "Force Megatron param offload on or off."),
    "optimizer_offload": (Optional[bool], "--optimizer-offload/--no-optimizer-offload",
                          "Force Megatron optimizer offload on or off."),
    "cpu_optimizer_fraction": (Optional[float], "--cpu-optimizer-fraction",
                               "Share of the optimizer on the CPU (Megatron CPU optimizer, 0-1; 0 = off)."),
    "recompute": (Optional[bool], "--recompute/--no-recompute", "Force full activation recompute on or off."),
    "fused_kernels": (Optional[bool], "--fused-kernels/--no-fused-kernels",
                      "Force fused log-prob kernels (no [tokens x vocab] logits) on or off."),
}


def with_pin_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command(..., pin_values)` as a typer command that takes the pin options after its own."""
    own = inspect.signature(command, eval_str=True)
    params = [p for name, p in own.parameters.items() if name != "pin_values"]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                                 default=typer.Option(None, flag, help=text))
               for name, (kind, flag, text) in PINS.items()]

    @functools.wraps(command)
    def wrapper(**options: Any) -> None:
        pin_values = {name: options.pop(name) for name in PINS}
        command(**options, pin_values=pin_values)

    wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
    return wrapper
