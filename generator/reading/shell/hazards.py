"""Shell traps visible in the source text: a comment line inside a backslash-continued
command, and a backslash that escapes trailing spaces instead of the newline; plus unquoted
glob brackets in override words."""

from __future__ import annotations

import re
from collections.abc import Callable

from generator.reading.launch_script import Hazard, Invocation, Span
from generator.reading.shell.source_text import ScriptTree, code_nodes, continues, in_quoted_text, line_from
from generator.reading.shell.scan import (
    WordError,
    find_backtick,
    find_close_quote,
    find_dollar_close,
)
from generator.base.safe_regex import lazy_pattern


# A `#` line inside these is their text, not a comment line of the script.
_HOLDS_NO_COMMENT_LINES = frozenset({"array", "heredoc_body", "string", "raw_string"})
_BACKSLASH_SPACE = re.compile(r"\\([ \t]+)(?:#[^\n]*)?(?:\n|\Z)")


def text_hazards(src: str, script: ScriptTree, line_of: Callable[[int], int]) -> list[Hazard]:
    out: list[Hazard] = []
    # A full-line comment right after a continued line ends the command there.
    for node in code_nodes(script, "comment", opaque=_HOLDS_NO_COMMENT_LINES, limit=None):
        start = node.start_byte
        line_start = src.rfind("\n", 0, start) + 1
        if src[line_start:start].strip():
            continue  # a trailing comment, not a comment line
        if line_start == 0 or not continues(src, line_start - 1):
            continue
        prev_start = src.rfind("\n", 0, line_start - 1) + 1
        if src[prev_start:line_start].lstrip().startswith("#"):
            continue  # the previous line is itself a comment
        nl = src.find("\n", start)
        end = len(src) if nl < 0 else nl + 1
        after = end
        following = line_from(src, after).strip()
        while following.startswith("#") and after < len(src):
            # more comment lines: what ends the continuation is the first line that is not one
            nl = src.find("\n", after)
            after = len(src) if nl < 0 else nl + 1
            following = line_from(src, after).strip()
        if not following:
            continue  # only comments up to the command's end: bash joins the comment and nothing is lost
        line = line_of(start)
        out.append(Hazard(
            "comment-in-continuation", line,
            f"line {line} is a comment inside a backslash-continued command: bash ends the command at "
            f"line {line - 1} and runs line {line + 1} onwards as a separate command",
            Span(line_start, end, line)))
    for m in _BACKSLASH_SPACE.finditer(src):
        pos = m.start()
        j = pos - 1
        while j >= 0 and src[j] == "\\":
            j -= 1
        if (pos - j - 1) % 2 == 1:
            continue  # the backslash is itself escaped
        if in_quoted_text(script.tree, pos):
            continue
        line_start = src.rfind("\n", 0, pos) + 1
        if src[line_start:pos].lstrip().startswith("#"):
            continue
        line = line_of(pos)
        out.append(Hazard(
            "backslash-space", line,
            f"line {line} ends with a backslash followed by spaces: it escapes a space, not the newline, "
            "so the command ends here and the next lines run as a separate command",
            Span(m.start(1), m.end(1), line)))
    return out


# Bytes that print as nothing (or as a space) but are not whitespace to bash, in the script's
# text as the reader keeps it (each byte one latin-1 character): a UTF-8 byte-order mark, zero-
# width space/joiners, word joiner, no-break space. Before a command they become part of its name.
_INVISIBLE = re.compile("(?m)^[ \t]*(\xef\xbb\xbf|\xe2\x80[\x8b-\x8d]|\xe2\x81\xa0|\xc2\xa0)+(?=[^ \t\r\n])")
_INVISIBLE_NAMES = {"\xef\xbb\xbf": "a byte-order mark (U+FEFF)", "\xc2\xa0": "a no-break space (U+00A0)",
                    "\xe2\x81\xa0": "a word joiner (U+2060)"}


