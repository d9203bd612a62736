"""Regular expressions built from user input, matched in linear time (issue 21).

Python's `re` backtracks: `^(a+)+b$` against 26 `a`s took 4.3 s, and a `.gitignore` line like
`*a*a*a*a*a*a*a*a*a*a*b` hung `gen check DIR`. Patterns a script or a repository supplies (a
`[[ $x =~ re ]]` test, a `.gitignore` glob) go through here: Google's RE2 (the `google-re2`
wheel, a dependency) matches in time linear in the text. Without RE2 installed, a pattern that
could backtrack (a quantifier inside a quantified group, a backreference, more than
`MAX_STARS` wildcards) is not matched: the caller treats the answer as unknown.

`search`/`fullmatch` return True/False, or None when the pattern cannot be judged safely (not a
valid regex for the engine, or risky without RE2).

Our own patterns are compiled with `re` as usual; `lazy_pattern` compiles one on its first use
instead of at import, for a pattern a typical check never reaches (issue 22: the 82 patterns
compiled at import were ~8 ms of a one-script check, half of them for text that script lacks).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any, AnyStr, Callable


# Without RE2: at most this many unbounded repeats in one pattern.
MAX_STARS = 6
# Longest text judged (longer: unknown); far above any path or shell value a test compares.
MAX_TEXT = 1 << 16


def lazy_pattern(pattern: AnyStr, flags: int = 0) -> Callable[[], re.Pattern[AnyStr]]:
    """`re.compile(pattern, flags)`, done on the first call and kept: `_X = lazy_pattern(...)`,
    then `_X().search(text)` (bound to a local name before a loop that matches many times)."""

    @cache
    def compiled() -> re.Pattern[AnyStr]:
        return re.compile(pattern, flags)

    return compiled


_RISKY = re.compile(r"\([^()]*[*+}][^()]*\)[*+{]|\\[1-9]")


@lru_cache(maxsize=1)
def _engine() -> Any:
    """RE2's module, or None without the wheel; imported on the first pattern judged (most
    scripts have none, and the import is ~3 ms of every start)."""
    try:  # pragma: no cover - depends on the installed wheel
        import re2  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover
        return None
    return re2


def have_re2() -> bool:
    return _engine() is not None


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    _re2 = _engine()
    if _re2 is not None:
        try:
            options = _re2.Options()
            options.log_errors = False
            return _re2.compile(pattern, options)
        except Exception:  # RE2 refuses it (e.g. a lookaround): not judged
            return None
    if _RISKY.search(pattern) or pattern.count("*") + pattern.count("+") > MAX_STARS:
        return None
    try:
        return re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return None


def search(pattern: str, text: str) -> bool | None:
    compiled = _compiled(pattern)
    if compiled is None or len(text) > MAX_TEXT:
        return None
    return compiled.search(text) is not None


def fullmatch(pattern: str, text: str) -> bool | None:
    compiled = _compiled(pattern)
    if compiled is None or len(text) > MAX_TEXT:
        return None
    return compiled.fullmatch(text) is not None


__all__ = ["MAX_STARS", "MAX_TEXT", "fullmatch", "have_re2", "lazy_pattern", "search"]
