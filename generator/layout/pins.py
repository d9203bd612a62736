"""What a caller pins for the planner, as one typed record: the layout fields and the knobs that
`gen plan`/`gen recipe` take as options (--tp ... --fused-kernels), or a shipped script's own
knobs (generator.plan.reference, bench/). Every field's None means "not pinned: the planner
chooses"; there is no other way to say unset.

The planner either searches the layouts that agree with the pinned layout fields, or, asked to
evaluate, sizes the one layout they describe (the unpinned fields at Megatron's defaults). The
knobs are pinned for every layout it sizes; `param_offload`, `optimizer_offload`,
`cpu_optimizer_fraction` and `recompute` pin single rungs of the memory relief, `offload` pins
the whole offload record (a shipped script's), which is then the one rung.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypedDict, cast

from generator.base.errors import InputError
from generator.layout.parallelism import Offload

LAYOUT_FIELDS = ("tp", "pp", "cp", "ep", "etp", "vpp", "first_stage_layers", "last_stage_layers")


class LayoutPins(TypedDict, total=False):
    """The pinned layout fields, as Layout/Candidate keyword arguments (an unpinned one is absent)."""

    tp: int
    pp: int
    cp: int
    ep: int
    etp: int
    vpp: int
    first_stage_layers: int
    last_stage_layers: int


# Candidate fields a pin sets as given on every layout the planner sizes.
KNOB_FIELDS = ("micro_batch_per_gpu", "log_prob_micro_batch_per_gpu", "token_budget", "log_prob_token_budget",
               "offload", "recompute", "gpu_memory_utilization", "use_fused_kernels", "enforce_eager")


@dataclass(frozen=True, slots=True)
class Pins:
    """The layout and knobs pinned; None = not pinned. The fields `gen plan`/`gen recipe` take come
    first, in their options' order (OPTION_FIELDS)."""

    # the layout (Parallelism's fields)
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    ep: int | None = None
    etp: int | None = None
    vpp: int | None = None
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    # knobs
    rollout_tp: int | None = None
    micro_batch_per_gpu: int | None = None
    token_budget: int | None = None
    use_dynamic_bsz: bool | None = None  # None: dynamic where verl's scripts and the step time say so
    gpu_memory_utilization: float | None = None
    param_offload: bool | None = None  # single relief rungs (the ladder keeps the rungs that agree)
    optimizer_offload: bool | None = None
    cpu_optimizer_fraction: float | None = None
    recompute: bool | None = None
    use_fused_kernels: bool | None = None
    # knobs only a shipped script pins
    log_prob_micro_batch_per_gpu: int | None = None
    log_prob_token_budget: int | None = None
    enforce_eager: bool | None = None
    offload: Offload | None = None  # the whole record: the one relief rung
    # the fields set because another pin implies them (a token budget: dynamic batches; a CPU
    # optimizer: both offloads), which messages name after the user's own
    implied: tuple[str, ...] = field(default=(), compare=False)

    def given(self) -> dict[str, Any]:
        """The pinned fields, name -> value: the caller's own in field order, then the implied ones."""
        set_ = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "implied"
                and getattr(self, f.name) is not None}
        own = {name: value for name, value in set_.items() if name not in self.implied}
        return own | {name: value for name, value in set_.items() if name in self.implied}

    def layout_fields(self) -> LayoutPins:
        """The pinned layout fields, as Layout/Candidate keyword arguments."""
        return cast(LayoutPins, {name: getattr(self, name) for name in LAYOUT_FIELDS if getattr(self, name) is not None})

    def knobs(self) -> dict[str, Any]:
        """The pinned KNOB_FIELDS, as Candidate keyword arguments."""
        return {name: getattr(self, name) for name in KNOB_FIELDS if getattr(self, name) is not None}


NO_PINS = Pins()

# `gen plan`/`gen recipe` option name (generator.cli.pin_options) -> Pins field.
OPTION_FIELDS: dict[str, str] = {
    "tp": "tp", "pp": "pp", "cp": "cp", "ep": "ep", "etp": "etp", "vpp": "vpp",
    "first_stage_layers": "first_stage_layers", "last_stage_layers": "last_stage_layers",
    "rollout_tp": "rollout_tp", "micro_batch_per_gpu": "micro_batch_per_gpu", "token_budget": "token_budget",
    "dynamic_bsz": "use_dynamic_bsz", "gpu_memory_utilization": "gpu_memory_utilization",
    "param_offload": "param_offload", "optimizer_offload": "optimizer_offload",
    "cpu_optimizer_fraction": "cpu_optimizer_fraction", "recompute": "recompute",
    "fused_kernels": "use_fused_kernels",
}


def _option_value(option: str, value: int | float | bool) -> int | float | bool:
    """One option's value as the field takes it; one-line InputError for a value no layout could take."""
    flag = "--" + option.replace("_", "-")
    if isinstance(value, bool):
        return value
    if option == "gpu_memory_utilization":
        if not 0 < value < 1:
            raise InputError(f"{flag} must be between 0 and 1, got {value}")
        return float(value)
    if option == "cpu_optimizer_fraction":
        if not 0 <= value <= 1:  # 0: no CPU optimizer
            raise InputError(f"{flag} must be between 0 and 1, got {value}")
        return float(value)
    if value < 1 or value != int(value):
        raise InputError(f"{flag} must be a positive whole number, got {value}")
    return int(value)


def pins_from_options(**options: int | float | bool | None) -> Pins:
    """The planner's pins from `gen plan`/`gen recipe` options (None = not pinned); one-line
    InputError for a value no layout could take."""
    values = {OPTION_FIELDS[option]: _option_value(option, value)
              for option, value in options.items() if value is not None}
    implied: dict[str, bool] = {}
    if "token_budget" in values:
        if values.get("use_dynamic_bsz") is False:
            raise InputError("--token-budget goes with dynamic batch size (drop --no-dynamic-bsz)")
        if "use_dynamic_bsz" not in values:
            implied["use_dynamic_bsz"] = True
    elif "micro_batch_per_gpu" in values and "use_dynamic_bsz" not in values:
        implied["use_dynamic_bsz"] = False
    if values.get("cpu_optimizer_fraction"):  # Megatron's CPU optimizer runs with both offloads on
        implied |= {name: True for name in ("param_offload", "optimizer_offload") if name not in values}
    return Pins(**values, **implied, implied=tuple(implied))  # type: ignore[arg-type]


def pins_text(pins: Pins) -> str:
    """`tp=1, pp=1, recompute=True`: the pinned fields, for a message."""
    return ", ".join(f"{key}={value}" for key, value in pins.given().items())
