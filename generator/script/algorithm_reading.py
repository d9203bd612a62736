"""Which recipe algorithm an effective config runs.

GRPO's advantage estimator (`algorithm.adv_estimator=grpo`) also runs GSPO and DAPO; what
tells them apart is the actor's loss: GSPO sets `policy_loss.loss_mode=gspo` (sequence-level
ratios), DAPO decouples the clip range (`clip_ratio_high` above `clip_ratio_low`) or runs
through the DAPO recipe's own main.
"""

from __future__ import annotations

from generator.config.reader import as_float
from generator.config.types import Config
from generator.verl import ACTOR, ESTIMATOR_ALGORITHM, PPO_ENTRY


def algorithm_of(config: Config, entry: str = PPO_ENTRY) -> str | None:
    """The recipe algorithm (one of generator.verl.ALGORITHMS), None when the estimator has none."""
    estimator = config.values.get("algorithm.adv_estimator")
    algo = ESTIMATOR_ALGORITHM.get(str(estimator))
    if algo != "grpo":
        return algo
    if config.values.get(ACTOR + "policy_loss.loss_mode") == "gspo":
        return "gspo"
    if "dapo" in entry or _decoupled_clip(config):
        return "dapo"
    return "grpo"


def _decoupled_clip(config: Config) -> bool:
    high = as_float(config.values.get(ACTOR + "clip_ratio_high"))
    low = as_float(config.values.get(ACTOR + "clip_ratio_low"))
    return high is not None and low is not None and high != low
