"""Where a repair goes: turn a Fix (key edits or text edits) into byte edits on the script.

A key's value is changed where the reader says it is defined (`Override.provenance`): the word
on the command line, the variable's assignment or its `:-` default (fix the knob, not the
call), the array element, or the piece of a string variable. A key the script does not set
gets a new override line in the trainer command, but only where that place is unambiguous.
Values that depend on something unknown are never edited: the reason is returned instead.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from generator.config.types import Config
from generator.reading.edit_kinds import KeyEdit, TextEdit
from generator.fix.splice import CannotQuote, requote
from generator.fix.values import hydra_text
from generator.reading.launch_script import Invocation, LaunchScript, Override, Span, written_elsewhere
from generator.rules.core import Applicability, Fix


class Placement:
    """The byte edits for one Fix, or why it cannot be placed."""

    # A plain class with __slots__, not a dataclass: `gen check` places its fixes here, and its
    # start imports no dataclasses.
    __slots__ = ("edits", "reason", "applicability", "notes")
    edits: list[TextEdit]
    reason: str | None  # set when the fix cannot be applied
    applicability: Applicability
    notes: list[str]  # e.g. "variable TP also sets ref TP"

    def __init__(self, edits: list[TextEdit] | None = None, reason: str | None = None,
                 applicability: Applicability = "safe", notes: list[str] | None = None) -> None:
        self.edits = [] if edits is None else edits
        self.reason = reason
        self.applicability = applicability
        self.notes = [] if notes is None else notes

    @property
    def ok(self) -> bool:
        return self.reason is None and bool(self.edits)


def setting_override(key: str, invocation: Invocation | None, config: Config | None) -> Override | None:
    """The override whose value is the key's effective value (the last one wins in Hydra)."""
    if config is not None and key in config.set_by:
        return config.set_by[key]
    if invocation is None:
        return None
    found = None
    for override in invocation.overrides:
        if override.key == key and override.op != "~":
            found = override
    return found


def _same_file(a: str, b: str) -> bool:
    from generator.base.folder_memo import real_path

    return real_path(a) == real_path(b)


def _all_overrides(script: LaunchScript) -> Iterable[Override]:
    for invocation in script.invocations:
        yield from invocation.overrides


def value_edit(script: LaunchScript, override: Override, new_value: Any) -> tuple[TextEdit | None, str | None]:
    """A TextEdit that makes `override` carry `new_value`, or the reason it cannot be made."""
    prov = override.provenance
    if prov.source == "unknown" or override.unknowns:
        why = "; ".join(override.unknowns) or "it depends on something the script does not show"
        return None, f"{override.key} is not edited: its value {why}"
    if prov.span is None:
        return None, f"{override.key} is not edited: no single place in the script defines its value"
    if prov.path is not None and script.path is not None and not _same_file(prov.path, script.path):
        return None, f"{override.key} is not edited: its value is defined in {prov.path}"
    old_source = script.source[prov.span.start:prov.span.end].decode("utf-8", "replace")
    text = hydra_text(new_value, old_text=override.value)
    # The value reaches the word through a variable (also inside an array element).
    from_variable = prov.source == "variable" or bool(prov.variable)
    try:
        if prov.quoting.startswith("py:"):  # a string literal in a Python launcher
            from generator.reading.python.override_lists import py_requote

            style = prov.quoting[3:]
            quote = style.lstrip("rRuUfFbB")
            replacement = py_requote(text, style[: len(style) - len(quote)], quote)
        elif prov.quoting == '"' and _in_parameter_default(script.source, prov.span.start):
            replacement = _requote_double_quoted_default(text)
            if from_variable and _unquoted_expansion(script, override):
                requote(text, "", word_split=True)  # raises when splitting would break the value
        else:
            split = prov.source == "string" or (from_variable and _unquoted_expansion(script, override))
            replacement = requote(text, prov.quoting, word_split=split)
    except ValueError as err:  # CannotQuote, or a raw string that cannot hold the text
        return None, f"{override.key} is not edited: {err}"
    if replacement == old_source:
        return None, None
    return TextEdit(prov.span.start, prov.span.end, replacement), None


_DEFAULT_OPENER = re.compile(rb"\$\{[A-Za-z_][A-Za-z0-9_]*(:?[-=])$")


def _in_parameter_default(source: bytes, offset: int) -> bool:
    """The span starts right after `${NAME:-` (or `-`, `:=`, `=`): a default word."""
    line_start = source.rfind(b"\n", 0, offset) + 1
    return bool(_DEFAULT_OPENER.search(source[line_start:offset]))


def _requote_double_quoted_default(text: str) -> str:
    """Text for the default inside `"${NAME:-...}"`: there bash removes a backslash before
    `"`, `\\`, `$`, a backtick and `}`, but a single quote cannot be written at all."""
    if "'" in text:
        raise CannotQuote(f"{text!r} has a single quote, which a double-quoted ${{NAME:-...}} default cannot hold")
    return re.sub(r'([\\"$`}])', r"\\\1", text)


