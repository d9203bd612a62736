"""The override lists of a Python launcher, read with libcst (imported lazily: only a `.py`
launcher pays for it).

Its job: read the override lists a Python launcher builds (`compose(..., overrides=[...])` or a
  subprocess command list `["python3", "-m", "verl.trainer.main_ppo", "key=value", ...]`) with
  byte spans, as a LaunchScript, and the TextEdits that set keys in them with the same
  minimal-edit guarantees as shell scripts (generator.fix applies them).

Nothing here imports or runs the user's code: it is parsed, never executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence, cast

from generator.reading.edit_kinds import KeyEdit, TextEdit
from generator.base.errors import InputError
from generator.reading.launch_script import Invocation, LaunchScript, Op, Override, Provenance, Span
from generator.reading.overrides import format_value
from generator.reading.python.chunks import Chunk, chunks_with_strings
from generator.verl.constants import PPO_ENTRY

_OVERRIDE = re.compile(r"^(\+\+|\+|~)?([A-Za-z_][\w.@/-]*)(=(.*))?$", re.S)
_SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output", "execvp", "execv"}


@dataclass(frozen=True, slots=True)
class PyOverride:
    """One `"key=value"` string element of an override list in a Python file."""

    text: str  # the string's value
    op: str  # "=", "+", "++", "~"
    key: str
    value: str | None
    line: int
    span: TextEdit  # bytes of the whole literal, quotes included (replacement unused: "")
    content_start: int  # bytes of the text between the quotes
    content_end: int
    prefix: str  # string prefix letters, e.g. "" or "r"
    quote: str  # ', ", ''' or """


@dataclass(slots=True)
class PyOverrideList:
    """A list literal of override strings and how it is used."""

    kind: str  # "compose" | "subprocess" | "list"
    line: int
    start: int  # bytes of the list literal `[ ... ]`
    end: int
    overrides: list[PyOverride] = field(default_factory=list)
    element_ends: list[int] = field(default_factory=list)  # end byte of every element (incl. non-overrides)
    element_starts: list[int] = field(default_factory=list)
    entry: str | None = None  # `-m MODULE` found in a subprocess list
    config_name: str | None = None  # compose(config_name=...) or --config-name in the list
    config_path: str | None = None


def _parse(source: bytes, path: str | None, first_line: int = 1) -> Any:
    cst = _cst()

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as err:
        where = path or "<python>"
        line = err.raw_line + first_line - 1
        raise InputError(f"{where}: not valid Python (line {line}): {err.message}") from None


def _cst() -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import libcst
    return libcst


def _metadata() -> tuple[Any, Any, Any]:
    # libcst.metadata imports a module that triggers a DeprecationWarning in mypy_extensions;
    # it is not ours to fix and would otherwise show in every user's output.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from libcst.metadata import ByteSpanPositionProvider, MetadataWrapper, PositionProvider
    return MetadataWrapper, PositionProvider, ByteSpanPositionProvider


def _literal_str(node: Any) -> str | None:
    """The value of a plain string literal (no f-string, no implicit concatenation of non-literals)."""
    cst = _cst()

    if isinstance(node, cst.SimpleString):
        if "b" in node.prefix.lower():
            return None
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = _literal_str(node.left), _literal_str(node.right)
        if left is None or right is None:
            return None
        return left + right
    return None


def _dotted(node: Any) -> str:
    cst = _cst()

    if isinstance(node, cst.Name):
        return str(node.value)
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _walk(node: Any) -> Iterable[Any]:
    """Every node under `node`, parents first (an explicit stack: no recursion limit)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


# --- override lists -------------------------------------------------------------------------


def _looks_like_override(text: str) -> re.Match[str] | None:
    match = _OVERRIDE.match(text)
    if match is None:
        return None
    op_prefix, _key, has_value, _value = match.groups()
    if op_prefix == "~":
        return match
    return match if has_value else None


def read_override_lists(source: bytes | str, path: str | None = None) -> list[PyOverrideList]:
    """Every list literal holding Hydra override strings: arguments of `compose(...)`
    (`overrides=[...]`), subprocess command lists, and plain lists of overrides assigned to a name.
    A list counts when at least one element is an override-looking string literal.
    The file is checked (depth, syntax) first, and only the top-level statements holding an
    override-looking string are parsed into a concrete syntax tree (see reading/python/chunks.py)."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    found: list[PyOverrideList] = []
    for chunk in chunks_with_strings(data, path, lambda text: _looks_like_override(text) is not None):
        found.extend(_override_lists_in(chunk, path))
    return found


