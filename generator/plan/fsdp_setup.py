"""The FSDP memory of one trainer call read from its Config (every knob the script sets, or the
release's default for it), its verdict for `gen check --gpu` (VM811/VM812) and the cheapest change
that fits, in the order docs/memory-model.md#fsdp-knobs-in-order-of-cost gives: param offload,
optimizer offload, gradient checkpointing, FSDP2's offload policy, a smaller micro batch or token
budget (update, then log-prob passes), a lower gpu_memory_utilization."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from generator.layout.derive import local_batch, per_rank_mini_batch
from generator.config.reader import ConfigReader
from generator.config.types import Config
from generator.layout.hardware import GpuSpec
from generator.model.facts import ModelFacts
from generator.plan.call_model import call_model
from generator.plan.fsdp_memory import FsdpKnobs, FsdpVerdict, fsdp_verdict
from generator.plan.gmu_ladder import lowered_gmu
from generator.plan.relief import KnobChange, Rung, cheapest_change
from generator.rules.core import MemoryVerdict
from generator.verl.constants import ACTOR, REF, ROLLOUT, VLLM_MAX_NUM_BATCHED_TOKENS

_Relief = KnobChange[FsdpKnobs]  # one rung of this actor's memory relief
MODEL = "actor_rollout_ref.model."
FSDP = ACTOR + "fsdp_config."
_DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}


@dataclass(frozen=True, slots=True)
class FsdpSetup:
    model: ModelFacts
    knobs: FsdpKnobs
    headroom_gib: float = 0.0


def _per_gpu(reader: ConfigReader, per_gpu_key: str, global_key: str, dp: int, problems: list[str],
             *, required: bool) -> int | None:
    """A micro batch per GPU: the per-GPU key, else the deprecated global one ÷ DP (as verl's FSDP
    workers divide it)."""
    per_gpu = reader.int(per_gpu_key)
    if per_gpu is not None:
        return per_gpu
    global_micro = reader.int(global_key)
    if global_micro is not None and global_micro > 0:
        return max(1, global_micro // dp)
    if required and not reader.is_null(per_gpu_key):
        why = reader.config.unknown.get(per_gpu_key)
        problems.append(f"{per_gpu_key} is not a known integer" + (f" ({why})" if why else ""))
    elif required:
        problems.append(f"neither {per_gpu_key} nor {global_key} is set")
    return None


def fsdp_setup_from_config(config: Config, *, gpu: GpuSpec, model: ModelFacts | None,
                           headroom_gib: float = 0.0) -> tuple[FsdpSetup | None, tuple[str, ...]]:
    """The call's FSDP memory setup on `gpu`, or the reasons it cannot be evaluated."""
    reader = ConfigReader(config)
    problems: list[str] = []
    if model is None:
        problems.append("the model is not known; pass --model NAME or a config.json")
    gpus = reader.gpus
    if gpus is None:
        problems.append("trainer.n_gpus_per_node · trainer.nnodes is not known")
    sp = reader.ulysses() or 1
    prompt, response = reader.int("data.max_prompt_length"), reader.int("data.max_response_length")
    if prompt is None or response is None:
        problems.append("data.max_prompt_length or data.max_response_length is not known")

    def flag(key: str, default: bool = False) -> bool:
        value = reader.bool(key)
        if value is None and reader.known(key) and not reader.is_null(key):
            problems.append(f"{key} is not a known true/false value")
        return default if value is None else value

    def number(key: str, default: float) -> float:
        value = reader.float(key)
        return default if value is None else value

    dynamic = flag(ACTOR + "use_dynamic_bsz")
    lp_dynamic = flag(ROLLOUT + "log_prob_use_dynamic_bsz")
    dp = max(1, (gpus or 1) // max(1, sp))
    micro = _per_gpu(reader, ACTOR + "ppo_micro_batch_size_per_gpu", ACTOR + "ppo_micro_batch_size", dp, problems,
                     required=not dynamic)
    lp_micro = _per_gpu(reader, ROLLOUT + "log_prob_micro_batch_size_per_gpu", ROLLOUT + "log_prob_micro_batch_size",
                        dp, problems, required=False)
    ref_micro = _per_gpu(reader, REF + "log_prob_micro_batch_size_per_gpu", REF + "log_prob_micro_batch_size",
                         dp, problems, required=False)
    budget = reader.int(ACTOR + "ppo_max_token_len_per_gpu")
    if dynamic and budget is None:
        problems.append(f"{ACTOR}ppo_max_token_len_per_gpu is not a known integer")
    pn = reader.prompts_and_n()
    mini = reader.int(ACTOR + "ppo_mini_batch_size")
    per_rank_mini = per_rank_mini_batch(mini, pn[1], dp) if (pn and mini) else 0
    per_rank_batch = local_batch(pn[0], pn[1], dp) if pn else 0
    lora_rank = reader.int(MODEL + "lora_rank") or 0
    targets = reader.raw(MODEL + "target_modules")
    dtype = reader.str(FSDP + "model_dtype")
    if problems or model is None or gpus is None or prompt is None or response is None:
        return None, tuple(problems)
    knobs = FsdpKnobs(
        gpus=gpus, gpu_memory_gib=gpu.memory_gib, prompt_len=prompt, response_len=response,
        strategy=reader.str(ACTOR + "strategy") or "fsdp",
        fsdp_size=reader.int(FSDP + "fsdp_size") or -1,
        param_offload=flag(FSDP + "param_offload"), optimizer_offload=flag(FSDP + "optimizer_offload"),
        offload_policy=flag(FSDP + "offload_policy"),
        model_dtype_bytes=_DTYPE_BYTES.get((dtype or "fp32").lower(), 4),
        gradient_checkpointing=flag(MODEL + "enable_gradient_checkpointing", True),
        activation_offload=flag(MODEL + "enable_activation_offloading"),
        ulysses=sp, lora_rank=lora_rank,
        lora_all_linear=not isinstance(targets, (list, tuple)) and str(targets or "all-linear") == "all-linear",
        micro_batch=micro or 1, use_dynamic_bsz=dynamic, token_budget=budget,
        per_rank_mini=per_rank_mini, per_rank_batch=per_rank_batch,
        log_prob_micro_batch=lp_micro, log_prob_dynamic=lp_dynamic,
        log_prob_token_budget=reader.int(ROLLOUT + "log_prob_max_token_len_per_gpu") or budget,
        ref_micro_batch=ref_micro, ref_token_budget=reader.int(REF + "log_prob_max_token_len_per_gpu"),
        remove_padding=flag(MODEL + "use_remove_padding"), fused_kernels=flag(MODEL + "use_fused_kernels"),
        entropy_in_update=number(ACTOR + "entropy_coeff", 0.0) != 0,
        has_ref=reader.ref_used is not False, has_critic=bool(reader.critic_used),
        rollout_tp=reader.int(ROLLOUT + "tensor_model_parallel_size") or 1,
        gpu_memory_utilization=number(ROLLOUT + "gpu_memory_utilization", 0.5),
        enforce_eager=flag(ROLLOUT + "enforce_eager", True),
        max_num_batched_tokens=reader.int(ROLLOUT + "max_num_batched_tokens") or VLLM_MAX_NUM_BATCHED_TOKENS,
    )
    return FsdpSetup(model, knobs, headroom_gib), ()


# ---------------------------------------------------------------------------------------------
# The ladder


def _flag_rung(field: str, key: str, words: str, *, when: Callable[[FsdpKnobs], bool] = lambda k: True
               ) -> Callable[[FsdpKnobs], Iterator[_Relief]]:
    def rung(k: FsdpKnobs) -> Iterator[_Relief]:
        if not getattr(k, field) and when(k):
            changes: dict[str, Any] = {field: True}
            yield _Relief(words, replace(k, **changes), ((key, True),))
    return rung


def _halve(field: str, key: str, floor: Callable[[FsdpKnobs], int], applies: Callable[[FsdpKnobs], bool]
           ) -> Callable[[FsdpKnobs], Iterator[_Relief]]:
    def rung(k: FsdpKnobs) -> Iterator[_Relief]:
        value = getattr(k, field)
        if not applies(k) or not value:
            return
        value //= 2
        while value >= max(1, floor(k)):
            changes: dict[str, Any] = {field: value}
            yield _Relief(f"lower {key.rsplit('.', 1)[-1]} to {value}", replace(k, **changes), ((key, value),))
            value //= 2
    return rung


def _lower_gmu(k: FsdpKnobs) -> Iterator[_Relief]:
    for gmu in lowered_gmu(k.gpu_memory_utilization):
        yield _Relief(f"lower gpu_memory_utilization to {gmu:g}", replace(k, gpu_memory_utilization=gmu),
                      ((ROLLOUT + "gpu_memory_utilization", gmu),))


_RUNGS: tuple[Rung[FsdpKnobs], ...] = (
    _flag_rung("param_offload", FSDP + "param_offload", "turn on fsdp_config.param_offload"),
    _flag_rung("optimizer_offload", FSDP + "optimizer_offload", "turn on fsdp_config.optimizer_offload"),
    _flag_rung("gradient_checkpointing", MODEL + "enable_gradient_checkpointing", "turn on gradient checkpointing"),
    _flag_rung("offload_policy", FSDP + "offload_policy", "turn on FSDP2's offload_policy (the step runs on the CPU)",
               when=lambda k: k.strategy == "fsdp2"),
    _halve("micro_batch", ACTOR + "ppo_micro_batch_size_per_gpu", lambda k: 1, lambda k: not k.use_dynamic_bsz),
    _halve("token_budget", ACTOR + "ppo_max_token_len_per_gpu", lambda k: k.seq_len, lambda k: k.use_dynamic_bsz),
    _halve("log_prob_micro_batch", ROLLOUT + "log_prob_micro_batch_size_per_gpu", lambda k: 1,
           lambda k: not k.log_prob_dynamic),
    _halve("log_prob_token_budget", ROLLOUT + "log_prob_max_token_len_per_gpu", lambda k: k.seq_len,
           lambda k: k.log_prob_dynamic),
    _lower_gmu,
)


def _fits(setup: FsdpSetup, knobs: FsdpKnobs) -> tuple[bool, float]:
    verdict = fsdp_verdict(setup.model, knobs, setup.headroom_gib)
    return verdict.fits, verdict.report.peak_gib


def fsdp_smallest_fix(setup: FsdpSetup) -> _Relief | None:
    """The cheapest change that fits at the maximum lengths: one knob alone, then stacked."""
    return cheapest_change(setup.knobs, _RUNGS, lambda knobs: _fits(setup, knobs))


def evaluate_call(config: Config, *, gpu: GpuSpec, model: ModelFacts | None, headroom_gib: float = 0.0
                  ) -> tuple[FsdpSetup | None, FsdpVerdict | None, tuple[str, ...]]:
    setup, problems = fsdp_setup_from_config(config, gpu=gpu, model=model, headroom_gib=headroom_gib)
    if setup is None:
        return None, None, problems
    return setup, fsdp_verdict(setup.model, setup.knobs, headroom_gib), ()


def fsdp_memory_verdict(config: Config, model: ModelFacts | None, gpu: GpuSpec, headroom_gib: float = 0.0
                        ) -> MemoryVerdict:
    """The call's verdict for the rules (VM811/VM812), with the cheapest change that fits."""
    facts, _source, problem = call_model(ConfigReader(config), model)
    setup, verdict, problems = evaluate_call(config, gpu=gpu, model=facts, headroom_gib=headroom_gib)
    if setup is None or verdict is None:
        found = ((problem,) if problem else ()) + tuple(p for p in problems if not p.startswith("the model is not"))
        return MemoryVerdict(gpu=gpu.name, fits=True, peak_gib=0.0, usable_gib=0.0, peak_phase="", peak_stage=0,
                             problems=found or ("the call could not be read",), backend="fsdp")
    report = verdict.report
    out = MemoryVerdict(gpu=gpu.name, fits=verdict.fits, peak_gib=round(report.peak_gib, 2),
                        usable_gib=report.usable_gib, peak_phase=report.peak_phase, peak_stage=0, backend="fsdp",
                        fill_limit=verdict.fill_limit if verdict.length_dependent else None,
                        seq_len=setup.knobs.seq_len)
    if verdict.fits:
        return out
    change = fsdp_smallest_fix(setup)
    if change is None:
        return out
    return out._replace(fix=change.words, fix_edits=change.edits)
