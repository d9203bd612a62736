"""The memory setup of one trainer call read from its Config: the layout, every memory knob the
script sets (or verl's default for it), the workload, the model and the GPU.

Used by `gen explain --memory` (and `gen check --gpu`). When a value the model needs is unknown
(an unset variable, a value computed at run time), the call cannot be evaluated: the reasons
name the keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.layout.derive import Layout, layout_dp, per_rank_mini_batch
from generator.base.errors import InputError
from generator.config.derived import reads_global_micro
from generator.config.knobs import Knobs, Reads, read_knobs
from generator.config.reader import ConfigReader
from generator.config.types import Config
from generator.layout.hardware import GpuSpec, gpu_spec
from generator.model import resolve_model
from generator.model.facts import ModelFacts
from generator.layout.candidate import Candidate
from generator.plan.call_model import call_model, model_config_used
from generator.plan.memory import MemoryReport, MemorySetup, evaluate_memory
from generator.plan.stages import accounted_stage_sizes
from generator.plan.workload import Workload
from generator.verl.constants import ACTOR, MEGATRON_LORA_RANK, ROLLOUT, VLLM_MAX_NUM_BATCHED_TOKENS



@dataclass(frozen=True, slots=True)
class ScriptSetup:
    """A call's memory setup, or why there is none."""

    setup: MemorySetup | None
    problems: tuple[str, ...] = ()  # unknown or unreadable values, in the user's key names
    model_source: str = ""  # where the model facts came from


