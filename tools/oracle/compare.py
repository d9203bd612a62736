"""gen check's answer for every case, and the comparison with verl's."""

from __future__ import annotations

import sys
from typing import Any

from generator.config import config_from_overrides
from generator.config.apply import is_hydra_rejection
from generator.judging import check_config, check_script, load_rules
from generator.judging.examples import example_config
from generator.schema.resolution import known_release

from .cases import Case

def judge_ours(cases: list[Case], version: str) -> None:
    """`gen check`'s answer to "does verl reject this at config load?" for every case: an
    error finding of a rule whose stage is "load", or a key issue Hydra refuses.

    Corpus calls go through `check_script` itself, with the release's repository tree as
    `config_root`, because the corpus keeps scripts without the config folders that sit next
    to them in verl's repository."""
    registry = load_rules()
    schema_version = known_release(version, "--verl-version")  # the oracle names its release; never guessed
    checked: dict[tuple[int, str | None], dict[int, tuple[Any, list[Any]]]] = {}
    for case in cases:
        if case.source is not None:
            _rel, _file, script, inv, tree = case.source
            # exactly `gen check`, with the release's repository tree as the folder the script
            # runs from (the corpus keeps scripts without the config folders beside them)
            key = (id(script), tree)
            if key not in checked:
                checked[key] = {id(i): (c, f) for i, c, f in check_script(script, version=schema_version,
                                                                          config_root=tree) if i is not None}
            config, findings = checked[key][id(inv)]
        elif case.example is not None:  # exactly what `gen rule CODE` checks
            config = example_config(*case.example)
            findings = check_config(config)
        else:
            config = config_from_overrides(case.overrides, version=schema_version, config_name=case.config_name)
            findings = check_config(config)
        reasons = [f"key {issue.kind}: {issue.override.text}" + (f" ({issue.detail})" if issue.detail else "")
                   for issue in config.key_issues if is_hydra_rejection(issue)]
        others: list[str] = []
        for finding in findings:
            rule = registry.get(finding.code)
            stage = getattr(finding, "stage", None) or (rule.stage if rule else "?")
            text = f"{finding.code} [{finding.severity}/{stage}] {finding.message}"
            if finding.severity == "error" and stage == "load":
                reasons.append(text)
            elif finding.severity == "error":
                others.append(f"(not load) {text}")
        case.our_reject = bool(reasons)
        case.our_reasons = reasons + others


EXCLUDED = ("needs-vllm", "undecided")


def verl_rejects(case: Case) -> bool:
    return case.verl.get("verdict") == "reject"


def report(cases: list[Case], out: Any = None) -> tuple[int, int]:
    """Print every disagreement; returns (agreements, compared)."""
    out = out or sys.stdout
    agree = compared = 0
    for case in cases:
        verdict = case.verl.get("verdict")
        if verdict in EXCLUDED:
            continue
        compared += 1
        if verdict != "error" and verl_rejects(case) == bool(case.our_reject):
            agree += 1
            continue
        verl_text = verdict if verdict != "reject" else f"reject({case.verl.get('stage')})"
        ours_text = "reject" if case.our_reject else "accept"
        print(f"DISAGREE {case.ident}: verl {verl_text}, gen check {ours_text}", file=out)
        print(f"  case: {case.note}", file=out)
        if not case.ident.startswith("corpus:"):
            print(f"  overrides: {' '.join(case.overrides)}", file=out)
        print(f"  verl: {case.verl.get('message') or '(accepted)'}", file=out)
        for reason in case.our_reasons or ["(no load-stage error)"]:
            print(f"  ours: {reason}", file=out)
    return agree, compared


def summary(cases: list[Case], out: Any = None) -> None:
    out = out or sys.stdout
    from collections import Counter

    tally = Counter()
    for case in cases:
        verdict = case.verl.get("verdict", "?")
        stage = case.verl.get("stage")
        tally[f"{verdict}({stage})" if verdict == "reject" else verdict] += 1
    kinds = Counter(c.ident.split(":", 1)[0] for c in cases)
    print("oracle: cases " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
          + "; verl: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())), file=out)
    for case in cases:
        if case.verl.get("verdict") in EXCLUDED:
            print(f"EXCLUDED {case.ident}: {case.verl['verdict']}: {case.verl.get('message', '')}", file=out)
