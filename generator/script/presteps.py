"""The commands a legacy script runs before its trainer call (installs, downloads, exports,
`cd`, data preparation), so that `gen recipe --from` can list what it does not copy.

Text only: the script is never run. Lines are read as bash would join them (a trailing
backslash continues a line); variable assignments and shell settings are left out (the
re-rendered script has its own knobs and `set`), as are `echo`/`printf` messages. A compound
command (`if`, `for`, a function ...) is listed by its first line.
"""

from __future__ import annotations

import re
from typing import Mapping

_ASSIGNMENT = re.compile(r"^(?:(?:local|declare|typeset|readonly)(?:\s+-\w+)*\s+)?[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")
_QUIET = ("set ", "set\t", "shopt ", "echo ", "printf ", "true", ":", "then", "else", "fi", "do", "done",
          "esac", "}", "{", ";;")
_BLOCK_OPEN = re.compile(r"^(?:if|for|while|until|case|select|function)\b|^[A-Za-z_][\w-]*\s*\(\)")
_BLOCK_CLOSE = re.compile(r"^(?:fi|done|esac|\})\b")
_EXPORT = re.compile(r"""^export\s+([A-Za-z_]\w*)=(?:"([^"$`\\]*)"|'([^']*)'|([^\s;&|"'$`\\]*))\s*(?:#.*)?$""")
MAX_LISTED = 8
MAX_WIDTH = 70


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        out.append((start, " ".join(part.strip() for part in pending)))
        pending = []
    if pending:
        out.append((start, " ".join(part.strip() for part in pending)))
    return out


def _exported(command: str) -> tuple[str, str] | None:
    """(name, value) of a plain `export NAME=VALUE` (a comment after it allowed), else None."""
    found = _EXPORT.match(command)
    if found is None:
        return None
    return found.group(1), next(v for v in found.group(2, 3, 4) if v is not None)


def pre_steps(text: str, before_line: int, kept: Mapping[str, str] | None = None) -> list[tuple[int, str]]:
    """(line, command) for each command the script runs before `before_line`, in order. `kept`:
    the variables the re-rendered script exports itself; an `export` of one to the same value is
    not a step it leaves out (issue 36: CUDA_DEVICE_MAX_CONNECTIONS was listed as "not copied",
    then exported)."""
    steps: list[tuple[int, str]] = []
    depth = 0
    for number, line in _logical_lines(text):
        if number >= before_line:
            break
        command = line.strip()
        if not command or command.startswith("#"):
            continue
        if depth:
            depth += bool(_BLOCK_OPEN.match(command)) - bool(_BLOCK_CLOSE.match(command))
            continue
        if _BLOCK_OPEN.match(command):
            opened_and_closed = re.search(r"\b(?:fi|done|esac)\s*$|\}\s*$", command)
            depth = 0 if opened_and_closed else 1
            steps.append((number, command))
            continue
        if _ASSIGNMENT.match(command):
            continue  # a variable: the re-rendered script has its own knobs
        if command.startswith(_QUIET) or command in _QUIET:
            continue
        exported = _exported(command)
        if exported is not None and kept is not None and kept.get(exported[0]) == exported[1]:
            continue
        steps.append((number, command))
    return steps


def pre_steps_note(text: str, before_line: int, kept: Mapping[str, str] | None = None) -> str | None:
    """One header note listing the pre-steps (None when there are none)."""
    steps = pre_steps(text, before_line, kept)
    if not steps:
        return None
    shown = [f"line {number}: {_short(command)}" for number, command in steps[:MAX_LISTED]]
    more = f"; and {len(steps) - MAX_LISTED} more" if len(steps) > MAX_LISTED else ""
    return ("the legacy script ran these before its trainer call; they are not copied, run them first if "
            "they are still needed: " + "; ".join(shown) + more)


def _short(command: str) -> str:
    return command if len(command) <= MAX_WIDTH else command[: MAX_WIDTH - 3] + "..."
