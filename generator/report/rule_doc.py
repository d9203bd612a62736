"""`gen rules` (the list) and `gen rule CODE`: one rule documented ruff-style, with the finding its failing example really
produces (computed by running the rule, never written by hand)."""

from __future__ import annotations

import posixpath
import re
from typing import Mapping

from generator.report.doc_pages import doc_link, doc_text
from generator.rules.core import Example, Finding, Rule, doc_page


def _run_example(rule: Rule, example: Example) -> tuple[list[Finding], str | None]:
    """The example's findings for this rule, or (.., why it could not be run)."""
    from generator.judging.examples import example_findings

    try:
        return example_findings(rule, example), None
    except Exception as err:  # documentation must print even if an example cannot be built
        return [], f"{type(err).__name__}: {err}"


def _example_text(example: Example) -> list[str]:
    if example.script is not None:
        return ["    " + line for line in example.script.rstrip("\n").splitlines()]

    if not example.overrides:
        return ["    (the base setup, unchanged)"]
    return ["    " + o for o in example.overrides] + ["    (on top of the base setup below)"]


_LINK = re.compile(r"\[([^\]]+)\]\(([\w./-]+\.md(?:#[\w-]+)?)\)")  # a markdown link to another page


_DOC_PATH = re.compile(r"\bdocs/[\w/.-]+\.md(?:#[\w-]+)?")  # a page named by its path in the repository


def _from_rules_folder(target: str) -> str:
    """A link written on a rule page ('../verl-checks.md#d4') as a path under docs/."""
    return posixpath.normpath(posixpath.join("docs/rules", target))


def _page_notes(page: str) -> list[str]:
    """What the rule's docs page adds to the lines above (its verl sources, notes), read from the
    packaged page: the heading, title line, severity bullets, "Why" and "Fix" are shown already."""
    from generator.base.errors import InputError

    try:
        text = doc_text(page)
    except (InputError, OSError):
        return []
    kept = [line for line in text.splitlines()
            if not line.startswith(("## ", "**Why.**", "**Fix.**", "- Severity:", "- verl releases:"))]
    while kept and (not kept[0].strip() or kept[0].startswith("**") and kept[0].endswith(".**")
                    and "source" not in kept[0]):
        kept.pop(0)  # the bold title line and the blank lines around it
    body = _LINK.sub(lambda m: f"{m.group(1)} ({doc_link(_from_rules_folder(m.group(2)))})", "\n".join(kept).strip())
    return ["## From the rule's page", body, ""] if body else []


def rule_doc(rule: Rule) -> str:
    page = doc_page(rule.code)
    out = [f"{rule.code} {rule.name}: {rule.title}", "",
           f"Severity: {rule.severity}    When verl notices: {rule.stage}    verl releases: {rule.versions}",
           f"Backends: {', '.join(rule.backends)}"
           + (f"    verl's checks: {rule.verl_ref} ({doc_link('docs/verl-checks.md')})" if rule.verl_ref else ""),
           f"Documentation: {doc_link(page)}" if page else "",
           "", "## Why is this bad?", rule.why or rule.title, ""]
    if rule.failing is not None:
        out += ["## Example (fails)"] + _example_text(rule.failing)
        if rule.failing.note and not rule.failing.note.startswith("model "):
            out.append(f"    note: {_DOC_PATH.sub(lambda m: doc_link(m.group(0)), rule.failing.note)}")
        if rule.failing.note.startswith("model "):
            out.append(f"    ({rule.failing.note})")
        findings, problem = _run_example(rule, rule.failing)
        if problem:
            out.append(f"  (could not run the example: {problem})")
        for f in findings:
            out.append(f"  → {f.code} {f.severity}: {f.message}")
            if f.fix is not None:
                out.append(f"    fix ({f.fix.applicability}): {f.fix.description}")
        out.append("")
    if rule.passing is not None:
        out += ["## Use instead (passes)"] + _example_text(rule.passing)
        findings, problem = _run_example(rule, rule.passing)
        out.append("  → no finding" if not findings and not problem else
                   f"  → {len(findings)} finding(s)" if not problem else f"  (could not run: {problem})")
        out.append("")
    out += ["## Fix safety", rule.fix_safety or "No automatic fix.", ""]
    if page:
        out += _page_notes(page)
    if rule.scope != "script":
        from generator.judging.examples import BASE

        out += ["## Base setup of the examples (8 GPUs, DP 4, G = 64·4 = 256)"] + ["    " + o for o in BASE] + [""]
    return "\n".join(out)


def rules_text(registry: Mapping[str, Rule]) -> str:
    """`gen rules`: one line per rule, by code."""
    return "".join(f"{r.code}  {r.severity:<7} {r.stage:<7} {str(r.versions):<14} {r.title}\n"
                   for _, r in sorted(registry.items()))


def rules_json(registry: Mapping[str, Rule]) -> str:
    """`gen rules --format json`: {schema_version, rules: [...]}."""
    from generator.report.documents import dumps

    data = [{"code": r.code, "name": r.name, "title": r.title, "severity": r.severity, "stage": r.stage,
             "versions": str(r.versions), "backends": list(r.backends), "verl_ref": r.verl_ref}
            for _, r in sorted(registry.items())]
    return dumps({"rules": data})
