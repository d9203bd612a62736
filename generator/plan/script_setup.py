"""The memory setup of one trainer call read from its Config: the layout, every memory knob the
script sets (or verl's default for it), the workload, the model and the GPU.

Used by `gen explain --memory` (and `gen check --gpu`). When a value the model needs is unknown
(an unset variable, a value computed at run time), the call cannot be evaluated: the reasons
name the keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.errors import InputError
from generator.config.derived import reads_global_micro
from generator.config.reader import ConfigReader
from generator.config.types import Config
from generator.hardware import GpuSpec, gpu_spec
from generator.model import resolve_model
from generator.model.facts import ModelFacts
from generator.layout import Candidate, Offload
from generator.plan.memory import MemoryReport, MemorySetup, evaluate_memory
from generator.plan.stages import accounted_stage_sizes
from generator.plan.workload import Workload
from generator.verl import ACTOR, DEFAULT_MODEL_PATH, MEGATRON, REF, ROLLOUT, TRANSFORMER
from generator.verl import MODEL_PATH_KEY as MODEL_PATH

OPTIMIZER_OVERRIDES = ACTOR + "optim.override_optimizer_config."
VLLM_MAX_NUM_BATCHED_TOKENS = 8192  # verl's rollout.max_num_batched_tokens default


@dataclass(frozen=True, slots=True)
class ScriptSetup:
    """A call's memory setup, or why there is none."""

    setup: MemorySetup | None
    problems: tuple[str, ...] = ()  # unknown or unreadable values, in the user's key names
    model_source: str = ""  # where the model facts came from


class _Reads:
    """Typed reads that collect a problem for every required value that is not known."""

    def __init__(self, reader: ConfigReader) -> None:
        self.reader = reader
        self.problems: list[str] = []

    def _missing(self, key: str, kind: str) -> None:
        why = self.reader.config.unknown.get(key)
        self.problems.append(f"{key} is not a known {kind}" + (f" ({why})" if why else ""))

    def int(self, key: str, default: int | None = None, *, required: bool = True) -> int | None:
        if self.reader.is_null(key):
            return default
        value = self.reader.int(key)
        if value is None and required:
            self._missing(key, "integer")
        return value if value is not None else default

    def float(self, key: str, default: float) -> float:
        if self.reader.is_null(key):
            return default
        value = self.reader.float(key)
        if value is None:
            self._missing(key, "number")
            return default
        return value

    def bool(self, key: str, default: bool = False) -> bool:
        if self.reader.is_null(key):
            return default
        value = self.reader.bool(key)
        if value is None:
            self._missing(key, "true/false value")
            return default
        return value


def call_model(reader: ConfigReader, model: ModelFacts | None) -> tuple[ModelFacts | None, str, str | None]:
    """The model facts of a call: --model, else the script's model path; (facts, source, problem)."""
    if model is not None:
        return model, "--model", None
    from generator.model.registry import known_tail, locate_model

    path = reader.str(MODEL_PATH)
    raw = reader.config.values.get(MODEL_PATH)
    if not path and isinstance(raw, str) and MODEL_PATH in reader.config.unknown:
        path = known_tail(raw)  # `$HOME/models/Qwen2.5-7B`: the folder's name still names the model
    if not path or (path == DEFAULT_MODEL_PATH and not reader.explicit(MODEL_PATH)):
        return None, "", f"{MODEL_PATH} is not set or not known; pass --model NAME or a config.json"
    found, _where = locate_model(path)
    if found is None:
        return None, "", f"model '{path}' is not in the registry; pass --model NAME or a config.json"
    return found, MODEL_PATH, None


def model_config_used(reader: ConfigReader, model: ModelFacts | None) -> str:
    """Which config gave the call's model facts ('--model', a config.json path, the Hugging Face
    cache's config.json, the packaged registry entry), for the report."""
    from generator.model.registry import known_tail, locate_model

    if model is not None:
        return "--model"
    path = reader.str(MODEL_PATH)
    raw = reader.config.values.get(MODEL_PATH)
    if not path and isinstance(raw, str) and MODEL_PATH in reader.config.unknown:
        path = known_tail(raw)
    return locate_model(path)[1] if path else ""


