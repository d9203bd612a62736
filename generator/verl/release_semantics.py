"""What each verl release does with a config, as data: which workers run, which trainer, whether
main_ppo migrates the legacy reward keys, which batch divisions assert and which floor.

One home for these facts: rules and the config reader ask `semantics(version)`; each fact cites
verl's source at the tag (`file@tag`; 0.9.1 has no tag in verl's repository, so its facts cite the
published wheel `verl-0.9.1-py3-none-any.whl`). docs/release-semantics.md explains them.
"""

from __future__ import annotations

from typing import NamedTuple
from functools import lru_cache

from generator.verl.versions import parse


class Fact(NamedTuple):
    """A fact that holds from release `since` on (None: every release), with where verl says so."""

    since: str | None
    source: str

    def holds(self, version: str) -> bool:
        return self.since is None or parse(version) >= parse(self.since)


# The legacy fsdp_workers.py / megatron_workers.py and trainer.use_legacy_worker_impl are gone:
# main_ppo imports only verl.workers.engine_workers, and the key fails to compose without '+'.
ENGINE_WORKERS_ONLY = Fact("0.8.0", "verl/trainer/main_ppo.py@v0.8.0 (imports verl.workers.engine_workers only; "
                                    "verl/workers/megatron_workers.py does not exist at v0.8.0); "
                                    "verl/trainer/config/ppo_trainer.yaml@v0.8.0 has no use_legacy_worker_impl")

# Before 0.8.0 the engine workers run only when asked for (use_legacy_worker_impl=disable).
LEGACY_SWITCH = Fact(None, "verl/trainer/main_ppo.py@v0.7.1 (use_legacy_worker_impl auto|enable -> legacy "
                           "workers, disable -> engine_workers)")

# trainer.use_v1 defaults to true: main_ppo runs TaskRunnerV1; false falls back to main_ppo_v0.
USE_V1_DEFAULT = Fact("0.9.0", "verl/trainer/config/ppo_trainer.yaml@v0.9.0 (trainer.use_v1: true); "
                               "verl/trainer/main_ppo.py@v0.9.0 (use_v1 false -> verl.trainer.main_ppo_v0)")

# main_ppo no longer calls migrate_legacy_reward_impl, so legacy reward_model.* / custom_reward_function.*
# values are not copied into reward.*; only the fully-async entry still migrates them.
LEGACY_REWARD_NOT_MIGRATED = Fact(
    "0.9.0", "verl/trainer/main_ppo.py@v0.9.0 (no migrate_legacy_reward_impl; it was called at "
             "verl/trainer/main_ppo.py@v0.8.0 line 47); verl 0.9.1 wheel: only "
             "verl/experimental/fully_async_policy/fully_async_main.py calls it")

# The engine's update asserts the (n-scaled) mini batch divides by DP; the legacy workers floor it.
ENGINE_MINI_ASSERT = Fact(None, "verl/workers/engine_workers.py@v0.7.1 line 239 (assert mini_batch_size % "
                                "dp == 0); same assert in the verl 0.9.1 wheel, engine_workers.py line 267")
LEGACY_MINI_FLOOR = Fact(None, "verl/workers/megatron_workers.py@v0.7.1 line 356 and fsdp_workers.py@v0.7.1 "
                               "line 250 (ppo_mini_batch_size //= DP)")

# The Megatron reference worker's micro-batch assert (C3) lives in the legacy worker; the engine's
# ref reads log_prob_max_token_len_per_gpu under dynamic bsz and validate_config skips the ref
# micro check when use_dynamic_bsz is true.
REF_MICRO_ASSERT_LEGACY_ONLY = Fact(None, "verl/utils/config.py of the verl 0.9.1 wheel (ref micro keys checked "
                                          "only without use_dynamic_bsz); verl/workers/megatron_workers.py@v0.7.1")


# The V1 trainer's agent loop splits a TensorDict of prompts over its workers (torch's chunk: no
# divisibility assert), where main_ppo_v0's DataProto.chunk asserts len % workers == 0 (D1, VB112).
V1_AGENT_LOOP_CHUNKS_FREELY = Fact("0.9.0", "verl/trainer/ppo/v1/agent_loop_tq.py of the verl 0.9.1 wheel "
                                            "(generate_sequences: prompts.chunk on a TensorDict, strict=False); "
                                            "verl/protocol.py@v0.7.0 lines 884-887 (DataProto.chunk asserts)")


class Semantics(NamedTuple):
    """The facts of one release (a schema id such as '0.9.1' or '0.10.0.dev+1dda039')."""

    version: str
    engine_workers_only: bool  # no legacy workers: the engine path always runs
    use_v1_default: bool  # trainer.use_v1 defaults to true
    # main_ppo reads the legacy reward_model.* / custom_reward_function.* values: they are the
    # reward config up to 0.7.0 and are migrated into reward.* in 0.7.1 and 0.8.x
    reads_legacy_reward_keys: bool

    def v1_trainer(self, use_v1: object) -> bool:
        """Whether main_ppo runs the V1 trainer, given trainer.use_v1's value (None: unset)."""
        if not self.use_v1_default:
            return False
        return use_v1 is not False

    def engine_active(self, use_legacy_worker_impl: object) -> bool:
        """Whether engine_workers.py runs, given trainer.use_legacy_worker_impl's value."""
        if self.engine_workers_only:
            return True
        return use_legacy_worker_impl == "disable"

    @property
    def mini_batch_division(self) -> str:
        """'assert' on the engine-only releases, else 'floor' unless the engine is chosen."""
        return "assert" if self.engine_workers_only else "floor"


@lru_cache(maxsize=64)
def semantics(version: str) -> Semantics:
    try:
        parse(version)
    except ValueError:
        version = "0.0.0"  # an id that is not a release number: the oldest behaviour
    return Semantics(
        version=version,
        engine_workers_only=ENGINE_WORKERS_ONLY.holds(version),
        use_v1_default=USE_V1_DEFAULT.holds(version),
        reads_legacy_reward_keys=not LEGACY_REWARD_NOT_MIGRATED.holds(version),
    )
