"""Many glob patterns matched against many paths, each pattern compiled once (issue 35).

A repository or a project file supplies the patterns: `.gitignore` lines (`gen check DIR`) and
the project's `exclude` and `per-file-ignores` globs. Matched one by one, a `.gitignore` of
10,000 rules cost 0.65-1.2 s per file walked (200 files: 129 s) and 60,000 `exclude` patterns
8 s per script. Here a set is built once per source (one `.gitignore` file, one project file)
and asks each pattern only where it can match:

- a pattern with no wildcard is a dictionary lookup of the path or of its last component;
- `*LITERAL` (the common `*.pyc`, `*.log`) is a lookup of the component's suffixes;
- any other pattern is tried only when its longest literal run occurs in the text (a substring
  test), then matched by RE2 in linear time (generator.base.safe_regex).

The patterns one run reads are bounded (MAX_PATTERNS): past it, an InputError naming the file
and "the pattern limit" (exit 2).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from generator.base.safe_regex import fullmatch, lazy_pattern

# Patterns of one run, all sources together (.gitignore lines of a walk, a project's exclude and
# per-file-ignores globs). GitHub's largest .gitignore templates have a few hundred lines.
MAX_PATTERNS = 10_000

# Compiled on first use: a project without patterns (most) pays nothing at start-up.
_WILD = lazy_pattern(r"[*?\[\\]")


class Glob(NamedTuple):
    """One pattern. `target`: what it is matched against — "path" (the whole relative path),
    "name" (its last component) or "tail" (the path or any tail after a `/`, as a `.gitignore`
    line without an inner `/`). `crosses`: `*` and `?` also match `/` (fnmatch's habit)."""

    pattern: str
    target: str
    crosses: bool


_GLOB_TOKEN = lazy_pattern(r"\*\*/|\*\*|\*|\?|\[[^\]]*\]|[^*?\[]+|\[")


def glob_regex(pattern: str, crosses: bool) -> str:
    """The regex for a glob: `**` crosses folders, `*` and `?` stay inside one; with `crosses`,
    fnmatch's reading (`*` and `?` match `/` too). `[…]` as fnmatch reads it."""
    star, one = (".*", ".") if crosses else ("[^/]*", "[^/]")
    out = []
    import fnmatch

    for token in _GLOB_TOKEN().findall(pattern):
        if token.startswith("*") and crosses:  # fnmatch: every `*` is `.*` (`**/a` needs a `/`)
            out.append(".*" * token.count("*") + ("/" if token.endswith("/") else ""))
        elif token.startswith("*"):
            out.append({"**/": "(?:.*/)?", "**": ".*"}.get(token, star))
        elif token == "?":
            out.append(one)
        elif token.startswith("[") and token.endswith("]") and len(token) > 1:
            out.append(fnmatch.translate(token)[4:-3])
        else:
            out.append(re.escape(token))
    return "".join(out)


def _literal_hint(pattern: str) -> str:
    """The longest run of characters every match must contain (outside wildcards and `[…]`)."""
    runs = re.split(r"\*+|\?|\[[^\]]*\]|\\|/", pattern)  # not `/`: `**/z` matches `z`
    return max(runs, key=len) if runs else ""


class GlobSet:
    """Which of a list of globs match a path (their indices), each pattern compiled once."""

    def __init__(self, globs: list[Glob]) -> None:
        self.size = len(globs)
        self._exact: dict[tuple[str, str], list[int]] = {}  # (target, text) -> indices
        # `*LITERAL` and `LITERAL*`: (target, literal) -> [(index, whether the star may cross `/`)]
        self._suffix: dict[tuple[str, str], list[tuple[int, bool]]] = {}
        self._prefix: dict[tuple[str, str], list[tuple[int, bool]]] = {}
        general: list[tuple[int, str, str, str]] = []  # (index, target, hint, the glob)
        for index, glob in enumerate(globs):
            pattern, target, crosses = glob.pattern, glob.target, glob.crosses
            if target == "tail" and "/" not in pattern and "**" not in pattern:
                target = "name"  # `(?:.*/)?P` where P matches no `/`: the last component
            stem = pattern.strip("*")
            one_star = pattern.count("*") == 1 and stem and not _WILD().search(stem) and target != "tail"
            if not _WILD().search(pattern):
                self._exact.setdefault((target, pattern), []).append(index)
            elif one_star and pattern.startswith("*"):
                self._suffix.setdefault((target, stem), []).append((index, crosses))
            elif one_star and pattern.endswith("*"):
                self._prefix.setdefault((target, stem), []).append((index, crosses))
            else:
                general.append((index, target, _literal_hint(pattern), pattern))
        self._globs = globs
        self._regex: dict[int, str] = {}  # built on a pattern's first candidate path
        self._always = [entry for entry in general if not entry[2]]
        self._by_hint: dict[str, list[tuple[int, str, str, str]]] = {}
        for entry in general:
            if entry[2]:
                self._by_hint.setdefault(entry[2], []).append(entry)
        self._hints = list(self._by_hint)
        self._hint_set = _literal_set(self._hints)

    def matching(self, path: str) -> list[int]:
        """The indices of the globs that match `path` (a relative path with `/`), ascending."""
        name = path.rsplit("/", 1)[-1]
        texts = {"path": path, "name": name}
        found: list[int] = []
        for target, text in texts.items():
            found += self._exact.get((target, text), ())
            if self._suffix:
                for start in range(len(text)):
                    for index, crosses in self._suffix.get((target, text[start:]), ()):
                        if crosses or "/" not in text[:start]:
                            found.append(index)
            if self._prefix:
                for end in range(1, len(text) + 1):
                    for index, crosses in self._prefix.get((target, text[:end]), ()):
                        if crosses or "/" not in text[end:]:
                            found.append(index)
        for index, target, _hint, _glob in self._candidates(path):
            if fullmatch(self._regex_of(index), texts["path" if target == "tail" else target]) is True:
                found.append(index)
        return sorted(set(found))

    def _regex_of(self, index: int) -> str:
        regex = self._regex.get(index)
        if regex is None:
            glob = self._globs[index]
            regex = glob_regex(glob.pattern, glob.crosses)
            regex = self._regex[index] = "(?:.*/)?" + regex if glob.target == "tail" else regex
        return regex

    def _candidates(self, path: str) -> list[tuple[int, str, str, str]]:
        """The general patterns whose literal occurs in the path (a name's literal is in the path too)."""
        out = list(self._always)
        if self._hint_set is not None:
            for position in self._hint_set.Match(path) or ():  # None when no literal occurs
                out += self._by_hint[self._hints[position]]
        else:
            for hint, entries in self._by_hint.items():
                if hint in path:
                    out += entries
        return out


def _literal_set(literals: list[str]) -> Any:
    """RE2's set of these literals, searched in one pass (30,000 literals: 3 µs a path), or None
    (RE2 not installed, too few literals to gain, or a set RE2 cannot build)."""
    if len(literals) < 16:
        return None
    try:
        import re2  # type: ignore[import-not-found,import-untyped,unused-ignore]

        options = re2.Options()
        options.log_errors = False
        options.max_mem = 64 << 20
        literal_set = re2.Set.SearchSet(options)
        for literal in literals:
            literal_set.Add(re2.escape(literal))
        literal_set.Compile()
    except Exception:  # noqa: BLE001 - no RE2, or a set over its memory: the substring loop instead
        return None
    return literal_set


class PatternBudget:
    """Patterns read so far in one run (one walk, one project file); InputError past MAX_PATTERNS."""

    def __init__(self) -> None:
        self.count = 0

    def charge(self, count: int, where: object, what: str) -> None:
        self.count += count
        if self.count > MAX_PATTERNS:
            from generator.base.errors import InputError

            raise InputError(f"{where}: more than {MAX_PATTERNS:,} {what} in one run (refused; the pattern limit)")


__all__ = ["MAX_PATTERNS", "Glob", "GlobSet", "PatternBudget", "glob_regex"]
