"""One place that knows the shape of `gen check`'s text report, so a test asserts on findings,
not on the layout (issue 22 changed it; a later change is then one edit here).

The default text format (`--format text`) prints each finding as a header line
`path:line:col: CODE severity: message [*]` (`path: CODE ...` for a finding without a line),
followed by its source excerpt (`  N | source`, a caret line), `  = fix (...)` and
`  = docs: gen rule CODE` lines and a blank line; `--format concise` prints the header lines only.
"""

from __future__ import annotations

import re

# path:line:col: CODE rest   |   path: CODE rest
HEADER = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+):(?P<col>\d+))?: (?P<code>V[A-Z]\d{3}) (?P<rest>.*)$")


def finding_lines(text: str) -> list[str]:
    """The header line of every finding in a text or concise report, in report order."""
    return [line for line in text.splitlines() if not line.startswith(" ") and HEADER.match(line)]


def finding_line(text: str, code: str) -> str:
    """The first finding header with `code` (AssertionError when there is none)."""
    for line in finding_lines(text):
        if HEADER.match(line).group("code") == code:  # type: ignore[union-attr]
            return line
    raise AssertionError(f"no {code} finding in:\n{text}")


def located(path: str, line: int, column: int) -> str:
    """How a header starts for a finding at `line`:`column` of `path`."""
    return f"{path}:{line}:{column}:"


def findings(text: str) -> list[tuple[str, int | None, int | None, str]]:
    """(path, line, column, code) of every finding header."""
    out = []
    for header in finding_lines(text):
        match = HEADER.match(header)
        assert match is not None
        line, col = match.group("line"), match.group("col")
        out.append((match.group("path"), int(line) if line else None, int(col) if col else None,
                    match.group("code")))
    return out
