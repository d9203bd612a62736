"""Resolve OmegaConf interpolations over a flat dotted dict, without building OmegaConf trees.

Handles what verl's configs and users' overrides contain: `${a.b}`, relative `${.x}` and
`${..x}`, `${oc.select:key,default}` (nested defaults too), `${oc.env:VAR,default}` (unknown:
we never read the user's environment), and interpolations embedded in text ("p${a.b}q").
A whole-value interpolation keeps the type of its target; an embedded one becomes text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Iterator

from generator.base.errors import InputError
from generator.schema.compose import unflatten

MISSING = "???"
_DIGIT = re.compile(r"\d")
# One budget for every interpolation resolved in one config (issue 21): a key looked up costs
# 1 unit, a subtree 1 per leaf, 64 characters of text built 1. 33 overrides that each double
# the one before (`x.l2='${x.l1}${x.l1}'`) built 23.6 GiB; verl's own configs need a few
# thousand units. Past it the call is refused (InterpolationBudget, one line, exit 2).
INTERP_WORK_LIMIT = 2_000_000
# The longest text one interpolation may build; longer is unknown ("too large").
MAX_INTERP_CHARS = 256 * 1024


class Unresolvable(Exception):
    """The value cannot be known statically (environment, unknown input, broken reference)."""


class InterpolationBudget(InputError):
    """Resolving the config's interpolations would take more than INTERP_WORK_LIMIT units."""

    def __init__(self) -> None:
        super().__init__(f"resolving its interpolations takes more than {INTERP_WORK_LIMIT:,} steps (values like "
                         "`${a}${a}` that double, or many references to a large subtree); refused")


class BrokenReference(Unresolvable):
    """The interpolation can never resolve (missing key, unset mandatory value, cycle):
    OmegaConf raises for it whatever the environment."""


def has_interpolation(value: object) -> bool:
    return isinstance(value, str) and "${" in value


# Inside quotes only the closing quote and a backslash (it escapes the next character) matter.
_IN_QUOTES = {"'": re.compile(r"[\\']"), '"': re.compile(r'[\\"]')}


@lru_cache(maxsize=None)
def _stops(chars: str) -> re.Pattern[str]:
    """One character of `chars` or a quote mark."""
    return re.compile("[" + re.escape(chars + "'\"") + "]")


