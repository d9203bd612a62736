"""The memory model's inputs that are verl defaults and changed between releases, read from the
packaged schema of the release (never a second copy of verl's numbers):

- the weight-sync bucket: `rollout.update_weights_bucket_megabytes` 512 MiB up to 0.7.0, then
  `rollout.checkpoint_engine.update_weights_bucket_megabytes` 2048 MiB
  (verl/trainer/config/rollout/rollout.yaml@v0.7.1 and @v0.9.0);
- `rollout.max_num_seqs`: 1024 up to 0.8.0, 256 from 0.9.0 (rollout.yaml@v0.9.0), the sequences
  vLLM's profiling run samples at once (their logits are part of the engine's activation peak).
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.schema.release_schema import release_cache
from generator.verl.constants import PPO_MEGATRON_CONFIG, ROLLOUT

SYNC_BUCKET_KEYS = (ROLLOUT + "checkpoint_engine.update_weights_bucket_megabytes",
                    ROLLOUT + "update_weights_bucket_megabytes")
MAX_NUM_SEQS_KEY = ROLLOUT + "max_num_seqs"


@dataclass(frozen=True, slots=True)
class RolloutDefaults:
    sync_bucket_mib: int
    max_num_seqs: int


# verl 0.7.0's values: what the memory model assumes when no release is given (its calibration
# points were published on 0.6/0.7)
BASELINE = RolloutDefaults(sync_bucket_mib=512, max_num_seqs=1024)


def sync_bucket_from(values: dict[str, object]) -> int | None:
    """The weight-sync bucket (MiB) a flat config holds, under either release's key."""
    for key in SYNC_BUCKET_KEYS:
        value = values.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def max_num_seqs_from(values: dict[str, object]) -> int | None:
    value = values.get(MAX_NUM_SEQS_KEY)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


@release_cache(32, 0)
def rollout_defaults(version: str | None) -> RolloutDefaults:
    """The release's defaults (BASELINE for None or a release without a packaged schema)."""
    if version is None:
        return BASELINE
    from generator.base.errors import InputError
    from generator.schema import load

    try:
        values = load(version).defaults(PPO_MEGATRON_CONFIG)
    except InputError:
        return BASELINE
    return RolloutDefaults(sync_bucket_from(values) or BASELINE.sync_bucket_mib,
                           max_num_seqs_from(values) or BASELINE.max_num_seqs)
