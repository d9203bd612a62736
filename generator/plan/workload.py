"""What one verl step runs (besides the layout and knobs a Candidate holds), and the unit memory is counted in."""

from __future__ import annotations

from dataclasses import dataclass

from generator.verl.constants import VLLM_MAX_NUM_BATCHED_TOKENS, algorithm_facts

GIB = float(2**30)


def algo_roles(algo: str) -> tuple[bool, bool]:
    """(has_ref, has_critic) as `gen recipe` configures each algorithm: verl builds the reference
    model only for a KL term (GRPO and REINFORCE++ use a KL loss, RLOO a KL reward; PPO, DAPO
    and GSPO none), and only PPO trains a critic. Unknown names keep a reference (conservative)."""
    facts = algorithm_facts(algo)
    return (True, False) if facts is None else (facts.has_ref, facts.critic)


@dataclass(frozen=True, slots=True)
class Workload:
    """What the step runs, besides the layout and knobs a Candidate holds."""

    gpus: int
    gpu_memory_gib: float
    prompt_len: int
    response_len: int
    per_rank_mini_batch: int = 1  # responses per DP rank per optimizer step (sets M in 1F1B)
    has_ref: bool = True
    has_critic: bool = False
    entropy_in_update: bool = False  # entropy_coeff != 0
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS
    gpus_per_node: int = 8  # for host RAM per node
    responses_per_step: int = 0  # train_batch_size·n (the step-time estimate; 0 = one per-rank mini per GPU)
    mean_response_len: int = 0  # expected response tokens (the step-time estimate; 0 = a share of the maximum)
    # verl defaults that changed between releases (generator.plan.release_defaults; these are 0.7.0's)
    sync_bucket_mib: int = 512  # rollout weight-sync bucket
    max_num_seqs: int = 1024  # rollout.max_num_seqs: sequences vLLM's profiling run samples
    lora_rank: int = 0  # actor_rollout_ref.model.lora.rank (Megatron LoRA): the base is frozen

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.response_len
