"""VB140–VB144 — the batch rules of verl's trainer entries other than main_ppo: offline generation
(`verl.trainer.main_generation`) and supervised fine-tuning (`fsdp_sft_trainer`, the engine-based
`sft_trainer`). Each entry reads its own config (generation.yaml, sft_trainer.yaml,
sft_trainer_engine.yaml), which verl-gen's packaged schemas do not hold: a value counts when the
call sets it, else the entry's own default from ENTRY_DEFAULTS (never the PPO stand-in's).
Reasons and verl sources: docs/rules/batch.md#vb140 onwards.

The SFT entries run under torchrun, whose `--nproc_per_node` and `--nnodes` are the world size: read
from the call's text, literal numbers or a variable the script assigns one literal number to
before the call; anything else leaves the world unknown and the SFT rules silent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from generator.config.reader import ConfigReader
from generator.layout.derive import data_parallel_size
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, ctx_finding, rule
from generator.verl.versions import VersionRange

# Defaults of each entry's own config, the same in every release that ships the entry (checked at
# each tag): verl/trainer/config/generation.yaml and sft_trainer.yaml @ v0.4.1 … v0.7.0,
# sft_trainer_engine.yaml and engine/fsdp.yaml @ v0.7.0 … v0.9.0 (and the 0.9.1 wheel).
ENTRY_DEFAULTS: dict[str, dict[str, Any]] = {
    "main_generation": {"data.n_samples": 5, "rollout.temperature": 1.0},
    "fsdp_sft_trainer": {"data.train_batch_size": 256, "data.micro_batch_size_per_gpu": 4,
                         "ulysses_sequence_parallel_size": 1},
    "sft_trainer": {"data.train_batch_size": 256, "engine.ulysses_sequence_parallel_size": 1,
                    "engine.tensor_model_parallel_size": 1, "engine.pipeline_model_parallel_size": 1,
                    "engine.context_parallel_size": 1},
}

# main_generation.py and fsdp_sft_trainer.py ship up to 0.7.0 (gone at v0.7.1); sft_trainer.py from 0.7.0.
LEGACY_ENTRIES = VersionRange(None, "0.7.0")
ENGINE_SFT = VersionRange("0.7.0", None)
ALL_BACKENDS = ("megatron", "fsdp", "unknown")


def entry_name(ctx: Context) -> str | None:
    """The entry's module name when it is one of ENTRY_DEFAULTS (`verl.trainer.sft_trainer` → sft_trainer)."""
    entry = (ctx.config.entry or "").rsplit(".", 1)[-1].removesuffix(".py")
    return entry if entry in ENTRY_DEFAULTS else None


