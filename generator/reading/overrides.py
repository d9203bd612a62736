"""Hydra override strings: parse them as Hydra would, and write values back as override text.

`parse_override("actor_rollout_ref.actor.optim.lr=1e-6")` gives the key, the operator and the
value converted exactly as Hydra converts it (int, float, bool, None, str, list, dict).
Hydra's own `OverridesParser` is the grammar of record, but importing it costs ~270 ms and
parsing ~0.3 ms per override, so the overwhelmingly common simple forms (numbers, booleans,
null, identifier- and path-like words) take a fast path whose results are proven equal to
Hydra's by a property test (tests/test_overrides.py). Everything else goes to Hydra, whose
answers are kept between runs in the user's cache folder (generator.base.cache).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from generator.base.safe_regex import lazy_pattern

if TYPE_CHECKING:
    from generator.base.cache import RememberedAnswers

Op = str  # "=", "+", "++", "~" (generator.reading.launch_script.Op)


class ParsedOverride(NamedTuple):
    """One override as Hydra reads it.

    key:        the dotted key (Hydra's `key_or_group`), "" when the text has no parsable key
    op:         "=" change, "+" add, "++" force-add, "~" delete
    value_text: the text after the first "=" (None for a bare `~key`)
    value:      the Python value Hydra converts it to (None for null, a bare `~key` or an error)
    error:      Hydra's grammar error in one line, or a refusal Hydra would make at run time
                (a `a,b` choice sweep outside --multirun); None when Hydra accepts it
    package:    the `@package` part of `key@package`, rarely used
    """

    key: str
    op: Op
    value_text: str | None
    value: Any
    error: str | None = None
    package: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


# ---------------------------------------------------------------------------------------------
# Fast path. The regexes mirror Hydra 1.3's OverrideLexer.g4 token rules; a value qualifies
# only when made of characters whose every sequence lexes into primitive tokens without
# whitespace, escapes, quotes, interpolations, brackets, commas or '=' (all of which change
# how Hydra assembles the value), so the value is either one typed token or the text itself.

_SEGMENT = r"(?:[A-Za-z_$][A-Za-z0-9_\-$]*|0|[1-9](?:_?[0-9])*)"
_KEY_RE = re.compile(rf"(?:[A-Za-z_$][A-Za-z0-9_\-$]*|{_SEGMENT}(?:\.{_SEGMENT})+)\Z")
_SIMPLE_VALUE_RE = re.compile(r"[A-Za-z0-9_\-/.+@%*?|:]*\Z")

_INT_UNSIGNED = r"(?:0|[1-9](?:_?[0-9])*)"
_DIGITS = r"[0-9](?:_?[0-9])*"
_POINT_FLOAT = rf"(?:{_INT_UNSIGNED}\.|(?:{_INT_UNSIGNED})?\.{_DIGITS})"
_EXPONENT_FLOAT = rf"(?:(?:{_POINT_FLOAT}|{_INT_UNSIGNED})[eE][+-]?{_DIGITS})"
_INT_RE = re.compile(rf"[+-]?{_INT_UNSIGNED}\Z")
_FLOAT_RE = re.compile(rf"[+-]?(?:{_EXPONENT_FLOAT}|{_POINT_FLOAT}|[Ii][Nn][Ff]|[Nn][Aa][Nn])\Z")
_BOOL_RE = re.compile(r"(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\Z")
_NULL_RE = re.compile(r"[Nn][Uu][Ll][Ll]\Z")


def _split_op(text: str) -> tuple[Op, str]:
    if text.startswith("++"):
        return "++", text[2:]
    if text.startswith("+"):
        return "+", text[1:]
    if text.startswith("~"):
        return "~", text[1:]
    return "=", text


def _fast_value(value_text: str) -> tuple[bool, Any]:
    """(True, value) when `value_text` is simple enough to convert without Hydra."""
    if not _SIMPLE_VALUE_RE.match(value_text):
        return False, None
    if _INT_RE.match(value_text):
        return True, int(value_text)
    if _FLOAT_RE.match(value_text):
        return True, float(value_text)
    if _BOOL_RE.match(value_text):
        return True, value_text.lower() == "true"
    if _NULL_RE.match(value_text):
        return True, None
    # One ID token, or several primitive tokens that Hydra joins back into the same text.
    return True, value_text


# Quoted strings and flat lists are the other common forms (file lists, loggers). A quoted
# string qualifies when it holds no backslash (escapes), `$` (interpolation) or its own quote;
# a list when each element is such a string or a simple primitive, with only blanks around
# the commas (Hydra keeps the blanks after tokens such as ":", so bare items are limited to
# word characters). Anything nested or escaped goes to Hydra.
_QUOTED_RE = re.compile(r"'([^'\\$]*)'|\"([^\"\\$]*)\"")
_LIST_ITEM_RE = re.compile(
    r"[ \t]*(?:'([^'\\$]*)'|\"([^\"\\$]*)\"|([A-Za-z0-9_\-/.+]+))[ \t]*"
)


def _fast_quoted_or_list(value_text: str) -> tuple[bool, Any]:
    quoted = _QUOTED_RE.fullmatch(value_text)
    if quoted:
        return True, quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
    if len(value_text) < 2 or value_text[0] != "[" or value_text[-1] != "]":
        return False, None
    inner = value_text[1:-1]
    if not inner.strip(" \t"):
        return (True, []) if inner == "" else (False, None)
    items: list[Any] = []
    for piece in inner.split(","):
        item = _LIST_ITEM_RE.fullmatch(piece)
        if item is None:
            return False, None
        single, double, bare = item.groups()
        if bare is None:
            items.append(single if single is not None else double)
            continue
        ok, value = _fast_value(bare)
        if not ok:
            return False, None
        items.append(value)
    return True, items


# One or more plain key references side by side: `${a.b}`, `${.x}`, `${a.b}${c}`.
_REFERENCES_RE = lazy_pattern(r"(?:\$\{\.{0,2}[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\})+")


def parse_override_fast(text: str) -> ParsedOverride | None:
    """The fast path alone: a result identical to Hydra's, or None when Hydra must decide."""
    op, rest = _split_op(text)
    key, eq, value_text = rest.partition("=")
    if not _KEY_RE.match(key):
        return None
    if not eq:
        if op != "~":
            return None
        return ParsedOverride(key=key, op=op, value_text=None, value=None)
    ok, value = _fast_value(value_text)
    if not ok:
        ok, value = _fast_quoted_or_list(value_text)
    if not ok and _REFERENCES_RE().fullmatch(value_text):
        # `${a.b}` (or several side by side): Hydra keeps the text as is. Its grammar costs ~4 ms a
        # call, so thousands of such overrides took tens of seconds (issue 21).
        ok, value = True, value_text
    if not ok:
        return None
    return ParsedOverride(key=key, op=op, value_text=value_text, value=value)


# ---------------------------------------------------------------------------------------------
# Hydra path.


@lru_cache(maxsize=1)
def _hydra_parser() -> Any:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def _one_line(message: str) -> str:
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("See https://")]
    return "; ".join(lines) or "invalid override"