def invisible_hazards(src: str, line_of: Callable[[int], int]) -> list[Hazard]:
    """A command preceded by an invisible byte: bash reads `\ufeffpython3` as the command name,
    finds no such command and the trainer never starts, though the line looks right (issue 21)."""
    out: list[Hazard] = []
    if "\xef" not in src and "\xe2" not in src and "\xc2" not in src:
        return out  # none of the bytes they start with: a search of each line start is not needed
    for m in _INVISIBLE.finditer(src):
        line = line_of(m.start(1))
        what = _INVISIBLE_NAMES.get(m.group(1), "a zero-width character (U+200B-U+200D)")
        word = src[m.end():m.end() + 40].split(None, 1)[0] if src[m.end():m.end() + 40].split() else ""
        out.append(Hazard("invisible-byte", line, f"line {line} starts with {what} before `{word}`: bash reads it as "
                          f"part of the command name (\"command not found\"), so this command never runs; delete it",
                          Span(m.start(1), m.end(), line)))
        if len(out) >= 20:
            break
    return out


def crlf_hazard(src: str, invocations: list[Invocation], line_of: Callable[[int], int]) -> Hazard | None:
    """Windows line endings: bash keeps the CR as part of the last word of each line, and a
    `\\` before CR escapes the CR, not the newline, so every continued command ends there."""
    first_cr = src.find("\r\n")
    if first_cr < 0:
        return None
    continued = src.find("\\\r\n")
    if continued < 0:
        line = line_of(first_cr)
        return Hazard("crlf", line, f"the file has Windows (CRLF) line endings from line {line} on: bash keeps the "
                      "CR as the last character of each line's last word (`key=4\\r`); convert it to LF",
                      Span(first_cr, first_cr + 1, line))
    line = line_of(continued)
    cut = [ov.key or ov.text for inv in invocations if inv.line <= line <= line_of(inv.span.end)
           for ov in inv.overrides if ov.word.line > line]
    lost = (f": the overrides after it ({', '.join(cut[:4])}{', …' if len(cut) > 4 else ''}) never reach the "
            "trainer and bash runs their lines as separate commands") if cut else ""
    return Hazard("crlf", line, f"line {line} ends with `\\` + CR (Windows line endings): the backslash escapes the "
                  f"CR, not the newline, so the command ends at line {line}{lost}; convert the file to LF",
                  Span(continued + 1, continued + 2, line))


_OPTION_ARM = lazy_pattern(r"(?:^|[\s(|])(-{1,2}[A-Za-z][\w-]*)[^)\n]*\)[ \t]*"
                           r"([A-Za-z_][A-Za-z0-9_]*)=\"?\$\{?2\}?\"?", re.M)


def unused_option_hazards(src: str, line_of: Callable[[int], int]) -> list[Hazard]:
    """`--lr) LR=$2; shift 2;;` in an argument-parsing `case` whose variable the script never
    reads: the option is accepted and its value silently ignored."""
    out: list[Hazard] = []
    if "$2" not in src and "${2}" not in src:
        return out
    for m in _OPTION_ARM().finditer(src):
        option, name = m.group(1), m.group(2)
        if re.search(r"\$(?:" + name + r"\b|\{[#!]?" + name + r"\b)", src):
            continue
        line = line_of(m.start(2))
        out.append(Hazard("unused-option", line, f"option {option} is parsed into ${name} (line {line}), which the "
                          f"script never reads: a value given with {option} is silently ignored",
                          Span(m.start(2), m.end(), line)))
    return out


def has_unquoted_glob(src: str, a: int, b: int) -> bool:
    """True when the word src[a:b] has an unquoted `[` followed later by an unquoted `]`."""
    i = a
    opened = False
    try:
        while i < b:
            c = src[i]
            if c == "\\":
                i += 2
                continue
            if c in "'\"":
                i = find_close_quote(src, i + 1, b, c) + 1
                continue
            if c == "$" and i + 1 < b and src[i + 1] in "({":
                i = find_dollar_close(src, i + 2, b, src[i + 1]) + 1
                continue
            if c == "`":
                i = find_backtick(src, i + 1, b) + 1
                continue
            if c == "[":
                opened = True
            elif c == "]" and opened:
                return True
            i += 1
    except WordError:
        return False
    return False
