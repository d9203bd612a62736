"""Reports of `gen check`: text (rich colours on a tty), JSON, SARIF 2.1.0 and GitHub annotations.

Every format is a pure function of a list of FileReport; printing is the CLI's job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from generator.rules.core import Finding


@dataclass
class Located:
    """A finding with the line of the trainer call it belongs to (None for script-level ones)."""

    finding: Finding
    invocation_line: int | None = None


@dataclass
class FileReport:
    path: str
    error: str | None = None  # one-line reason the file could not be checked
    verl_version: str | None = None
    findings: list[Located] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.error is not None or any(l.finding.severity == "error" for l in self.findings)


def summary(reports: Iterable[FileReport]) -> dict[str, int]:
    reports = list(reports)
    count = {"error": 0, "warning": 0, "info": 0}
    for report in reports:
        for located in report.findings:
            count[located.finding.severity] = count.get(located.finding.severity, 0) + 1
    return {"files": len(reports), "errors": count["error"], "warnings": count["warning"],
            "infos": count["info"], "failed_files": sum(1 for r in reports if r.failed)}


# --- text -------------------------------------------------------------------------------------

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _text_line(path: str, located: Located) -> tuple[str, str, str]:
    f = located.finding
    where = f"{path}:{f.line}" if f.line else path
    fixable = " [*]" if f.fix is not None else ""
    return where, f.code, f"{f.severity}: {f.message}{fixable}"


def render_text(reports: list[FileReport], *, color: bool = False) -> str:
    """`path:line: CODE severity: message [*]` per finding ([*]: `gen fix` can repair it), then a summary."""
    lines: list[str] = []
    for report in reports:
        if report.error:
            lines.append(f"{report.path}: error: {report.error}")
            continue
        for located in report.findings:
            where, code, rest = _text_line(report.path, located)
            if color:
                from rich.markup import escape

                style = _STYLE.get(located.finding.severity, "")
                lines.append(f"[bold]{escape(where)}[/bold]: [{style}]{code}[/{style}] {escape(rest)}")
            else:
                lines.append(f"{where}: {code} {rest}")
    s = summary(reports)
    fixable = sum(1 for r in reports for l in r.findings if l.finding.fix is not None)
    tail = (f"{s['files']} file{'s' if s['files'] != 1 else ''} checked: {s['errors']} error(s), "
            f"{s['warnings']} warning(s), {s['infos']} info(s)")
    if fixable:
        tail += f"; {fixable} fixable with `gen fix` ([*])"
    lines.append(tail)
    return "\n".join(lines) + "\n"


# --- JSON -------------------------------------------------------------------------------------

def to_json_obj(reports: list[FileReport]) -> dict[str, Any]:
    files = []
    for report in reports:
        findings = []
        for located in report.findings:
            item = located.finding.to_dict()
            item["invocation_line"] = located.invocation_line
            findings.append(item)
        files.append({"path": report.path, "error": report.error, "verl_version": report.verl_version,
                      "findings": findings})
    return {"files": files, "summary": summary(reports)}


def render_json(reports: list[FileReport]) -> str:
    return json.dumps(to_json_obj(reports), indent=2, default=str) + "\n"


# --- SARIF 2.1.0 ------------------------------------------------------------------------------

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render_sarif(reports: list[FileReport], *, tool_version: str = "0") -> str:
    from generator.rules import load_rules

    registry = load_rules()
    used = sorted({l.finding.code for r in reports for l in r.findings})
    index = {code: i for i, code in enumerate(used)}
    rules = []
    for code in used:
        rule = registry.get(code)
        entry: dict[str, Any] = {"id": code}
        if rule is not None:
            entry.update({
                "name": rule.name,
                "shortDescription": {"text": rule.title},
                "fullDescription": {"text": rule.why or rule.title},
                "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
                "properties": {"stage": rule.stage, "versions": str(rule.versions), "verl_ref": rule.verl_ref},
            })
        rules.append(entry)
    results = []
    notifications = []
    for report in reports:
        if report.error:
            notifications.append({"level": "error", "message": {"text": f"{report.path}: {report.error}"}})
            continue
        for located in report.findings:
            f = located.finding
            location: dict[str, Any] = {"artifactLocation": {"uri": report.path}}
            if f.line:
                location["region"] = {"startLine": f.line}
            result: dict[str, Any] = {
                "ruleId": f.code, "ruleIndex": index[f.code], "level": _SARIF_LEVEL.get(f.severity, "note"),
                "message": {"text": f.message}, "locations": [{"physicalLocation": location}],
            }
            if f.key:
                result["properties"] = {"key": f.key}
            results.append(result)
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "verl-gen", "version": tool_version,
                            "informationUri": "https://github.com/volcengine/verl", "rules": rules}},
        "results": results,
    }
    if notifications:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notifications}]
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


# --- GitHub annotations -----------------------------------------------------------------------

_GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _gh_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(reports: list[FileReport]) -> str:
    lines = []
    for report in reports:
        path = _gh_escape(report.path, prop=True)
        if report.error:
            lines.append(f"::error file={path},title=gen check::{_gh_escape(report.error)}")
            continue
        for located in report.findings:
            f = located.finding
            line = f",line={f.line}" if f.line else ""
            lines.append(f"::{_GH_LEVEL.get(f.severity, 'notice')} file={path}{line},"
                         f"title={_gh_escape(f.code, prop=True)}::{_gh_escape(f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def render(reports: list[FileReport], fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return render_json(reports)
    if fmt == "sarif":
        return render_sarif(reports)
    if fmt == "github":
        return render_github(reports)
    return render_text(reports, color=color)


__all__ = ["FileReport", "Located", "render", "render_text", "render_json", "render_sarif", "render_github",
           "summary", "to_json_obj"]