_OP_OF_TYPE = {"CHANGE": "=", "ADD": "+", "FORCE_ADD": "++", "DEL": "~"}


@lru_cache(maxsize=65536)
def parse_override_hydra(text: str) -> ParsedOverride:
    """Parse with Hydra's own grammar (cached)."""
    op, rest = _split_op(text)
    raw_key, eq, value_text = rest.partition("=")
    value_or_none = value_text if eq else None
    try:
        parsed = _hydra_parser().parse_override(text)
    except Exception as err:  # noqa: BLE001 - Hydra raises HydraException/OverrideParseException
        return ParsedOverride(key=raw_key, op=op, value_text=value_or_none, value=None, error=_one_line(str(err)))
    hydra_op = _OP_OF_TYPE.get(parsed.type.name, op)
    key = parsed.key_or_group
    if parsed.is_sweep_override():
        sweep = parsed.value()
        choices = list(getattr(sweep, "list", []) or [])
        return ParsedOverride(
            key=key,
            op=hydra_op,
            value_text=value_or_none,
            value=choices,
            error=f"'{value_text}' is a choice sweep, which Hydra refuses without --multirun; "
            "write a list as [a,b] or quote the value",
            package=parsed.package,
        )
    return ParsedOverride(
        key=key, op=hydra_op, value_text=value_or_none, value=parsed.value(), package=parsed.package
    )


