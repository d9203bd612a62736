"""What `gen check` shows of its findings: a severity threshold (`--severity`) and the count per
rule (`--statistics`, as ruff's). Pure functions of FileReports; the CLI prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from generator.base.safe_text import one_line

if TYPE_CHECKING:
    from generator.report import FileReport

SEVERITIES = ("error", "warning", "info")  # most severe first
_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


def at_least(reports: list[FileReport], severity: str) -> list[FileReport]:
    """The reports with only the findings of `severity` or worse (`info` keeps everything). A
    warning that fails the check (FAILS_CHECK: nothing was checked) is kept whatever the
    threshold, so a script never passes silently. The fixable count follows what is kept."""
    from generator.report import FAILS_CHECK

    limit = _RANK[severity]
    if limit == len(SEVERITIES) - 1:
        return reports
    out = []
    for report in reports:
        kept = [located for located in report.findings
                if _RANK.get(located.finding.severity, 0) <= limit or located.finding.code in FAILS_CHECK]
        fixable = report.fixable
        if fixable is not None and len(kept) != len(report.findings):
            fixable = sum(1 for located in kept if located.fixed_by_gen_fix is True)
        out.append(report.copy(findings=kept, fixable=fixable))
    return out


def statistics_text(reports: list[FileReport]) -> str:
    """One line per rule with findings, the most frequent first: count, code, `[*]` when `gen fix`
    repairs at least one of them, severity and the rule's name (ruff's --statistics)."""
    from generator.judging import load_rules

    registry = load_rules()
    counts: dict[str, int] = {}
    fixable: set[str] = set()
    for report in reports:
        for located in report.findings:
            code = located.finding.code
            counts[code] = counts.get(code, 0) + 1
            planned = located.fixed_by_gen_fix
            if planned is True or (planned is None and located.finding.fix is not None):
                fixable.add(code)
    width = max((len(str(n)) for n in counts.values()), default=1)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = registry.get(code)
        name = rule.name if rule is not None else ""
        severity = rule.severity if rule is not None else ""
        mark = "[*]" if code in fixable else "   "
        lines.append(one_line(f"{count:>{width}}  {code}  {mark} {severity:<7} {name}").rstrip())
    unread = sum(1 for r in reports if r.error)
    if unread:
        lines.append(f"{unread} file{'s' if unread != 1 else ''} not read")
    return "\n".join(lines) + ("\n" if lines else "")


__all__ = ["SEVERITIES", "at_least", "statistics_text"]
