"""The facts one trainer call is judged on, gathered before any rule runs.

Rules are pure functions of a `rules.core.Context`; whatever a verdict needs from disk or from
another model is read here, once per call, and handed over immutable: the fork's trainer code in
the checkout and the fork keys that change the batch chain (generator.config.forks, generator.reading.fork_code),
what the call's release does with a config (generator.verl.release_semantics) and its schema. The
model's facts (its config.json) and the memory verdict are the caller's
(generator.judging.check_resolved gathers them per call).
"""

from __future__ import annotations

from pathlib import Path

from generator.config.types import Config
from generator.config.forks import batch_settings, fork_code
from generator.reading.launch_script import Invocation, LaunchScript
from generator.model.facts import ModelFacts
from generator.verl.release_semantics import semantics
from generator.rules.core import Context, ForkChecks, MemoryVerdict
from generator.schema.release_schema import Schema


def _schema(version: str) -> Schema | None:
    from generator.schema import load

    try:
        return load(version)
    except Exception:  # an unknown schema id: the rules that want defaults fall back or stand down
        return None


def call_facts(config: Config, *, model: ModelFacts | None = None, invocation: Invocation | None = None,
               script: LaunchScript | None = None, memory: MemoryVerdict | None = None) -> Context:
    """Everything the rules may look at for one call, read now."""
    code = fork_code(config)
    return Context(config=config, invocation=invocation, script=script, model=model, memory=memory,
                   fork_settings=tuple(batch_settings(config, code)), fork_code=code,
                   semantics=semantics(config.version), schema=_schema(config.version),
                   fork_dataclasses=_fork_dataclasses(config), fork_checks=_fork_checks(config))


def _fork_checks(config: Config) -> ForkChecks:
    """What the project's own verl still checks (its trainer's A6 assert, its rollout's
    chunked-prefill comparison), each read once per package in a run."""
    package = config.resolution.package if config.resolution is not None else None
    if package is None:
        return ForkChecks()
    from generator.base.folder_memo import remembered
    from generator.reading.fork_code import (rollout_checks_batched_tokens, rollout_refuses_sync,
                                             trainer_asserts_mini_within_train, trainer_reads_val_only)

    # Parsing a fork's trainer for the A6 assert costs ~0.4 s; the rules ask only where the actor's
    # mini batch exceeds the train batch, so a call whose values rule that out is not read for it.
    needed = _mini_may_exceed_train(config)
    return ForkChecks(
        trainer_asserts_mini=remembered(("trainer_asserts_mini_within_train", package),
                                        lambda: trainer_asserts_mini_within_train(package)) if needed else None,
        rollout_compares_batched_tokens=remembered(("rollout_checks_batched_tokens", package),
                                                   lambda: rollout_checks_batched_tokens(package)),
        trainer_reads_val_only=remembered(("trainer_reads_val_only", package), lambda: trainer_reads_val_only(package)),
        choices_named=_choices_named(config, package),
        critic_warmup_departure=_critic_warmup_departure(config, package),
        rollout_refuses_sync=remembered(("rollout_refuses_sync", package), lambda: rollout_refuses_sync(package))
        if config.values.get("actor_rollout_ref.rollout.mode") == "sync" else None)


def _critic_warmup_departure(config: Config, package: Path) -> str | None:
    """How the fork's trainer departs from verl's use of trainer.critic_warmup, read only for a call
    that sets a positive warmup (VX919 is the one rule that asks)."""
    warmup = config.values.get("trainer.critic_warmup")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup <= 0:
        return None
    from generator.base.folder_memo import remembered
    from generator.reading.fork_code import critic_warmup_departure

    return remembered(("critic_warmup_departure", package), lambda: critic_warmup_departure(package))


def _choices_named(config: Config, package: Path) -> frozenset[str] | None:
    """The call's values of closed-list keys that verl's list lacks and the fork's code names; the
    fork is read only when there is such a value."""
    from generator.verl.constants import CHOICES

    outside = frozenset(v for key, allowed in CHOICES.items()
                        if isinstance(v := config.values.get(key), str) and v not in allowed)
    if not outside:
        return frozenset()
    from generator.base.folder_memo import remembered
    from generator.reading.fork_code import fork_names_values

    return remembered(("fork_names_values", package, outside), lambda: fork_names_values(package, outside))


def _mini_may_exceed_train(config: Config) -> bool:
    """False only when both batch sizes are known numbers and the mini batch is within the train
    batch (the one case where no rule consults the fork's A6 assert)."""
    from generator.rules.batch import P_KEY
    from generator.rules.fixes import MINI

    values = []
    for key in (MINI, P_KEY):
        raw = config.values.get(key)
        if key in config.unknown or isinstance(raw, bool) or not isinstance(raw, int):
            return True
        values.append(raw)
    return values[0] > values[1]


def _fork_dataclasses(config: Config) -> dict[str, frozenset[str]] | None:
    """The fields of each class a `_target_` of the call names in the project's own verl, read
    only when the call adds a key with '+' (VK610 judges those against the fork's own classes)."""
    package = config.resolution.package if config.resolution is not None else None
    if package is None or not any(o.op in ("+", "++") for o in config.set_by.values()):
        return None
    # (imported here: ast is not loaded by a check of a project without its own verl)
    from generator.schema.fork_dataclasses import fork_fields

    found: dict[str, frozenset[str]] = {}
    for key, target in config.values.items():
        if key.endswith("._target_") and isinstance(target, str) and target not in found:
            fields = fork_fields(package, target)
            if fields is not None:
                found[target] = fields
    return found


def script_facts(script: LaunchScript) -> Context:
    """The facts the script rules look at: the script alone (no call, no release)."""
    return Context(config=Config(version="0.0.0", schema=""), script=script)


__all__ = ["call_facts", "script_facts"]