# Hydra's answers, kept between runs (generator.base.cache.RememberedAnswers): importing Hydra costs
# ~0.13 s, in every process that meets one text the fast path leaves to it (an `<your_model>`
# placeholder, a nested list; 11 texts in the 585-script corpus). An answer depends on Hydra's
# grammar and visitor, the ANTLR runtime that runs them, and this module's conversion of the
# result: the entry is keyed by the stamp of those files, so an upgrade of either or an edit
# here is a new entry.
_HYDRA_FOLDERS = (("hydra", ("", "core/override_parser", "grammar/gen", "_internal/grammar")),
                  ("antlr4", ("", "atn", "dfa", "error", "tree", "xpath")))


@lru_cache(maxsize=1)
def _hydra_answers() -> RememberedAnswers | None:
    """The RememberedAnswers of Hydra's grammar, or None when Hydra or ANTLR is not found."""
    import os
    from importlib.util import find_spec
    from pathlib import Path

    files = [Path(__file__)]
    for package, folders in _HYDRA_FOLDERS:
        spec = find_spec(package)  # finds the package without importing it
        roots = list(spec.submodule_search_locations or ()) if spec is not None else []
        if len(roots) != 1:
            return None
        for folder in folders:
            try:
                names = sorted(n for n in os.listdir(os.path.join(roots[0], folder)) if n.endswith(".py"))
            except OSError:
                continue
            files.extend(Path(roots[0], folder, name) for name in names)
    from generator.base.cache import RememberedAnswers

    return RememberedAnswers("hydra overrides", files)


def _from_answer(text: str, answer: Any) -> ParsedOverride | None:
    """The ParsedOverride a kept answer gives for `text`, or None when it is not of that shape."""
    if not isinstance(answer, list) or len(answer) != len(ParsedOverride._fields):
        return None
    key, op, value_text, value, error, package = answer
    raw_key, eq, after = _split_op(text)[1].partition("=")
    # What Hydra's answer says of the text itself must be what the text says (a miss, never a
    # wrong hit, where Hydra would say otherwise).
    if (key not in (raw_key, raw_key.partition("@")[0]) or op not in ("=", "+", "++", "~")
            or value_text != (after if eq else None)
            or not (error is None or isinstance(error, str)) or not (package is None or isinstance(package, str))):
        return None
    return ParsedOverride(key, op, value_text, value, error, package)


@lru_cache(maxsize=65536)
def _parse_override_slow(text: str) -> ParsedOverride:
    """Hydra's answer for a text the fast path leaves to it: kept from an earlier run, else
    Hydra's own (then kept)."""
    answers = _hydra_answers()
    if answers is not None:
        kept = _from_answer(text, answers.get(text))
        if kept is not None:
            return kept
    parsed = parse_override_hydra(text)
    if answers is not None:
        answers.add(text, list(parsed))
    return parsed


def parse_override(text: str) -> ParsedOverride:
    """Parse one override argument exactly as Hydra would (fast path first, then Hydra),
    remembered by the text: a corpus's ~36,000 overrides are ~2,500 texts. A list or mapping
    value is parsed afresh every time (a config keeps the value it is given, and its owner may
    change it)."""
    found = _PARSED.get(text)
    if found is None:
        fast = parse_override_fast(text)
        found = fast if fast is not None else _parse_override_slow(text)
        if not isinstance(found.value, (list, dict)) and len(_PARSED) < _MAX_PARSED:
            _PARSED[text] = found
    return found


