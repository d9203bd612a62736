"""The actor's batch chain as read from one effective config — its one home.

Which keys feed `derive.batch_chain` is a decision of its own: P is data.gen_batch_size when
set, else data.train_batch_size; the epochs default to 1; a micro batch ≤ 0 counts as unset;
under dynamic bsz the micro batch does not shape the update (token budgets do), so the chain
ignores it. The rules, `gen explain`, `gen diff` and `gen show` all format this one object, so
they cannot disagree.
"""

from __future__ import annotations

from typing import NamedTuple

from generator.layout import derive
from generator.config.reader import ConfigReader
from generator.verl.constants import ACTOR

MINI_KEY = ACTOR + "ppo_mini_batch_size"
MICRO_KEY = ACTOR + "ppo_micro_batch_size_per_gpu"
GLOBAL_MICRO_KEY = ACTOR + "ppo_micro_batch_size"
DAPO_MAIN = "main_dapo"  # verl's DAPO recipe entry (recipe.dapo.main_dapo)
FILTER_GROUPS_KEY = "algorithm.filter_groups.enable"
EPOCHS_KEY = ACTOR + "ppo_epochs"


class ActorBatch(NamedTuple):
    """The actor's batch inputs of one config and, when every input is known, its chain."""

    prompts_and_n: tuple[int, int] | None  # (P, n), both positive
    dp: int | None
    mini: int | None  # ppo_mini_batch_size as set (prompts)
    micro: int | None  # μ per GPU as verl uses it (may be ≤ 0, or unused under dynamic bsz)
    epochs: int
    dynamic: bool | None  # actor.use_dynamic_bsz (None: unknown)
    chain: derive.BatchChain | None
    # Where μ comes from: the per-GPU key, or the deprecated global key the FSDP worker divides
    # by DP (then a new μ is written there as μ·DP).
    micro_key: str = MICRO_KEY
    micro_scale: int = 1

    # Short names the batch rules use in their arithmetic.
    @property
    def pn(self) -> tuple[int, int] | None:
        return self.prompts_and_n

    def per_rank_equation(self) -> str:
        """'per-rank mini batch = ppo_mini_batch_size·n / DP = 16·4 / 8 = 8' in the user's numbers."""
        c = self.chain
        assert c is not None
        exact = c.mini_batch_prompts * c.responses_per_prompt / c.dp
        exact_text = f"{exact:.2f}".rstrip("0").rstrip(".")
        shown = f"{exact_text}, floored to {c.per_rank_mini_batch}" if c.floored else f"{c.per_rank_mini_batch}"
        return (f"per-rank mini batch = ppo_mini_batch_size·n / DP = {c.mini_batch_prompts}·"
                f"{c.responses_per_prompt} / {c.dp} = {shown}")


def fork_actor_epochs(view: ConfigReader) -> bool:
    """Whether the actor that runs loops over ppo_epochs: verl's does; a project's own verl whose
    actor files never name the key does not (generator.reading.fork_code.actor_reads_epochs)."""
    resolution = view.config.resolution
    package = resolution.package if resolution is not None else None
    if package is None:
        return True
    from generator.base.folder_memo import remembered
    from generator.reading.fork_code import actor_reads_epochs

    return remembered(("actor_reads_epochs", package), lambda: actor_reads_epochs(package)) is not False


def actor_batch(view: ConfigReader) -> ActorBatch:
    """Read the actor's batch chain from a config reader (None fields where undecidable)."""
    pn = trained_prompts_and_n(view)
    dp = view.dp()
    mini = view.int(MINI_KEY)
    micro = view.int(MICRO_KEY)
    micro_key, micro_scale = MICRO_KEY, 1
    global_micro = view.int(GLOBAL_MICRO_KEY)
    if view.is_null(MICRO_KEY) and global_micro and dp and reads_global_micro(view):
        micro, micro_key, micro_scale = global_micro // dp, GLOBAL_MICRO_KEY, dp
    epochs = view.int(EPOCHS_KEY) or 1
    if epochs > 1 and not fork_actor_epochs(view):
        epochs = 1  # the project's own actors have no epoch loop: one pass per step, whatever the key says
    dynamic = view.actor_dynamic
    chain = None
    if pn and dp and mini and mini > 0:
        chain = derive.batch_chain(prompts=pn[0], n=pn[1], mini=mini, dp=dp,
                                   micro=micro if micro and micro > 0 else None, epochs=epochs,
                                   path=view.path(), dynamic_bsz=dynamic is True)
    return ActorBatch(pn, dp, mini, micro, epochs, dynamic, chain, micro_key, micro_scale)


def trained_prompts_and_n(view: ConfigReader) -> tuple[int, int] | None:
    """(P, n) of the batch the actor trains on. main_ppo trains what it generated (P is
    data.gen_batch_size when set); DAPO's trainer with filter_groups on keeps generating
    gen_batch_size batches until train_batch_size prompts' groups survive the filter and trains
    exactly those (recipe/dapo/dapo_ray_trainer.py:270-288 @ v0.7.0)."""
    pn = view.prompts_and_n()
    entry = view.config.entry or ""
    if pn is not None and entry.rsplit(".", 1)[-1] == DAPO_MAIN and view.bool(FILTER_GROUPS_KEY) is True:
        prompts = view.int("data.train_batch_size")
        if prompts is not None and prompts > 0:
            return prompts, pn[1]
    return pn


def reads_global_micro(view: ConfigReader) -> bool:
    """Whether the release's worker turns the deprecated global ppo_micro_batch_size into the
    per-GPU one (global // DP): FSDP's legacy worker does; Megatron's load check fails on a null
    per-GPU key first (A2b, VB109) and the new engine reads only the per-GPU key (C17)."""
    return view.backend != "megatron" and not view.new_engine