def setup_from_config(config: Config, *, gpu: GpuSpec, model: ModelFacts | None = None,
                      headroom_gib: float = 0.0) -> ScriptSetup:
    """The call's MemorySetup on `gpu`, or the reasons it cannot be evaluated."""
    reader = ConfigReader(config)
    if reader.backend != "megatron":
        return ScriptSetup(None, ("the memory model covers the Megatron actor; this call uses "
                                  f"{reader.backend}",))
    facts, source, problem = call_model(reader, model)
    reads = _Reads(reader)
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
    dynamic = reads.bool(ACTOR + "use_dynamic_bsz")
    micro = reads.int(ACTOR + "ppo_micro_batch_size_per_gpu", required=not dynamic)
    global_micro = reads.int(ACTOR + "ppo_micro_batch_size", required=False)  # deprecated: over all DP ranks
    budget = reads.int(ACTOR + "ppo_max_token_len_per_gpu", required=dynamic)
    lp_micro = reads.int(ROLLOUT + "log_prob_micro_batch_size_per_gpu", required=False)
    global_lp_micro = reads.int(ROLLOUT + "log_prob_micro_batch_size", required=False)
    lp_budget = reads.int(ROLLOUT + "log_prob_max_token_len_per_gpu", required=False)
    ref_lp_budget = reads.int(REF + "log_prob_max_token_len_per_gpu", required=False)
    offload = Offload(
        param=reads.bool(MEGATRON + "param_offload"),
        grad=reads.bool(MEGATRON + "grad_offload"),
        optimizer=reads.bool(MEGATRON + "optimizer_offload"),
        cpu_optimizer=reads.bool(OPTIMIZER_OVERRIDES + "optimizer_cpu_offload"),
        # Megatron's OptimizerConfig defaults the fraction to 0 (nothing moves) when unset.
        cpu_optimizer_fraction=reads.float(OPTIMIZER_OVERRIDES + "optimizer_offload_fraction", 0.0),
    )
    recompute = reader.str(TRANSFORMER + "recompute_granularity") == "full"
    fused = reads.bool("actor_rollout_ref.model.use_fused_kernels")
    rollout_tp = reads.int(ROLLOUT + "tensor_model_parallel_size", 1)
    gmu = reads.float(ROLLOUT + "gpu_memory_utilization", 0.5)
    eager = reads.bool(ROLLOUT + "enforce_eager")
    batched = reads.int(ROLLOUT + "max_num_batched_tokens", VLLM_MAX_NUM_BATCHED_TOKENS, required=False)
    entropy = reads.float(ACTOR + "entropy_coeff", 0.0)
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
    dp = max(1, gpus // (layout.tp * layout.pp * layout.cp))
    if micro is None and global_micro and global_read:
        micro = max(1, global_micro // dp)
    if lp_micro is None and global_lp_micro and global_read:
        lp_micro = max(1, global_lp_micro // dp)
    first, last = layout.first_stage_layers, layout.last_stage_layers
    if first is None and last is None:
        first, last = accounted_stage_sizes(facts.num_layers, layout.pp, layout.embedding_in_pipeline_split,
                                            layout.loss_in_pipeline_split)
    cand = Candidate(
        tp=layout.tp, pp=layout.pp, cp=layout.cp, ep=layout.ep, etp=layout.etp, vpp=layout.vpp,
        first_stage_layers=first, last_stage_layers=last, rollout_tp=rollout_tp or 1,
        micro_batch_per_gpu=micro or 1, use_dynamic_bsz=dynamic, token_budget=budget,
        log_prob_token_budget=lp_budget or ref_lp_budget or budget, log_prob_micro_batch_per_gpu=lp_micro,
        offload=offload, recompute=recompute, gpu_memory_utilization=gmu, use_fused_kernels=fused,
        enforce_eager=eager, ppo_mini_batch_size=mini,
    )
    prompts, n = pn
    work = Workload(gpus=gpus, gpu_memory_gib=gpu.memory_gib, prompt_len=prompt, response_len=response,
                    per_rank_mini_batch=max(1, mini * n // dp), has_ref=has_ref is not False,
                    has_critic=bool(has_critic), entropy_in_update=entropy != 0,
                    max_num_batched_tokens=batched or VLLM_MAX_NUM_BATCHED_TOKENS,
                    gpus_per_node=reader.gpus_per_node or gpu.gpus_per_node,
                    **_release_rollout_defaults(config))
    del prompts  # the per-rank mini batch, not the step's prompts, sets the micro-batches in flight
    return ScriptSetup(MemorySetup(facts, cand, work, headroom_gib), (), source)


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


# --headroom in GiB: below the largest --gpu-mem (generator.hardware) a GPU may be given.
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

    @property
    def over(self) -> bool:
        return self.report is not None and not self.report.fits


def call_memory(config: Config, options: MemoryOptions) -> CallMemory:
    if ConfigReader(config).backend == "fsdp":  # the FSDP actor's model: plan/fsdp_memory.py
        from generator.plan.fsdp_setup import evaluate_call

        facts, source, problem = call_model(ConfigReader(config), options.model)
        _setup, verdict, problems = evaluate_call(config, gpu=options.gpu, model=facts,
                                                  headroom_gib=options.headroom_gib)
        if verdict is None or facts is None:
            return CallMemory(options.gpu, None, ((problem,) if problem else ()) + problems)
        return CallMemory(options.gpu, verdict.report, (), facts.name, source,
                          model_config_used(ConfigReader(config), options.model))
    found = setup_from_config(config, gpu=options.gpu, model=options.model, headroom_gib=options.headroom_gib)
    if found.setup is None:
        return CallMemory(options.gpu, None, found.problems)
    return CallMemory(options.gpu, evaluate_memory(found.setup), (), found.setup.model.name, found.model_source,
                      model_config_used(ConfigReader(config), options.model))
