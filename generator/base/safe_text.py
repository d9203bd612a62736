"""The one door for printed bytes (bottom layer: imports nothing of the project): user-written
text made inert for a terminal and for a CI runner, JSON made inert alike, and whether colour is
honest (NO_COLOR, FORCE_COLOR, a terminal or not).

A launch script, a config value, a recipe description or a file name may hold what a reader of
our output would obey instead of show:
- a terminal: ESC/CSI sequences (move the cursor, recolour or retitle, hide text), other C0/C1
  controls, a lone CR that overwrites the line; bidirectional overrides reorder what a person reads;
- a line reader: CR, FF, VT, NEL (U+0085), U+2028/U+2029 end a line for some consumers, so a
  value could start a line of its own;
- a CI runner: GitHub Actions reads `::command ...::` at the start of a line (after leading
  white space) and the legacy `##[command]` anywhere in a line; Azure Pipelines reads `##vso[`
  anywhere (actions/runner src/Runner.Common/ActionCommand.cs, TryParseV2 and TryParse).

`printable` is the door: every text report, `gen show`, `gen explain`, `gen diff`, error lines
and the CLI's `write` pass through it. It writes those characters as `\\x1b`-style escapes, a
name's undecodable bytes (surrogateescape) as `\\xNN`, a leading `::` as `\\x3a:` and the `[` of
`##[`/`##vso[` as `\\x5b`. It is idempotent, so text escaped piece by piece may pass again
whole. `json_text` is the same door for JSON documents (escapes inside strings decode to the
same data). A payload that must reach a program byte for byte (a diff, a fixed script) is never
escaped: `payload_problem` says why it cannot be printed, and the caller withholds it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, Callable, TextIO

# C0 controls but newline and tab, DEL and the C1 controls (NEL, CSI among them), the line and
# paragraph separators, the bidirectional marks, embeddings, overrides and isolates, the invisible
# format characters (a zero-width space in a file name or value makes two different names look
# alike), and lone surrogates (a file name's undecodable bytes). One compiled class: every line of every report
# passes through here, so a per-character Python loop shows up in the time of a 20,000-override
# `gen show`.
_INVISIBLE_CHARS = "\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff"  # soft hyphen, zero-width, joiners, BOM
_UNSAFE_CHARS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                 f"{_INVISIBLE_CHARS}\ud800-\udfff")
# In a payload (a diff for `patch`) an invisible character is the script's own byte: it starts no
# line and moves no cursor, so the payload still prints (a fix that removes a zero-width space
# shows it in its `-` line).
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]")
_CONTROL = re.compile(f"[{_UNSAFE_CHARS}]")
_CONTROL_ASCII = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # the same for ASCII text (str.isascii is O(1))
# What a CI runner reads as a command: `::` first on a line after white space (.NET's TrimStart
# trims Unicode white space, as str.isspace does), `##[` or `##vso[` anywhere.
_RUNNER_HASH = re.compile(r"(##(?:vso)?)\[", re.IGNORECASE)


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _leading_colons(text: str) -> str:
    """Each `::` that starts a line (after white space only) as `\\x3a:`. A search for the
    literal `::`, then a look back: an anchored regex tried at every offset of a 1 MB report
    costs ten times more."""
    out, done = [], 0
    for match in re.finditer("::", text):
        at = match.start()
        if at < done:
            continue
        start = text.rfind("\n", 0, at) + 1
        if start == at or text[start:at].isspace():
            out += [text[done:at], "\\x3a"]
            done = at + 1
    return text if not out else "".join(out) + text[done:]


def printable(text: str) -> str:
    """`text` with control characters (except newline and tab), line separators, bidi marks and
    undecodable bytes written as escapes, and runner commands defused line by line; everything
    else unchanged. Idempotent."""
    if (_CONTROL_ASCII if text.isascii() else _CONTROL).search(text) is not None:
        text = _CONTROL.sub(lambda match: _escape(match.group()), text)
    if "::" in text:
        text = _leading_colons(text)
    if "##" in text:
        text = _RUNNER_HASH.sub(lambda match: match.group(1) + "\\x5b", text)
    return text


def one_line(text: str) -> str:
    """`printable` for a value shown inside one line: newlines and tabs escaped too."""
    return printable(text.replace("\n", "\\n").replace("\t", "\\t"))


def payload_problem(text: str) -> str | None:
    """Why `text`, a payload that must reach its reader byte for byte (a unified diff for `patch`,
    a script), cannot be printed safely: `line N holds U+2028` for its first line the door would have
    to change (a CR just before the newline is fine: CRLF scripts), else None."""
    for number, line in enumerate(text.split("\n"), 1):
        body = line[:-1] if line.endswith("\r") else line
        body = _INVISIBLE.sub("", body)
        if printable(body) == body:
            continue
        bad = _CONTROL.search(body)
        if bad is not None:
            code = ord(bad.group())
            what = f"byte 0x{code - 0xDC00:02X} (not UTF-8)" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        else:
            what = "a CI runner command (`::` or `##[`)"
        return f"line {number} holds {what}"
    return None


# --- JSON ----------------------------------------------------------------------------------------

_NON_ASCII = re.compile("[^\x00-\x7f]")
_JSON_RUNNER = re.compile(r"(##(?:vso)?)\[", re.IGNORECASE)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate: its text as `printable` shows it (`\xNN`)
        return _escape(match.group()).replace("\\", "\\\\")
    return f"\\u{code:04x}"


def json_text(document: Any, *, indent: int | None = 2, ascii_only: bool = True,
              default: Callable[[Any], Any] | None = None) -> str:
    """`document` as JSON, through the door: controls, separators and bidi marks as `\\uXXXX`,
    `##[` as `##\\u005b` (the same data once decoded), a name's undecodable bytes as the text `\\xNN`
    (a lone surrogate is not valid UTF-8, and strict readers refuse it); with `ascii_only`,
    every other non-ASCII character as `\\uXXXX` too. Ends with a newline."""
    text = json.dumps(document, indent=indent, default=default, ensure_ascii=False)
    if _CONTROL.search(text) is not None:
        text = _CONTROL.sub(_json_escape, text)
    if "#" in text:
        text = _JSON_RUNNER.sub(lambda match: match.group(1) + "\\u005b", text)
    if ascii_only and _NON_ASCII.search(text) is not None:
        text = _NON_ASCII.sub(lambda match: json.dumps(match.group())[1:-1], text)
    return text + "\n"


# --- HTML ----------------------------------------------------------------------------------------


def html_text(text: object, quote: bool = True) -> str:
    """`text` for an HTML page (a chart, the recipe catalog): `printable`, then markup-escaped.
    A page is read by a person: a bidi override in a recipe's description would reorder the
    words around it, a raw ESC or NUL shows as nothing at all."""
    import html

    return html.escape(printable(str(text)), quote=quote)


# --- writing -------------------------------------------------------------------------------------

def annotation_lines(text: str) -> str:
    """`printable` for GitHub workflow commands we built (`::error file=...::message`, the user
    text inside escaped, without newlines): the `::` first on each line stays."""
    return "\n".join(line[:2] + printable(line[2:]) if line.startswith("::") else printable(line)
                     for line in text.split("\n"))


def write(text: str, *, err: bool = False, annotations: bool = False, flush: bool = False) -> None:
    """Print `text` on stdout (stderr with `err`) through the door. `annotations`: the text is
    GitHub workflow commands we built (`::error file=...::message`, user text escaped inside),
    so a leading `::` stays; every other escape still applies. `flush` where the command
    flushed before (typer.echo does), so stdout and stderr interleave as they did."""
    stream = sys.stderr if err else sys.stdout
    stream.write(annotation_lines(text) if annotations else printable(text))
    if flush:
        stream.flush()


def write_payload(text: str) -> None:
    """Print on stdout, byte for byte, a payload another program reads (a diff for `patch`, a
    script); only one `payload_problem` found clean (ValueError otherwise: a caller's bug)."""
    problem = payload_problem(text)
    if problem is not None:
        raise ValueError(f"payload not printable: {problem}")
    sys.stdout.write(text)


def say(message: str, *, flush: bool = False) -> None:
    """One line on stderr (an error, a note, `wrote FILE`), newlines in it escaped."""
    write(one_line(message) + "\n", err=True, flush=flush)


# --- rich markup ---------------------------------------------------------------------------------

_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?\])")


