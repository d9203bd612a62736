"""Absolute paths written on another machine, found in this checkout by their tail.

Launch scripts are committed as their authors ran them: `bash /mnt/<team>/<user>/proj/examples/
agent/run_x.sh`, `--config-path=/mnt/<disk>/Proj/pkg/rl/config/`. The folder before the
project's own layout (`/mnt/<team>/<user>/proj`) is the author's checkout; on the user's machine,
and for a static check, the same file is the checkout's own copy. A path that exists here is
taken as written; one that does not is looked up by its tail, longest first, under the script's
folder and the folders above it (a checkout's root is one of them), so that the wrapper's callee
is read and the call's config composed from the project instead of being left unknown.

At least two components of the tail must match (`agent/run_x.sh`, `rl/config`): one component
(`config`, `run.sh`) names too many folders to be evidence.
"""

from __future__ import annotations

import os
from typing import Callable

# How far above the script's folder a checkout's root may be (as for relative callees).
UP_LEVELS = 6
MIN_TAIL_PARTS = 2


def checkout_copy(path: str, start_dir: str | None, exists: Callable[[str], bool] = os.path.isfile,
                  up_levels: int = UP_LEVELS) -> str | None:
    """The file (or, with `exists=os.path.isdir`, the folder) an absolute `path` written on
    another machine stands for in this checkout: `path` itself when it exists here; else the
    longest tail of it (at least MIN_TAIL_PARTS components) that exists under `start_dir` or one
    of the folders above it, nearest folder first; None when there is none."""
    if not os.path.isabs(path):
        return None
    if exists(path):
        return path
    if start_dir is None:
        return None
    parts = [p for p in path.split("/") if p and p != "."]
    if ".." in parts:
        return None  # a path that climbs is not a layout to match
    bases = _bases(start_dir, up_levels)
    for first in range(1, len(parts) - MIN_TAIL_PARTS + 1):
        tail = os.path.join(*parts[first:])
        for base in bases:
            candidate = os.path.join(base, tail)
            if exists(candidate):
                return candidate
    return None


def _bases(start_dir: str, up_levels: int) -> list[str]:
    folder = os.path.abspath(start_dir)
    found = [folder]
    for _ in range(up_levels):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        found.append(parent)
        folder = parent
    return found
