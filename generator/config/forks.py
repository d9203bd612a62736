"""Keys that popular forks of verl add to change the batch arithmetic.

verl's batch chain (docs/batch-chain.md) counts P prompts × n responses per step and splits them
into mini- and micro-batches. Several public projects built on verl repeat or regroup the batch
outside that chain, under keys verl itself never had. When one of them is in a call's effective
config, verl's arithmetic does not describe the run: the batch-chain rules stand down and VB118
says why (docs/rules/batch.md#vb118).

Each entry is a fact found in the project's public source; `neutral` is the value that leaves
verl's chain as it is (None: any value changes it). Where the fork's code is in the checkout,
what it repeats the batch by is read from that code (generator.reading.fork_code) as well; this table is
the fallback for forks whose code is absent (an installed fork, a script copied alone).
"""

from __future__ import annotations

from pathlib import Path
from operator import methodcaller
from typing import TYPE_CHECKING, Any, Collection, Iterable, NamedTuple

from generator.config.types import Config
from generator.verl.constants import PPO_ENTRY

if TYPE_CHECKING:
    from generator.reading.fork_code import ForkCode


class ForkBatchKey(NamedTuple):
    key: str  # a full dotted key, or ".name" for that last part under any section
    projects: str  # where it comes from
    effect: str  # what it does to the batch, in verl's terms
    neutral: Any = None  # the value that changes nothing (None: every value changes the chain)


FORK_BATCH_KEYS: tuple[ForkBatchKey, ...] = (
    ForkBatchKey("actor_rollout_ref.rollout.n_agent", "Search-R1 and the projects built on it",
                 "the trainer repeats every prompt n_agent times before generation, so a step holds "
                 "P·n_agent·n responses", neutral=1),
    ForkBatchKey("agent_grpo.n", "DeepResearcher, IGPO",
                 "each prompt is run as agent_grpo.n trajectories (the GRPO group) outside rollout.n",
                 neutral=1),
    ForkBatchKey("env.rollout.n", "verl-agent (GiGPO)",
                 "each prompt starts env.rollout.n environments and every turn of every trajectory "
                 "becomes a training sample, so the trained batch is not P·n"),
    ForkBatchKey("es_manager.train.env_groups", "RAGEN",
                 "the step is env_groups × group_size environment trajectories, not train_batch_size·n"),
    ForkBatchKey("es_manager.train.group_size", "RAGEN",
                 "the step is env_groups × group_size environment trajectories, not train_batch_size·n"),
    ForkBatchKey("actor_rollout_ref.rollout.rollout_filter_ratio", "RAGEN",
                 "a share of the groups is dropped after generation, so fewer responses are trained than "
                 "generated", neutral=1),
    ForkBatchKey("azr.problem_types", "Absolute-Zero-Reasoner",
                 "each step proposes and solves train_batch_size tasks for every problem type listed, and "
                 "the actor trains on all of them together (the fork drops verl's train ≥ mini check)"),
    ForkBatchKey(".do_not_split_ppo_mini_batch", "agentic-RL forks of verl's dp_actor/dp_critic",
                 "the whole local batch is one mini-batch: ppo_mini_batch_size is not used", neutral=False),
)


class ForkBatchSetting(NamedTuple):
    entry: ForkBatchKey
    key: str  # the full key in the config
    value: Any  # None when the value is unknown (it comes from the environment or an argument)
    line: int | None  # where the script sets it (None: only the fork's own config has it)


def _matches(entry: ForkBatchKey, key: str) -> bool:
    return key.endswith(entry.key) if entry.key.startswith(".") else key == entry.key


def _neutral(entry: ForkBatchKey, value: Any) -> bool:
    if entry.neutral is None or value is None:
        return False
    if isinstance(entry.neutral, bool) or isinstance(value, bool):
        return str(value).strip().lower() == str(entry.neutral).lower()
    try:
        return float(value) == float(entry.neutral)
    except (TypeError, ValueError):
        return False


_EXACT_KEYS = frozenset(entry.key for entry in FORK_BATCH_KEYS if not entry.key.startswith("."))
_SUFFIXES = tuple(entry.key for entry in FORK_BATCH_KEYS if entry.key.startswith("."))
_HAS_SUFFIX = methodcaller("endswith", _SUFFIXES)