def markup(text: str) -> str:
    """Door'ed `text` made literal inside rich markup: a `[` that would open a tag escaped (its
    backslashes doubled). A trailing backslash is left single (rich prints a doubled one as two,
    which is why code frames once showed `... \\\\` on a terminal); `styled` doubles it where a
    closing tag follows, so that rich does not read `\\[/bold]` as an escaped bracket."""
    return _MARKUP_TAG.sub(lambda m: m.group(1) * 2 + "\\" + m.group(2), printable(text))


def styled(style: str, markup_text: str) -> str:
    """`markup_text` (already markup) in `[style]...[/style]`."""
    trailing = len(markup_text) - len(markup_text.rstrip("\\"))
    closing = "\\" if trailing % 2 else ""
    return f"[{style}]{markup_text}{closing}[/{style}]"


def no_color() -> bool:
    """NO_COLOR set to a non-empty value (no-color.org): no escape codes at all, bold included."""
    return bool(os.environ.get("NO_COLOR"))


def use_color(stream: TextIO) -> bool:
    """Colour on a terminal (or with FORCE_COLOR, as rich and many tools honour it), never with
    NO_COLOR."""
    isatty = getattr(stream, "isatty", None)
    return (bool(isatty and isatty()) or bool(os.environ.get("FORCE_COLOR"))) and not no_color()


__all__ = ["annotation_lines", "html_text", "json_text", "markup", "no_color", "one_line", "payload_problem", "printable", "say", "styled",
           "write_payload",
           "use_color", "write"]
