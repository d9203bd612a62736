"""Judging, per call: find the rule families, gather each call's facts, run the rule engine.

Entry points:
  check_config(config, ...)  -> findings for one effective config (generated or read)
  check_script(script, ...)  -> per trainer call: (invocation, config, findings), plus the shell
                                hazards of the script as (None, None, findings)
  check_resolved(script, resolution, ...) -> the same, for a release resolved by the caller

The orchestration around the pure rule engine (generator.rules): the configs each live call
composes (`calls`), the facts gathered for each before any rule runs (`facts`: the model's
config.json, the fork's code, the memory verdict, the release's semantics), the notes a finding
gets for where its call stands, the folding of loop repeats (`loop_repeats`) and the verdicts on
the script's suppression comments. Rule families register themselves with `@rule` on import;
`load_rules` finds them in generator/rules/.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from generator.config.types import Config
from generator.judging.gather import call_facts, script_facts
from generator.reading.launch_script import Invocation, LaunchScript
from generator.model.facts import ModelFacts
from generator.rules.uncomposable import rests_on_missing
from generator.rules import (SEVERITY_ORDER, judge, judge_script, reads_defaults, rules_to_run, runs_no_training_step,
                             script_rules, stands_down_for_fork)
from generator.rules.core import REGISTRY, Finding, MemoryVerdict, Rule, selected

if TYPE_CHECKING:
    from generator.schema.resolution import Resolution

_loaded = False


def load_rules() -> dict[str, Rule]:
    """Import every module of generator/rules/ once (each family registers its rules on import,
    so a new family needs no list to be edited); returns the registry."""
    global _loaded
    if not _loaded:
        from importlib import import_module

        import generator.rules as package

        for name in sorted(_module_names(package.__path__)):
            import_module(f"{package.__name__}.{name}")
        _loaded = True
    return REGISTRY


def _module_names(folders: Iterable[str]) -> set[str]:
    """The modules and packages in `folders`, as pkgutil.iter_modules names them; listed here
    because pkgutil imports `inspect` to name them (~5 ms of a check's start, issue 22)."""
    names = set()
    for folder in folders:
        for entry in os.scandir(folder):
            stem, ext = os.path.splitext(entry.name)
            if ext == ".py" and stem != "__init__" and stem.isidentifier() and entry.is_file():
                names.add(stem)
            elif not ext and stem.isidentifier() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                names.add(stem)
    return names


def problem_code(kind: str) -> str:
    """The code of the rule that reports a problem kind (generator.layout.derive's LayoutProblem.kind, a
    key-issue or shell-hazard kind): the rule whose `reports` flag names it. KeyError for none."""
    for registered in load_rules().values():
        if registered.reports == kind:
            return registered.code
    raise KeyError(kind)


# The rules chosen by code prefixes, and of those the ones that run on a kind of call: decided by
# these arguments and the registry alone (pure, kept for the whole process: the registry only
# grows, at import, and its size is in every key). A corpus has a few dozen kinds of call, and
# 120 rules to sort out for each of its ~700 calls.
_CHOSEN: dict[tuple[object, ...], list[Rule]] = {}
_TO_RUN: dict[tuple[object, ...], list[Rule]] = {}
_SCRIPT_RULES: dict[tuple[object, ...], list[Rule]] = {}


def chosen_rules(select: tuple[str, ...], ignore: tuple[str, ...]) -> list[Rule]:
    """`rules.core.selected`, kept per (select, ignore)."""
    key = (select, ignore, len(REGISTRY))
    chosen = _CHOSEN.get(key)
    if chosen is None:
        chosen = _CHOSEN[key] = selected(select, ignore)
    return chosen


def _rules_to_run(select: tuple[str, ...], ignore: tuple[str, ...], backend: str, version: str, trainer: bool,
                  approximate: bool, forked_chain: bool, trains: bool = True) -> list[Rule]:
    """The chosen rules that run on a config of this backend and release (`rules.rules_to_run`)."""
    key = (select, ignore, backend, version, trainer, approximate, forked_chain, trains, len(REGISTRY))
    chosen = _TO_RUN.get(key)
    if chosen is None:
        chosen = _TO_RUN[key] = rules_to_run(chosen_rules(select, ignore), backend, version, trainer, approximate,
                                             forked_chain, trains)
    return chosen


def check_config(config: Config, *, model: ModelFacts | None = None, invocation: Invocation | None = None,
                 script: LaunchScript | None = None, select: Iterable[str] = (),
                 ignore: Iterable[str] = (), memory: MemoryVerdict | None = None) -> list[Finding]:
    """Findings for one config, ordered by line then code. Rules outside the config's release or
    backend do not run; batch/layout rules run only for PPO-trainer calls."""
    from generator.config.reader import fallback_note, is_trainer

    load_rules()
    ctx = call_facts(config, model=model, invocation=invocation, script=script, memory=memory)
    trainer = is_trainer(ctx)
    approximate = fallback_note(config) is not None
    # A release guessed with no evidence (no verl found, no verl key set): its defaults are not
    # the run's, so default-reading rules stand down as for an approximate config.
    if config.resolution is not None and config.resolution.guessed:
        approximate = True
    forked_chain = bool(ctx.fork_settings)
    findings = judge(ctx, _rules_to_run(tuple(select), tuple(ignore), config.backend, config.version, trainer,
                                        approximate, forked_chain, not (trainer and runs_no_training_step(ctx))))
    findings = rests_on_missing(findings, config)  # keys a defaults file the checkout lacks would supply
    if trainer and not forked_chain:
        findings = _over_every_count(config, findings, model, invocation, script, tuple(ignore))
        findings.sort(key=lambda f: (f.line or 0, SEVERITY_ORDER.get(f.severity, 3), f.code))
    return findings


def _over_every_count(config: Config, findings: list[Finding], model: ModelFacts | None,
                      invocation: Invocation | None, script: LaunchScript | None,
                      ignore: tuple[str, ...]) -> list[Finding]:
    """The batch chain judged for every value of a GPU count the script leaves unknown
    (generator.judging.every_value): chain findings that hold for all of them replace VB117."""
    from generator.judging.every_value import decided
    from generator.rules.batch import CHAIN_INPUTS

    chain = tuple(rule.code for rule in load_rules().values() if stands_down_for_fork(rule))
    return decided(config, findings, CHAIN_INPUTS, lambda known: check_config(
        known, model=model, invocation=invocation, script=script, select=chain, ignore=ignore))


def script_findings(script: LaunchScript, *, select: Iterable[str] = (), ignore: Iterable[str] = (),
                    with_suppressions: bool = True) -> list[Finding]:
    """Findings about the script text itself (shell hazards). Without `with_suppressions`, the
    VS718/VS719 verdicts on its suppression comments are left out (check_script adds them over
    every call's findings)."""
    load_rules()
    select, ignore = tuple(select), tuple(ignore)
    key = (select, ignore, with_suppressions, len(REGISTRY))
    chosen = _SCRIPT_RULES.get(key)
    if chosen is None:
        chosen = _SCRIPT_RULES[key] = script_rules(chosen_rules(select, ignore), with_suppressions)
    return judge_script(script_facts(script), chosen)


def _model_for(config: Config, model_config: str | None, cache: dict[str, ModelFacts | None]) -> ModelFacts | None:
    """Model facts: --model-config (config.json or a model dir) first, else a known name or a local
    directory in actor_rollout_ref.model.path. None when unknown (model-shape rules skip)."""
    from generator.model import find_model, load_model_config
    from generator.verl.constants import DEFAULT_MODEL_PATH, MODEL_PATH_KEY

    if model_config:
        if model_config not in cache:
            cache[model_config] = load_model_config(model_config)
        return cache[model_config]
    path = config.values.get(MODEL_PATH_KEY)
    if isinstance(path, str) and MODEL_PATH_KEY in config.unknown:
        from generator.model.registry import known_tail

        path = known_tail(path)  # `$HOME/models/Qwen2.5-7B`: matched by the folder's name
    if not isinstance(path, str) or not path:
        return None
    if path == DEFAULT_MODEL_PATH and MODEL_PATH_KEY not in config.set_by:
        return None  # verl's placeholder default, not the model the script trains
    if path not in cache:
        try:
            cache[path] = find_model(path)
        except Exception:  # a broken local config.json must not stop the check
            cache[path] = None
    return cache[path]


def _scope_note(invocation: Invocation) -> str:
    # A call in a script this one runs (`bash x.sh`): its lines are the callee's (shell/callee.py).
    from generator.reading.shell.callee import callee_label

    callee = callee_label(invocation.context)
    ran = f" [{callee}]" if callee else ""
    if invocation.branch == "conditional":
        where = f" ({invocation.context[-1]})" if invocation.context else ""
        return f" [in a conditional branch{where}]" + ran
    if invocation.branch == "loop":
        return " [inside a loop]" + ran
    return ran


def _inferred_default_note(resolution: Resolution, config: Config) -> str:
    """What a finding of a `reads_defaults` rule adds when the defaults it relied on are those of a release
    inferred from the script's keys (no option, project file, project verl or installed verl named
    one): the verdict stands, but the user is told whose default it is and how to name the real
    release (docs/rules/defaults.md says why these rules run rather than stand down)."""
    if not resolution.inferred or resolution.stand_in is not None or config.config_dir is not None:
        return ""  # a named release, a stand-in (the rules do not run), or the call's own config
    return f" [verl {resolution.base_release}'s default; the release was inferred from the script's keys]"


CheckResults = list[tuple[Invocation | None, Config | None, list[Finding]]]
MemoryFor = Callable[[Config, ModelFacts | None], MemoryVerdict | None]


def check_script(script: LaunchScript, *, version: str | None = None, select: Iterable[str] = (),
                 ignore: Iterable[str] = (), model_config: str | None = None, config_root: str | None = None,
                 resolution: Resolution | None = None, memory_for: MemoryFor | None = None) -> CheckResults:
    """`check_resolved` for a script whose release the caller has not resolved: `resolution`
    when given, else resolved for the script (generator.schema.resolution) with `version` as
    `--verl-version`. The commands resolve once per file and call `check_resolved` themselves.
    Raises InputError for an unknown --verl-version or an unreadable --model-config."""
    if resolution is None:
        from generator.schema.resolution import resolve_script

        resolution = resolve_script(script, version=version)
    return check_resolved(script, resolution, select=select, ignore=ignore, model_config=model_config,
                          config_root=config_root, memory_for=memory_for)


def check_resolved(script: LaunchScript, resolution: Resolution, *, select: Iterable[str] = (),
                   ignore: Iterable[str] = (), model_config: str | None = None, config_root: str | None = None,
                   memory_for: MemoryFor | None = None) -> CheckResults:
    """Check every live, conditional or loop call of a read script (dead branches are skipped)
    against `resolution` (which verl judges it; each call's Config carries it).

    The first element, when the script has shell hazards, is (None, None, hazard findings).
    `config_root` is where `$PWD`-relative config paths start (the directory the script is run
    from, usually the repository root). `memory_for` predicts a call's memory (the caller's, on
    the GPU it named) for the memory rules.
    Raises InputError for an unreadable --model-config.
    """
    from generator.judging.calls import call_configs
    from generator.judging.loop_repeats import fold_loop_repeats
    from generator.judging.release_evidence import from_elsewhere, rejudges, verl_from_elsewhere, weigh

    results: CheckResults = []
    hazards = script_findings(script, select=select, ignore=ignore, with_suppressions=False)
    results.append((None, None, hazards))
    cache: dict[str, ModelFacts | None] = {}  # model config or path -> its facts

    def judge_call(invocation: Invocation, config: Config) -> list[Finding]:
        model = _model_for(config, model_config, cache)
        memory = memory_for(config, model) if memory_for is not None else None
        return check_config(config, model=model, invocation=invocation, script=script,
                            select=select, ignore=ignore, memory=memory)

    # The release inferred from the keys is one of several the evidence allows: a finding stays an
    # error or warning only where each of them finds it too (generator.judging.release_evidence).
    other_releases = rejudges(script, resolution, config_root, judge_call)
    for index, (invocation, config) in enumerate(call_configs(script, resolution, config_root)):
        if invocation.own_command_line is not None:
            # The project's entry parses its own command line (no Hydra): the config it runs is not
            # the one verl's defaults and these words would build, so no config rule judges it.
            results.append((invocation, config, []))
            continue
        findings = weigh(judge_call(invocation, config), resolution, index, other_releases)
        elsewhere = verl_from_elsewhere(invocation, _project_root(script)) if resolution.inferred else None
        if elsewhere:
            findings = from_elsewhere(findings, resolution, elsewhere)
        note = _scope_note(invocation)
        if note:
            findings = [f._replace(message=f.message + note) for f in findings]
        inferred = _inferred_default_note(resolution, config)
        if inferred:
            findings = [f._replace(message=f.message + inferred) if reads_defaults(f.code) else f
                        for f in findings]
        results.append((invocation, config, findings))
    results = fold_loop_repeats(results)  # one finding per cause, not one per loop value
    _judge_suppressions(script, results, select=select, ignore=ignore, memory=memory_for is not None)
    if not results[0][2]:
        results.pop(0)  # no script-level finding: the first element is a call's
    return results


def _project_root(script: LaunchScript) -> Path | None:
    """The checkout the script belongs to; None for a script read from stdin."""
    if script.path is None or not os.path.isfile(script.path):
        return None
    from generator.schema.imports import checkout_root

    return checkout_root(script.path)


def _judge_suppressions(script: LaunchScript, results: CheckResults,
                        *, select: Iterable[str], ignore: Iterable[str], memory: bool) -> None:
    """VS718/VS719 on the script's `# verl-gen: ignore` comments, judged over every finding of
    every call (before suppression), added to the script-level findings (results[0])."""
    from generator.rules.suppression import CODES as SUPPRESSION_CODES
    from generator.rules.suppression import NEEDS_MEMORY, suppression_findings

    chosen = [rule.code for rule in chosen_rules(tuple(select), tuple(ignore))]
    wanted = [code for code in SUPPRESSION_CODES if code in chosen]
    if not wanted or b"verl-gen" not in script.source.lower():
        return
    ran = [code for code in chosen if memory or code not in NEEDS_MEMORY]
    found = [(f.code, invocation.line if invocation else None, f.line)
             for invocation, _config, findings in results for f in findings]
    extra = suppression_findings(script.source, found, ran=ran, wanted=wanted)
    if extra:
        hazards = results[0][2]
        hazards.extend(extra)
        hazards.sort(key=lambda f: (f.line or 0, f.code))


__all__ = ["CheckResults", "MemoryFor", "check_config", "check_resolved", "check_script", "load_rules", "problem_code",
           "script_findings"]
