"""Pipeline stages: how many layers each stage holds and the parameters one GPU of a stage keeps."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from generator.model.facts import ModelFacts
from generator.model.params import LayerParams, dense_layer_params, is_moe_layer, moe_layer_params
from generator.layout.candidate import Candidate


def stage_layer_counts(layers: int, pp: int, first: int | None = None, last: int | None = None) -> list[int]:
    """Layers on each pipeline stage (even split, or given first/last with the rest shared).
    Callers validate with derive.layout_problems; a remainder lands on the last stages here."""
    if pp <= 1:
        return [layers]
    counts = [0] * pp
    middle = list(range(pp))
    rest = layers
    if first is not None:
        counts[0] = first
        middle.remove(0)
        rest -= first
    if last is not None:
        counts[-1] = last
        middle.remove(pp - 1)
        rest -= last
    if middle:
        base, extra = divmod(max(rest, 0), len(middle))
        for i, stage in enumerate(middle):
            counts[stage] = base + (1 if i >= len(middle) - extra else 0)
    return counts


def accounted_stage_sizes(layers: int, pp: int, embedding: bool, loss: bool) -> tuple[int | None, int | None]:
    """(first, last) stage layers under Megatron's account_for_embedding_in_pipeline_split and
    account_for_loss_in_pipeline_split: the embedding and the loss each take one layer's slot, the
    layers + slots split evenly over the stages, so the first (last) stage holds one layer fewer.
    None where the flag is off. Qwen3-235B: (94 + 2) / 8 = 12 → 11 layers first and last.
    (With VPP the slots split over PP·VPP chunks; the first and last stage still lose one layer.)
    Callers validate the split with derive.layout_problems."""
    if pp <= 1 or not (embedding or loss):
        return None, None
    per_stage = (layers + int(embedding) + int(loss)) // pp
    return (per_stage - 1 if embedding else None), (per_stage - 1 if loss else None)


@dataclass(frozen=True, slots=True)
class StageParams:
    """Parameters one GPU of a pipeline stage holds, split by how they are sharded/optimised."""

    dense: float  # TP-sharded + replicated parameters on this rank (optimizer sharded over DP·CP)
    experts: float  # routed-expert parameters on this rank (optimizer sharded over EDP)
    dense_layers: int
    moe_layers: int

    @property
    def total(self) -> float:
        return self.dense + self.experts


def stage_params(model: ModelFacts, cand: Candidate, stage: int, counts: list[int]) -> StageParams:
    etp = cand.tp if cand.etp is None else cand.etp
    return _stage_params(model, cand.tp, cand.ep, etp, stage, tuple(counts))


def every_stage_params(model: ModelFacts, cand: Candidate, counts: list[int]) -> tuple[StageParams, ...]:
    """stage_params of each stage in order (one cache look-up for the pipeline, not one per stage)."""
    etp = cand.tp if cand.etp is None else cand.etp
    return _every_stage_params(model, cand.tp, cand.ep, etp, tuple(counts))


@lru_cache(maxsize=1024)
def _every_stage_params(model: ModelFacts, t: int, ep: int, etp: int, counts: tuple[int, ...]
                        ) -> tuple[StageParams, ...]:
    return tuple(_stage_params(model, t, ep, etp, stage, counts) for stage in range(len(counts)))


@lru_cache(maxsize=256)
def _layer_kinds(model: ModelFacts) -> tuple[LayerParams, LayerParams | None, tuple[bool, ...]]:
    """A model's dense and MoE layer parameters and which layers are MoE: the same for every stage."""
    moe_layer = moe_layer_params(model) if model.is_moe else None
    return dense_layer_params(model), moe_layer, tuple(is_moe_layer(model, i) for i in range(model.num_layers))


@lru_cache(maxsize=4096)
def _stage_params(model: ModelFacts, t: int, ep: int, etp: int, stage: int, counts: tuple[int, ...]) -> StageParams:
    pp = len(counts)
    start = sum(counts[:stage])
    dense_layer, moe_layer, moe_at = _layer_kinds(model)
    dense = experts = 0.0
    n_dense = n_moe = 0
    for index in range(start, start + counts[stage]):
        if moe_layer is not None and (moe_at[index] if index < len(moe_at) else is_moe_layer(model, index)):
            layer, n_moe = moe_layer, n_moe + 1
        else:
            layer, n_dense = dense_layer, n_dense + 1
        dense += layer.tp_sharded / t + layer.replicated
        experts += layer.experts / (ep * etp)
    embedding = model.vocab_size * model.hidden_size / t
    if stage == 0:
        dense += embedding + model.vision_params / t
    if stage == pp - 1:
        # The output layer; with PP > 1 Megatron keeps a copy of tied embeddings on the last stage too.
        if not model.tie_word_embeddings or pp > 1:
            dense += embedding
        dense += model.hidden_size  # final norm
    return StageParams(dense, experts, n_dense, n_moe)
