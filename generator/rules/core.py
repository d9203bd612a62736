"""The rule engine's vocabulary: rules, findings, fixes, and the registry.

A rule is a small pure function registered with `@rule(...)`. It receives a `Context` and
yields `Finding`s. Findings carry messages in the user's own numbers and, where a repair
exists, a `Fix`: either key edits (set this key to that value; `fix/` finds where the value is
written) or text edits (byte spans, for shell hazards). Rules never print and never edit text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, NamedTuple, Protocol

from generator.config.types import Config
from generator.reading.edit_kinds import KeyEdit, TextEdit
from generator.reading.launch_script import Invocation, LaunchScript
from generator.model.facts import ModelFacts
from generator.base.resources import packaged_json
from generator.verl.versions import ALL, VersionRange

if TYPE_CHECKING:
    from generator.reading.fork_code import ForkCode
    from generator.config.forks import ForkBatchSetting
    from generator.verl.release_semantics import Semantics
    from generator.schema.release_schema import Schema

Severity = Literal["error", "warning", "info"]
Applicability = Literal["safe", "unsafe"]
# When verl (or Megatron, vLLM) would notice: config load, trainer/worker init, first step;
# "silent" = never noticed, the run just does something else; "shell" = bash itself.
Stage = Literal["load", "init", "runtime", "silent", "shell", "static"]


class Fix(NamedTuple):
    description: str
    edits: tuple[KeyEdit | TextEdit, ...]
    applicability: Applicability = "safe"


class Finding(NamedTuple):
    code: str
    severity: Severity
    message: str
    line: int | None = None
    key: str | None = None
    fix: Fix | None = None
    # When verl notices this finding, if it differs from the rule's own stage (e.g. a check verl
    # skips at load under some setting, so it fails later). None = the rule's stage.
    stage: Stage | None = None
    # The code of another rule whose finding on the same call already reports this one's cause
    # (one cause, one finding): `rules.judge` drops this finding where that one is reported.
    implied_by: str | None = None

    def effective_stage(self) -> Stage | None:
        """This finding's stage, else its rule's (None for a code not in the registry)."""
        if self.stage is not None:
            return self.stage
        registered = REGISTRY.get(self.code)
        return registered.stage if registered is not None else None

    def to_dict(self) -> dict[str, Any]:
        fix = None
        if self.fix is not None:
            fix = {
                "description": self.fix.description,
                "applicability": self.fix.applicability,
                "edits": [
                    {"key": e.key, "from": e.old, "to": e.new}
                    if isinstance(e, KeyEdit)
                    else {"start": e.start, "end": e.end, "replacement": e.replacement}
                    for e in self.fix.edits
                ],
            }
        return {
            "code": self.code,
            "severity": self.severity,
            "line": self.line,
            "key": self.key,
            "message": self.message,
            "fix": fix,
            "stage": self.effective_stage(),
        }


class MemoryVerdict(NamedTuple):
    """The predicted memory of one call on a named GPU, handed to the rules by the caller (the
    memory model is the planner's, above the rules: generator.plan.memory_check computes this)."""

    gpu: str
    fits: bool
    peak_gib: float
    usable_gib: float
    peak_phase: str
    peak_stage: int
    fix: str = ""  # the smallest change that fits, in words ("" when none fits)
    fix_edits: tuple[tuple[str, Any], ...] = ()  # (key, new value) for that change
    problems: tuple[str, ...] = ()  # why it could not be predicted (then the numbers mean nothing)
    backend: str = "megatron"  # whose memory model judged it (FSDP has no pipeline stages)
    # FSDP with packed micro batches: over at the maximum lengths, fits while the real sequences
    # fill at most this share of prompt + response (None: the lengths do not change the verdict).
    fill_limit: float | None = None
    seq_len: int = 0  # prompt + response the fill refers to


class ForkChecks(NamedTuple):
    """Which of verl's own checks the project's own verl still makes, read from its code (None:
    no such code to read, or no verl of the project's own)."""

    trainer_asserts_mini: bool | None = None  # the train batch against the actor's mini batch (A6)
    rollout_compares_batched_tokens: bool | None = None  # the rollout's chunked-prefill check (VR507)
    trainer_reads_val_only: bool | None = None  # fit() stops after validation on trainer.val_only
    # Of the call's values of a closed-list key (verl.constants.CHOICES) outside verl's list, those
    # the fork's code names (its check accepts them); None: no fork code, or not read conclusively.
    choices_named: frozenset[str] | None = None
    # Where the fork's trainer reads trainer.critic_warmup other than as verl's actor gate, read only
    # for a call that sets a warmup (None: like verl, or no fork trainer to read).
    critic_warmup_departure: str | None = None
    rollout_refuses_sync: bool | None = None  # its RolloutConfig raises on mode "sync" (0.7.0's A24)


class Context(NamedTuple):
    """The facts one call is judged on, gathered before any rule runs (generator.judging.gather)
    and never changed after: a rule is a pure function of them. Whatever comes from disk (the
    fork's code, the model's config.json, the release's schema) or from another model (the memory
    verdict) is read here once, by the gatherer, never by a rule. `invocation`/`script` are None
    for generated configs."""

    config: Config
    invocation: Invocation | None = None
    script: LaunchScript | None = None
    model: ModelFacts | None = None
    memory: MemoryVerdict | None = None  # only when a GPU was named (gen check --gpu)
    # The fork keys of the config that change the batch chain (generator.config.forks.batch_settings):
    # the engine stands the batch rules down on them, VB118 names them.
    fork_settings: tuple[ForkBatchSetting, ...] = ()
    fork_code: ForkCode | None = None  # what the fork's trainer code in the checkout does with keys
    semantics: Semantics | None = None  # what the call's release does with a config
    schema: Schema | None = None  # the release's keys and defaults (None: an id no schema has)
    # The fields of the dataclasses the project's own verl defines, by the `_target_` that names
    # them (only for calls that add keys with '+'; None: no verl of the project's own).
    fork_dataclasses: Mapping[str, frozenset[str]] | None = None
    fork_checks: ForkChecks = ForkChecks()

    @property
    def version(self) -> str:
        return self.config.version


class Example(NamedTuple):
    """A documented case: overrides applied on top of `Rule.example_base` (or the default base)."""

    overrides: tuple[str, ...]
    note: str = ""
    # For shell-level rules: a whole script (read with generator.reading.shell) instead of overrides.
    script: str | None = None
    version: str | None = None  # the release the example is checked against (default: newest)
    memory: MemoryVerdict | None = None  # the memory prediction the example's call gets
    config_name: str | None = None  # "ppo_trainer" for FSDP examples (default: ppo_megatron_trainer)
    # For rules about a config folder's files: a folder under generator/data/examples/ the
    # example's call composes from (as its --config-path would name it).
    config_dir: str | None = None


class Rule(NamedTuple):
    code: str  # stable: never reused, never renumbered
    name: str  # kebab-case, e.g. "mini-batch-not-divisible"
    severity: Severity
    stage: Stage
    versions: VersionRange
    check: Callable[[Context], Iterable[Finding]]
    verl_ref: str = ""  # ids in docs/verl-checks.md, e.g. "A2, D4"
    backends: tuple[str, ...] = ("megatron", "fsdp")
    # "trainer": only PPO-trainer calls (batch/parallel rules); "any": every Hydra call (keys, shell)
    scope: str = "trainer"
    # Decides from DEFAULT values (a key left unset, whether a critic exists). When the call's own
    # config could not be found and the PPO defaults stand in, its verdict would be a guess, so it
    # does not run (VK609 says why); on a release inferred from the keys its message says whose
    # default it read (docs/rules/defaults.md).
    reads_defaults: bool = False
    # Its verdict is arithmetic on verl's batch chain (P·n, the mini batch, DP): a fork that
    # repeats or regroups the batch outside that chain (generator/config/forks.py) makes its numbers
    # wrong, so it stands down (`stands_down_for_fork`) and VB118 says so once.
    chain_arithmetic: bool = False
    # For a rule of a family sharing one check (`family_rule`): the kind of problem it turns into
    # findings (a generator.layout.derive problem kind, a Config key-issue kind, a shell hazard kind).
    reports: str = ""

    # The prose and the worked examples live in the rule catalog (read on first use).
    @property
    def title(self) -> str:  # one line
        return rule_text(self.code).title

    @property
    def why(self) -> str:  # "Why is this bad?" for `gen rule CODE`
        return rule_text(self.code).why

    @property
    def fix_safety(self) -> str:
        return rule_text(self.code).fix_safety

    @property
    def failing(self) -> Example | None:
        return rule_text(self.code).failing

    @property
    def passing(self) -> Example | None:
        return rule_text(self.code).passing

    def finding(self, message: str, *, line: int | None = None, key: str | None = None,
                fix: Fix | None = None, severity: Severity | None = None,
                stage: Stage | None = None) -> Finding:
        return Finding(self.code, severity or self.severity, message, line, key, fix,
                       stage if stage is not None and stage != self.stage else None)


# Each family's page in the project's docs (path from the repository root, title): every rule's
# reason, the verl source it follows and its fix, written from the catalog (below).
FAMILY_PAGES: dict[str, tuple[str, str]] = {
    "VB": ("docs/rules/batch.md", "batch chain: actor, log-prob, reference, critic"),
    "VP": ("docs/rules/parallel.md", "parallel layout"),
    "VD": ("docs/rules/dynamic.md", "dynamic batch size and micro-batch schedules"),
    "VK": ("docs/rules/keys.md", "config keys and releases"),
    "VR": ("docs/rules/rollout.md", "rollout engine"),
    "VM": ("docs/rules/model.md", "model shape and memory"),
    "VS": ("docs/rules/shell.md", "shell"),
    "VX": ("docs/rules/cross-checks.md", "cross-checks"),
}


# One home for what each rule says about itself: generator/rules/catalog/<family page name>.json
# holds every rule's title, reason, fix safety, failing/passing examples and the prose its page
# adds ("doc"; the page's own under "_page"). docs/rules/*.md are written from it
# (generator/report/rule_pages.py, `python tools/rule_docs.py`). Read only when a command shows
# this prose, so `gen check` does not pay for it.
CATALOG_DIR = Path(__file__).parent / "catalog"  # __file__ is absolute: no disk access to name it
PAGE_KEY = "_page"  # a catalog file's entry for its family page's own prose (intro, outro), not a rule


class RuleText(NamedTuple):
    title: str
    why: str
    fix_safety: str
    failing: Example | None
    passing: Example | None


def _example(data: dict[str, Any] | None) -> Example | None:
    if data is None:
        return None
    memory = data.get("memory")
    verdict = None if memory is None else MemoryVerdict(**{
        **memory, "fix_edits": tuple(tuple(edit) for edit in memory.get("fix_edits", ())),
        "problems": tuple(memory.get("problems", ()))})
    return Example(tuple(data["overrides"]), note=data.get("note", ""), script=data.get("script"),
                   version=data.get("version"), memory=verdict, config_name=data.get("config_name"),
                   config_dir=data.get("config_dir"))


def catalog_file(family: str) -> Path:
    """The catalog file of a rule family ('VB' -> .../catalog/batch.json)."""
    return CATALOG_DIR / f"{Path(FAMILY_PAGES[family][0]).stem}.json"


def rule_text(code: str) -> RuleText:
    """What the catalog says about one rule; KeyError for a code it does not list."""
    entry = packaged_json(catalog_file(code[:2]))[code]
    return RuleText(entry["title"], entry["why"], entry["fix_safety"], _example(entry["failing"]),
                    _example(entry["passing"]))


def doc_page(code: str) -> str | None:
    """'docs/rules/batch.md#vb101' for a rule code; None for a family without a page."""
    page = FAMILY_PAGES.get(code[:2])
    return f"{page[0]}#{code.lower()}" if page else None


REGISTRY: dict[str, Rule] = {}


def rule(code: str, name: str, *, severity: Severity, stage: Stage,
         versions: VersionRange = ALL, **meta: Any) -> Callable[[Callable[[Context], Iterable[Finding]]], Rule]:
    """Register a rule. The decorated function becomes `Rule.check`; its title, reason and examples
    are the catalog's (`rule_text`)."""

    def register(check: Callable[[Context], Iterable[Finding]]) -> Rule:
        if code in REGISTRY:
            raise RuntimeError(f"rule code {code} registered twice")
        registered = Rule(code=code, name=name, severity=severity, stage=stage,
                          versions=versions, check=check, **meta)
        REGISTRY[code] = registered
        return registered

    return register


def family_rule(check: Callable[[Rule, Context], Iterable[Finding]], code: str, name: str, *,
                severity: Severity, stage: Stage, reports: str, **meta: Any) -> Rule:
    """Register a rule of a family that shares one check: `check(rule, ctx)` is told which rule
    it runs for, and reads what differs from its flags (`reports`: the problem kind it turns into
    findings). The same Rule as `@rule` makes, without a function of its own."""

    def check_one(ctx: Context) -> Iterable[Finding]:
        return check(registered, ctx)

    registered = rule(code, name, severity=severity, stage=stage, reports=reports, **meta)(check_one)
    return registered


def code_wanted(code: str, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> bool:
    """Whether `code` is chosen by code prefixes (ruff-style: 'VB' selects VB101, VB102, ...;
    an ignored prefix wins over a selected one). The one home of the matching: `selected` picks
    rules with it and the fix loop findings."""
    select = tuple(select)
    if select and not any(code.startswith(prefix) for prefix in select):
        return False
    return not any(code.startswith(prefix) for prefix in ignore)


def selected(select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Rule]:
    """Rules chosen by code prefixes (`code_wanted`), in code order. generator.judging keeps the
    answer for the prefixes a run asks again and again; nothing is kept here (rules hold no state
    but the registry)."""
    select, ignore = tuple(select), tuple(ignore)
    return [REGISTRY[code] for code in sorted(REGISTRY) if code_wanted(code, select, ignore)]


class KeyLines(Protocol):
    """Anything that can say on which script line the first of some keys is written."""

    def line(self, *keys: str) -> int | None: ...


def ctx_finding(the_rule: Rule, view: KeyLines, keys: tuple[str, ...], message: str, *, key: str | None = None,
                fix: Fix | None = None, severity: Severity | None = None) -> Finding:
    """A finding of `the_rule` placed on the line of the first of `keys` the script writes;
    `key` (default: the first of `keys`) is the one a fix or a report names."""
    return the_rule.finding(message, line=view.line(*keys), key=key or keys[0], fix=fix, severity=severity)
