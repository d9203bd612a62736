"""The algorithm's batch sizes for a plan: prompts per step and per optimizer update, kept as
given and checked per layout (a DP that cannot split them rejects the layout), with a hint of
sizes that every layout on the GPUs would split."""

from __future__ import annotations

import math

from generator.layout.derive import divisors
from generator.base.errors import InputError
from generator.verl.constants import ALGORITHM_TABLE

AGENT_NUM_WORKERS = 8  # rollout.agent.num_workers default: G must split evenly (D1 in docs/verl-checks.md)
MAX_TRAIN_BATCH_SIZE = 10**12  # keeps the divisor search (√P steps) under a second


def _lcm(a: int, b: int) -> int:
    return a * b // math.gcd(a, b)


def default_n(algo: str) -> int:
    """Responses per prompt when --n is not given (the algorithm table's; 5 for a name it lacks)."""
    facts = ALGORITHM_TABLE.get(algo)
    return facts.default_n if facts else 5


def mini_batch_unit(gpus: int, n: int) -> int:
    """Smallest mini batch M (prompts) with M·n divisible by every DP that divides `gpus` and
    by the agent-loop worker count: then every layout on these GPUs accepts it."""
    return _lcm(gpus // math.gcd(gpus, n), AGENT_NUM_WORKERS // math.gcd(AGENT_NUM_WORKERS, n))


def batch_sizes(gpus: int, n: int, prompt_len: int, response_len: int, algo: str = "grpo",
                train_batch_size: int | None = None, ppo_mini_batch_size: int | None = None) -> tuple[int, int]:
    """(train_batch_size, ppo_mini_batch_size) in prompts: the algorithm's batch, kept as given.

    Default: 1024 prompts per step at ≤ 2k tokens per sequence (verl's 7B examples: 1024/256),
    halving as sequences double; 4 optimizer steps per training step. The sizes are never
    rounded to suit the GPU count: a layout whose DP does not split them is rejected and the
    plan says why (see `batch_hint`). A mini batch of 0 means: chosen per layout (a given
    train batch with no mini batch that every DP on these GPUs accepts).
    """
    if ppo_mini_batch_size is not None:
        if ppo_mini_batch_size <= 0:
            raise InputError(f"--ppo-mini-batch-size must be positive, got {ppo_mini_batch_size}")
        prompts, _ = batch_sizes(gpus, n, prompt_len, response_len, algo, train_batch_size)
        if ppo_mini_batch_size > prompts:
            raise InputError(f"ppo_mini_batch_size {ppo_mini_batch_size} is more than train_batch_size {prompts}")
        return prompts, ppo_mini_batch_size
    seq = prompt_len + response_len
    unit = mini_batch_unit(gpus, n)
    if train_batch_size is None:
        target = 1024
        while seq > 2048 and target > 64:
            seq //= 2
            target //= 2
        return target, target // 4
    prompts = train_batch_size
    if prompts <= 0:
        raise InputError(f"--train-batch-size must be positive, got {prompts}")
    if prompts > MAX_TRAIN_BATCH_SIZE:
        raise InputError(f"--train-batch-size {prompts} is more prompts per step than any run holds "
                         f"(at most {MAX_TRAIN_BATCH_SIZE:.0e})")
    if (prompts * n) % AGENT_NUM_WORKERS:
        raise InputError(
            f"train_batch_size·n = {prompts}·{n} = {prompts * n} is not divisible by "
            f"rollout.agent.num_workers {AGENT_NUM_WORKERS}; choose a multiple of "
            f"{AGENT_NUM_WORKERS // math.gcd(AGENT_NUM_WORKERS, n)} prompts")
    minis = [unit * d for d in divisors(prompts // unit)] if prompts % unit == 0 else []
    if minis:
        from generator.layout.derive import nearest

        return prompts, nearest(max(1, prompts // 4), minis) or minis[0]
    return prompts, 0  # decided per layout (valid only for some DP sizes)


def batch_hint(gpus: int, n: int, prompts: int) -> str:
    """Batch sizes near `prompts` that every data-parallel size on `gpus` splits, for a plan
    in which the given ones split over none of the layouts that fit."""
    unit = mini_batch_unit(gpus, n)
    mini = max(unit, (prompts // 4) // unit * unit)
    return (f"--train-batch-size {mini * 4} --ppo-mini-batch-size {mini} would split over every layout "
            f"on {gpus} GPUs (a mini batch of a multiple of {unit} prompts)")


def mini_for(prompts: int, n: int, dp: int, mini: int) -> int | None:
    """The mini batch for one DP: `mini` when the batch sizes were decided for every layout,
    else the divisor M of the prompts per step with M·n divisible by DP (every rank gets whole,
    equal mini batches; derive.valid_minis) closest to a quarter of the step."""
    if mini:
        return mini
    from generator.layout.derive import nearest

    options = [m for m in divisors(prompts) if (m * n) % dp == 0]
    return nearest(max(1, prompts // 4), options)  # about 4 optimizer updates per step