def _unquoted(text: str, chars: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(index, character) for each of `chars` in `text` from `start` that stands outside quotes;
    quote marks and quoted text are passed over, and a backslash inside quotes escapes the next
    one. Found by regex searches, not a Python step a character: a check's interpolations have
    ~9,000 characters to pass (~1 ms)."""
    stops, i = _stops(chars), start
    while (hit := stops.search(text, i)) is not None:
        j, ch = hit.start(), hit.group()
        if ch in chars:
            yield j, ch
            i = j + 1
            continue
        closing, i = _IN_QUOTES[ch], j + 1
        while (end := closing.search(text, i)) is not None and end.group() == "\\":
            i = end.start() + 2
        if end is None:
            return
        i = end.end()


@lru_cache(maxsize=4096)  # pure; the same config strings come back on every call
def _split_top(text: str, sep: str) -> tuple[str, ...]:
    """Split on `sep` outside ${...}, [...], {...} and quotes."""
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in _unquoted(text, "[]{}" + sep):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return tuple(parts)


@lru_cache(maxsize=4096)  # pure; the same config strings come back on every call
def _find_close(text: str, start: int) -> int:
    """Index of the `}` closing the `${` whose body starts at `start`."""
    depth = 1
    for i, ch in _unquoted(text, "{}", start):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    raise BrokenReference(f"unterminated interpolation in {text!r}")


# Scalars _literal read before, by text (the same defaults come back in every config). A list or
# mapping is built afresh each time: the caller may keep and change it.
_SCALARS: dict[str, Any] = {}
_MAX_SCALARS = 8192


def _literal(text: str) -> Any:
    """A resolver argument as OmegaConf's grammar reads it (null, bools, numbers, [], {}, quotes)."""
    try:
        return _SCALARS[text]
    except KeyError:
        pass
    value = _read_literal(text)
    if not isinstance(value, (list, dict)) and len(_SCALARS) < _MAX_SCALARS:
        _SCALARS[text] = value
    return value


def _read_literal(text: str) -> Any:
    raw = text.strip()
    if raw == "":
        return ""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    low = raw.lower()
    if low == "null":
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(raw.replace("_", ""))
    except ValueError:
        pass
    try:
        if _DIGIT.search(raw) or low in ("inf", "-inf", "+inf", "nan"):
            return float(raw.replace("_", ""))
    except ValueError:
        pass
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        return [] if not inner else [_literal(p) for p in _split_top(inner, ",")]
    if raw.startswith("{") and raw.endswith("}"):
        inner = raw[1:-1].strip()
        out: dict[str, Any] = {}
        for item in _split_top(inner, ",") if inner else []:
            k, _, v = item.partition(":")
            out[k.strip()] = _literal(v)
        return out
    return raw


class Resolver:
    """Resolves interpolations in `values` (flat dotted dict).

    `unknown_of(key)` returns a reason when the key's own value depends on an unknown input
    (e.g. a `<?unset:HOME>` marker); references to such keys propagate that reason.
    """

    def __init__(
        self,
        values: dict[str, Any],
        nodes: Callable[[], set[str]] | None = None,
        unknown_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.values = values
        self._nodes = nodes
        self._unknown_of = unknown_of or (lambda key: None)
        self._cache: dict[str, Any] = {}
        self._failed: dict[str, Unresolvable] = {}  # a failure is remembered too (else retried exponentially)
        self._active: set[str] = set()
        self._work = 0  # kept across invalidate(): one budget for the whole config

    def _charge(self, units: int) -> None:
        self._work += units
        if self._work > INTERP_WORK_LIMIT:
            raise InterpolationBudget()

    def charge(self, units: int) -> None:
        """Count `units` of work resolved elsewhere for this config (InterpolationBudget past the limit)."""
        self._charge(units)

    @property
    def work(self) -> int:
        """The units charged so far."""
        return self._work

    # -- lookups -------------------------------------------------------------------------

    def _subtree(self, key: str) -> dict[str, Any] | None:
        if key in self._cache:
            cached: dict[str, Any] = self._cache[key]
            return cached
        prefix = key + "."
        self._charge(1 + (len(self.values) >> 6))
        found = {k[len(prefix):]: v for k, v in self.values.items() if k.startswith(prefix)}
        if not found:
            return None
        self._charge(len(found))

        tree = unflatten({k: self.resolve(prefix + k) for k in found})
        self._cache[key] = tree
        return tree

    def exists(self, key: str) -> bool:
        if key in self.values:
            return True
        if self._nodes is not None:
            return key in self._nodes()
        prefix = key + "."
        return any(k.startswith(prefix) for k in self.values)

    def resolve(self, key: str) -> Any:
        """The resolved value of `key` (a leaf or an inner node); KeyError when it does not exist."""
        self._charge(1)
        if key in self._cache:
            return self._cache[key]
        failed = self._failed.get(key)
        if failed is not None:
            raise type(failed)(*failed.args)
        if key not in self.values:
            sub = self._subtree(key)
            if sub is None:
                raise KeyError(key)
            return sub
        reason = self._unknown_of(key)
        if reason:
            raise Unresolvable(reason)
        raw = self.values[key]
        if not has_interpolation(raw):
            return raw
        if key in self._active:
            raise BrokenReference(f"interpolation cycle at {key}")
        self._active.add(key)
        try:
            value = self.evaluate(raw, key)
        except Unresolvable as err:
            # Remembered as a copy, raised as a fresh one: an exception that has been raised
            # holds its traceback, whose frames hold this resolver, and a cycle through it
            # would keep the whole composition alive until the cycle collector ran.
            self._failed[key] = type(err)(*err.args)
            raise
        finally:
            self._active.discard(key)
        self._cache[key] = value
        return value

    def invalidate(self) -> None:
        self._cache.clear()
        self._failed.clear()

    # -- evaluation ----------------------------------------------------------------------

    def _absolute(self, ref: str, owner: str) -> str:
        """`.x` / `..x` relative to the node holding `owner`; plain keys are absolute."""
        if not ref.startswith("."):
            return ref
        dots = len(ref) - len(ref.lstrip("."))
        parts = owner.split(".")[:-1]  # the node that holds the owner key
        if dots > 1:
            parts = parts[: len(parts) - (dots - 1)] if dots - 1 <= len(parts) else []
        rest = ref[dots:]
        return ".".join([*parts, rest]) if rest else ".".join(parts)

    def evaluate(self, text: str, owner: str) -> Any:
        """Evaluate a string that may contain interpolations, as the value of `owner`."""
        start = text.find("${")
        if start < 0:
            return text
        close = _find_close(text, start + 2)
        if start == 0 and close == len(text) - 1:
            return self._interpolation(text[2:close], owner)
        pieces: list[str] = []
        pos = size = 0
        while start >= 0:
            pieces.append(text[pos:start])
            close = _find_close(text, start + 2)
            value = self._interpolation(text[start + 2 : close], owner)
            piece = str(value)
            size += len(piece)
            self._charge(1 + (len(piece) >> 6))
            if size > MAX_INTERP_CHARS:
                raise Unresolvable(f"the interpolation builds more than {MAX_INTERP_CHARS // 1024} KiB of text "
                                   "(too large); not followed")
            pieces.append(piece)
            pos = close + 1
            start = text.find("${", pos)
        pieces.append(text[pos:])
        return "".join(pieces)

    def _interpolation(self, body: str, owner: str) -> Any:
        body = body.strip()
        head, colon, args = body.partition(":")
        if colon and not head.startswith(".") and "." in head and head.replace(".", "").replace("_", "").isalnum() and head.startswith("oc."):
            return self._call(head, args, owner)
        if colon and head.isidentifier():
            return self._call(head, args, owner)
        target = self._absolute(self.evaluate(body, owner) if "${" in body else body, owner)
        try:
            value = self.resolve(target)
        except KeyError:
            raise BrokenReference(f"interpolation ${{{body}}} points to a missing key {target}") from None
        if value == MISSING:
            raise BrokenReference(f"interpolation ${{{body}}} points to mandatory key {target} that is not set")
        return value

    def _call(self, name: str, args: str, owner: str) -> Any:
        parts = _split_top(args, ",") if args.strip() else []
        if name == "oc.select":
            if not parts:
                raise Unresolvable("oc.select without a key")
            target = self._absolute(str(self._arg(parts[0], owner)), owner)
            default = self._arg(",".join(parts[1:]), owner) if len(parts) > 1 else None
            if not self.exists(target):
                return default
            value = self.resolve(target)
            return default if value == MISSING else value
        if name == "oc.env":
            var = str(self._arg(parts[0], owner)) if parts else ""
            raise Unresolvable(f"depends on environment variable {var} at launch (${{oc.env:...}})")
        if name == "oc.decode":
            return _literal(str(self._arg(args, owner)))
        raise Unresolvable(f"resolver {name} is evaluated by verl at run time")

    def _arg(self, text: str, owner: str) -> Any:
        stripped = text.strip()
        if "${" in stripped:
            if stripped.startswith("${") and _find_close(stripped, 2) == len(stripped) - 1:
                return self._interpolation(stripped[2:-1], owner)
            return self.evaluate(stripped, owner)
        return _literal(stripped)
