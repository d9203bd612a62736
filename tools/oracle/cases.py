"""What the oracle asks verl about: a Case, the corpus's trainer calls of a release, and every
rule's documented failing and passing example."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.judging import load_rules
from generator.judging.examples import BASE as EXAMPLE_BASE
from generator.judging.examples import example_version
from generator.reading.shell import read_file

from .errors import OracleError

@dataclass
class Case:
    ident: str  # "corpus:examples/x.sh:12" or "mutation:17"
    config_name: str
    overrides: list[str]  # as the trainer receives them; unknown pieces as <?label>
    config_dir: str | None = None  # --config-path, resolved to a folder; None = packaged
    config_relative: str | None = None  # a relative --config-path: Hydra resolves it inside verl
    note: str = ""  # what the mutation changed, or where a corpus call lives
    unknown_keys: list[str] = field(default_factory=list)
    model_path: str | None = None
    example: tuple[Any, Any] | None = None  # rule examples: (Rule, Example)
    # corpus calls: (path in release, file, LaunchScript, Invocation, release tree or None)
    source: tuple[Any, ...] | None = None
    # Ours, filled before the worker is asked:
    our_reject: bool | None = None
    our_reasons: list[str] = field(default_factory=list)
    # verl's answer
    verl: dict[str, Any] = field(default_factory=dict)


UNKNOWN_RE = None


def _unknowns(text: str) -> bool:
    return "<?" in text


def _neutral(text: str) -> str:
    """Unknown pieces become a plain word so Hydra sees a well-formed value."""
    import re

    global UNKNOWN_RE
    if UNKNOWN_RE is None:
        UNKNOWN_RE = re.compile(r"<\?[^>]*>")
    return UNKNOWN_RE.sub("unknown", text)


def environment_dependent(case: Case) -> str | None:
    """`${oc.env:X}` is read when verl resolves the config, from the launch environment: the
    verdict would be about this machine's environment, not the script."""
    for text in case.overrides:
        if "${oc.env:" in text:
            return f"{_override_key(text)} is read from the environment at launch (oc.env)"
    return None


def _override_key(text: str) -> str:
    body = text.lstrip("+~")
    return body.split("=", 1)[0]


def _model_path(overrides: list[str]) -> str | None:
    for text in overrides:
        if _override_key(text) == "actor_rollout_ref.model.path" and "=" in text:
            return text.split("=", 1)[1]
    return None


TRAINER = "verl.trainer.main_ppo"


def release_scripts(corpus: Path, version: str) -> list[tuple[str, Path]]:
    """(path in the release, file) for every script that ships in release `version`.

    The corpus stores each distinct script once, under the tag where it first appeared;
    OCCURRENCES.tsv maps every (tag, path) to that copy."""
    tag = f"v{version}"
    found: list[tuple[str, Path]] = []
    table = corpus / "OCCURRENCES.tsv"
    if not table.exists():
        raise OracleError(f"{table} not found (is --corpus the corpus folder?)")
    for line in table.read_text().splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 5 and cols[0] == tag:
            found.append((cols[1], corpus / "scripts" / cols[3] / cols[4]))
    return found


def resolve_config_dir(config_path: str | None, script_rel: str, snapshot_root: Path) -> tuple[str, str] | None | bool:
    """Where Hydra looks for a script's --config-path.

    Returns None for "no --config-path" (the packaged config); ("relative", PATH) for a relative
    path, which Hydra resolves against the folder of verl/trainer/main_ppo.py (so `config` is
    the packaged config); ("dir", ABS) for a folder of the release's repository tree standing in
    for an absolute path on the author's machine (`$PWD/examples/x/config`, `$(dirname $0)/..`):
    unknown prefixes are dropped and the rest looked up in the tree; False when that fails."""
    if config_path is None:
        return None
    text = config_path.removeprefix("file://")
    if "<?" not in text and not text.startswith("/"):
        return ("relative", text)
    if "<?" in text:
        if not text.startswith("<?"):
            return False  # an unknown in the middle: no single folder
        text = text[text.rindex(">") + 1:]
    parts = [p for p in text.split("/") if p not in ("", ".")]
    bases = [snapshot_root, snapshot_root / os.path.dirname(script_rel)]
    for start in range(len(parts)):
        for base in bases:
            candidate = base.joinpath(*parts[start:])
            if candidate.is_dir() and candidate != snapshot_root:
                return ("dir", str(candidate.resolve()))
    return False


def corpus_cases(corpus: Path, version: str, config_tree: Path | None) -> tuple[list[Case], list[str]]:
    """Every live, conditional or loop main_ppo call of the release, read with verl-gen's reader."""
    cases: list[Case] = []
    notes: list[str] = []
    snapshot_root = config_tree or Path("/nonexistent")
    for rel, file in release_scripts(corpus, version):
        try:
            script = read_file(str(file))
        except Exception as exc:  # the reader's own error is a finding of ours, not verl's
            notes.append(f"corpus:{rel}: not read: {exc}")
            continue
        for inv in script.invocations:
            if inv.entry != TRAINER or inv.branch == "dead":
                continue
            case = Case(ident=f"corpus:{rel}:{inv.line}", config_name=inv.config_name or "ppo_trainer",
                        overrides=[o.text for o in inv.overrides], note=f"{rel}:{inv.line} ({inv.branch})")
            case.unknown_keys = [o.key for o in inv.overrides if o.unknowns]
            case.model_path = _model_path(case.overrides)
            config_dir = resolve_config_dir(inv.config_path, rel, snapshot_root)
            if config_dir is False:
                case.verl = {"verdict": "undecided", "stage": None,
                             "message": f"--config-path {inv.config_path} not in {snapshot_root}"}
            elif config_dir is not None:
                kind, where = config_dir
                if kind == "relative":
                    case.config_relative = where
                else:
                    case.config_dir = where
            if any(_unknowns(o.key) for o in inv.overrides) or (inv.config_name and _unknowns(inv.config_name)):
                case.verl = {"verdict": "undecided", "stage": None,
                             "message": "an override key or the config name depends on a value the reader could not see"}
            case.source = (rel, file, script, inv, str(snapshot_root) if config_tree else None)
            cases.append(case)
    return cases, notes


def rule_example_cases(version: str) -> list[Case]:
    """Every rule's documented failing and passing example (the overrides `gen rule CODE`
    shows), for the rules that apply to this release. These probe each rule's stage label:
    a "load" rule's failing example must be one verl rejects at config load."""
    cases = []
    for code, rule in sorted(load_rules().items()):
        if getattr(rule, "scope", "trainer") == "script":
            continue
        for label, example in (("failing", rule.failing), ("passing", rule.passing)):
            if example is None or example.script is not None or example_version(rule, example) != version:
                continue
            # the same base and config choice as generator.judging.examples.example_config
            config_name = example.config_name or (
                "ppo_trainer" if rule.backends == ("fsdp",) else "ppo_megatron_trainer")
            if config_name not in ("ppo_trainer", "ppo_megatron_trainer"):
                continue  # a recipe's config: not a main_ppo call verl's package can compose
            base = [o for o in EXAMPLE_BASE if "megatron" in config_name or ".megatron." not in o]
            case = Case(ident=f"rule:{code}:{label}", config_name=config_name,
                        overrides=base + list(example.overrides),
                        note=f"{code} {label} example ({rule.stage}): {' '.join(example.overrides)}")
            case.model_path = _model_path(case.overrides)
            case.example = (rule, example)
            cases.append(case)
    return cases
