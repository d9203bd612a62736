"""One command's state, in one object: everything `gen` holds about the project it is reading for
the length of one command, and nothing longer.

A Session owns the project boundary in force (generator.boundary: the root of the script being
judged and the places beside it that may be read), the paths the user named on the command line
(trusted), the folder arguments (`gen check DIR`), the folder answers remembered while many
scripts are checked (generator.folder_memo.one_run), and the open recorders of what a kept
result read (generator.files.recording_reads, for generator.cache's keys). Before, these were
four pieces of module state with their own resets; now `begin()` at the start of every command
(generator.cli) and of every test (tests/conftest.py) replaces them together, so nothing of one
command's project can bound, widen or answer for the next one.

The bottom of the import graph: the modules that keep their state here ask `current()`. A forked
worker (generator.pool) starts with its parent's session, which is still true of the same run.
A plain module global, not a ContextVar: a thread started by a command sees the same boundary
(a ContextVar would give a new thread none, i.e. unbounded reads).
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from pathlib import Path
from typing import NamedTuple, Protocol


class Bounds(Protocol):
    """What a session asks of the boundary it holds (generator.boundary.Boundary is the one)."""

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

    __slots__ = ("boundary", "calibration", "given", "memo", "recorders", "trusted")

    def __init__(self) -> None:
        self.boundary: Bounds | None = None  # the script being judged: reads are bounded to it
        self.trusted: list[Path] = []  # real paths the user named (`--config-dir`, `--model-config`)
        self.given: list[Path] = []  # folder arguments, as written, shortest first
        self.memo: dict[Hashable, object] | None = None  # folder answers, inside folder_memo.one_run()
        self.recorders: list[dict[str, str]] = []  # files.recording_reads: path -> digest of what was read
        self.calibration: Calibration | None = None  # stored corrections in force (plan, recipe, check, explain)


_current = Session()


def current() -> Session:
    """The session of the command running now."""
    return _current


def begin() -> Session:
    """A new command: a fresh session (no script judged, nothing trusted, nothing remembered)."""
    global _current
    _current = Session()
    return _current


__all__ = ["Bounds", "Calibration", "Corrections", "Session", "begin", "current"]
