"""Check many files on every core: one worker process per core, results in the order given.

Checking a file is pure CPU work on its own text, so files are shared out to forked workers (a
fork inherits the imports and the caches the parent warmed on the first file, which it checks
itself). A few files, stdin (`-`), a single core, or `VERL_GEN_JOBS=1` stay in this process.
`VERL_GEN_JOBS=N` sets the number of workers (default: the cores this process may run on).
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Callable, TypeVar

Options = TypeVar("Options")
Result = TypeVar("Result")

JOBS_ENV = "VERL_GEN_JOBS"
MIN_FILES = 8  # below this, starting workers costs more than it saves

# What a forked worker runs: set by map_files just before the fork, read by _run in the child.
_job: tuple[Callable[[str, object], object], object] | None = None


def jobs() -> int:
    """How many workers to use: VERL_GEN_JOBS when it is a positive number, else the usable cores."""
    wanted = os.environ.get(JOBS_ENV, "").strip()
    if wanted.isdigit() and int(wanted) > 0:
        return int(wanted)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _run(path: str) -> object:
    assert _job is not None
    function, options = _job
    return function(path, options)


def map_files(function: Callable[[str, Options], Result], paths: list[str], options: Options) -> list[Result]:
    """[function(path, options) for path in paths], on several processes when that pays.
    `function` must not raise (each file's failure is part of its result)."""
    workers = min(jobs(), max(1, len(paths) - 1))
    if workers < 2 or len(paths) < MIN_FILES or "-" in paths or not _can_fork():
        return [function(path, options) for path in paths]
    first = function(paths[0], options)  # warms imports and caches, which the workers then share
    global _job
    _job = (function, options)  # type: ignore[assignment]  # the child calls it with these options
    # What the workers inherit (modules, schemas, warmed caches) lives as long as they do: moved
    # out of the collector's reach, a worker's full collections no longer rescan it, nor touch
    # (and so copy) its pages.
    gc.freeze()
    try:
        from multiprocessing import get_context

        with get_context("fork").Pool(workers) as pool:
            # Small chunks: scripts differ a lot in cost, and a worker left idle is wasted.
            rest = pool.map(_run, paths[1:], chunksize=max(1, min(16, len(paths) // (workers * 8))))
    except (OSError, ImportError):  # no fork here after all (a sandbox): do it in this process
        rest = [function(path, options) for path in paths[1:]]
    finally:
        _job = None
        gc.unfreeze()  # this process goes on (an in-process caller): its objects are collectable again
    return [first, *rest]  # type: ignore[list-item]


def _can_fork() -> bool:
    return sys.platform != "win32" and hasattr(os, "fork")


__all__ = ["JOBS_ENV", "jobs", "map_files"]