def _value(view: ConfigReader, entry: str, key: str) -> tuple[Any, bool]:
    """(value, set by the call): the call's own value, else the entry's default (None if unknown)."""
    if view.explicit(key):
        return (view.raw(key) if view.known(key) else None), True
    return ENTRY_DEFAULTS[entry].get(key), False


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _count(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None


def _said(key: str, value: Any, set_here: bool) -> str:
    return f"{key}={value}" + ("" if set_here else " (the entry's default)")


# ---------------------------------------------------------------------------------------------
# torchrun's world size

_TORCHRUN_OPTION = r"(?:^|\s)--{name}(?:=|\s+)(['\"]?)(\$\{{?\w+\}}?|\d+)\1(?=\s|$)"


def _literal_assignment(text: str, name: str, before_line: int) -> int | None:
    """The one literal number the script assigns to `name` before the call; None otherwise."""
    found: list[int] = []
    for line in text.splitlines()[:before_line - 1]:
        for match in re.finditer(rf"(?:^|[\s;&|(])(?:export\s+)?{re.escape(name)}=(['\"]?)(\S*?)\1(?=$|[\s;&|)])", line):
            found.append(int(match.group(2)) if match.group(2).isdigit() else -1)
    return found[-1] if found and found[-1] > 0 and len(set(found)) == 1 else None


def torchrun_world(ctx: Context) -> tuple[int, str] | None:
    """(GPUs, how they were read) of a torchrun call: --nproc_per_node × --nnodes (1 when absent)."""
    if ctx.script is None or ctx.invocation is None or ctx.invocation.launcher != "torchrun":
        return None
    text = ctx.script.text
    command = ctx.script.source[ctx.invocation.span.start:ctx.invocation.span.end].decode("utf-8", "replace")
    command = command.split(" -m ", 1)[0].replace("\\\n", " ")
    parts: list[tuple[int, str]] = []
    for option, absent in (("nproc[_-]per[_-]node", None), ("nnodes", 1)):
        match = re.search(_TORCHRUN_OPTION.format(name=option), command)
        if match is None:
            if absent is None:
                return None
            parts.append((absent, ""))
            continue
        word = match.group(2)
        if word.isdigit():
            parts.append((int(word), word))
            continue
        value = _literal_assignment(text, word.strip("${}"), ctx.invocation.line)
        if value is None:
            return None
        parts.append((value, f"{word} = {value}"))
    (per_node, per_text), (nodes, nodes_text) = parts
    how = f"torchrun --nproc_per_node {per_text}" + (f" --nnodes {nodes_text}" if nodes_text else "")
    return per_node * nodes, how


# ---------------------------------------------------------------------------------------------
# main_generation


@rule("VB140", "generation-greedy-with-several-samples", severity="error", stage="init", versions=LEGACY_ENTRIES,
      backends=ALL_BACKENDS, scope="any")
def greedy_with_samples(ctx: Context) -> Iterator[Finding]:
    if entry_name(ctx) != "main_generation":
        return
    view = ConfigReader.of(ctx)
    temperature, _ = _value(view, "main_generation", "rollout.temperature")
    samples, samples_set = _value(view, "main_generation", "data.n_samples")
    samples_n = _count(samples)
    if _number(temperature) != 0.0 or samples_n is None or samples_n <= 1:
        return
    message = (f"rollout.temperature=0 (greedy) with {_said('data.n_samples', samples, samples_set)}: every "
               f"sample would be the same answer, and verl.trainer.main_generation asserts "
               f"'When temperature=0, n_samples must be 1' before generating")
    fix = Fix("set data.n_samples=1", (KeyEdit("data.n_samples", view.raw("data.n_samples"), 1),),
              applicability="unsafe")
    yield ctx_finding(greedy_with_samples, view, ("data.n_samples", "rollout.temperature"), message, fix=fix)


@rule("VB141", "generation-samples-below-one", severity="error", stage="init", versions=LEGACY_ENTRIES,
      backends=ALL_BACKENDS, scope="any")
def samples_below_one(ctx: Context) -> Iterator[Finding]:
    if entry_name(ctx) != "main_generation":
        return
    view = ConfigReader.of(ctx)
    samples, samples_set = _value(view, "main_generation", "data.n_samples")
    samples_n = _count(samples)
    if not samples_set or samples_n is None or samples_n >= 1:
        return
    message = (f"data.n_samples={samples}: main_generation writes n_samples responses per prompt and "
               f"asserts 'n_samples should always >= 1'")
    fix = Fix("set data.n_samples=1", (KeyEdit("data.n_samples", view.raw("data.n_samples"), 1),),
              applicability="unsafe")
    yield ctx_finding(samples_below_one, view, ("data.n_samples",), message, fix=fix)


# ---------------------------------------------------------------------------------------------
# SFT


def _sft_dp(ctx: Context, view: ConfigReader, entry: str) -> tuple[int, str] | None:
    """(DP, how it is made) of an SFT call: the world over the ranks that share one batch."""
    world = torchrun_world(ctx)
    if world is None:
        return None
    gpus, how = world
    keys: tuple[str, ...]
    if entry == "fsdp_sft_trainer":
        keys = ("ulysses_sequence_parallel_size",)
    elif view.str("engine.strategy") == "megatron" or any(
            o.key == "engine" and o.value == "megatron" for o in (ctx.invocation.overrides if ctx.invocation else [])):
        keys = ("engine.tensor_model_parallel_size", "engine.pipeline_model_parallel_size",
                "engine.context_parallel_size")
    else:
        keys = ("engine.ulysses_sequence_parallel_size",)
    sizes: list[int] = []
    for key in keys:
        size = _count(_value(view, entry, key)[0])
        if size is None or size <= 0:
            return None
        sizes.append(size)
    # W / (TP·PP·CP) on the Megatron engine, W / SP otherwise: derive's one DP formula either way
    dp = data_parallel_size(gpus, *(sizes + [1, 1])[:3])
    if dp is None:
        return None  # the device mesh itself fails; not a batch question
    split = "·".join(k.rsplit(".", 1)[-1] for k in keys)
    return dp, f"{gpus} GPUs ({how}) / {split} = {math.prod(sizes)}"


class _SftBatch(NamedTuple):
    """An SFT call's DP (with how it was counted) and its data.train_batch_size as written."""

    view: ConfigReader
    dp: int
    dp_how: str
    batch: Any
    batch_set: bool
    size: int


def _sft_batch(ctx: Context, entry: str) -> _SftBatch | None:
    """The batch the rules below judge: None unless the call runs `entry` and both its DP and its
    data.train_batch_size are known numbers."""
    if entry_name(ctx) != entry:
        return None
    view = ConfigReader.of(ctx)
    dp = _sft_dp(ctx, view, entry)
    batch, batch_set = _value(view, entry, "data.train_batch_size")
    size = _count(batch)
    if dp is None or size is None:
        return None
    return _SftBatch(view, dp[0], dp[1], batch, batch_set, size)


def _set_batch(view: ConfigReader, size: int) -> Fix:
    return Fix(f"set data.train_batch_size={size}",
               (KeyEdit("data.train_batch_size", view.raw("data.train_batch_size"), size),), applicability="unsafe")


@rule("VB142", "sft-batch-not-divisible-by-dp", severity="error", stage="init", versions=LEGACY_ENTRIES,
      backends=ALL_BACKENDS, scope="any")
def sft_batch_dp(ctx: Context) -> Iterator[Finding]:
    sft = _sft_batch(ctx, "fsdp_sft_trainer")
    if sft is None or sft.size <= 0 or sft.size % sft.dp == 0:
        return
    lower = sft.size - sft.size % sft.dp
    message = (f"{_said('data.train_batch_size', sft.batch, sft.batch_set)} is not divisible by DP {sft.dp} "
               f"(= {sft.dp_how}): fsdp_sft_trainer asserts 'Global batch size {sft.size} is not divisible by dp "
               f"size {sft.dp}' when it builds its data loader")
    yield ctx_finding(sft_batch_dp, sft.view, ("data.train_batch_size",), message,
                      fix=_set_batch(sft.view, lower) if lower > 0 else None)


@rule("VB143", "sft-rank-batch-not-divisible-by-micro", severity="error", stage="init", versions=LEGACY_ENTRIES,
      backends=ALL_BACKENDS, scope="any")
def sft_rank_batch_micro(ctx: Context) -> Iterator[Finding]:
    sft = _sft_batch(ctx, "fsdp_sft_trainer")
    if sft is None or sft.size % sft.dp:
        return  # a batch DP does not divide is VB142's
    micro, micro_set = _value(sft.view, "fsdp_sft_trainer", "data.micro_batch_size_per_gpu")
    micro_n = _count(micro)
    if micro_n is None or micro_n <= 0:
        return
    local = sft.size // sft.dp
    if local % micro_n == 0:
        return
    message = (f"{_said('data.train_batch_size', sft.batch, sft.batch_set)} / DP {sft.dp} = {local} samples per "
               f"rank, not divisible by {_said('data.micro_batch_size_per_gpu', micro, micro_set)}: "
               f"fsdp_sft_trainer asserts that each rank's share splits into whole micro batches")
    yield ctx_finding(sft_rank_batch_micro, sft.view, ("data.micro_batch_size_per_gpu", "data.train_batch_size"),
                      message)


@rule("VB144", "sft-engine-batch-per-dp", severity="warning", stage="init", versions=ENGINE_SFT,
      backends=ALL_BACKENDS, scope="any")
def sft_engine_batch(ctx: Context) -> Iterator[Finding]:
    sft = _sft_batch(ctx, "sft_trainer")
    if sft is None or sft.size <= 0 or sft.size % sft.dp == 0:
        return
    said = _said("data.train_batch_size", sft.batch, sft.batch_set)
    if sft.size < sft.dp:
        message = (f"{said} is smaller than DP {sft.dp} (= {sft.dp_how}): sft_trainer gives each rank "
                   f"train_batch_size // DP = 0 samples, and the data loader refuses a batch size of 0")
        yield ctx_finding(sft_engine_batch, sft.view, ("data.train_batch_size",), message, severity="error",
                          fix=_set_batch(sft.view, sft.dp))
        return
    lower = sft.size - sft.size % sft.dp
    message = (f"{said} is not divisible by DP {sft.dp} (= {sft.dp_how}): sft_trainer gives each rank "
               f"{sft.size} // {sft.dp} = {sft.size // sft.dp} samples, so a step trains on {lower}, not {sft.size}")
    yield ctx_finding(sft_engine_batch, sft.view, ("data.train_batch_size",), message, fix=_set_batch(sft.view, lower))