_PARSED: dict[str, ParsedOverride] = {}
_MAX_PARSED = 65_536  # texts; past it, overrides are parsed as they come


# A launch script's words repeat across its calls and across scripts (61,752 calls over the
# 892 shared scripts, 3,745 distinct words): remembered by word, a bounded number of them.
@lru_cache(maxsize=4096)
def looks_like_override(word: str) -> bool:
    """A shell word that Hydra would take as an override rather than a flag or a positional:
    `key=value`, `+key=`, `++key=`, `~key` (key = dotted name)."""
    if not word or word[0] == "-":
        return False
    op, rest = _split_op(word)
    key, eq, _ = rest.partition("=")
    if not eq and op != "~":
        return False
    key = key.split("@", 1)[0]
    return bool(key) and bool(_LOOSE_KEY_RE.match(key))


_LOOSE_KEY_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_\-$]*(?:[./][A-Za-z0-9_\-$]+)*\Z")


# ---------------------------------------------------------------------------------------------
# Writing values back.


def _quote(text: str) -> str:
    """Hydra quoted string: single quotes unless the text has one and no double quote."""
    qc = '"' if ("'" in text and '"' not in text) else "'"
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            j = i
            while j < n and text[j] == "\\":
                j += 1
            run = j - i
            # Backslashes right before a quote (or the closing quote) are escapes in Hydra's
            # grammar, so double them to keep them literal.
            if j == n or text[j] == qc:
                out.append("\\" * (2 * run))
            else:
                out.append("\\" * run)
            i = j
            continue
        if ch == qc:
            out.append("\\" + qc)
        else:
            out.append(ch)
        i += 1
    return qc + "".join(out) + qc


def _dict_key(key: Any) -> str:
    """Hydra dict keys cannot be quoted: only plain words (no ':') can be written."""
    if isinstance(key, str) and key and ":" not in key:
        ok, parsed = _fast_value(key)
        if ok and parsed == key and isinstance(parsed, str):
            return key
    raise ValueError(f"cannot write {key!r} as a Hydra dict key (plain words only)")


def format_value(value: Any, *, spelling: str | None = None, short_floats: bool = False) -> str:
    """Hydra override text for a Python value: `parse_override("k=" + format_value(v)).value == v`.

    spelling      the text the user wrote for this value; kept when it reads back as the same
                  value (`1e-6` stays `1e-6`, `True` stays `True`)
    short_floats  write small floats as `1e-6` rather than Python's `1e-06` (generated scripts)
    """
    if spelling is not None and _reads_back(spelling, value):
        return spelling
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return _short_float(value) if short_floats else repr(value)
    if isinstance(value, str):
        ok, parsed = _fast_value(value)
        if ok and parsed == value and isinstance(parsed, str) and value:
            return value
        return _quote(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(item, short_floats=short_floats) for item in value) + "]"
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            parts.append(f"{_dict_key(k)}:{format_value(v, short_floats=short_floats)}")
        return "{" + ",".join(parts) + "}"
    raise TypeError(f"cannot write a {type(value).__name__} as a Hydra override value")


def _short_float(value: float) -> str:
    """1e-06 -> '1e-6', 0.0003 -> '3e-4' (below 1e-3, the fewest digits that read back as the
    same float); other floats as Python writes them (0.5, 1e+20)."""
    if value != 0 and abs(value) < 1e-3:
        text = next(t for t in (f"{value:.{digits}e}" for digits in range(17)) if float(t) == value)
        mantissa, exponent = text.split("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    return repr(value)


def _reads_back(text: str, value: Any) -> bool:
    parsed = parse_override("k=" + text)
    return not parsed.error and type(parsed.value) is type(value) and parsed.value == value


def format_override(key: str, value: Any, op: Op = "=") -> str:
    """`key=value` text with the op prefix (`+`, `++`, `~`)."""
    prefix = "" if op == "=" else op
    return f"{prefix}{key}={format_value(value)}"