def _suffixed(keys: Collection[str]) -> Iterable[str]:
    """The keys that end with one of _SUFFIXES. Most configs have none: one search of all the
    keys joined (in C) tells so before any key is tested (a key ending with a suffix puts the
    suffix and a newline in the joined text)."""
    joined = "\n".join(keys) + "\n"
    if not any(suffix + "\n" in joined for suffix in _SUFFIXES):
        return ()
    return filter(_HAS_SUFFIX, keys)


def _matching_entries(key: str) -> list[ForkBatchKey]:
    return [entry for entry in FORK_BATCH_KEYS if _matches(entry, key)]


def _setting(config: Config, key: str) -> tuple[Any, int | None]:
    """(value or None when unknown, line) of one key the call sets or its config has. Keys
    verl's schema does not have are not in `values` (VK601 reports them) but their overrides
    still reach the fork's trainer, so they count too (the last override of the key wins)."""
    for issue in reversed(config.key_issues):
        if issue.kind == "unknown-key" and issue.override.key == key:
            override = issue.override
            return (override.value if override.resolved else None, override.line)
    if key in config.values and key not in config.unknown:
        return config.values[key], config.line_of(key)
    return None, config.line_of(key)


def code_folders(config: Config) -> list[Path]:
    """The folders of the fork's own code behind a call: its verl package's `trainer/`, and the
    folder of a project config the call composes (a recipe's `config/` sits beside its trainer)."""
    folders: list[Path] = []
    resolution = config.resolution
    if resolution is not None and resolution.package is not None:
        folders.append(resolution.package / "trainer")
        folders.append(resolution.package / "utils" / "config.py")  # verl 0.6+ warns of deprecated keys there
    if config.config_dir and config.entry != PPO_ENTRY:
        folders.append(Path(config.config_dir).parent)
    return folders


def fork_code(config: Config) -> ForkCode | None:
    """What the fork's code in the checkout does with config keys; None when there is none."""
    folders = code_folders(config)
    if not folders:
        return None
    # Here, not at the top: a script checked outside a checkout has no fork code to read, and
    # reading.fork_code (ast, the Python chunker) is ~3 ms of `gen check`'s start.
    from generator.reading.fork_code import read_fork_code

    return read_fork_code(folders)


def _code_entries(code: ForkCode | None) -> list[ForkBatchKey]:
    if code is None:
        return []
    entries: dict[str, ForkBatchKey] = {}
    for repeat in code.repeat_keys:
        entries.setdefault(repeat.key, ForkBatchKey(
            repeat.key, f"this project's trainer, {repeat.where}",
            f"the trainer repeats the batch by {repeat.key} (not only by rollout.n)", neutral=1))
    return list(entries.values())


def fork_batch_settings(config: Config) -> list[ForkBatchSetting]:
    """`batch_settings` with the fork code behind `config` read here."""
    return batch_settings(config, fork_code(config))


def batch_settings(config: Config, code: ForkCode | None) -> list[ForkBatchSetting]:
    """The fork keys of `config` that change the batch chain (a neutral or null value does
    not); an unknown value counts, since it may. Keys the fork's own code (`code`, from
    `fork_code`) repeats the batch by come first; the table above covers forks whose code is
    not here."""
    found: list[ForkBatchSetting] = []
    unknown_keys = {issue.override.key for issue in config.key_issues
                    if issue.kind == "unknown-key" and issue.override.key}
    from_code = _code_entries(code)
    code_keys = {entry.key: entry for entry in from_code}
    # Only the few keys that name a fork entry are looked at further (a config has hundreds):
    # the named keys are looked up, and only the suffix test scans the keys (in C), as this runs
    # for every call.
    named = {key for key in (*_EXACT_KEYS, *code_keys)
             if key in config.values or key in config.unknown or key in unknown_keys}
    for keys in (config.values, config.unknown, unknown_keys):
        named.update(_suffixed(keys))
    for key in sorted(named):
        value, line = _setting(config, key)
        entries = [code_keys[key]] if key in code_keys else _matching_entries(key)
        for entry in entries:
            known_null = value is None and key not in config.unknown and key in config.values
            written_null = isinstance(value, str) and value.strip().lower() in ("null", "none", "~")
            if known_null or written_null or _neutral(entry, value):
                continue
            found.append(ForkBatchSetting(entry, key, value, line))
    return found