def _unquoted_expansion(script: LaunchScript, override: Override) -> bool:
    """The command-line word expands a variable outside double quotes (`key=$V`), so bash
    word-splits and globs the variable's value."""
    word = script.source[override.word.start:override.word.end].decode("utf-8", "replace")
    _, eq, value = word.partition("=")
    if not eq:
        return False
    quote = ""
    escaped = False
    for ch in value:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "$":
            return True
    return False


def other_references(script: LaunchScript, override: Override, keys_to_values: dict[str, Any]) -> list[int]:
    """Lines where the knob variable is read other than by the overrides this fix edits
    (arithmetic, other assignments, other commands): changing it changes those too."""
    variable = override.provenance.variable
    span = override.provenance.span
    if not variable or span is None:
        return []
    source = script.source
    name = re.escape(variable.encode())
    hits = [m.start() for m in re.finditer(rb"\$\{?#?" + name + rb"(?![A-Za-z0-9_])", source)]
    for arith in re.finditer(rb"\(\((.*?)\)\)", source, re.S):
        hits += [arith.start(1) + m.start() for m in re.finditer(rb"(?<![A-Za-z0-9_$])" + name + rb"(?![A-Za-z0-9_])",
                                                                  arith.group(1))]
    definition_line = (source.rfind(b"\n", 0, span.start) + 1, source.find(b"\n", span.end))
    accounted = [
        (o.word.start, o.word.end) for o in _all_overrides(script)
        if o.provenance.span is not None and (o.provenance.span.start, o.provenance.span.end) == (span.start, span.end)
        and o.key in keys_to_values
    ]
    lines = set()
    for at in hits:
        if definition_line[0] <= at <= (definition_line[1] if definition_line[1] >= 0 else len(source)):
            continue
        if any(start <= at < end for start, end in accounted):
            continue
        if source.rfind(b"#", source.rfind(b"\n", 0, at) + 1, at) >= 0:
            continue  # inside a comment (rough: a '#' earlier on the line)
        lines.add(script.line_of(at))
    return sorted(lines)


def _shared_uses(script: LaunchScript, span: Span, keys_to_values: dict[str, Any]) -> list[str]:
    """Keys (outside this fix) whose value is written at the same span: a shared knob."""
    others = []
    for override in _all_overrides(script):
        prov = override.provenance
        if prov.span is None or (prov.span.start, prov.span.end) != (span.start, span.end):
            continue
        if override.key not in keys_to_values:
            others.append(override.key)
    return sorted(set(others))


# --- inserting a key the script does not set ------------------------------------------------


def _line_bounds(source: bytes, offset: int) -> tuple[int, int]:
    """[start, end) of the line holding `offset`, end excluding the newline."""
    start = source.rfind(b"\n", 0, offset) + 1
    end = source.find(b"\n", offset)
    return start, len(source) if end < 0 else end


def _is_plain_continued(line: bytes) -> bool:
    """`...word \\` : a backslash right before the newline, after whitespace, not a comment."""
    stripped = line.lstrip()
    if not stripped or stripped.startswith(b"#"):
        return False
    return line.endswith(b"\\") and not line.endswith(b"\\\\") and line[-2:-1] in (b" ", b"\t")


def _indent(line: bytes) -> bytes:
    return line[: len(line) - len(line.lstrip(b" \t"))]


def insertion_edit(script: LaunchScript, invocation: Invocation, text: str) -> tuple[TextEdit | None, str | None]:
    """A new override word `text` (already shell-quoted) in the trainer command.

    After the last command-line override that sits on a plain continued line, as a new line with
    the same indentation and ` \\` style; or before the command's final line when the last
    override is on it. Never after a comment line or a backslash followed by whitespace. A
    one-line command gets ` text` after its last override word.
    """
    if written_elsewhere(script.path, invocation):
        return None, f"the call at line {invocation.line} is written in {invocation.path}; fix that file"
    source = script.source
    start, end = invocation.span.start, invocation.span.end
    on_command_line = [
        o for o in invocation.overrides
        if o.provenance.source in ("literal", "variable", "unknown")
        and start <= o.word.start and o.word.end <= end
    ]
    if not on_command_line:
        return _array_insertion(script, invocation, text)
    last = max(on_command_line, key=lambda o: o.word.end)
    line_start, line_end = _line_bounds(source, last.word.end)
    line = source[line_start:line_end]
    command_first_line = _line_bounds(source, start)[0]
    if _is_plain_continued(line):
        if line_end >= len(source):
            return None, "the command's last line ends the file"
        indent = _indent(line) if line_start != command_first_line else _indent(
            source[_line_bounds(source, line_end + 1)[0]:_line_bounds(source, line_end + 1)[1]])
        return TextEdit(line_end + 1, line_end + 1, f"{indent.decode()}{text} \\\n"), None
    if line_start == command_first_line:
        if source[last.word.end:line_end].rstrip().endswith(b"\\"):
            return None, "the command's line ends with a backslash followed by whitespace"
        return TextEdit(last.word.end, last.word.end, f" {text}"), None
    previous_start, previous_end = _line_bounds(source, line_start - 1)
    previous = source[previous_start:previous_end]
    if not _is_plain_continued(previous):
        return None, "the line before the last override is a comment or a backslash followed by whitespace"
    word_line_start = line_start + len(_indent(line))
    if word_line_start != last.word.start and source[line_start:last.word.start].strip():
        return None, "the last override shares its line with other words"
    return TextEdit(line_start, line_start, f"{_indent(line).decode()}{text} \\\n"), None


