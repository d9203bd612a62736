"""Builtins that change the evaluator's state rather than run a program: `source`, `cd`,
`set --`, `shift`, `exit`, `read`, `export`…, and calls of the script's own functions."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from generator.base.errors import InputError
from generator.base.files import SCRIPT_LIMIT
from generator.reading.shell.context import ASSIGN, EvaluatorParts, FileCtx, Flow, line_starts_of
from generator.reading.shell.comment_subst import mask_comment_substitutions
from generator.reading.shell.model import (CALL_COST, FUNCTION_CALLS, Field, Group, Piece, Var, as_text, has_unknown, size_of,
                                   too_large)
from generator.reading.shell.setters import Setters
from generator.reading.shell.words import Expander, ExpansionHost
from generator.base.files import read_input
from generator.base.safe_regex import lazy_pattern

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

# All files read through `source` together, like one launch script (files.SCRIPT_LIMIT).
SOURCE_BUDGET = SCRIPT_LIMIT
# The unknown marker of `$(dirname "$0")`, `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)` and the like.
_SCRIPT_DIR = lazy_pattern(r"<\?cmd:(?:cd_)?\W*(?:\$\()?dirname_\W*\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)\W*(?:_&&_pwd)?(?:_-P)?>")
_MAX_CALL_DEPTH = 8


class Builtins(EvaluatorParts):
    """State-changing builtins and function calls (mixed into walker.Evaluator)."""

    def _builtin(self, name: str, fields: list[Field], node: Node, flow: Flow, env: dict[str, str]) -> bool:
        """Run `name` if it is a builtin that changes the evaluator's state (True when it was one:
        it is then not recorded as a command)."""
        if name in _NO_EFFECT:
            return True
        handler = _HANDLERS.get(name)
        if handler is None:
            return False
        return handler(self, fields[1:], flow) is not False  # False: still a command to record

    def _b_source(self, args: list[Field], flow: Flow) -> None:
        if not args:
            return
        if len(args) == 1:
            self._source(args[0], flow)
            return
        # `source x.sh A B`: the file sees A B as "$@" while it runs; the caller's come back after.
        saved = self.state.args, self.state.args_label
        self.state.args, self.state.args_label = [list(f.pieces) for f in args[1:]], None
        try:
            self._source(args[0], flow)
        finally:
            self.state.args, self.state.args_label = saved

    def _b_cd(self, args: list[Field], flow: Flow) -> None:
        target = args[0] if args else None
        if target is None or target.unknowns:
            self.state.cwd = None
        elif self.state.cwd is not None:
            t = as_text(target.text)
            self.state.cwd = t if t.startswith("/") else os.path.normpath(os.path.join(self.state.cwd or ".", t))

    def _b_pushd(self, args: list[Field], flow: Flow) -> None:
        self.state.cwd = None

    def _b_set(self, args: list[Field], flow: Flow) -> None:
        if args and args[0].text == "--":
            parts, chars = size_of(p for f in args[1:] for p in f.pieces)
            self.work.charge(parts, chars)
            if too_large(parts, chars):  # `set -- "$@" "$@"` over and over
                self.state.args, self.state.args_label = [], "`set --` (too many to follow)"
                return
            self.state.args = [list(f.pieces) for f in args[1:]]
            self.state.args_label = None

    def _b_shift(self, args: list[Field], flow: Flow) -> None:
        if args and (args[0].unknowns or not args[0].text.isdigit()):
            self.state.args, self.state.args_label = [], f"`shift {as_text(args[0].text)}` (a count not known statically)"
            return
        count = int(args[0].text) if args else 1
        if self.state.args_label is None:
            self.state.args = self.state.args[count:]

    def _b_shopt(self, args: list[Field], flow: Flow) -> None:
        if any(f.text == "-s" for f in args) and any(f.text == "lastpipe" for f in args):
            self._lastpipe = True

    def _b_exit(self, args: list[Field], flow: Flow) -> None:
        if flow.branch in ("live", "loop") and flow.depth == 0:  # a merged loop copy never exits its base
            self.state.exited = True

    def _b_return(self, args: list[Field], flow: Flow) -> None:
        # In a function, where it surely runs: the rest of the body does not (walked as after
        # `exit`, until the call ends; _call_function clears it). Elsewhere nothing the reader follows.
        if self._local_frames and flow.branch in ("live", "loop") and not self.state.exited:
            self._returned = self.state.copy()
            self.state.exited = True

    def _b_break(self, args: list[Field], flow: Flow) -> None:
        if flow.branch in ("live", "loop"):
            self._break_requested = True

    def _b_read(self, args: list[Field], flow: Flow) -> None:
        for f in args:
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", f.text):
                self._set(f.text, Var(unknown=f"read from input by `read {f.text}`", label=f"read:{f.text}"))

    def _b_declare(self, args: list[Field], flow: Flow) -> None:
        # Only reached when tree-sitter did not parse it as a declaration.
        for f in args:
            m = ASSIGN.match(f.text)
            if m:
                value = f.text[m.end():]
                self._set(m.group(1), Var(pieces=[Piece(value, split=False)],
                                          group=Group(m.group(1), value, None, None)))

    def _source(self, target: Field, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        label = f"`source {as_text(target.text)}`"
        rel = as_text(target.text)
        script_dir = _SCRIPT_DIR().match(rel)
        if script_dir and self.base_dir is not None and not has_unknown(target.pieces[1:]):
            # `source "$(dirname "$0")/common.sh"`: relative to the script's own directory
            rel = os.path.join(self.base_dir, rel[script_dir.end():].lstrip("/"))
        elif target.unknowns or self.base_dir is None or self.state.cwd is None:
            self.state.unknown_sources.append(label + " (path not known statically)")
            self.clobber_all(f"may be set by {label} (a path not known statically)", "source")
            return
        path = rel if os.path.isabs(rel) else os.path.normpath(os.path.join(self.base_dir, self.state.cwd or "", rel))
        if path in self._sourcing or len(self._sourcing) > 4:
            self.clobber_all(f"may be set by {label} (sourced again inside itself, not followed)", "source")
            return
        parsed = self._parsed_source(path, label)
        if parsed is None:
            self.clobber_all(f"may be set by {label}, which could not be read", "source")
            return
        tree, sub = parsed
        self._sourcing.append(path)
        try:
            outer = self.fx
            self.fx = sub
            try:
                self.walk(tree.root_node, flow.with_(context=label))
            finally:
                self.fx = outer
        finally:
            self._sourcing.pop()

    def _parsed_source(self, path: str, label: str) -> tuple[Tree, FileCtx] | None:
        """A sourced file's syntax tree and context: read and parsed once however often it is
        sourced, each walk of it charged to the budget for all sourcing together; None (and the
        reason noted as an unknown source) when it cannot be read or the budget is spent."""
        cached = self._source_trees.get(path)
        if cached is None:
            data = self._read_sourced(path, label)
            if data is None:
                return None
            data, tree = mask_comment_substitutions(data)
            src = (data + b"\n\n").decode("latin-1")
            sub = FileCtx(path, src, line_starts_of(src), None)  # type: ignore[arg-type]
            sub.expander = Expander(src, path, cast("ExpansionHost", self))  # self is the whole Evaluator
            cached = self._source_trees[path] = (tree, sub)
            self.sourced[path] = sub
            self._collect_assigned(src)
        size = len(cached[1].src) - 2
        if self._sourced_bytes + size > SOURCE_BUDGET:
            self.state.unknown_sources.append(
                f"{label} (not read: sourcing reads more than {SOURCE_BUDGET // (1024 * 1024)} MB in total)")
            return None
        self._sourced_bytes += size
        return cached

    def _read_sourced(self, path: str, label: str) -> bytes | None:
        """A sourced file's bytes through the project's input layer (regular files only, size
        capped); None (and the reason noted as an unknown source) when it cannot be read."""
        try:
            data = read_input(path, limit=SOURCE_BUDGET, what="sourced file")
            if b"\0" in data:
                raise InputError("binary file")
            data.decode("utf-8")
        except InputError as err:
            why = "file not found" if str(err) == "no such file" else f"not read: {err}"
            self.state.unknown_sources.append(f"{label} ({why})")
            return None
        except UnicodeDecodeError:
            self.state.unknown_sources.append(f"{label} (not read: not UTF-8 text)")
            return None
        return data

    def _call_function(self, name: str, fields: list[Field], flow: Flow, passes_args: bool) -> None:
        if flow.depth >= _MAX_CALL_DEPTH:
            return
        body, fx = self.state.functions[name]
        self.work.charge(CALL_COST, body.end_byte - body.start_byte, FUNCTION_CALLS)
        saved_args, saved_label, saved_fx = self.state.args, self.state.args_label, self.fx
        self.state.args = [list(f.pieces) for f in fields[1:]]
        self.state.args_label = None
        saved_from_script = self.state.args_from_script
        self.state.args_from_script = passes_args  # `run "$@"` hands the script's arguments on
        self._local_frames.append({})
        self.fx = fx
        returned = self._returned
        self._returned = None
        try:
            inner = Flow(flow.branch, flow.context + (f"in function {as_text(name)}",), flow.depth + 1)
            self.walk(body, inner)
        finally:
            if self._returned is not None:  # the function returned: the caller goes on from there
                self.state = self._returned
            self._returned = returned
            frame = self._local_frames.pop()
            for var_name, old in frame.items():
                if old is None:
                    self.state.vars.pop(var_name, None)
                else:
                    self.state.vars[var_name] = old
            self.state.args, self.state.args_label, self.fx = saved_args, saved_label, saved_fx
            self.state.args_from_script = saved_from_script


_Handler = Callable[[Any, list[Field], Flow], "bool | None"]
_HANDLERS: dict[str, _Handler] = {
    "source": Builtins._b_source, ".": Builtins._b_source, "cd": Builtins._b_cd, "pushd": Builtins._b_pushd,
    "set": Builtins._b_set, "shift": Builtins._b_shift, "exit": Builtins._b_exit, "break": Builtins._b_break,
    "read": Builtins._b_read, "return": Builtins._b_return, "export": Builtins._b_declare, "local": Builtins._b_declare,
    "declare": Builtins._b_declare, "typeset": Builtins._b_declare, "readonly": Builtins._b_declare,
    "shopt": Builtins._b_shopt,
    # the other ways a builtin sets a variable (setters.py)
    "let": Setters._b_let, "mapfile": Setters._b_mapfile, "readarray": Setters._b_mapfile,
    "printf": Setters._b_printf, "getopts": Setters._b_getopts, "wait": Setters._b_wait,
    "coproc": Setters._b_coproc, "trap": Setters._b_trap,
}
# Builtins that change nothing the reader follows (and are not commands to record).
_NO_EFFECT = frozenset({"true", "false", ":", "continue", "umask", "ulimit",
                        "alias", "unalias", "hash", "popd"})
