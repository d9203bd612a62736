"""Reports of `gen check`: text (rich colours on a tty), JSON, SARIF 2.1.0 and GitHub annotations.

Every format is a pure function of a list of FileReport; printing is the CLI's job.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from generator.report.documents import JSON_SCHEMA_VERSION
from generator.rules.core import Finding
from generator.base.safe_text import annotation_lines, json_text, markup, one_line, printable, styled

if TYPE_CHECKING:
    from generator.schema.resolution import Resolution


# Warnings that still fail `gen check` (exit 1): VS709, no trainer call was read, so nothing
# was checked; a script must never pass silently.
FAILS_CHECK = frozenset({"VS709"})


# Plain classes with __slots__, not dataclasses: a check's start imports no dataclasses. They
# pickle (protocol 2 and up) as they come back from the worker processes (generator.base.pool).


class Located:
    """A finding with the line of the trainer call it belongs to (None for script-level ones)."""

    __slots__ = ("finding", "invocation_line", "fixed_by_gen_fix", "column", "width", "source")
    finding: Finding
    invocation_line: int | None
    # Whether `gen fix` repairs it: True ([*]), "unsafe" (only with --unsafe), False; None when
    # no fix was planned for this report (then any proposed fix counts).
    fixed_by_gen_fix: bool | str | None
    # Where on its line it points (1-based, generator.report.excerpt) and that line's text, for
    # the column and the source excerpt; None when the finding has no line in the file.
    column: int | None
    width: int
    source: str | None

    def __init__(self, finding: Finding, invocation_line: int | None = None, fixed_by_gen_fix: bool | str | None = None,
                 column: int | None = None, width: int = 1, source: str | None = None) -> None:
        self.finding = finding
        self.invocation_line = invocation_line
        self.fixed_by_gen_fix = fixed_by_gen_fix
        self.column = column
        self.width = width
        self.source = source


class FileReport:
    """What `gen check` found in one file, or why it could not check it."""

    __slots__ = ("path", "error", "verl_version", "findings", "incomplete", "resolution", "call_resolutions",
                 "fixable", "excluded")
    path: str
    error: str | None  # one-line reason the file could not be checked
    verl_version: str | None
    findings: list[Located]
    # Read, but not completely (a bash syntax error): the findings stand, the input is bad.
    incomplete: str | None
    # Which verl release and config the file was judged against, and why; and (line,
    # resolution) for each call that composed a config of its own instead.
    resolution: Resolution | None
    call_resolutions: list[tuple[int, Resolution]]
    # How many findings `gen fix` (no --unsafe) repairs in this file, when it was planned.
    fixable: int | None
    # The project configuration's `exclude` names it: not checked, and left out of the report.
    excluded: bool

    def __init__(self, path: str, error: str | None = None, verl_version: str | None = None,
                 findings: list[Located] | None = None, incomplete: str | None = None,
                 resolution: Resolution | None = None, call_resolutions: list[tuple[int, Resolution]] | None = None,
                 fixable: int | None = None, excluded: bool = False) -> None:
        self.path = path
        self.error = error
        self.verl_version = verl_version
        self.findings = [] if findings is None else findings
        self.incomplete = incomplete
        self.resolution = resolution
        self.call_resolutions = [] if call_resolutions is None else call_resolutions
        self.fixable = fixable
        self.excluded = excluded

    def copy(self, **changes: object) -> FileReport:
        """This report with `changes` (fields by name); the rest shared, not copied."""
        report = FileReport(self.path)
        for name in self.__slots__:
            setattr(report, name, getattr(self, name))
        for name, value in changes.items():
            setattr(report, name, value)  # AttributeError for a name that is not a field
        return report

    @property
    def failed(self) -> bool:
        return self.error is not None or any(
            located.finding.severity == "error" or located.finding.code in FAILS_CHECK for located in self.findings)

    @property
    def bad_input(self) -> bool:
        return self.error is not None or self.incomplete is not None


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
    """(where, code, rest) of one finding, with user-written text made safe for a terminal:
    `path:line:col` (ruff's and shellcheck's gcc-style location), the code, `severity: message [*]`."""
    f = located.finding
    where = path
    if f.line:
        where += f":{f.line}:{located.column or 1}"
    fixed = located.fixed_by_gen_fix if located.fixed_by_gen_fix is not None else f.fix is not None
    fixable = " [*]" if fixed is True else " [*] with --unsafe" if fixed == "unsafe" else ""
    return one_line(where), f.code, one_line(f"{f.severity}: {f.message}{fixable}")


def _detail_lines(located: Located) -> list[str]:
    """Under a finding in the full text format: its source line with a caret under what it points
    at, the fix it proposes, and where its documentation is (`gen rule CODE`, installed alike)."""
    from generator.report.excerpt import Span, excerpt

    f = located.finding
    out = []
    if f.line and located.source is not None and located.source.strip():
        out += ["  " + printable(text) for text in
                excerpt(f.line, located.source, Span(located.column or 1, located.width))]
    if f.fix is not None:
        out.append(one_line(f"  = fix ({f.fix.applicability}): {f.fix.description}"))
    out.append(f"  = docs: gen rule {f.code}")
    return out


def fixable_count(report: FileReport) -> int:
    """What `gen fix` repairs in the file (planned), else the findings that propose a fix."""
    if report.fixable is not None:
        return report.fixable
    return sum(1 for located in report.findings if located.finding.fix is not None)


TEXT_FORMATS = ("text", "concise")  # text: each finding with its source excerpt; concise: one line each


def render_text(reports: list[FileReport], *, color: bool = False, concise: bool = False,
                quiet: bool = False) -> str:
    """`path:line:col: CODE severity: message [*]` per finding, in line order ([*]: `gen fix` can
    repair it); unless `concise`, each followed by its source line with a caret, its fix and
    `gen rule CODE`; then (unless `quiet`: the findings and nothing else) which verl judged the
    files and a summary."""
    lines: list[str] = []
    for report in reports:
        if report.error:  # said on stderr, once, as every command says a failure (cli/check_run)
            continue
        for located in report.findings:
            where, code, rest = _text_line(report.path, located)
            if color:
                style = _STYLE.get(located.finding.severity, "")
                lines.append(f"{styled('bold', markup(where))}: [{style}]{code}[/{style}] {markup(rest)}")
            else:
                lines.append(f"{where}: {code} {rest}")
            if not concise:
                details = _detail_lines(located)
                if color:
                    details = [markup(text) for text in details]
                lines += details
                lines.append("")
    if quiet or all(report.error for report in reports):  # nothing was read: the errors are the whole answer
        return "".join(line + "\n" for line in lines)
    if quiet:
        return "".join(line + "\n" for line in lines)
    for text in _resolution_lines(reports):
        lines.append(markup(one_line(text)) if color else one_line(text))
    s = summary(reports)
    fixable = sum(fixable_count(r) for r in reports)
    unsafe = sum(1 for r in reports for located in r.findings if located.fixed_by_gen_fix == "unsafe")
    tail = (f"{s['files']} file{'s' if s['files'] != 1 else ''} checked: {s['errors']} error(s), "
            f"{s['warnings']} warning(s), {s['infos']} info(s)")
    if fixable:
        tail += f"; {fixable} fixable with `gen fix` ([*])"
    if unsafe:
        tail += f"; {unsafe} more with `gen fix --unsafe`"
    unread = sum(1 for r in reports if r.error)
    if unread:  # counted apart: a file we could not read has no findings, yet it did not pass
        tail += f"; {unread} file{'s' if unread != 1 else ''} not read (error on stderr)"
    lines.append(tail)
    return "\n".join(lines) + "\n"


def _resolution_lines(reports: list[FileReport]) -> list[str]:
    """'checked against verl X (config: ...; chosen: ...)': once when every file shares it,
    else one line per file."""
    judged = [(r.path, r.resolution.summary()) for r in reports if r.resolution is not None and not r.error]
    own = [f"{r.path}:{line}: this call checked against {res.summary()}"
           for r in reports if not r.error for line, res in r.call_resolutions]
    if not judged:
        return own
    if len({text for _, text in judged}) == 1:
        return [f"checked against {judged[0][1]}", *own]
    return [f"{path}: checked against {text}" for path, text in judged] + own


# --- JSON -------------------------------------------------------------------------------------

def to_json_obj(reports: list[FileReport]) -> dict[str, Any]:
    files = []
    for report in reports:
        findings = []
        for located in report.findings:
            item = located.finding.to_dict()
            item["invocation_line"] = located.invocation_line
            # Added in place (schema_version unchanged): where on the line, 1-based, end exclusive.
            item["column"] = located.column
            item["end_column"] = located.column + located.width if located.column is not None else None
            findings.append(item)
        files.append({"path": report.path, "error": report.error, "verl_version": report.verl_version,
                      "incomplete": report.incomplete,
                      "resolution": report.resolution.as_dict() if report.resolution else None,
                      "call_resolutions": [{"line": line, **res.as_dict()} for line, res in report.call_resolutions],
                      "findings": findings})
    return {"schema_version": JSON_SCHEMA_VERSION, "files": files, "summary": summary(reports)}


def render_json(reports: list[FileReport]) -> str:
    return json_text(to_json_obj(reports), default=str)


# --- SARIF 2.1.0 ------------------------------------------------------------------------------

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _sarif_driver(tool_version: str | None, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """The tool: its own package version and, when the package declares one, its own home page
    (never verl's: findings are ours, not verl's)."""
    from generator import __version__, project_url

    driver: dict[str, Any] = {"name": "verl-gen", "version": tool_version or __version__}
    url = project_url()
    if url:
        driver["informationUri"] = url
    driver["rules"] = rules
    return driver


def artifact_uri(path: str) -> str:
    """A SARIF artifactLocation.uri: a relative path stays relative (GitHub code scanning
    resolves it against the repository), percent-encoded; an absolute one becomes a file: URI."""
    from urllib.parse import quote

    # A name that is not UTF-8 (surrogateescape'd bytes) is percent-encoded byte for byte, so the
    # URI names the very file; a strict encode would raise and lose the whole report.
    raw = path.encode("utf-8", "surrogateescape")
    if path.startswith("/"):
        return "file://" + quote(raw, safe="/")
    return quote(raw.replace(b"\\", b"/"), safe="/")


def render_sarif(reports: list[FileReport], *, tool_version: str | None = None) -> str:
    from generator.judging import load_rules

    registry = load_rules()
    used = sorted({located.finding.code for r in reports for located in r.findings})
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
            location: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(report.path)}}
            if f.line:
                location["region"] = {"startLine": f.line}
                if located.column is not None:
                    location["region"].update(startColumn=located.column, endColumn=located.column + located.width)
            result: dict[str, Any] = {
                "ruleId": f.code, "ruleIndex": index[f.code], "level": _SARIF_LEVEL.get(f.severity, "note"),
                "message": {"text": f.message}, "locations": [{"physicalLocation": location}],
            }
            if f.key:
                result["properties"] = {"key": f.key}
            results.append(result)
    run: dict[str, Any] = {
        "tool": {"driver": _sarif_driver(tool_version, rules)},
        "results": results,
    }
    # Per file, as JSON's `resolution` and `call_resolutions` (a call that composed its own config).
    judged = [{"path": r.path, **r.resolution.as_dict(),
               "call_resolutions": [{"line": line, **res.as_dict()} for line, res in r.call_resolutions]}
              for r in reports if r.resolution is not None]
    if judged:
        run["properties"] = {"verl": judged}
    if notifications:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notifications}]
    return json_text({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]})


# --- GitHub annotations -----------------------------------------------------------------------

_GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _gh_escape(text: str, *, prop: bool = False) -> str:
    text = printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
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
            if f.line and located.column is not None:
                line += f",col={located.column}"
            lines.append(f"::{_GH_LEVEL.get(f.severity, 'notice')} file={path}{line},"
                         f"title={_gh_escape(f.code, prop=True)}::{_gh_escape(f.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def render_failure(message: str, fmt: str) -> str:
    """The document a machine-readable format gets when the whole run failed (bad option value,
    unknown model): the consumer learns why instead of reading nothing. Text gets nothing here
    (the CLI prints the message on stderr)."""
    if fmt == "json":
        return json_text({"schema_version": JSON_SCHEMA_VERSION, "error": message, "files": [],
                          "summary": summary([])})
    if fmt == "sarif":
        run = json.loads(render_sarif([]))["runs"][0]
        run["invocations"] = [{"executionSuccessful": False,
                               "toolExecutionNotifications": [{"level": "error", "message": {"text": message}}]}]
        return json_text({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]})
    if fmt == "github":
        return f"::error title=gen check::{_gh_escape(message)}\n"
    return ""


def render(reports: list[FileReport], fmt: str, *, color: bool = False, quiet: bool = False) -> str:
    if fmt == "json":
        return render_json(reports)
    if fmt == "sarif":
        return render_sarif(reports)
    if fmt == "github":
        return annotation_lines(render_github(reports))
    text = render_text(reports, color=color, concise=fmt == "concise", quiet=quiet)
    return text if color else printable(text)  # colour: rich markup, each piece escaped already


__all__ = ["FileReport", "JSON_SCHEMA_VERSION", "Located", "render", "render_failure", "render_text", "TEXT_FORMATS", "render_json", "render_sarif", "render_github",
           "summary", "to_json_obj"]
