"""The batch and parallel chain of one config in its own numbers (docs/batch-chain.md): DP, the
per-rank mini batch, the updates per step... each with the keys it came from, None where the
config does not decide it. `gen diff` compares two configs' chains, `gen show NAME` prints a
recipe's."""

from __future__ import annotations

from dataclasses import dataclass

from generator.config.types import Config
from generator.verl.constants import ACTOR, MEGATRON, ROLLOUT
from generator.layout import derive
from generator.config.derived import actor_batch
from generator.config.reader import ConfigReader


@dataclass(frozen=True, slots=True)
class DerivedNumber:
    name: str
    value: object  # a number, or None when the config does not decide it
    inputs: tuple[str, ...]  # config keys and other derived names it is computed from


def derived_numbers(config: Config) -> dict[str, DerivedNumber]:
    """The batch/parallel chain (docs/batch-chain.md) in the config's numbers (None: not decidable)."""
    view = ConfigReader(config)
    out: dict[str, DerivedNumber] = {}

    def put(name: str, value: object, *inputs: str) -> None:
        out[name] = DerivedNumber(name, value, inputs)

    gpus = view.gpus
    put("GPUs", gpus, "trainer.n_gpus_per_node", "trainer.nnodes")
    layout = view.actor_layout() if config.backend == "megatron" else None
    dp = view.dp()
    put("DP", dp, "GPUs", MEGATRON + "tensor_model_parallel_size", MEGATRON + "pipeline_model_parallel_size",
        MEGATRON + "context_parallel_size", ACTOR + "ulysses_sequence_parallel_size")
    if layout is not None and gpus and (layout.ep > 1 or layout.etp is not None):
        put("EDP", derive.expert_data_parallel_size(gpus, layout.tp, layout.pp, layout.ep, layout.etp),
            "GPUs", MEGATRON + "tensor_model_parallel_size", MEGATRON + "pipeline_model_parallel_size",
            MEGATRON + "expert_model_parallel_size", MEGATRON + "expert_tensor_parallel_size")
    batch = actor_batch(view)
    chain, dynamic = batch.chain, batch.dynamic
    batch_keys = ("data.train_batch_size", "data.gen_batch_size", ROLLOUT + "n")
    put("responses per step", chain.responses_per_step if chain else None, *batch_keys)
    put("per-rank mini batch", chain.per_rank_mini_batch if chain else None,
        ACTOR + "ppo_mini_batch_size", ROLLOUT + "n", "DP")
    put("local batch", chain.local_batch if chain else None, "responses per step", "DP")
    put("mini-batches per epoch", chain.mini_batches_per_epoch if chain else None,
        "local batch", "per-rank mini batch")
    put("optimizer updates per step", chain.optimizer_updates_per_step if chain else None,
        "mini-batches per epoch", ACTOR + "ppo_epochs")
    put("grad accumulation steps", chain.grad_accum_steps if chain else None,
        "per-rank mini batch", ACTOR + "ppo_micro_batch_size_per_gpu", ACTOR + "use_dynamic_bsz")
    cap = view.int(ACTOR + "ppo_max_token_len_per_gpu")
    cp = view.cp_or_sp()
    put("actor token cap x CP", derive.token_cap(cap, cp or 1) if dynamic and cap else None,
        ACTOR + "ppo_max_token_len_per_gpu", MEGATRON + "context_parallel_size", ACTOR + "use_dynamic_bsz")
    put("sequence length", view.sequence_length(), "data.max_prompt_length", "data.max_response_length")
    rtp = view.int(ROLLOUT + "tensor_model_parallel_size")
    rdp = view.int(ROLLOUT + "data_parallel_size") or 1
    rpp = view.int(ROLLOUT + "pipeline_model_parallel_size") or 1
    replicas = None
    if gpus and rtp:
        replicas = derive.rollout_replicas(gpus, derive.rollout_replica_size(rtp, rdp, rpp))
    put("rollout replicas", replicas, "GPUs", ROLLOUT + "tensor_model_parallel_size",
        ROLLOUT + "data_parallel_size", ROLLOUT + "pipeline_model_parallel_size")
    return out