def _override_lists_in(chunk: Chunk, path: str | None) -> list[PyOverrideList]:
    """read_override_lists on one chunk of the file; spans and lines are the file's."""
    cst = _cst()

    MetadataWrapper, PositionProvider, ByteSpanPositionProvider = _metadata()
    wrapper = MetadataWrapper(_parse(chunk.text, path, chunk.line))
    spans = wrapper.resolve(ByteSpanPositionProvider)
    positions = wrapper.resolve(PositionProvider)
    calls = _list_calls(wrapper.module)
    found: list[PyOverrideList] = []
    for node in _walk(wrapper.module):
        if not isinstance(node, cst.List):
            continue
        span = spans[node]
        kind, config_name = calls.get(id(node), ("list", None))
        result = PyOverrideList(kind=kind, line=positions[node].start.line + chunk.line - 1,
                                start=span.start + chunk.start, end=span.start + chunk.start + span.length,
                                config_name=config_name)
        _read_elements(node, result, spans, positions, chunk)
        if result.overrides:
            found.append(result)
    return found


def _list_calls(module: Any) -> dict[int, tuple[str, str | None]]:
    """The lists passed to `compose(...)` (with its config name) or to a subprocess call, by id."""
    cst = _cst()

    calls: dict[int, tuple[str, str | None]] = {}
    for node in _walk(module):
        if not isinstance(node, cst.Call):
            continue
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        config_name = None
        if last == "compose":
            for index, arg in enumerate(node.args):
                if (arg.keyword is not None and arg.keyword.value == "config_name") or (
                        arg.keyword is None and index == 0 and not isinstance(arg.value, cst.List)):
                    config_name = _literal_str(arg.value)
        for arg in node.args:
            if not isinstance(arg.value, cst.List):
                continue
            if last == "compose" and (arg.keyword is None or arg.keyword.value == "overrides"):
                calls[id(arg.value)] = ("compose", config_name)
            elif last in _SUBPROCESS_CALLS or name.startswith(("subprocess.", "os.")):
                calls[id(arg.value)] = ("subprocess", None)
    return calls


def _read_elements(node: Any, result: PyOverrideList, spans: Any, positions: Any, chunk: Chunk) -> None:
    """Fill `result` from a list's elements: their spans, `-m MODULE`, `--config-name/-path`,
    and every override-looking plain string literal."""
    cst = _cst()

    base, line0 = chunk.start, chunk.line - 1
    strings = [_literal_str(el.value) for el in node.elements]
    for index, (element, text) in enumerate(zip(node.elements, strings)):
        el_span = spans[element.value]
        result.element_starts.append(el_span.start + base)
        result.element_ends.append(el_span.start + base + el_span.length)
        if text == "-m" and index + 1 < len(strings) and strings[index + 1]:
            result.entry = strings[index + 1]
        for flag, slot in (("--config-name", "config_name"), ("--config-path", "config_path")):
            if text is not None and text.startswith(flag + "="):
                setattr(result, slot, text.split("=", 1)[1])
            elif text == flag and index + 1 < len(strings):
                setattr(result, slot, strings[index + 1])
        if text is None or not isinstance(element.value, cst.SimpleString):
            continue
        match = _looks_like_override(text)
        if match is None:
            continue
        op_prefix, key, _eq, value = match.groups()
        literal = element.value
        quote, prefix = literal.quote, literal.prefix
        start = el_span.start + base
        result.overrides.append(PyOverride(
            text=text, op=op_prefix or "=", key=key, value=value,
            line=positions[element.value].start.line + line0,
            span=TextEdit(start, start + el_span.length, ""),
            content_start=start + len(prefix.encode()) + len(quote),
            content_end=start + el_span.length - len(quote), prefix=prefix, quote=quote,
        ))


def py_requote(text: str, prefix: str, quote: str) -> str:
    """Source for the inside of a Python string literal with this prefix and quote that
    evaluates to `text`."""
    if "r" in prefix.lower():
        if "\\" in text or quote[0] in text or "\n" in text and len(quote) == 1:
            raise ValueError(f"{text!r} cannot be written into a raw {quote}...{quote} string")
        return text
    escaped = text.replace("\\", "\\\\").replace(quote[0], "\\" + quote[0])
    if len(quote) == 1:
        escaped = escaped.replace("\n", "\\n").replace("\r", "\\r")
    if "f" in prefix.lower():
        escaped = escaped.replace("{", "{{").replace("}", "}}")
    return escaped