def _array_insertion(script: LaunchScript, invocation: Invocation, text: str) -> tuple[TextEdit | None, str | None]:
    """All overrides come from arrays (`"${ARGS[@]}"`): add the word as a new element after the
    last override element, on its own line. Only when that element sits alone on its line
    (a trailing comment is fine) and no other call reads the same array."""
    source = script.source
    from_arrays = [o for o in invocation.overrides if o.provenance.source == "array"]
    if not from_arrays:
        return None, "the command has no override on its own lines to put a new one next to"
    last = max(from_arrays, key=lambda o: o.word.end)
    mine = {(o.word.start, o.word.end) for o in from_arrays}
    for other in script.invocations:
        if other is not invocation and any((o.word.start, o.word.end) in mine for o in other.overrides):
            return None, "the array that holds the overrides is used by another call too"
    line_start, line_end = _line_bounds(source, last.word.end)
    before = source[line_start:last.word.start]
    after = source[last.word.end:line_end].strip()
    if before.strip() or (after and not after.startswith(b"#")) or line_end >= len(source):
        return None, "the last array element does not sit alone on its line"
    return TextEdit(line_end + 1, line_end + 1, f"{before.decode()}{text}\n"), None


# --- a whole Fix ---------------------------------------------------------------------------


def place_fix(fix: Fix, script: LaunchScript, invocation: Invocation | None,
              config: Config | None) -> Placement:
    placement = Placement(applicability=fix.applicability)
    key_edits = [e for e in fix.edits if isinstance(e, KeyEdit)]
    keys_to_values = {e.key: e.new for e in key_edits}
    for edit in fix.edits:
        if isinstance(edit, TextEdit):
            placement.edits.append(edit)
            continue
        override = setting_override(edit.key, invocation, config)
        if override is not None:
            text_edit, reason = value_edit(script, override, edit.new)
            if reason is not None:
                placement.reason = reason
                return placement
            if text_edit is None:
                continue
            if (override.provenance.source in ("variable", "string") or override.provenance.variable) \
                    and override.provenance.span is not None:
                shared = _shared_uses(script, override.provenance.span, keys_to_values)
                name = override.provenance.variable or "the variable"
                if shared:
                    placement.applicability = "unsafe"
                    placement.notes.append(f"{name} also sets {', '.join(shared)}")
                other_lines = other_references(script, override, keys_to_values)
                if other_lines:
                    placement.applicability = "unsafe"
                    where = ", ".join(str(n) for n in other_lines[:5])
                    placement.notes.append(f"{name} is also used on line {where}")
            placement.edits.append(text_edit)
            continue
        if invocation is None:
            placement.reason = f"{edit.key} is not set and there is no command to add it to"
            return placement
        op = "" if config is None or edit.key in config.values else "+"
        if invocation.launcher in ("compose", "subprocess"):  # a Python launcher's list
            from generator.reading.python.override_lists import insertion_for

            text_edit, reason = insertion_for(script, invocation, f"{op}{edit.key}", hydra_text(edit.new))
        else:
            value = requote(hydra_text(edit.new), "")
            text_edit, reason = insertion_edit(script, invocation, f"{op}{edit.key}={value}")
        if reason is not None:
            placement.reason = f"{edit.key} is not set and cannot be added: {reason}"
            return placement
        assert text_edit is not None  # an insertion comes with its edit or with why not
        placement.edits.append(text_edit)
    placement.edits = merge_insertions(placement.edits)
    if not placement.edits and placement.reason is None:
        placement.reason = "already applied"
    return placement


def merge_insertions(edits: list[TextEdit]) -> list[TextEdit]:
    """Several new lines at the same place become one insertion, in the fix's order."""
    merged: list[TextEdit] = []
    for edit in edits:
        twin = next((i for i, e in enumerate(merged)
                     if e.start == e.end == edit.start == edit.end), None)
        if twin is None:
            merged.append(edit)
        elif edit.replacement not in merged[twin].replacement:
            old = merged[twin]
            merged[twin] = TextEdit(old.start, old.end, old.replacement + edit.replacement)
    return merged
