"""Inline suppression, as ruff's `# noqa` and shellcheck's `# shellcheck disable=`:

    # verl-gen: ignore[VB106,VX9]
    python3 -m verl.trainer.main_ppo ...

A comment line of that form directly above a command (alone or within the block of comment
lines that ends right above it) silences those codes — or code prefixes, as `--ignore` takes
them — for the findings of that command. In the file's header (the comment lines before its
first command, after the shebang) it silences them for the whole file. Pure functions of the
script's text; nothing is executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

_DIRECTIVE = re.compile(r"^\s*#\s*verl-gen\s*:\s*ignore\s*\[([^\]]*)\]", re.IGNORECASE)
_COMMENT = re.compile(r"^\s*#")


@dataclass(frozen=True)
class Suppressions:
    """Codes silenced for the whole file, and per command line (1-based)."""

    file_codes: tuple[str, ...] = ()
    by_line: dict[int, tuple[str, ...]] = field(default_factory=dict)

    def silences(self, code: str, *lines: int | None) -> bool:
        """Whether a finding with `code` at any of `lines` (its own, its command's) is silenced."""
        if any(code.startswith(prefix) for prefix in self.file_codes):
            return True
        return any(code.startswith(prefix) for line in lines if line is not None
                   for prefix in self.by_line.get(line, ()))


def _codes(text: str) -> tuple[str, ...]:
    return tuple(code.strip().upper() for code in text.split(",") if code.strip())


def find_suppressions(source: bytes | str) -> Suppressions:
    """The `# verl-gen: ignore[...]` comments of a script."""
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    lines = text.splitlines()
    file_codes: list[str] = []
    by_line: dict[int, tuple[str, ...]] = {}
    in_header = True
    pending: list[str] = []  # codes of the comment block right above the current line
    for number, line in enumerate(lines, start=1):
        directive = _DIRECTIVE.match(line)
        if directive:
            (file_codes if in_header else pending).extend(_codes(directive.group(1)))
            continue
        if _COMMENT.match(line) or (not line.strip() and in_header):
            continue
        if not line.strip():
            pending = []  # a blank line ends the block: the comment is not directly above
            continue
        if pending:
            by_line[number] = tuple(pending)
            pending = []
        in_header = False
    return Suppressions(tuple(file_codes), by_line)


def codes_in(suppressions: Suppressions) -> Iterable[str]:
    """Every code a file's suppressions name (to refuse unknown ones like --ignore does)."""
    yield from suppressions.file_codes
    for codes in suppressions.by_line.values():
        yield from codes


__all__ = ["Suppressions", "codes_in", "find_suppressions"]
