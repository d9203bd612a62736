"""One command's state, in one object: everything `gen` holds about the project it is reading for
the length of one command, and nothing longer.

A Session owns the project boundary in force (generator.base.boundary: the root of the script being
judged and the places beside it that may be read), the paths the user named on the command line
(trusted), the folder arguments (`gen check DIR`), the folder answers remembered while many
scripts are checked (generator.base.folder_memo.one_run), and the open recorders of what a kept
result read (generator.base.files.recording_reads, for generator.base.cache's keys), and the results
computed from a user's files for the rest of the command (`kept`: each keyed by the stamps of
every file it read or folder it listed, each bounded in bytes, and all of them together; the
module-level caches left are pure and listed in tests/test_caches.py). Before, these were
four pieces of module state with their own resets; now `begin()` at the start of every command
(generator.cli) and of every test (tests/conftest.py) replaces them together, so nothing of one
command's project can bound, widen or answer for the next one.

The bottom of the import graph: the modules that keep their state here ask `current()`. A forked
worker (generator.base.pool) starts with its parent's session, which is still true of the same run.
A plain module global, not a ContextVar: a thread started by a command sees the same boundary
(a ContextVar would give a new thread none, i.e. unbounded reads).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

Value = TypeVar("Value")


class Bounds(Protocol):
    """What a session asks of the boundary it holds (generator.base.boundary.Boundary is the one)."""

    @property
    def root(self) -> Path: ...

    @property
    def others(self) -> tuple[Path, ...]: ...

    def allows(self, path: str | os.PathLike[str]) -> bool: ...

    def check(self, path: str | os.PathLike[str]) -> None: ...


class Corrections(NamedTuple):
    """What a stored calibration corrects for one model: factors on the step-time model's parts,
    and an offset on the training phases' memory (1.0 and 0: nothing). NamedTuples, not
    dataclasses: every command imports this module, and `gen check` starts without dataclasses."""

    rollout: float = 1.0
    log_prob: float = 1.0
    update: float = 1.0  # with its communication, pipeline bubble and offload
    weight_sync: float = 1.0
    memory_offset_gib: float = 0.0  # added to every training phase (update, optimizer step, log-prob)
    memory_runs: int = 0


class Calibration(NamedTuple):
    """The per-cluster corrections a command applies (generator.calibrate.saved finds them in
    the project or user configuration; docs/calibrate.md): plain numbers, so that the models
    below (generator.plan.step_time, generator.plan.memory) read them without knowing where
    they came from. Absent (Session.calibration None), every model gives what it gave before."""

    by_model: tuple[tuple[str, Corrections], ...] = ()  # fitted on the runs of each model
    others: Corrections = Corrections()  # for a model with no run of its own: what the runs agree on
    response_shares: tuple[tuple[str, float], ...] = ()  # (model name, mean response / max_response_length)
    line: str = ""  # how a report says it: "calibrated on 3 runs of this project, +-8%"

    def for_model(self, name: str | None) -> Corrections:
        return dict(self.by_model).get(name or "", self.others)


class Session:
    """The state of one command (see the module's doc)."""

    __slots__ = ("boundary", "calibration", "given", "kept", "kept_bytes", "memo", "parts", "recorders", "trusted")

    def __init__(self) -> None:
        self.boundary: Bounds | None = None  # the script being judged: reads are bounded to it
        self.trusted: list[Path] = []  # real paths the user named (`--config-dir`, `--model-config`)
        self.given: list[Path] = []  # folder arguments, as written, shortest first
        self.memo: dict[Hashable, object] | None = None  # folder answers, inside folder_memo.one_run()
        self.recorders: list[dict[str, str]] = []  # files.recording_reads: path -> digest of what was read
        self.calibration: Calibration | None = None  # stored corrections in force (plan, recipe, check, explain)
        # Results computed from files, each with the stamps of every file it was computed from
        # (`kept`, below), and their estimated size together.
        self.kept: dict[Hashable, tuple[object, tuple[tuple[str, Stamp], ...], int]] = {}
        self.kept_bytes = 0
        self.parts: dict[str, object] = {}  # state a module keeps for the command (`part`)

    def part(self, name: str, make: Callable[[], Value]) -> Value:
        """The state module `name` keeps for the length of this command (e.g. the config
        folders registered as schemas), made by `make()` on first use."""
        found = self.parts.get(name)
        if found is None:
            found = self.parts[name] = make()
        return found  # type: ignore[return-value]


# What a cached result may weigh (estimated by `approx_size`): one result over ENTRY_LIMIT is
# recomputed whenever it is asked for, and past SESSION_LIMIT for the command nothing more is kept.
ENTRY_LIMIT = 8 << 20
SESSION_LIMIT = 128 << 20

# A file's state as a cached result saw it: (modification time in ns, size, inode); None when
# there is no such file. Any edit, replacement, creation or removal changes it.
Stamp = tuple[int, int, int] | None


def stamp(path: str) -> Stamp:
    """The state of `path` now (links followed)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def kept(key: Hashable, compute: Callable[[], tuple[Value, Iterable[str | os.PathLike[str]], int]]) -> Value:
    """The value of `compute()`, kept in the command's session and keyed by every file it
    depends on: `compute` returns (value, the files and folders it read or listed, its size in
    bytes). A kept value is handed out again only while each of those files stats as it did when
    the value was computed (a folder's stamp changes when an entry is added or removed); one
    over ENTRY_LIMIT, or past SESSION_LIMIT for the session, is not kept. `key` names what is
    computed (start it with the asking module's name); an exception is not kept."""
    state = _current
    entry = state.kept.get(key)
    if entry is not None:
        value, stamps, size = entry
        if all(stamp(path) == seen for path, seen in stamps):
            return value  # type: ignore[return-value]
        del state.kept[key]
        state.kept_bytes -= size
    computed, files, size = compute()
    if size <= ENTRY_LIMIT and state.kept_bytes + size <= SESSION_LIMIT:
        stamps = tuple((name, stamp(name)) for name in dict.fromkeys(os.fspath(file) for file in files))
        state.kept[key] = (computed, stamps, size)
        state.kept_bytes += size
    return computed


def approx_size(value: object, limit: int = ENTRY_LIMIT) -> int:
    """About how many bytes `value` holds (sys.getsizeof over its containers, records and the
    objects they hold; each object counted once); the count stops once it passes `limit`."""
    seen: set[int] = set()
    stack = [value]
    total = 0
    while stack and total <= limit:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, (str, bytes, int, float, bool, type(None), Path)):
            continue
        else:
            fields = getattr(item, "__dict__", None)
            if isinstance(fields, dict):
                stack.append(fields)
            for name in getattr(type(item), "__slots__", ()):
                stack.append(getattr(item, name, None))
    return total


_current = Session()


def current() -> Session:
    """The session of the command running now."""
    return _current


def current_part(name: str, make: Callable[[], Value]) -> Value:
    """Session.part of the command running now: what a module asks on every call of a function
    the run keeps answers of (generator.schema.release_schema.release_cache), one call here."""
    return _current.part(name, make)


def begin() -> Session:
    """A new command: a fresh session (no script judged, nothing trusted, nothing remembered)."""
    global _current
    _current = Session()
    return _current


__all__ = ["ENTRY_LIMIT", "SESSION_LIMIT", "Bounds", "Calibration", "Corrections", "Session", "Stamp", "approx_size",
           "begin", "current", "kept", "stamp"]
