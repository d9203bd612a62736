"""VS718, VS719 — `# verl-gen: ignore[...]` comments that do nothing (generator/reading/suppression_comments.py).

ruff reports a `# noqa` naming an unknown code and one that silences nothing; so do we: VS718
for a directive that names no code or a code no rule has, VS719 for a code that silenced no
finding of the command (or file) it covers. Both are info: the script runs the same, but a
suppression that does nothing hides nothing today and may hide a real finding tomorrow.

Whether a code silenced something depends on every other finding of the script, so
check_script computes these last, over the findings of all its calls (`suppression_findings`);
their rule checks below see the script's shell findings only (`gen rule`'s examples).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from generator.rules.core import REGISTRY, Context, Finding, rule, selected
from generator.reading.suppression_comments import Directive, find_suppressions

_SCRIPT = ("megatron", "fsdp", "unknown")
CODES = ("VS718", "VS719")
# Rules that only run when memory is predicted (a GPU named): unjudged otherwise.
NEEDS_MEMORY = ("VM811", "VM812")


def _names_a_rule(code: str) -> bool:
    return any(known.startswith(code) for known in REGISTRY)


def suppression_findings(source: bytes | str, found: Iterable[tuple[str, int | None, int | None]], *,
                         ran: Iterable[str], wanted: Iterable[str] = CODES) -> list[Finding]:
    """VS718/VS719 findings of a script's directives. `found`: (code, command line, own line) of
    every finding before suppression; `ran`: the codes of the rules that ran (a code whose rules
    did not run cannot be judged unused); `wanted`: which of the two codes to report."""
    wanted = set(wanted)
    ran = set(ran)
    found = [item for item in found if item[0] not in CODES]
    out: list[Finding] = []
    for directive in find_suppressions(source).directives:
        if not directive.codes:
            if "VS718" in wanted:
                out.append(_unknown(directive, "names no code, so it silences nothing; list the codes: "
                                               "`# verl-gen: ignore[VB106]`"))
            continue
        for code in directive.codes:
            if not _names_a_rule(code):
                if "VS718" in wanted:
                    out.append(_unknown(directive, f"names {code}, which is no rule's code or prefix "
                                                   "(`gen rules` lists them); it silences nothing"))
                continue
            if "VS719" not in wanted or code in CODES:
                continue
            named = [known for known in REGISTRY if known.startswith(code)]
            if not all(known in ran for known in named):
                continue  # a rule it names did not run: whether it would silence something is unknown
            if not any(c.startswith(code) and directive.covers(call, line) for c, call, line in found):
                where = "in this file" if directive.file_wide else (
                    "on the command below it" if directive.first and directive.first > 0 else
                    "(no command right below it)")
                out.append(unused_suppression.finding(
                    f"`# verl-gen: ignore[{code}]` silences nothing: no {code} finding {where}; remove it",
                    line=directive.line))
    return out


def _unknown(directive: Directive, what: str) -> Finding:
    return unknown_suppression.finding(f"the suppression at line {directive.line} {what}", line=directive.line)


def _shell_only(ctx: Context, code: str) -> Iterator[Finding]:
    """For `gen rule`'s examples: judged against the script's shell findings alone."""
    from generator.rules import judge_script, script_rules

    script = ctx.script
    if script is None:
        return
    others = judge_script(ctx, script_rules(selected(), with_suppressions=False))
    ran = [c for c, r in REGISTRY.items() if r.scope == "script"]
    yield from suppression_findings(script.source, ((f.code, None, f.line) for f in others), ran=ran, wanted=(code,))


@rule("VS718", "unknown-suppression", severity="info", stage="shell", verl_ref="", backends=_SCRIPT, scope="script")
def unknown_suppression(ctx: Context) -> Iterator[Finding]:
    yield from _shell_only(ctx, "VS718")


@rule("VS719", "unused-suppression", severity="info", stage="shell", verl_ref="", backends=_SCRIPT, scope="script")
def unused_suppression(ctx: Context) -> Iterator[Finding]:
    yield from _shell_only(ctx, "VS719")


__all__ = ["CODES", "NEEDS_MEMORY", "suppression_findings"]