def memory_setup_from_config(config: Config, *, gpu: GpuSpec, model: ModelFacts | None = None,
                             headroom_gib: float = 0.0) -> ScriptSetup:
    """The call's MemorySetup on `gpu`, or the reasons it cannot be evaluated."""
    reader = ConfigReader(config)
    if reader.backend != "megatron":
        return ScriptSetup(None, ("the memory model covers the Megatron actor; this call uses "
                                  f"{reader.backend}",))
    facts, source, problem = call_model(reader, model)
    reads = Reads(reader)
    layout = reader.actor_layout()
    gpus = reader.gpus
    if gpus is None:
        reads.problems.append("trainer.n_gpus_per_node · trainer.nnodes is not known")
    if layout is None:
        reads.problems.append("the actor's Megatron layout (tensor/pipeline/context/expert sizes) is not known")
    pn = reader.prompts_and_n()
    if pn is None:
        reads.problems.append("data.train_batch_size or rollout.n is not known")
    prompt = reads.int("data.max_prompt_length")
    response = reads.int("data.max_response_length")
    mini = reads.int(ACTOR + "ppo_mini_batch_size")
    knobs = read_knobs(reads)
    dynamic, micro, lp_micro = knobs.dynamic, knobs.micro, knobs.log_prob_micro
    global_micro, global_lp_micro = knobs.global_micro, knobs.global_log_prob_micro
    batched = reads.int(ROLLOUT + "max_num_batched_tokens", VLLM_MAX_NUM_BATCHED_TOKENS, required=False)
    entropy = reads.float(ACTOR + "entropy_coeff", 0.0)
    lora_rank = reads.int(MEGATRON_LORA_RANK, 0, required=False) or 0
    has_ref, has_critic = reader.ref_used, reader.critic_used
    # The deprecated global keys count over every DP rank; only a worker that reads them (FSDP's
    # legacy one) divides them by DP. Megatron refuses a null per-GPU key; the new engine ignores them.
    global_read = reads_global_micro(reader)
    if not dynamic and micro is None and not (global_micro and global_read):
        reads.problems.append(f"{ACTOR}ppo_micro_batch_size_per_gpu is not set (verl refuses the call)")
    problems = ([problem] if problem else []) + reads.problems
    if problems or facts is None or layout is None or gpus is None or pn is None:
        return ScriptSetup(None, tuple(problems), source)
    assert prompt is not None and response is not None and mini is not None  # else a problem was recorded
    dp = layout_dp(gpus, layout)
    if micro is None and global_micro and global_read:
        micro = max(1, global_micro // dp)
    if lp_micro is None and global_lp_micro and global_read:
        lp_micro = max(1, global_lp_micro // dp)
    cand = _candidate(layout, facts, knobs, micro=micro, log_prob_micro=lp_micro, mini=mini)
    prompts, n = pn
    work = Workload(gpus=gpus, gpu_memory_gib=gpu.memory_gib, prompt_len=prompt, response_len=response,
                    per_rank_mini_batch=max(1, per_rank_mini_batch(mini, n, dp)), has_ref=has_ref is not False,
                    has_critic=bool(has_critic), entropy_in_update=entropy != 0,
                    max_num_batched_tokens=batched or VLLM_MAX_NUM_BATCHED_TOKENS,
                    gpus_per_node=reader.gpus_per_node or gpu.gpus_per_node, lora_rank=max(0, lora_rank),
                    **_release_rollout_defaults(config))
    del prompts  # the per-rank mini batch, not the step's prompts, sets the micro-batches in flight
    return ScriptSetup(MemorySetup(facts, cand, work, headroom_gib), (), source)


def _candidate(layout: Layout, facts: ModelFacts, knobs: Knobs, *, micro: int | None, log_prob_micro: int | None,
               mini: int) -> Candidate:
    """The call's layout and knobs as the memory model's Candidate: an even split of the layers
    counts the embedding and loss as verl's split does; a null gmu is verl's 0.5."""
    first, last = layout.first_stage_layers, layout.last_stage_layers
    if first is None and last is None:
        first, last = accounted_stage_sizes(facts.num_layers, layout.pp, layout.embedding_in_pipeline_split,
                                            layout.loss_in_pipeline_split)
    budget = knobs.token_budget
    return Candidate(
        tp=layout.tp, pp=layout.pp, cp=layout.cp, ep=layout.ep, etp=layout.etp, vpp=layout.vpp,
        first_stage_layers=first, last_stage_layers=last, rollout_tp=knobs.rollout_tp or 1,
        micro_batch_per_gpu=micro or 1, use_dynamic_bsz=knobs.dynamic, token_budget=budget,
        log_prob_token_budget=knobs.log_prob_token_budget or knobs.ref_log_prob_token_budget or budget,
        log_prob_micro_batch_per_gpu=log_prob_micro, offload=knobs.offload, recompute=knobs.recompute,
        gpu_memory_utilization=0.5 if knobs.gpu_memory_utilization is None else knobs.gpu_memory_utilization,
        use_fused_kernels=knobs.use_fused_kernels, enforce_eager=knobs.enforce_eager, ppo_mini_batch_size=mini,
    )


def _release_rollout_defaults(config: Config) -> dict[str, int]:
    """The weight-sync bucket and max_num_seqs the call runs with: its own values, which hold
    its release's defaults when the script does not set them (generator.plan.release_defaults)."""
    from generator.plan.release_defaults import max_num_seqs_from, sync_bucket_from

    out: dict[str, int] = {}
    bucket, seqs = sync_bucket_from(config.values), max_num_seqs_from(config.values)
    if bucket is not None:
        out["sync_bucket_mib"] = bucket
    if seqs is not None:
        out["max_num_seqs"] = seqs
    return out


# ---------------------------------------------------------------------------------------------
# `gen explain --memory`


@dataclass(frozen=True, slots=True)
class MemoryOptions:
    gpu: GpuSpec
    model: ModelFacts | None  # None: the script's model path
    headroom_gib: float = 0.0


# --headroom in GiB: below the largest --gpu-mem (generator.layout.hardware) a GPU may be given.
MAX_HEADROOM_GIB = 4096


def memory_options(gpu: str | None, gpu_mem: float | None, model: str | None, headroom_gib: float) -> MemoryOptions:
    """The command line's memory options; an unknown GPU or model is an InputError, and so is a
    --headroom that is not a GiB figure a GPU could have (`1e308` printed a 300-digit limit)."""
    import math

    if not math.isfinite(headroom_gib) or not 0 <= headroom_gib < MAX_HEADROOM_GIB:
        raise InputError(f"--headroom must be between 0 and {MAX_HEADROOM_GIB} GiB, got {headroom_gib:g}")
    return MemoryOptions(gpu_spec(gpu, gpu_mem), resolve_model(model) if model else None, headroom_gib)


@dataclass(frozen=True, slots=True)
class CallMemory:
    """The memory of one trainer call, or why it could not be predicted."""

    gpu: GpuSpec
    report: MemoryReport | None
    problems: tuple[str, ...] = ()
    model: str = ""
    model_source: str = ""
    model_config: str = ""  # which config gave the model's numbers (docs/memory-model.md#where-the-model-comes-from)
    gpus: int = 0  # the call's GPUs and layout, for a chart's title (Megatron calls; 0 / "" otherwise)
    layout: str = ""

    @property
    def over(self) -> bool:
        return self.report is not None and not self.report.fits


def call_memory(config: Config, options: MemoryOptions) -> CallMemory:
    if ConfigReader(config).backend == "fsdp":  # the FSDP actor's model: plan/fsdp_memory.py
        from generator.plan.fsdp_setup import evaluate_call  # loaded for FSDP calls only (import cost)

        facts, source, problem = call_model(ConfigReader(config), options.model)
        _setup, verdict, problems = evaluate_call(config, gpu=options.gpu, model=facts,
                                                  headroom_gib=options.headroom_gib)
        if verdict is None or facts is None:
            return CallMemory(options.gpu, None, ((problem,) if problem else ()) + problems)
        return CallMemory(options.gpu, verdict.report, (), facts.name, source,
                          model_config_used(ConfigReader(config), options.model))
    found = memory_setup_from_config(config, gpu=options.gpu, model=options.model, headroom_gib=options.headroom_gib)
    if found.setup is None:
        return CallMemory(options.gpu, None, found.problems)
    from generator.plan.enumeration import describe_layout

    cand = found.setup.candidate
    return CallMemory(options.gpu, evaluate_memory(found.setup), (), found.setup.model.name, found.model_source,
                      model_config_used(ConfigReader(config), options.model), found.setup.workload.gpus,
                      f"{describe_layout(cand)} · rollout TP{cand.rollout_tp}")
