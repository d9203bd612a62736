"""The batch and parallel arithmetic of verl (docs/batch-chain.md), as pure functions.

No I/O, no config lookups: every function takes plain ints so the planner, the rules and
`gen explain` share one source of truth. Messages are written in the caller's own numbers.

Symbols (docs/batch-chain.md#symbols): W GPUs, P prompts per step, n responses per prompt,
G = P·n responses per step, M mini batch (prompts), μ micro batch (responses per GPU),
E PPO epochs, DP data-parallel size.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import ClassVar, Literal, NamedTuple

from generator.layout.parallelism import Parallelism
from generator.model.facts import ModelFacts

# ---------------------------------------------------------------------------------------------
# Parallel layout (§1.2, §2 E-table)
# ---------------------------------------------------------------------------------------------


class Layout(Parallelism):
    """The actor's Megatron layout on `gpus` GPUs (trainer.n_gpus_per_node · nnodes). Immutable,
    compared and hashed by all its fields (generator.layout.parallelism.Parallelism); built by keyword."""

    __slots__ = ("gpus", "gpus_per_node", "embedding_in_pipeline_split", "loss_in_pipeline_split")
    _NAMES: ClassVar[tuple[str, ...]] = Parallelism._NAMES + __slots__
    gpus: int
    gpus_per_node: int | None
    # override_transformer_config.account_for_{embedding,loss}_in_pipeline_split: the embedding
    # and the loss each count as one more layer when the layers are split over PP stages.
    embedding_in_pipeline_split: bool
    loss_in_pipeline_split: bool

    def __init__(self, *, gpus: int, gpus_per_node: int | None = None, embedding_in_pipeline_split: bool = False,
                 loss_in_pipeline_split: bool = False, tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1,
                 etp: int | None = None, vpp: int | None = None, first_stage_layers: int | None = None,
                 last_stage_layers: int | None = None) -> None:
        super().__init__(tp, pp, cp, ep, etp, vpp, first_stage_layers, last_stage_layers)
        put = object.__setattr__
        put(self, "gpus", gpus)
        put(self, "gpus_per_node", gpus_per_node)
        put(self, "embedding_in_pipeline_split", embedding_in_pipeline_split)
        put(self, "loss_in_pipeline_split", loss_in_pipeline_split)


class LayoutProblem(NamedTuple):
    kind: str  # which check failed (e.g. "model-parallel-grid"); the rule reporting it names it (Rule.reports)
    message: str  # in the user's numbers


def data_parallel_size(gpus: int, tp: int, pp: int, cp: int = 1) -> int | None:
    """Megatron DP = W / (TP·PP·CP); CP is excluded from DP (mcore parallel_state). None when
    W is not divisible (or a size is not positive)."""
    model_parallel = tp * pp * cp
    if gpus <= 0 or model_parallel <= 0 or gpus % model_parallel:
        return None
    return gpus // model_parallel


def sp_data_parallel_size(gpus: int, sp: int) -> int | None:
    """DP = W / SP off the Megatron engine (FSDP, SFT): the ulysses SP ranks share one batch. None
    when SP does not divide W (or is not positive)."""
    if sp <= 0 or gpus % sp:
        return None
    return gpus // sp


def layout_dp(gpus: int, layout: Parallelism) -> int:
    """DP = W / (TP·PP·CP) of a layout, rounded down and at least 1: for the planner and the
    memory and step-time estimates, which judge a layout that does not divide elsewhere
    (`data_parallel_size` says None for it, `layout_problems` says why)."""
    return max(1, gpus // (layout.tp * layout.pp * layout.cp))


def dp_equation(gpus: int, tp: int, pp: int, cp: int, *, named: bool = True) -> str:
    """'DP = W / (TP·PP·CP) = 8 / (2·1·1) = 4': how Megatron's DP comes about, in the user's numbers
    ('= 2.67 (not divisible)' when the product does not divide W). The one wording of the
    equation: gen plan's why-line, check's messages and explain's DP row (`named=False`: without
    the 'DP = ', for a row already labelled DP)."""
    dp = data_parallel_size(gpus, tp, pp, cp)
    model_parallel = tp * pp * cp
    value = str(dp) if dp is not None else (
        f"{gpus / model_parallel:g} (not divisible)" if model_parallel > 0 else "not divisible")
    return ("DP = " if named else "") + f"W / (TP·PP·CP) = {gpus} / ({tp}·{pp}·{cp}) = {value}"


def sp_dp_equation(gpus: int, sp: int, dp: int | None, *, named: bool = True) -> str:
    """'DP = W / ulysses SP = 8 / 2 = 4': DP off the Megatron engine (FSDP, SFT), worded as dp_equation."""
    return ("DP = " if named else "") + f"W / ulysses SP = {gpus} / {sp} = " + (str(dp) if dp else "not divisible")


def layout_edp(gpus: int, layout: Parallelism) -> int:
    """EDP = W / (ETP·EP·PP) of a layout (ETP = TP when unset), rounded down and at least 1."""
    return max(1, gpus // ((layout.tp if layout.etp is None else layout.etp) * layout.ep * layout.pp))


def local_batch(prompts: int, n: int, dp: int) -> int:
    """B = P·n / DP, rounded down: the responses one DP rank holds per step."""
    return (prompts * n) // dp


def per_rank_mini_batch(mini: int, n: int, dp: int) -> int:
    """m = M·n / DP, rounded down: the responses one DP rank trains on per optimizer step."""
    return (mini * n) // dp


def expert_data_parallel_size(gpus: int, tp: int, pp: int, ep: int, etp: int | None = None) -> int | None:
    """EDP = W / (ETP·EP·PP) with ETP = TP when unset; None when not divisible."""
    expert_tp = tp if etp is None else etp
    grid = expert_tp * ep * pp
    if gpus <= 0 or grid <= 0 or gpus % grid:
        return None
    return gpus // grid


def _stage_layer_problems(layout: Layout, layers: int) -> list[LayoutProblem]:
    """E8-E10: how the model's layers split over PP stages (and VPP chunks)."""
    pp, vpp = layout.pp, layout.vpp
    first, last = layout.first_stage_layers, layout.last_stage_layers
    problems: list[LayoutProblem] = []
    if pp <= 1:
        return problems
    if first is None and last is None:
        extra = int(layout.embedding_in_pipeline_split) + int(layout.loss_in_pipeline_split)
        slots = layers + extra
        counted = f"{layers} layers" if not extra else f"{layers} layers + {extra} (embedding/loss) = {slots}"
        if slots % pp:
            problems.append(LayoutProblem(
                "layers-by-pp", f"{counted} are not divisible by PP {pp} "
                f"({slots} % {pp} = {slots % pp}); set num_layers_in_first/last_pipeline_stage "
                f"or choose PP among {_divisors_upto(slots, pp * 2)}"))
        elif vpp and vpp > 1 and (slots // pp) % vpp:
            problems.append(LayoutProblem(
                "stage-layers-by-vpp", f"layers per pipeline stage = {slots} / PP {pp} = {slots // pp}, "
                f"not divisible by VPP {vpp}"))
        return problems
    # Uneven split: the given stages take their layers, the middle stages share the rest evenly.
    if any(v is not None and v <= 0 for v in (first, last)):
        problems.append(LayoutProblem(
            "uneven-pipeline-split", f"num_layers_in_first/last_pipeline_stage must be > 0 (got first={first}, last={last})"))
        return problems
    middle_stages = pp - (first is not None) - (last is not None)
    rest = layers - (first or 0) - (last or 0)
    shown = f"{layers} - {first or 0} - {last or 0} = {rest}"
    if rest < 0 or (middle_stages == 0 and rest != 0):
        problems.append(LayoutProblem(
            "uneven-pipeline-split", f"first/last pipeline stages take {(first or 0) + (last or 0)} layers; "
                     f"{shown} left for {middle_stages} middle stages"))
        return problems
    if middle_stages > 0 and rest % middle_stages:
        problems.append(LayoutProblem(
            "uneven-pipeline-split", f"layers left for the middle stages = {shown}, not divisible by "
                     f"{middle_stages} middle stages (PP {pp})"))
        return problems
    if vpp and vpp > 1:
        per_stage = {"first stage": first, "last stage": last,
                     "each middle stage": rest // middle_stages if middle_stages else None}
        for name, count in per_stage.items():
            if count is not None and count % vpp:
                problems.append(LayoutProblem(
                    "stage-layers-by-vpp", f"{name} has {count} layers, not divisible by VPP {vpp}"))
    return problems


def _divisors_upto(value: int, limit: int) -> list[int]:
    return [d for d in range(1, max(1, limit) + 1) if value % d == 0]


@lru_cache(maxsize=256)  # pure on its arguments (both immutable); the rules ask it for every call
def layout_problems_of(layout: Layout, model: ModelFacts | None) -> tuple[LayoutProblem, ...]:
    """`layout_problems`, kept: a corpus has few layouts and models, judged by several rules each."""
    return tuple(layout_problems(layout, model))


def layout_problems(layout: Layout, model: ModelFacts | None = None) -> list[LayoutProblem]:
    """Every reason Megatron-core (or the model) would refuse this layout; [] when it is valid.

    Model-independent: E1, E2, E3, TP inside a node. With `model`: E4-E10.
    """
    w, tp, pp, cp, ep = layout.gpus, layout.tp, layout.pp, layout.cp, layout.ep
    problems: list[LayoutProblem] = []
    for name, size in (("TP", tp), ("PP", pp), ("CP", cp), ("EP", ep), ("ETP", layout.etp), ("VPP", layout.vpp)):
        if size is not None and size < 1:
            problems.append(LayoutProblem("model-parallel-grid", f"{name} = {size} must be ≥ 1"))
    if problems:
        return problems
    if data_parallel_size(w, tp, pp, cp) is None:
        problems.append(LayoutProblem(
            "model-parallel-grid", f"{w} GPUs are not divisible by TP·PP·CP = {tp}·{pp}·{cp} = {tp * pp * cp}"))
    if layout.vpp is not None and layout.vpp > 1 and pp <= 1:
        problems.append(LayoutProblem(
            "vpp-without-pp", f"VPP {layout.vpp} needs PP > 1 (the interleaved schedule splits pipeline stages), got PP {pp}"))
    etp = tp if layout.etp is None else layout.etp
    if ep > 1 or layout.etp not in (None, tp):
        if expert_data_parallel_size(w, tp, pp, ep, layout.etp) is None:
            etp_note = f"ETP {etp} (= TP, unset)" if layout.etp is None else f"ETP {etp}"
            problems.append(LayoutProblem(
                "expert-grid", f"{w} GPUs are not divisible by ETP·EP·PP = {etp}·{ep}·{pp} = {etp * ep * pp} "
                         f"({etp_note}); Megatron cannot build the expert grid"))
    per_node = layout.gpus_per_node
    if per_node and tp > per_node:
        problems.append(LayoutProblem(
            "tp-across-nodes", f"TP {tp} is larger than the {per_node} GPUs of one node: "
                     f"tensor-parallel all-reduces would cross nodes"))
    elif per_node and per_node % tp:
        # Megatron puts TP ranks next to each other, so groups tile the node only when TP divides it.
        problems.append(LayoutProblem(
            "tp-across-nodes", f"TP {tp} does not divide the {per_node} GPUs of a node: some tensor-parallel "
                     f"groups straddle two nodes"))
    if model is None:
        return problems
    heads = model.num_attention_heads
    if heads % tp:
        problems.append(LayoutProblem(
            "heads-by-tp", f"{model.name}: {heads} attention heads are not divisible by TP {tp}"))
    if not model.is_mla and model.num_kv_heads and model.num_kv_heads % tp:
        # Megatron-core (core_v0.15) requires num_query_groups % TP == 0; it does not
        # replicate KV heads when TP exceeds them.
        problems.append(LayoutProblem(
            "kv-heads-by-tp", f"{model.name}: {model.num_kv_heads} KV heads (num_query_groups) are not divisible "
                     f"by TP {tp}; Megatron-core requires num_key_value_heads % TP == 0"))
    if ep > 1 and not model.is_moe:
        problems.append(LayoutProblem(
            "ep-on-dense", f"EP {ep} needs a mixture-of-experts model; {model.name} is dense"))
    if model.is_moe and model.num_experts and model.num_experts % ep:
        problems.append(LayoutProblem(
            "experts-by-ep", f"{model.name}: {model.num_experts} experts are not divisible by EP {ep}"))
    problems.extend(_stage_layer_problems(layout, model.num_layers))
    return problems


def rollout_replica_size(rollout_tp: int, rollout_dp: int = 1, rollout_pp: int = 1) -> int:
    """GPUs per rollout replica R = TP_r·DP_r·PP_r."""
    return rollout_tp * rollout_dp * rollout_pp


def rollout_problems(gpus: int, rollout_tp: int, rollout_dp: int = 1, rollout_pp: int = 1,
                     rollout_ep: int = 1, gpus_per_node: int | None = None,
                     model: ModelFacts | None = None, engine: str | None = None) -> list[LayoutProblem]:
    """C6 W % R, A25 EP_r = TP_r·DP_r, A26 PP_r = 1 (vLLM/SGLang), D11 replica spans whole nodes,
    F1 heads % TP_r."""
    problems: list[LayoutProblem] = []
    if min(rollout_tp, rollout_dp, rollout_pp, rollout_ep) < 1:
        return [LayoutProblem("rollout-replica", f"rollout sizes must be ≥ 1 (TP {rollout_tp}, DP {rollout_dp}, "
                                       f"PP {rollout_pp}, EP {rollout_ep})")]
    replica = rollout_replica_size(rollout_tp, rollout_dp, rollout_pp)
    if gpus % replica:
        problems.append(LayoutProblem(
            "rollout-replica", f"{gpus} GPUs are not divisible by the rollout replica size TP·DP·PP = "
                     f"{rollout_tp}·{rollout_dp}·{rollout_pp} = {replica}"))
    if rollout_ep > 1 and rollout_ep != rollout_tp * rollout_dp:
        problems.append(LayoutProblem(
            "rollout-ep", f"rollout EP {rollout_ep} must equal rollout TP·DP = {rollout_tp}·{rollout_dp} = "
                     f"{rollout_tp * rollout_dp}"))
    if rollout_pp > 1 and engine in (None, "vllm", "sglang", "trtllm"):
        problems.append(LayoutProblem(
            "rollout-pp", f"rollout PP {rollout_pp}: {engine or 'the rollout engine'} does not implement "
                     f"pipeline_model_parallel_size > 1 in verl"))
    if gpus_per_node and replica > gpus_per_node and replica % gpus_per_node:
        problems.append(LayoutProblem(
            "rollout-replica-nodes", f"a rollout replica of {replica} GPUs spans nodes but is not a multiple of the "
                     f"{gpus_per_node} GPUs per node"))
    # vLLM's data-parallel replica splits each node into GPUs-per-node / TP local DP ranks and asserts
    # that TP divides a node (verl/workers/rollout/vllm_rollout/vllm_async_server.py@v0.6.0 and of
    # the verl 0.9.1 wheel): rollout DP > 1 with a TP above, or not dividing, the GPUs of a node stops.
    if rollout_dp > 1 and gpus_per_node and gpus_per_node % rollout_tp and engine in (None, "vllm"):
        problems.append(LayoutProblem(
            "rollout-dp-tp-node", f"rollout DP {rollout_dp} with rollout TP {rollout_tp}: vLLM's data-parallel "
                     f"replica needs TP to divide the {gpus_per_node} GPUs of a node"))
    if model is not None and model.num_attention_heads % rollout_tp:
        problems.append(LayoutProblem(
            "heads-by-rollout-tp", f"{model.name}: {model.num_attention_heads} attention heads are not divisible by "
                     f"rollout TP {rollout_tp} (vLLM/SGLang refuse to load)"))
    return problems


# ---------------------------------------------------------------------------------------------
# Batch chain (§1.3-1.9)
# ---------------------------------------------------------------------------------------------

Path = Literal["megatron", "fsdp", "engine"]


class BatchChain(NamedTuple):
    """What verl computes from the user's batch keys for one trained role (actor or critic).

    All counts in responses unless the name says prompts. `None` where a step cannot be taken
    (e.g. G not divisible by DP).
    """

    path: Path
    prompts_per_step: int  # P
    responses_per_prompt: int  # n
    mini_batch_prompts: int  # M
    micro_batch_per_gpu: int | None  # μ (None: unset, or dynamic bsz)
    epochs: int  # E
    dp: int
    responses_per_step: int  # G = P·n
    per_rank_mini_batch: int  # m = floor(M·n / DP)
    floored: bool  # M·n % DP != 0: m was rounded down (Megatron legacy, FSDP)
    local_batch: int | None  # B = G / DP (None when G % DP != 0)
    mini_batches_per_epoch: int | None  # K: B/m (Megatron, asserts) or ceil(B/m) (FSDP)
    mini_batch_remainder: int  # B % m (0 when divisible)
    optimizer_updates_per_step: int | None  # U = K·E
    grad_accum_steps: int | None  # A = ceil(m/μ) (static), None with dynamic bsz
    micro_remainder: int  # m % μ (the size of the short last micro-batch; 0 when divisible)
    effective_responses_per_update: int  # m·DP

    @property
    def intended_updates_per_step(self) -> float:
        """P/M·E: what the user probably meant."""
        return self.prompts_per_step / self.mini_batch_prompts * self.epochs if self.mini_batch_prompts else 0.0


def batch_chain(*, prompts: int, n: int, mini: int, dp: int, micro: int | None = None,
                epochs: int = 1, path: Path = "megatron", dynamic_bsz: bool = False) -> BatchChain:
    """The §1.3 (Megatron legacy), §1.4 (FSDP; pass DP_f = W/SP) or §1.8 (new engine) chain.

    Under dynamic bsz the micro batch is ignored: token budgets, not μ, cut the per-rank mini
    batch into micro-batches, so there is no static accumulation count.
    Raises ValueError for non-positive P, n, M or DP (callers decide first).
    """
    if min(prompts, n, mini, dp) <= 0:
        raise ValueError("prompts, n, mini and dp must be positive")
    if dynamic_bsz:
        micro = None
    responses = prompts * n
    per_rank_mini = per_rank_mini_batch(mini, n, dp)
    floored = (mini * n) % dp != 0
    local = responses // dp if responses % dp == 0 else None
    k: int | None = None
    remainder = 0
    if local is not None and per_rank_mini > 0:
        remainder = local % per_rank_mini
        if path == "fsdp":
            k = math.ceil(local / per_rank_mini)
        elif remainder == 0:
            k = local // per_rank_mini
    updates = k * epochs if k is not None else None
    accum = None
    micro_rem = 0
    if micro and micro > 0 and per_rank_mini > 0:
        accum = math.ceil(per_rank_mini / micro)
        micro_rem = per_rank_mini % micro
    return BatchChain(
        path=path, prompts_per_step=prompts, responses_per_prompt=n, mini_batch_prompts=mini,
        micro_batch_per_gpu=micro, epochs=epochs, dp=dp, responses_per_step=responses,
        per_rank_mini_batch=per_rank_mini, floored=floored, local_batch=local,
        mini_batches_per_epoch=k, mini_batch_remainder=remainder, optimizer_updates_per_step=updates,
        grad_accum_steps=accum, micro_remainder=micro_rem,
        effective_responses_per_update=per_rank_mini * dp)


def minimal_batch(dp: int, micro: int | None, gpus: int, backend: str) -> int | None:
    """A2's minimal_bsz: DP·μ on Megatron, W on FSDP (verl's validate_config)."""
    if backend == "megatron":
        return dp * micro if micro else None
    return gpus


def token_cap(per_gpu_tokens: int, cp_or_sp: int = 1) -> int:
    """The packing cap verl uses with dynamic bsz: T·CP (Megatron) or T·SP (FSDP)."""
    return per_gpu_tokens * max(1, cp_or_sp)


def sequence_length(prompt_length: int, response_length: int) -> int:
    """The padded length of every sequence: prompt + response (§1.9)."""
    return prompt_length + response_length


def rollout_replicas(gpus: int, replica_size: int) -> int | None:
    """W / R rollout servers; None when not divisible."""
    if replica_size <= 0 or gpus % replica_size:
        return None
    return gpus // replica_size


def agent_loop_chunk(responses: int, num_workers: int) -> int | None:
    """Responses per agent-loop worker (D1: equal chunks asserted); None when not divisible."""
    if num_workers <= 0 or responses % num_workers:
        return None
    return responses // num_workers


def vpp_micro_batch_problem(micro_batches: int, pp: int, group: int | None = None) -> str | None:
    """D9/E13: with the interleaved schedule, the number of micro-batches A must be ≥ the group
    size (default PP), and A % group must be 0 or ≥ PP. Returns why not, or None."""
    group = group or pp
    if micro_batches < group:
        return f"{micro_batches} micro-batches < microbatch_group_size_per_vp_stage {group}"
    rem = micro_batches % group
    if rem and rem < pp:
        return f"{micro_batches} micro-batches % {group} = {rem}, which is neither 0 nor ≥ PP {pp}"
    return None


# ---------------------------------------------------------------------------------------------
# Nearest valid values (for fixes that keep P, n and W)
# ---------------------------------------------------------------------------------------------


def valid_minis(prompts: int, n: int, dp: int, path: Path = "megatron") -> list[int]:
    """Mini batches M (prompts) with M ≤ P, M·n % DP == 0 and the local batch split evenly
    (P % M == 0 makes every mini-batch the same size on every backend).

    With DP | P·n and DP | M·n, the local batch P·n/DP splits into per-rank minis M·n/DP
    exactly when M | P: so these are the divisors of P whose M·n DP divides, found in √P
    steps (a train batch of 10^10 prompts stays arithmetic). `path` no longer changes the
    answer (FSDP's own P % M == 0 is implied) and is kept for the callers."""
    if prompts <= 0 or dp <= 0 or (prompts * n) % dp:
        return []
    return [mini for mini in divisors(prompts) if (mini * n) % dp == 0]


def divisors(value: int) -> list[int]:
    """The divisors of `value` (≥ 1), ascending, in √value steps."""
    small: list[int] = []
    large: list[int] = []
    factor = 1
    while factor * factor <= value:
        if value % factor == 0:
            small.append(factor)
            if factor != value // factor:
                large.append(value // factor)
        factor += 1
    return small + large[::-1]


def nearest(value: int, candidates: list[int]) -> int | None:
    """The candidate closest to `value`; ties go to the smaller one (less memory)."""
    if not candidates:
        return None
    return min(candidates, key=lambda c: (abs(c - value), c))


def nearest_mini(prompts: int, n: int, dp: int, mini: int, path: Path = "megatron") -> int | None:
    return nearest(mini, valid_minis(prompts, n, dp, path))


def nearest_micro(per_rank_mini: int, micro: int) -> int | None:
    """The divisor of the per-rank mini batch closest to the user's micro batch."""
    if per_rank_mini <= 0:
        return None
    return nearest(micro, divisors(per_rank_mini))
