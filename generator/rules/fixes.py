"""Fixes that keep the user's intent: P (data.train_batch_size), n (rollout.n) and the GPU count
never change; derived fields (mini, micro, log-prob micro, token caps) move to the nearest valid
value, and the description says why."""

from __future__ import annotations

import math

from generator.layout import derive
from generator.config.derived import ActorBatch
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Fix
from generator.config.reader import ConfigReader
from generator.verl.constants import ACTOR

MINI = ACTOR + "ppo_mini_batch_size"
MICRO = ACTOR + "ppo_micro_batch_size_per_gpu"


def mini_fix(view: ConfigReader, *, prompts: int, n: int, dp: int, mini: int, micro: int | None,
             key: str = MINI, micro_key: str = MICRO, micro_scale: int = 1) -> Fix | None:
    """Move the mini batch (prompts) to the nearest value whose chain divides evenly; when the
    micro batch then no longer divides the per-rank mini batch, move it too (in `micro_key`,
    written as μ·micro_scale: the deprecated global key holds μ·DP)."""
    new_mini = derive.nearest_mini(prompts, n, dp, mini, view.path() if view.path() != "engine" else "megatron")
    if new_mini is None or new_mini == mini:
        return None
    edits: list[KeyEdit] = [KeyEdit(key, mini, new_mini)]
    per_rank = derive.per_rank_mini_batch(new_mini, n, dp)
    note = ""
    dynamic_key = "critic.use_dynamic_bsz" if key.startswith("critic.") else "actor_rollout_ref.actor.use_dynamic_bsz"
    if view.bool(dynamic_key):
        micro = None  # token-based micro-batches: the micro batch is not used for the update
    if micro and per_rank % micro:
        new_micro = derive.nearest_micro(per_rank, micro)
        if new_micro is not None:
            edits.append(KeyEdit(micro_key, micro * micro_scale, new_micro * micro_scale))
            note = f", micro {micro} → {new_micro} to divide it"
            if micro_scale != 1:
                note += f" ({_label(micro_key)} {micro * micro_scale} → {new_micro * micro_scale} = μ·DP)"
    updates = derive.local_batch(prompts, n, dp) // per_rank
    return Fix(
        description=(f"set {_label(key)} {mini} → {new_mini} (nearest value with "
                     f"{new_mini}·{n} divisible by DP {dp} and dividing the step evenly: per-rank mini "
                     f"batch {per_rank}, {updates} updates per epoch){note}; train_batch_size, n and "
                     f"GPUs unchanged"),
        edits=tuple(edits),
        applicability="unsafe",  # a different mini batch changes the number of optimizer updates
    )


def actor_mini_fix(view: ConfigReader, batch: ActorBatch) -> Fix | None:
    """`mini_fix` for the actor's own chain; None when P, n, DP or the mini batch is unknown."""
    if batch.prompts_and_n is None or batch.dp is None or batch.mini is None:
        return None
    prompts, n = batch.prompts_and_n
    return mini_fix(view, prompts=prompts, n=n, dp=batch.dp, mini=batch.mini, micro=batch.micro,
                    micro_key=batch.micro_key, micro_scale=batch.micro_scale)


def _label(key: str) -> str:
    """'ppo_mini_batch_size' for the actor's keys, 'critic.ppo_mini_batch_size' for the critic's."""
    last = key.rsplit(".", 1)[-1]
    return f"critic.{last}" if key.startswith("critic.") else last


def micro_fix(per_rank_mini: int, micro: int, key: str = MICRO, scale: int = 1) -> Fix | None:
    """Move μ to the divisor of the per-rank mini batch nearest to it; `key` holds μ·scale (the
    deprecated global micro key holds μ·DP)."""
    new_micro = derive.nearest_micro(per_rank_mini, micro)
    if new_micro is None or new_micro == micro:
        return None
    name = key.rsplit('.', 1)[-1]
    head = (f"set {name} {micro} → {new_micro}" if scale == 1 else
            f"set {name} {micro * scale} → {new_micro * scale} (per GPU ÷ DP {scale}: {micro} → {new_micro})")
    return Fix(
        description=(f"{head}, the divisor of the per-rank "
                     f"mini batch {per_rank_mini} nearest to {micro} ({per_rank_mini // new_micro} "
                     f"micro-batches per update); only memory per micro-batch changes"),
        edits=(KeyEdit(key, micro * scale, new_micro * scale),),
        applicability="safe",
    )


def divisor_fix(key: str, old: int, total: int, why: str) -> Fix | None:
    """Move `key` to the divisor of `total` nearest to `old`."""
    divisors = [d for d in range(1, total + 1) if total % d == 0]
    new = derive.nearest(old, divisors)
    if new is None or new == old:
        return None
    return Fix(f"set {key.rsplit('.', 1)[-1]} {old} → {new}: {why}", (KeyEdit(key, old, new),), "safe")


def token_cap_fix(key: str, old: int, seq_len: int, split: int) -> Fix:
    new = math.ceil(seq_len / max(1, split) / 1024) * 1024
    return Fix(
        description=(f"raise {key.rsplit('.', 1)[-1]} {old} → {new} so that {new}·{split} ≥ "
                     f"prompt+response {seq_len}; packs more tokens per micro-batch (more memory)"),
        edits=(KeyEdit(key, old, new),),
        applicability="safe",
    )
