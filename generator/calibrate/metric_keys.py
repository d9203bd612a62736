"""verl's metric names, one table for every release `gen calibrate` reads (0.1 to 0.9).

Read from verl's source at each tag, v0.3.0.post1 to v0.9.0 (docs/calibrate.md#keys):
  timing     `timing_s/{name}` for each `marked_timer(name)` of the PPO trainer's step
             (verl/trainer/ppo/metric_utils.py compute_timing_metrics): gen, old_log_prob, ref,
             values, adv, update_critic, update_actor, step at every tag, reward from 0.4.0,
             update_weights (the weight sync into the rollout, timed on its own) from 0.7.1; the
             ref timer is named by `str(Role.RefPolicy)` from 0.7.0, which is "ref".
  memory     perf/max_memory_allocated_gb, perf/max_memory_reserved_gb, perf/cpu_memory_used_gb,
             logged by the legacy workers' update_actor (megatron_workers.py / fsdp_workers.py,
             0.3.0 to 0.7.x); the engine workers log none in 0.7.x (use_legacy_worker_impl=disable:
             the lines are commented out) and, from 0.8.0 (the legacy workers removed), the same
             names, which the trainer prefixes with `actor/` (ray_trainer.py `rename_dict(...,
             "actor/")`): actor/perf/max_memory_allocated_gb and so on.
  perf       perf/mfu/actor (0.3.0 on), perf/mfu/actor_infer (0.7.0 on), perf/throughput,
             perf/time_per_step, perf/total_num_tokens (0.3.0 on).
  lengths    response_length/{mean,max,min,clip_ratio}, prompt_length/{mean,max,min,clip_ratio}.
  agent loop timing_s/agent_loop/generate_sequences/{min,max,mean} (0.5.0 on, async rollout): the
             time of one sample's generation, not the phase; never read as `gen`.
"""

from __future__ import annotations

from collections.abc import Iterable

TIMING_PREFIX = "timing_s/"
# verl 0.1 named its timers `timing/{gen,ref,values,adv,update_critic,update_actor}` (ray_trainer.py
# at v0.1, no step timer); from 0.2 on `timing_s/`. verl's quick-start page still shows a 0.1 line.
LEGACY_TIMING_PREFIX = "timing/"
TIMING_PREFIXES = (TIMING_PREFIX, LEGACY_TIMING_PREFIX)
VALIDATION = ("val-core/", "val-aux/", "val/")  # what the validation logs (0.3: `val/`, 0.4 on: `val-core/`, `val-aux/`)

# The step's phases as verl times them, in the order a step runs them.
PHASES = ("gen", "reward", "old_log_prob", "ref", "values", "adv", "update_critic", "update_actor",
          "update_weights", "step")

ALLOCATED = "perf/max_memory_allocated_gb"
RESERVED = "perf/max_memory_reserved_gb"
HOST_USED = "perf/cpu_memory_used_gb"
MFU_ACTOR = "perf/mfu/actor"
THROUGHPUT = "perf/throughput"
TOTAL_TOKENS = "perf/total_num_tokens"
RESPONSE_MEAN = "response_length/mean"
RESPONSE_MAX = "response_length/max"
RESPONSE_CLIP = "response_length/clip_ratio"
PROMPT_MEAN = "prompt_length/mean"
PROMPT_MAX = "prompt_length/max"
# Where a release names a metric otherwise: the engine workers' memory figures, prefixed by the
# trainer from 0.8.0.
ENGINE_PREFIX = "actor/"
ALIASES: dict[str, tuple[str, ...]] = {
    **{key: (key, ENGINE_PREFIX + key) for key in (ALLOCATED, RESERVED, HOST_USED)},
    **{TIMING_PREFIX + phase: (TIMING_PREFIX + phase, LEGACY_TIMING_PREFIX + phase) for phase in PHASES},
}

# The first release that logs a key (keys every release 0.3-0.7 logs are not listed): what a log's
# keys say about the verl that wrote it.
FIRST_RELEASE: dict[str, str] = {
    ENGINE_PREFIX + ALLOCATED: "0.8.0",
    TIMING_PREFIX + "update_weights": "0.7.1",
    "perf/mfu/actor_infer": "0.7.0",
    TIMING_PREFIX + "agent_loop/generate_sequences/mean": "0.5.0",
    TIMING_PREFIX + "reward": "0.4.0",
}

# Console-line value formats by release (verl/utils/logger/aggregate_logger.py concat_dict_to_str):
# through 0.4.1 every number is printed `:.3f`; from 0.5.0 it is pprint.pformat(v), which writes a
# numpy scalar as `np.float64(1.2)` under numpy 2.
CONSOLE_FORMATS = {"0.3-0.4": "key:1.234 (three decimals)", "0.5+": "key:1.2345678 or key:np.float64(1.2345678)"}


def lookup(values: dict[str, float], key: str) -> float | None:
    """A step's value of `key` under whichever name its release logs it."""
    for name in ALIASES.get(key, (key,)):
        if name in values:
            return values[name]
    return None


def timing_key(phase: str) -> str:
    return TIMING_PREFIX + phase


def phase_of(key: str) -> str | None:
    """The phase a timing key measures, or None (timing_per_token_ms/*, agent-loop keys, others)."""
    if not key.startswith(TIMING_PREFIX):
        return None
    name = key[len(TIMING_PREFIX):]
    return name if name in PHASES else None


def newest_first_release(keys: Iterable[str]) -> str | None:
    """The newest first-release among the keys a log has: the verl that wrote it is at least that."""
    found = [FIRST_RELEASE[k] for k in keys if k in FIRST_RELEASE]
    if not found:
        return None
    return max(found, key=lambda v: tuple(int(p) for p in v.split(".")))
