"""The rule engine: which registered rules judge a call, and running them over the facts
gathered for it.

Everything here is a pure function of its arguments and the registry: the facts a rule needs
(the composed config, the model, the fork's code, the memory verdict, the release's semantics)
are gathered before any rule runs, by generator.judging, which also finds the rule families
(`judging.load_rules`), chooses the rules for each call and runs this engine per trainer call.
Rule families live in one module each (batch, aux_batch, parallel, dynamic, rollout, keys,
shell, model_shape, misc, ...) and register themselves with `@rule` on import.
tests/test_rules_pure.py holds every module of this package to that: no file, session or
module state.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from generator.rules.core import REGISTRY, Context, Finding, Rule
from generator.verl.versions import containing

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

# The code that says why the chain_arithmetic rules stood down. Every other batch rule (VB1xx, VB2xx: which micro-batch
# keys a call must set, how they pair) stands down with them: such a fork splits and validates
# its batches in its own code (per agent, per sample group), so a verdict from verl's batch rules
# next to "the batch rules stand down" would contradict it.
FORK_CHAIN_CODE = "VB118"


def stands_down_for_fork(rule: Rule) -> bool:
    """Whether a rule does not run on a call whose fork changes the batch chain (its
    `chain_arithmetic` flag, or a batch rule other than VB118)."""
    return rule.code != FORK_CHAIN_CODE and (rule.chain_arithmetic or rule.code.startswith("VB"))


def stands_down_without_training(rule: Rule) -> bool:
    """Whether a rule judges only what a training step does (batch arithmetic verl meets at run
    time, or that silently changes an update): on a call that runs no training step it has
    nothing to judge. Load and init checks still run there: verl's validate_config and the
    workers' set-up run before fit() decides to stop."""
    return rule.chain_arithmetic and rule.stage in ("runtime", "silent")


def runs_no_training_step(ctx: Context) -> bool:
    """The call validates only: `trainer.total_epochs=0` never enters the epoch loop, and
    `trainer.val_only=True` returns from fit() after the first validation (ray_trainer.py's fit()
    at v0.2.0.post2, v0.3.0.post1, v0.4.1 and v0.7.0 alike; v0.1 has no val_only and trains).
    The project's own trainer, where there is one, says whether it reads val_only."""
    from generator.config.reader import ConfigReader
    from generator.verl.versions import VersionRange

    view = ConfigReader.of(ctx)
    if view.int("trainer.total_epochs") == 0:
        return True
    if view.bool("trainer.val_only") is not True:
        return False
    reads = ctx.fork_checks.trainer_reads_val_only
    if reads is not None:
        return reads
    try:
        return not VersionRange(None, "0.1.0").contains(view.version)
    except ValueError:
        return False


def reads_defaults(code: str) -> bool:
    """Whether the rule of `code` decides from default values (its `reads_defaults` flag)."""
    registered = REGISTRY.get(code)
    return registered is not None and registered.reads_defaults


def applies(rule: Rule, backend: str, version: str, trainer: bool) -> bool:
    """Whether `rule` judges a config of this backend and release (of a trainer call or not)."""
    return _applies(rule, backend, trainer, containing([rule.versions], version)[0])


def _applies(rule: Rule, backend: str, trainer: bool, in_versions: bool | None) -> bool:
    """applies(), the release's verdict given (None: the release is no number: it applies)."""
    if rule.scope == "script":
        return False
    if rule.scope == "trainer" and not trainer:
        return False
    if backend not in rule.backends and not (rule.scope == "any" and backend == "unknown"):
        return False
    return in_versions is not False


def rules_to_run(chosen: Sequence[Rule], backend: str, version: str, trainer: bool, approximate: bool,
                 forked_chain: bool, trains: bool = True) -> list[Rule]:
    """The chosen rules that run on a call: each `applies`, does not read defaults the call only
    approximates, does not do the batch arithmetic a fork of the call changes, and does not judge
    a training step the call never runs. The release is compared with every rule's range at once."""
    in_versions = containing([rule.versions for rule in chosen], version)
    return [rule for rule, inside in zip(chosen, in_versions)
            if _applies(rule, backend, trainer, inside) and not (approximate and rule.reads_defaults)
            and not (forked_chain and stands_down_for_fork(rule))
            and not (not trains and stands_down_without_training(rule))]


def judge(ctx: Context, rules: Iterable[Rule]) -> list[Finding]:
    """The findings of `rules` on one call's facts, ordered by line, severity, then code."""
    findings: list[Finding] = []
    for rule in rules:
        findings.extend(rule.check(ctx))
    reported = {f.code for f in findings}
    findings = [f for f in findings if f.implied_by is None or f.implied_by not in reported]
    findings.sort(key=lambda f: (f.line or 0, SEVERITY_ORDER.get(f.severity, 3), f.code))
    return findings


def script_rules(chosen: Iterable[Rule], with_suppressions: bool) -> list[Rule]:
    """Of the chosen rules, those about the script text (shell hazards); without
    `with_suppressions`, not the VS718/VS719 verdicts on its suppression comments."""
    from generator.rules.suppression import CODES as SUPPRESSION_CODES

    return [rule for rule in chosen if rule.scope == "script" and (with_suppressions or rule.code not in SUPPRESSION_CODES)]


def judge_script(ctx: Context, rules: Iterable[Rule]) -> list[Finding]:
    """The findings of script rules on a script's facts, ordered by line then code."""
    findings: list[Finding] = []
    for rule in rules:
        findings.extend(rule.check(ctx))
    findings.sort(key=lambda f: (f.line or 0, f.code))
    return findings


__all__ = ["FORK_CHAIN_CODE", "REGISTRY", "SEVERITY_ORDER", "applies", "judge", "judge_script", "reads_defaults",
           "rules_to_run", "script_rules", "stands_down_for_fork"]
