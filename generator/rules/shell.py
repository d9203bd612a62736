"""VS7xx — shell-level hazards found while reading the script (LaunchScript.hazards), with
structural text fixes where a safe one exists."""

from __future__ import annotations

import re
from typing import Callable, Iterator

from generator.reading.edit_kinds import TextEdit
from generator.reading.launch_script import Hazard, LaunchScript
from generator.reading.recognize import looks_like_launcher
from generator.reading.shell.callee import ARGUMENT_SCRIPT, UNREAD_STRING
from generator.rules.core import Context, Finding, Fix, Rule, Severity, family_rule, rule
from generator.base.safe_regex import lazy_pattern

_SCRIPT = ("megatron", "fsdp", "unknown")


def _line_bounds(source: bytes, offset: int) -> tuple[int, int]:
    """[start, end) of the line holding `offset`, end excluding the newline."""
    start = source.rfind(b"\n", 0, offset) + 1
    end = source.find(b"\n", offset)
    return start, (len(source) if end == -1 else end)


def _line_start_of(source: bytes, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        pos = source.find(b"\n", pos) + 1
        if pos == 0:
            return len(source)
    return pos


def _hazard_offset(script: LaunchScript, hazard: Hazard) -> int:
    return hazard.span.start if hazard.span else _line_start_of(script.source, hazard.line)


def _command_start(source: bytes, line_start: int) -> int:
    """Start of the first line of the continued command that `line_start` belongs to."""
    start = line_start
    while start > 0:
        prev_start, prev_end = _line_bounds(source, start - 1)
        prev = source[prev_start:prev_end].rstrip()
        if prev.endswith(b"\\") or prev.lstrip().startswith(b"#"):
            start = prev_start
            continue
        break
    # do not move above leading comment lines that precede the command itself
    while True:
        first_start, first_end = _line_bounds(source, start)
        if source[first_start:first_end].lstrip().startswith(b"#") and first_end < line_start:
            start = first_end + 1
            continue
        return start


def _comment_fix(script: LaunchScript, hazard: Hazard) -> Fix | None:
    source = script.source
    start, end = _line_bounds(source, _hazard_offset(script, hazard))
    line = source[start:end]
    if not line.lstrip().startswith(b"#"):
        return None  # a trailing comment after a word: no safe structural move
    target = _command_start(source, start)
    if target >= start:
        return None
    comment = line.strip().decode("utf-8", "replace")
    line_text = source[target:_line_bounds(source, target)[1]]
    indent = line_text[: len(line_text) - len(line_text.lstrip())].decode()
    return Fix("move the comment line above the command so the continuation is not cut",
               (TextEdit(target, target, f"{indent}{comment}\n"), TextEdit(start, min(end + 1, len(source)), "")))


_BACKSLASH_SPACE_COMMENT = lazy_pattern(rb"\\([ \t]+)(#.*)$")


def _backslash_fix(script: LaunchScript, hazard: Hazard) -> Fix | None:
    """The one repair of a backslash followed by whitespace: delete the whitespace; when a
    trailing comment follows (`key=v \\  # note`), deleting it would leave `\\#`, an escaped `#`
    that bash passes as an argument, so the comment moves above the command instead."""
    source = script.source
    start, end = _line_bounds(source, _hazard_offset(script, hazard))
    line = source[start:end]
    stripped = line.rstrip(b" \t\r")
    if stripped.endswith(b"\\") and len(stripped) < len(line):
        return Fix("delete the whitespace after the trailing backslash",
                   (TextEdit(start + len(stripped), end, ""),))
    match = _BACKSLASH_SPACE_COMMENT().search(line)
    if match is None or b"'" in line[: match.start()] or b'"' in line[: match.start()]:
        return None  # no trailing comment, or quotes we would have to reason about: leave it
    comment = match.group(2).rstrip().decode("utf-8", "replace")
    first_start = _continued_from(source, start)
    first_text = source[first_start:_line_bounds(source, first_start)[1]]
    indent = first_text[: len(first_text) - len(first_text.lstrip(b" \t"))].decode()
    return Fix(f"line {hazard.line}: move the trailing comment above the command so the backslash "
               "ends the line and continues the command",
               (TextEdit(first_start, first_start, f"{indent}{comment}\n"),
                TextEdit(start + match.start() + 1, end, "")),
               applicability="safe")


def _continued_from(source: bytes, line_start: int) -> int:
    """Start of the first line of the backslash-continued command holding the line at `line_start`."""
    start = line_start
    while start > 0:
        prev_start, prev_end = _line_bounds(source, start - 1)
        prev = source[prev_start:prev_end]
        if not (prev.endswith(b"\\") and not prev.endswith(b"\\\\")):
            break
        start = prev_start
    return start


def hazard_fix(script: LaunchScript, hazard: Hazard) -> Fix | None:
    """The structural repair of a shell hazard, when one exists (used by the rules below and by
    the fix engine for findings that came without one)."""
    fixer = _FIXERS.get(hazard.kind)
    return fixer(script, hazard) if fixer else None


def _quote_word_fix(why: str) -> Callable[[LaunchScript, Hazard], Fix | None]:
    def fixer(script: LaunchScript, hazard: Hazard) -> Fix | None:
        if hazard.span is None:
            return None
        word = script.source[hazard.span.start:hazard.span.end].decode("utf-8", "replace")
        if any(ch in word for ch in "'\"$`\\"):
            return None
        return Fix(f"single-quote the word so bash cannot {why}",
                   (TextEdit(hazard.span.start, hazard.span.end, f"'{word}'"),))

    return fixer


_FIXERS = {"comment-in-continuation": _comment_fix, "backslash-space": _backslash_fix, "unquoted-glob": _quote_word_fix("expand it as a glob"),
           "brace-expansion": _quote_word_fix("split it by brace expansion")}


def _hazard_findings(the_rule: Rule, ctx: Context) -> Iterator[Finding]:
    script = ctx.script
    if script is None:
        return
    for hazard in script.hazards:
        if hazard.kind != the_rule.reports:
            continue
        yield the_rule.finding(hazard.message, line=hazard.line, fix=hazard_fix(script, hazard))


# Each hazard the reader reports is one rule: (code, hazard kind, severity).
_HAZARD_RULES: tuple[tuple[str, str, Severity], ...] = (
    ("VS701", "comment-in-continuation", "error"),
    ("VS702", "backslash-space", "error"),
    ("VS703", "empty-expansion", "warning"),
    ("VS704", "duplicate-key", "warning"),
    ("VS705", "unquoted-glob", "info"),
    ("VS706", "orphan-overrides", "error"),
    ("VS707", "parse-error", "error"),
    ("VS708", "brace-expansion", "error"),
    ("VS710", "crlf", "error"),
    ("VS711", "split-assignment", "error"),
    ("VS712", "stray-argument", "error"),
    ("VS713", "unterminated-quote", "error"),
    ("VS714", "placeholder-value", "warning"),
    ("VS715", "unset-in-value", "warning"),
    ("VS716", "env-in-value", "info"),
    ("VS717", "unused-option", "warning"),
    ("VS720", "invisible-byte", "error"),
    ("VS731", "reader-limit", "info"),
    ("VS732", "assignment-as-command", "error"),
    ("VS733", "source-home-path", "warning"),
    ("VS734", "blank-in-continuation", "error"),
)
for _code, _kind, _severity in _HAZARD_RULES:
    family_rule(_hazard_findings, _code, _kind, severity=_severity, stage="shell", reports=_kind, verl_ref="",
                backends=_SCRIPT, scope="script")


def _strip_crs(script: LaunchScript, hazard: Hazard) -> Fix | None:
    source = script.source
    edits = tuple(TextEdit(m.start(), m.start() + 1, "") for m in re.finditer(rb"\r(?=\n)", source))
    return Fix("convert the file to LF line endings (delete the CR before each newline)", edits) if edits else None


_FIXERS["crlf"] = _strip_crs


def _drop_invisible(script: LaunchScript, hazard: Hazard) -> Fix | None:
    span = hazard.span
    if span is None:
        return None
    return Fix("delete the invisible character(s) before the command", (TextEdit(span.start, span.end, ""),))


_FIXERS["invisible-byte"] = _drop_invisible


@rule("VS709", "no-trainer-call", severity="warning", stage="shell", verl_ref="", backends=_SCRIPT, scope="script")
def no_trainer_call(ctx: Context) -> Iterator[Finding]:
    script = ctx.script
    if script is None or any(inv.branch != "dead" for inv in script.invocations):
        return
    if not script.invocations and not looks_like_launcher(script.source):
        return  # a helper script: VS730 says so, and it passes
    if not script.invocations and _runs_its_argument(script):
        return  # a wrapper of the script it is given: VS730 says so
    if not script.invocations and _unread_string(script):
        return  # the call is in a string the reader could not re-read: VS730 says so
    if script.invocations:
        first = script.invocations[0]
        why = (f"the call at line {first.line} is never reached"
               + (f" ({first.context[-1]})" if first.context else ""))
    else:
        unread = next((h for h in script.hazards if h.kind == "unread-call"), None)
        why = unread.message if unread else "no command runs verl's trainer or a Hydra entry point"
    yield no_trainer_call.finding(f"no trainer call was read, so nothing in this script was checked: {why}",
                                  line=script.invocations[0].line if script.invocations else None)


def _unread_string(script: LaunchScript) -> Hazard | None:
    """The `eval "$CMD"` whose string holds the trainer call but could not be re-read, when nothing
    else of the script may hold a call the reader missed."""
    if any(h.kind == "unread-call" for h in script.hazards):
        return None
    return next((h for h in script.hazards if h.kind == UNREAD_STRING), None)


def _runs_its_argument(script: LaunchScript) -> Hazard | None:
    """The `bash "$1"` of a wrapper that runs the script it is given, when nothing else of it
    may hold a call (no other unread command)."""
    if any(h.kind == "unread-call" for h in script.hazards):
        return None
    return next((h for h in script.hazards if h.kind == ARGUMENT_SCRIPT), None)


@rule("VS730", "not-a-launch-script", severity="info", stage="shell", verl_ref="", backends=_SCRIPT, scope="script")
def not_a_launch_script(ctx: Context) -> Iterator[Finding]:
    script = ctx.script
    if script is None or script.invocations:
        return
    held = _unread_string(script)
    if held is not None:
        yield not_a_launch_script.finding(f"its trainer call was not read: {held.message}; nothing in it was checked",
                                          line=held.line)
        return
    wrapper = _runs_its_argument(script)
    if wrapper is not None:
        yield not_a_launch_script.finding(f"not a launch script but a wrapper: {wrapper.message}; skipped",
                                          line=wrapper.line)
        return
    if looks_like_launcher(script.source):
        return
    yield not_a_launch_script.finding(
        "not a launch script: it names no trainer entry (main_ppo, verl.trainer…, a recipe main) and gives no "
        "Hydra overrides (key.path=value), so there is nothing to check; skipped")
