"""The path of one `gen check FILE` through generator's modules and rooms (issue 35, "the house").

Runs `gen check FILE` in this process under `sys.setprofile` and records every time control
crosses from one generator module into another: a call into another module is a step in, the
return from it a step out. Import-time code (a module body running on its first import) is left
out: it is the cost of loading, not the path of the work.

Counted, at two grains (a module, and its room: the top-level package of generator/ that
tests/test_layers.py ranks):

- entered     how many modules (rooms) run code of the check
- climbs back how often control returns into a module (room) that then steps into another one
              again: the caller orchestrates, going down, coming back, going down again
- re-entries  how often control steps into a module (room) it had already stepped into and left
              (a helper called in a loop from the same line counts once: the loop is one visit)

Usage: python tools/module_path.py FILE [--show] [--args ...]
  --show  also prints the path itself, one step in per line, indented by depth

A room is read from the module's dotted name, so the same tool measures the tree before and after
a regroup; the module grain does not change when modules only move.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _module(frame: FrameType | None) -> str:
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name if name == "generator" or name.startswith("generator.") else ""


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


class Recorder:
    """Steps between modules, in order: ("in", caller, callee, key) and ("out", callee, caller)."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, str, str, Any]] = []
        self._loading = 0  # >0 while a module body runs (an import)

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return"):
            return  # C calls: not a module of ours
        code = frame.f_code
        if code.co_name == "<module>":
            self._loading += 1 if event == "call" else -1
            return
        if self._loading:
            return
        here = _module(frame)
        there = _module(frame.f_back)
        if not here or not there or here == there:
            return
        if event == "call":
            # the loop key: the same caller frame and line calling the same function again
            back = frame.f_back
            key = (id(back), back.f_lineno if back else 0, code)
            self.steps.append(("in", there, here, key))
        else:
            self.steps.append(("out", here, there, None))


def _collapse(steps: list[tuple[str, str, str, Any]]) -> list[tuple[str, str, str, Any]]:
    """A step in that repeats the step in just made and left (a loop over one helper) is dropped,
    with its step out."""
    kept: list[tuple[str, str, str, Any]] = []
    for step in steps:
        if step[0] == "in" and len(kept) >= 2 and kept[-1][0] == "out" and kept[-2][0] == "in" \
                and kept[-2][3] == step[3]:
            kept.pop()  # the step out of the previous round: this round goes on from there
            continue
        kept.append(step)
    return kept


def measure(steps: list[tuple[str, str, str, Any]], grain: Any, again: Counter[str] | None = None) -> dict[str, int]:
    """The three counts at one grain; `again`, when given, collects the re-entries per module (room)."""
    walk = [(kind, grain(a), grain(b)) for kind, a, b, _key in steps]
    walk = [step for step in walk if step[1] != step[2]]
    entered: set[str] = set()
    left: set[str] = set()
    re_entries = climbs = 0
    again = Counter() if again is None else again
    pending_return: str | None = None
    for kind, a, b in walk:
        if kind == "in":
            if pending_return == a:
                climbs += 1
            pending_return = None
            if b in entered and b in left:
                re_entries += 1
                again[b] += 1
            entered.update((a, b))
        else:
            left.add(a)
            pending_return = b
    return {"entered": len(entered), "climbs back": climbs, "re-entries": re_entries}


def trace_check(script: Path, extra: list[str]) -> list[tuple[str, str, str, Any]]:
    from generator.cli import main

    recorder = Recorder()
    argv = sys.argv
    sys.argv = ["gen", "check", str(script), *extra]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            sys.setprofile(recorder)
            try:
                main()
            except SystemExit:
                pass
            finally:
                sys.setprofile(None)
    finally:
        sys.argv = argv
    return _collapse(recorder.steps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--show", action="store_true")
    parser.add_argument("--args", nargs=argparse.REMAINDER, default=[])
    options = parser.parse_args()
    steps = trace_check(options.file, options.args)
    if options.show:
        depth = 0
        for kind, a, b, _key in steps:
            if kind == "in":
                print(f"{'  ' * depth}{a} -> {b}")
                depth += 1
            else:
                depth = max(depth - 1, 0)
    for label, grain in (("modules", lambda m: m), ("rooms", _room)):
        again: Counter[str] = Counter()
        numbers = measure(steps, grain, again)
        print(f"{label}: " + ", ".join(f"{value} {name}" for name, value in numbers.items()))
        print("  most re-entered: " + ", ".join(f"{name.removeprefix('generator.')} {count}"
                                                 for name, count in again.most_common(8)))
    rooms = Counter(_room(b) for kind, _a, b, _k in steps if kind == "in")
    print("steps into each room: " + ", ".join(f"{room} {count}" for room, count in rooms.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