def key_edits_to_text_edits(source: bytes | str, key_edits: Sequence[KeyEdit], *,
                            path: str | None = None) -> tuple[list[TextEdit], list[str]]:
    """TextEdits that set each key in the Python launcher's override lists, and one reason per
    key edit that could not be placed. A key already present is changed in its (last) string; a
    missing key is appended to the one list that holds overrides, as a new element formatted
    like its neighbours. With several candidate lists the insertion is ambiguous: refused."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    lists = read_override_lists(data, path)
    edits: list[TextEdit] = []
    refused: list[str] = []
    for key_edit in key_edits:
        new_value = format_value(key_edit.new)
        hits = [(lst, ov) for lst in lists for ov in lst.overrides if ov.key == key_edit.key and ov.op != "~"]
        if hits:
            lst, ov = hits[-1]
            text = f"{'' if ov.op == '=' else ov.op}{ov.key}={new_value}"
            try:
                body = py_requote(text, ov.prefix, ov.quote)
            except ValueError as err:
                refused.append(f"{key_edit.key}: {err}")
                continue
            edits.append(TextEdit(ov.content_start, ov.content_end, body))
            continue
        if len(lists) != 1:
            refused.append(f"{key_edit.key}: not set, and {len(lists)} override lists make the place "
                           "to add it ambiguous")
            continue
        edits.append(_append_element(data, lists[0], f"{key_edit.key}={new_value}"))
    return edits, refused


def _append_element(data: bytes, lst: PyOverrideList, text: str) -> TextEdit:
    """Insert `"text"` after the last element, in the style of the last override element."""
    model = lst.overrides[-1]
    literal = f"{model.prefix}{model.quote}{py_requote(text, model.prefix, model.quote)}{model.quote}"
    last_end = lst.element_ends[-1]
    last_start = lst.element_starts[-1]
    line_start = data.rfind(b"\n", 0, last_start) + 1
    between = data[last_end:lst.end - 1]  # text after the last element up to `]`
    has_comma = between.lstrip().startswith(b",")
    if b"\n" in data[lst.start:last_start]:
        indent = data[line_start:last_start]
        indent = indent if indent.strip() == b"" else b""
        insert_at = last_end + (between.index(b",") + 1 if has_comma else 0)
        comma = "" if has_comma else ","
        return TextEdit(insert_at, insert_at, f"{comma}\n{indent.decode()}{literal}{',' if has_comma else ''}")
    return TextEdit(last_end, last_end, f", {literal}")


# --- a Python launcher as a read model ------------------------------------------------------

PY_QUOTING = "py:"  # Provenance.quoting prefix for a Python string literal: "py:" + prefix + quote


def read_launcher(source: bytes | str, path: str | None = None) -> LaunchScript:
    """A Python launcher as a LaunchScript: one invocation per override list that runs a Hydra
    entry (`compose(...)` → verl.trainer.main_ppo's config; a subprocess list with `-m MODULE`).
    Each override's provenance points at the value inside its string literal, so the same fix
    machinery edits it; a literal with escape sequences is not editable (span None)."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    script = LaunchScript(path=path, source=data)
    for lst in read_override_lists(data, path):
        if lst.kind == "list" and lst.entry is None:
            continue
        entry = lst.entry or PPO_ENTRY
        invocation = Invocation(
            line=lst.line, span=Span(lst.start, lst.end, lst.line), entry=entry, entry_kind="module",
            launcher="compose" if lst.kind == "compose" else "subprocess",
            config_path=lst.config_path, config_name=lst.config_name, branch="live", passes_args=False)
        for ov in lst.overrides:
            word = Span(ov.span.start, ov.span.end, ov.line)
            raw = data[ov.content_start:ov.content_end].decode("utf-8", "replace")
            value_span = None
            if raw == ov.text and ov.value is not None:
                value_start = ov.content_start + len(ov.text[: len(ov.text) - len(ov.value)].encode())
                value_span = Span(value_start, ov.content_end, ov.line)
            prov = Provenance("literal", value_span, PY_QUOTING + ov.prefix + ov.quote)
            invocation.overrides.append(Override(ov.text, ov.key, cast(Op, ov.op), ov.value, ov.line, word, prov))
        script.invocations.append(invocation)
    return script


def insertion_for(script: LaunchScript, invocation: Invocation, key: str, value_text: str
                  ) -> tuple[TextEdit | None, str | None]:
    """Append `key=value` to the override list of a Python launcher's invocation."""
    for lst in read_override_lists(script.source, script.path):
        if (lst.start, lst.end) == (invocation.span.start, invocation.span.end):
            return _append_element(script.source, lst, f"{key}={value_text}"), None
    return None, "the override list was not found again"
