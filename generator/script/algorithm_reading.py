"""Which recipe algorithm an effective config runs.

GRPO's advantage estimator (`algorithm.adv_estimator=grpo`) also runs GSPO and DAPO; what
tells them apart is the actor's loss: GSPO sets `policy_loss.loss_mode=gspo` (sequence-level
ratios). DAPO runs through the DAPO recipe's own main, samples dynamically
(`algorithm.filter_groups.enable`), or decouples the clip range (`clip_ratio_high` above
`clip_ratio_low`) with no KL loss, as DAPO defines it. A GRPO run that keeps its KL loss and
borrows the clip-higher range (verl's DeepSeek-V3 GRPO example) is still GRPO.
"""

from __future__ import annotations

from generator.config.reader import as_float
from generator.config.types import Config
from generator.verl.constants import ACTOR, ESTIMATOR_ALGORITHM, PPO_ENTRY


def algorithm_of(config: Config, entry: str = PPO_ENTRY) -> str | None:
    """The recipe algorithm (one of generator.verl.constants.ALGORITHMS), None when the estimator has none."""
    estimator = config.values.get("algorithm.adv_estimator")
    algo = ESTIMATOR_ALGORITHM.get(str(estimator))
    if algo != "grpo":
        return algo
    if config.values.get(ACTOR + "policy_loss.loss_mode") == "gspo":
        return "gspo"
    if "dapo" in entry or config.values.get("algorithm.filter_groups.enable") is True:
        return "dapo"
    if _decoupled_clip(config) and config.values.get(ACTOR + "use_kl_loss") is not True:
        return "dapo"
    return "grpo"


def _decoupled_clip(config: Config) -> bool:
    high = as_float(config.values.get(ACTOR + "clip_ratio_high"))
    low = as_float(config.values.get(ACTOR + "clip_ratio_low"))
    return high is not None and low is not None and high != low
