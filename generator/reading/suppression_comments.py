"""Inline suppression, as ruff's `# noqa` and shellcheck's `# shellcheck disable=`:

    # verl-gen: ignore[VB106,VX9]
    python3 -m verl.trainer.main_ppo ...

A comment line of that form directly above a command (alone or within the block of comment
lines that ends right above it) silences those codes — or code prefixes, as `--ignore` takes
them — for every finding of that command: its trainer call's and any on one of its lines (a
continued command spans several lines; a quote left open continues it too). In the file's
header (the comment lines before its first command, after the shebang) it silences them for the
whole file. Pure functions of the script's text; nothing is executed.

A directive that names no code (`# verl-gen: ignore`, `ignore[]`) silences nothing, and one
whose code is no rule's cannot silence anything: VS718 reports both. A code that silenced no
finding is reported by VS719 (ruff's unused `noqa`), so stale suppressions do not pile up.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

_DIRECTIVE = re.compile(r"^\s*#\s*verl-gen\s*:\s*ignore\b(?:\s*\[([^\]]*)\])?", re.IGNORECASE)
_COMMENT = re.compile(r"^\s*#")
MAX_COMMAND_LINES = 5000  # a command's extent is looked for this far (a quote never closed)


class Directive(NamedTuple):
    """One `# verl-gen: ignore[...]` comment: where it is, what it names, what it covers."""

    line: int  # the comment's own line (1-based)
    codes: tuple[str, ...]  # as written, upper-cased; () for a bare `ignore`
    first: int | None  # the command it sits above: its first and last line; None: the whole file
    last: int | None

    @property
    def file_wide(self) -> bool:
        return self.first is None

    def covers(self, *lines: int | None) -> bool:
        if self.first is None:
            return True
        return any(line is not None and self.first <= line <= (self.last or self.first) for line in lines)


class Suppressions(NamedTuple):
    """The directives of one script."""

    directives: tuple[Directive, ...] = ()
    # command's first line -> codes; read only (the default one is shared by every script without directives)
    by_line: dict[int, tuple[str, ...]] = {}

    @property
    def file_codes(self) -> tuple[str, ...]:
        return tuple(code for d in self.directives if d.file_wide for code in d.codes)

    def silencing(self, code: str, *lines: int | None) -> list[tuple[Directive, str]]:
        """(directive, its code) for each that silences a finding with `code` at any of `lines`
        (the finding's own line, its command's first line)."""
        return [(d, prefix) for d in self.directives if d.covers(*lines)
                for prefix in d.codes if code.startswith(prefix)]

    def silences(self, code: str, *lines: int | None) -> bool:
        """Whether a finding with `code` at any of `lines` (its own, its command's) is silenced."""
        return bool(self.silencing(code, *lines))


def _codes(text: str) -> tuple[str, ...]:
    return tuple(code.strip().upper() for code in text.split(",") if code.strip())


def _continues(line: str, quote: str) -> str | None:
    """The quote still open at the end of `line` ('' for none) when the command goes on to the
    next line (an open quote, or a backslash at the end); None when the command ends here."""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote == "'":
            if ch == "'":
                quote = ""
        elif ch == "\\":
            if i == len(line) - 1:
                return quote  # a line continuation (or, inside "...", an escaped newline)
            i += 1
        elif quote == '"':
            if ch == '"':
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break  # a comment: the rest of the line is not the command's
        i += 1
    return quote if quote else None


def _command_end(lines: list[str], start: int) -> int:
    """The last line (1-based) of the command that starts on line `start`."""
    quote = ""
    number = start
    while number <= len(lines) and number < start + MAX_COMMAND_LINES:
        went_on = _continues(lines[number - 1].rstrip("\r"), quote)
        if went_on is None:
            return number
        quote = went_on
        number += 1
    return min(number, len(lines))


def find_suppressions(source: bytes | str) -> Suppressions:
    """The `# verl-gen: ignore[...]` comments of a script."""
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    if "verl-gen" not in text.lower():
        return Suppressions()  # the common case, decided without walking the lines
    lines = text.splitlines()
    directives: list[Directive] = []
    by_line: dict[int, tuple[str, ...]] = {}
    in_header = True
    pending: list[tuple[int, tuple[str, ...]]] = []  # directives of the comment block above this line
    number = 0
    while number < len(lines):
        number += 1
        line = lines[number - 1]
        directive = _DIRECTIVE.match(line)
        if directive:
            codes = _codes(directive.group(1) or "")
            if in_header:
                directives.append(Directive(number, codes, None, None))
            else:
                pending.append((number, codes))
            continue
        if _COMMENT.match(line) or (not line.strip() and in_header):
            continue
        if not line.strip():
            _orphans(directives, pending)
            pending = []  # a blank line ends the block: the comment is not directly above
            continue
        if pending:
            end = _command_end(lines, number)
            directives.extend(Directive(at, codes, number, end) for at, codes in pending)
            by_line[number] = tuple(code for _, codes in pending for code in codes)
            pending = []
            number = end  # the command's continuation lines are not commands of their own
        in_header = False
    _orphans(directives, pending)
    return Suppressions(tuple(sorted(directives, key=lambda d: d.line)), by_line)


def _orphans(directives: list[Directive], pending: list[tuple[int, tuple[str, ...]]]) -> None:
    """A directive with no command right below it covers nothing (VS719 reports its codes)."""
    directives.extend(Directive(at, codes, 0, -1) for at, codes in pending)


def codes_in(suppressions: Suppressions) -> Iterable[str]:
    """Every code a file's suppressions name (to refuse unknown ones like --ignore does)."""
    for directive in suppressions.directives:
        yield from directive.codes


__all__ = ["Directive", "Suppressions", "codes_in", "find_suppressions"]
