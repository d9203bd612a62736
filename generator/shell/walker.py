"""The static evaluator: walks a script's statements the way bash would run them, without
running anything, and records every simple command with its expanded arguments.

Decidable `if`/`case`/`[[ ]]`/`&&` conditions pick their branch (the others are walked as
`dead`); undecidable ones walk every branch (`conditional`) and merge what they set into
unknown-or-either values. Loops are walked as `loop`; functions when they are called;
`source` reads the file when it can be found.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Callable

from generator.launch import Hazard, Span, unknown_marker
from generator.shell import arith, patterns
from generator.shell.model import (
    BREAK,
    Elem,
    Field,
    Group,
    Piece,
    State,
    Var,
    as_text,
    from_text,
    has_unknown,
    pieces_text,
)
from generator.shell.parse import parse_bytes
from generator.shell.words import Expander, WordError, def_group

MAX_SOURCE_BYTES = 8 * 1024 * 1024
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_WORDISH = {
    "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
    "simple_expansion", "expansion", "command_substitution", "arithmetic_expansion", "number",
    "process_substitution", "variable_assignment", "command_name", "extglob_pattern",
    "brace_expression",
}
_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
_TOKEN_SPLIT = re.compile(r"[\s;(&|`]+")
_NAME_EQ = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_READ_NAMES = re.compile(r"\bread\s+(?:-\w+\s+)*([A-Za-z_][A-Za-z0-9_ ]*)")
# The unknown marker of `$(dirname "$0")`, `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)` and the like.
_SCRIPT_DIR = re.compile(r"<\?cmd:(?:cd_)?\W*(?:\$\()?dirname_\W*\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)\W*(?:_&&_pwd)?(?:_-P)?>")
_MAX_CALL_DEPTH = 8
_MAX_LOOP_ITEMS = 16
_ENV_LIKE = {"HOME", "PWD", "USER", "PATH"}


@dataclass
class FileCtx:
    path: str | None
    src: str  # latin-1
    line_starts: list[int]
    expander: Expander

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset)

    def span(self, a: int, b: int) -> Span:
        return Span(a, b, self.line_of(a))


@dataclass(frozen=True)
class Flow:
    branch: str = "live"  # live | conditional | loop | dead
    context: tuple[str, ...] = ()
    depth: int = 0

    def with_(self, branch: str | None = None, context: str | None = None) -> Flow:
        order = {"live": 0, "loop": 1, "conditional": 2, "dead": 3}
        new_branch = self.branch
        if branch is not None and order[branch] > order[self.branch]:
            new_branch = branch
        ctx = self.context + ((context,) if context else ())
        return Flow(new_branch, ctx, self.depth)


@dataclass
class CommandRecord:
    """One simple command bash would run, with its arguments as bash would pass them."""

    fields: list[Field]
    env: dict[str, str]
    span: Span
    path: str | None
    branch: str
    context: tuple[str, ...]
    passes_args: bool
    redirects: list[str] = field(default_factory=list)
    words: list[tuple[int, int]] = field(default_factory=list)  # source ranges of the words


def line_starts_of(src: str) -> list[int]:
    starts = [0]
    find = src.find
    i = find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


def _squash(text: str, limit: int = 70) -> str:
    text = " ".join(text.replace("\\\n", " ").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Evaluator:
    def __init__(self, *, base_dir: str | None, env: dict[str, str], args: list[str]) -> None:
        self.base_dir = base_dir
        self.env = {k: from_text(v) for k, v in env.items()}
        self.state = State(args=[[Piece(from_text(a), split=False)] for a in args], args_known=bool(args))
        self.records: list[CommandRecord] = []
        self.hazards: list[Hazard] = []
        self.saw_args = False
        self.assigned_names: set[str] = set()
        self._local_frames: list[dict[str, Var | None]] = []
        self._sourcing: list[str] = []
        self._arith_depth = 0
        self._loop_budget = 256  # loop-body walks with a known item, across the whole script
        self.fx: FileCtx | None = None

    # ------------------------------------------------------------------------------------
    # files

    def run_file(self, data: bytes, path: str | None) -> Any:
        tree = parse_bytes(data)
        src = (data + b"\n\n").decode("latin-1")  # the bytes tree-sitter parsed (offsets unchanged)
        fx = FileCtx(path, src, line_starts_of(src), None)  # type: ignore[arg-type]
        fx.expander = Expander(src, path, self)
        self.main_line_starts = fx.line_starts
        self._collect_assigned(src)
        self._report_errors(tree.root_node, fx)
        outer = self.fx
        self.fx = fx
        try:
            self.walk(tree.root_node, Flow())
        finally:
            self.fx = outer
        return tree

    def _collect_assigned(self, src: str) -> None:
        """Every name the file assigns anywhere (any branch, any function): an unset variable
        that is never assigned is a likely typo rather than a branch we could not decide."""
        tokens = _TOKEN_SPLIT.split(src)
        for n, token in enumerate(tokens):
            m = _NAME_EQ.match(token)
            if m:
                self.assigned_names.add(m.group(1))
            elif token == "for" and n + 1 < len(tokens) and _NAME.fullmatch(tokens[n + 1]):
                self.assigned_names.add(tokens[n + 1])
        for m in _READ_NAMES.finditer(src):
            self.assigned_names.update(m.group(1).split())

    def _report_errors(self, node: Any, fx: FileCtx) -> None:
        """ERROR/MISSING nodes outside words (inside a word our own lexer reads the text)."""
        if not node.has_error:
            return
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "ERROR" or n.is_missing:
                parent = n.parent
                if parent is not None and parent.type in ("expansion", "string", "concatenation"):
                    continue
                # Complete statements that tree-sitter wrapped into the ERROR are fine: the
                # trouble starts at the first child that is not one.
                bad = next((c for c in n.children if not (c.is_named and not c.has_error)), None)
                start = bad.start_byte if bad is not None else n.start_byte
                start = min(start, max(len(fx.src) - 3, 0))  # not in the padding we appended
                line = fx.line_of(start)
                snippet = _squash(fx.src[start : min(n.end_byte, start + 40)], 40)
                what = (f"missing `{n.type}`" if n.is_missing else
                        f"`{as_text(snippet)}`" if snippet else "unexpected end of file")
                self.hazards.append(Hazard("parse-error", line,
                                           f"bash syntax the reader cannot parse at line {line}: {what}",
                                           fx.span(start, min(max(n.end_byte, start), len(fx.src) - 2))))
                continue
            if n.has_error:
                stack.extend(n.children)

    # ------------------------------------------------------------------------------------
    # expansion host (see words.ExpansionHost)

    def get_var(self, name: str) -> Var | None:
        var = self.state.vars.get(name)
        if var is not None:
            return var
        if name in self.env:
            text = self.env[name]
            return Var(pieces=[Piece(text, split=False)], group=Group(name, text, None, None))
        return None

    def _unset_reason(self, name: str) -> str:
        reason = f"${name} is not set by the script (an environment variable?)"
        if self.state.unknown_sources:
            reason += "; it may be set by " + ", ".join(self.state.unknown_sources)
        return reason

    def lookup_pieces(self, name: str, a: int, b: int, *, dq: bool, index: str | None = None,
                      tilde: bool = False) -> list[Piece]:
        fx = self.fx
        path = fx.path if fx else None
        quote = '"' if dq else ""
        if index is None and (name.isdigit() or name in ("@", "*", "#", "?", "$", "!", "-")):
            return self.special_pieces(name, a, b, dq)
        var = self.get_var(name)
        if var is None:
            label = f"unset:{name}"
            return [Piece(unknown_marker(label), a, b, False, quote, None, None, path,
                          unknown=self._unset_reason(name))]
        if var.unknown:
            return [Piece(unknown_marker(var.label), a, b, False, quote, None, None, path,
                          unknown=var.unknown, group=var.group)]
        if var.elems is not None:
            return self._array_pieces(var, name, index, a, b, dq)
        if index not in (None, "0", "@", "*"):
            idx = self._index_value(index)
            if idx != 0:
                return [Piece("", a, b, False, quote, None, None, path, kind="vanish")]
        value = var.pieces or []
        group = var.group
        if group is None:
            return [p.copy(split=not dq) for p in value]
        return [p.copy(split=not dq, group=group, inner=p.group if p.group is not group else p.inner)
                for p in value]

    def _index_value(self, index: str) -> int | None:
        try:
            return arith.evaluate(index, self.arith_lookup)
        except (arith.ArithError, ValueError, RecursionError):
            return None

    def _array_pieces(self, var: Var, name: str, index: str | None, a: int, b: int, dq: bool) -> list[Piece]:
        elems = var.elems or []
        path = self.fx.path if self.fx else None
        quote = '"' if dq else ""
        if index in ("@", "*"):
            out: list[Piece] = []
            for n, el in enumerate(e for e in elems if e.present):
                if n:
                    out.append(BREAK if (index == "@" or not dq) else Piece(" ", split=False))
                elem = (el.a, el.b, el.path) if el.a is not None else None
                if not el.pieces:
                    out.append(Piece("", el.a, el.a, True, quote, None, None, el.path, split=False, elem=elem))
                for p in el.pieces:
                    out.append(p.copy(split=not dq, elem=elem))
            if not elems:
                out.append(Piece("", a, b, False, quote, None, None, path, kind="vanish"))
            return out
        idx = 0 if index is None else self._index_value(index)
        if idx is None:
            return [Piece(unknown_marker(f"index:{name}"), a, b, False, quote, None, None, path,
                          unknown=f"index `{index}` of {name} is unknown")]
        if idx < 0:
            idx += len(elems)
        if 0 <= idx < len(elems) and elems[idx].present:
            el = elems[idx]
            group = def_group(name, el.pieces, el.a or 0, el.b or 0, "", el.path)
            return [p.copy(split=not dq, group=group) for p in el.pieces]
        return [Piece("", a, b, False, quote, None, None, path, kind="vanish")]

    def special_pieces(self, ch: str, a: int, b: int, dq: bool) -> list[Piece]:
        path = self.fx.path if self.fx else None
        quote = '"' if dq else ""
        st = self.state
        if ch in ("@", "*"):
            return self.positional_pieces(a, b, dq, 1, None, star=ch == "*")
        if ch.isdigit():
            n = int(ch)
            if n == 0:
                return [Piece(unknown_marker("$0"), a, b, False, quote, None, None, path,
                              unknown="$0: the path the script was started with")]
            if st.args_label is None and n <= len(st.args):
                return [p.copy(split=not dq) for p in st.args[n - 1]]
            why = (f"argument ${n} of {st.args_label}" if st.args_label
                   else f"the script's argument ${n} (give it with --arg)")
            return [Piece(unknown_marker(f"${n}"), a, b, False, quote, None, None, path, unknown=why)]
        if ch == "#":
            if st.args_label is None and st.args_known:
                return [Piece(str(len(st.args)), a, b, False, quote, None, None, path, split=not dq)]
            return [Piece(unknown_marker("$#"), a, b, False, quote, None, None, path, unknown="number of arguments")]
        what = {"?": "exit status of the last command", "$": "process id", "!": "id of the last background job",
                "-": "shell option flags"}[ch]
        return [Piece(unknown_marker(f"${ch}"), a, b, False, quote, None, None, path, unknown=what)]

    def positional_pieces(self, a: int, b: int, dq: bool, offset: int, length: int | None,
                          star: bool = False) -> list[Piece]:
        if self.state.args_from_script:
            self.saw_args = True
        path = self.fx.path if self.fx else None
        quote = '"' if dq else ""
        st = self.state
        if st.args_label is not None:
            return [Piece(unknown_marker("$@"), a, b, False, quote, None, None, path,
                          unknown=f"the arguments of {st.args_label}")]
        args = st.args if offset == 0 else st.args[max(offset - 1, 0):]
        if length is not None:
            args = args[: max(length, 0)]
        if not args:
            return [Piece("", a, b, False, quote, None, None, path, kind="vanish")]
        out: list[Piece] = []
        for n, arg in enumerate(args):
            if n:
                out.append(Piece(" ", split=False) if (star and dq) else BREAK)
            out.extend(p.copy(split=not dq) for p in arg)
        return out

    def param_state(self, name: str, index: str | None) -> str:
        st = self.state
        if name.isdigit():
            n = int(name)
            if n == 0:
                return "unknown"
            if st.args_label is not None:
                return "unknown"
            if n > len(st.args):
                return "unset"
            return "null" if pieces_text(st.args[n - 1]) == "" else "set"
        if name in ("@", "*"):
            if st.args_label is not None:
                return "unknown"
            return "set" if st.args else "unset"
        var = self.get_var(name)
        if var is None:
            return "unset"
        if var.unknown:
            return "unknown"
        if var.elems is not None:
            if index in ("@", "*"):
                return "set" if var.elems else "unset"
            idx = 0 if index is None else self._index_value(index)
            if idx is None:
                return "unknown"
            if not (0 <= idx < len(var.elems)):
                return "unset"
            value = var.elems[idx].pieces
        else:
            value = var.pieces or []
        if value and all(p.unknown for p in value):
            return "unknown"
        return "set" if pieces_text(value) else "null"

    def assign_scalar(self, name: str, pieces: list[Piece], group: Group | None) -> None:
        self._set(name, Var(pieces=pieces, group=group))

    def arith_lookup(self, name: str) -> int:
        var = self.get_var(name)
        if var is None or var.unknown:
            raise arith.ArithError(f"{name} is not known")
        value = var.elems[0].pieces if (var.elems is not None and var.elems) else (var.pieces or [])
        if has_unknown(value):
            raise arith.ArithError(f"{name} is not known")
        text = pieces_text(value).strip()
        if not text:
            return 0
        if re.fullmatch(r"[+-]?[0-9]+", text):
            return int(text)
        if self._arith_depth > 10:
            raise arith.ArithError("arithmetic nests too deeply")
        self._arith_depth += 1
        try:
            return arith.evaluate(text, self.arith_lookup)
        finally:
            self._arith_depth -= 1

    # ------------------------------------------------------------------------------------
    # state changes

    def _set(self, name: str, var: Var) -> None:
        old = self.state.vars.get(name)
        if old is not None and old.exported:
            var.exported = True
        self.state.vars[name] = var

    def _local(self, name: str) -> None:
        if self._local_frames and name not in self._local_frames[-1]:
            self._local_frames[-1][name] = self.state.vars.get(name)

    # ------------------------------------------------------------------------------------
    # the walk

    def walk(self, node: Any, flow: Flow) -> None:
        t = node.type
        handler = getattr(self, "_s_" + t, None)
        if self.state.exited and flow.branch != "dead":
            flow = flow.with_("dead", "after `exit`")
        if handler is not None:
            handler(node, flow)
            return
        if t in ("comment", "heredoc_body", "heredoc_start", "heredoc_end", ";", ";;", "&", "\n"):
            return
        if t == "ERROR":
            for child in node.children:
                if child.is_named:
                    self.walk(child, flow)
            return
        if node.is_named and node.child_count:
            self._statements(node.children, flow)

    def _statements(self, children: list[Any], flow: Flow) -> None:
        for n, child in enumerate(children):
            if not child.is_named:
                continue
            before = len(self.records)
            self.walk(child, flow)
            nxt = children[n + 1] if n + 1 < len(children) else None
            if nxt is not None and nxt.type == "&":
                for rec in self.records[before:]:
                    rec.redirects.append("&")

    def _s_program(self, node: Any, flow: Flow) -> None:
        self._statements(node.children, flow)

    _s_compound_statement = _s_program
    _s_do_group = _s_program

    def _s_subshell(self, node: Any, flow: Flow) -> None:
        saved = self.state
        self.state = saved.copy()
        try:
            self._statements(node.children, flow)
        finally:
            self.state = saved

    def _s_comment(self, node: Any, flow: Flow) -> None:
        return

    # -- assignments and declarations ---------------------------------------------------------

    def _s_variable_assignment(self, node: Any, flow: Flow) -> None:
        self._assign_node(node, node.end_byte)

    def _s_variable_assignments(self, node: Any, flow: Flow) -> None:
        for child in node.children:
            if child.type == "variable_assignment":
                self._assign_node(child, child.end_byte)

    def _assign_node(self, node: Any, end: int, *, local: bool = False, export: bool = False,
                     as_array: bool = False) -> None:
        fx = self.fx
        assert fx is not None
        m = _ASSIGN.match(fx.src, node.start_byte, end)
        if not m:
            return
        name, index, plus = m.group(1), m.group(2), m.group(3) == "+"
        self.assigned_names.add(name)
        if local:
            self._local(name)
        value_node = node.child_by_field_name("value")
        va = m.end()
        if value_node is not None and value_node.type == "array" and value_node.end_byte == end:
            elems = self._array_elems(value_node)
            old = self.state.vars.get(name)
            if plus and old is not None and not old.unknown:
                base = old.elems if old.elems is not None else (
                    [Elem(old.pieces or [], None, None, None)] if old.pieces is not None else [])
                elems = list(base) + elems
            self._set(name, Var(elems=elems, exported=export))
            return
        pieces = self._expand_assign_value(va, end)
        if index is not None:
            self._assign_index(name, index[1:-1], pieces, va, end, plus)
            return
        old = self.get_var(name)
        if plus and old is not None and not old.unknown and old.elems is None:
            joined = (old.pieces or []) + pieces
            group = Group(name, pieces_text(joined), None, None, "", fx.path)
            if not old.pieces:
                group = def_group(name, pieces, va, end, "", fx.path)
            self._set(name, Var(pieces=joined, group=group, exported=export))
            return
        if plus and old is not None and old.elems is not None:
            self._set(name, Var(elems=old.elems + [Elem(pieces, va, end, fx.path)], exported=export))
            return
        if plus and old is not None and old.unknown:
            self._set(name, Var(unknown=old.unknown, label=old.label, exported=export))
            return
        group = def_group(name, pieces, va, end, "", fx.path)
        if len(pieces) == 1 and pieces[0].unknown:
            # X=$(cmd) or X=$UNSET: the variable is unknown; its definition is still editable
            p = pieces[0]
            self._set(name, Var(unknown=p.unknown, label=p.text[2:-1], exported=export,
                                group=Group(name, p.text, va, end, "", fx.path)))
            return
        self._set(name, Var(pieces=pieces, group=group, exported=export))

    def _expand_assign_value(self, a: int, b: int) -> list[Piece]:
        fx = self.fx
        assert fx is not None
        try:
            pieces = fx.expander.word(a, b, assign=True)
        except WordError as err:
            return [Piece(unknown_marker("parse-error"), a, b, path=fx.path, unknown=str(err))]
        return [p.copy(split=False, elem=None) for p in pieces]

    def _assign_index(self, name: str, index: str, pieces: list[Piece], a: int, b: int, plus: bool) -> None:
        fx = self.fx
        assert fx is not None
        var = self.state.vars.get(name)
        idx = self._index_value(index)
        if var is not None and var.unknown:
            return
        elems = list(var.elems) if (var is not None and var.elems is not None) else (
            [Elem(var.pieces or [], None, None, None)] if (var is not None and var.pieces is not None) else [])
        if idx is None or idx < 0 or idx > 4096:
            self._set(name, Var(unknown=f"element {index} of {name} is set with an unknown index",
                                label=f"index:{name}"))
            return
        while len(elems) <= idx:
            elems.append(Elem([], None, None, None, present=False))
        elems[idx] = Elem((elems[idx].pieces + pieces) if plus else pieces, a, b, fx.path)
        self._set(name, Var(elems=elems))

    def _array_elems(self, array_node: Any) -> list[Elem]:
        fx = self.fx
        assert fx is not None
        ranges = _merged_ranges([c for c in array_node.children if c.type not in ("(", ")", "comment")])
        elems: list[Elem] = []
        for a, b, _t in ranges:
            try:
                fields = fx.expander.fields(a, b)
            except WordError as err:
                fields = [Field([Piece(unknown_marker("parse-error"), a, b, path=fx.path, unknown=str(err))],
                                a, b, fx.path)]
            for f in fields:
                if f.origin == "string":
                    elems.append(Elem([p.copy(split=False) for p in f.pieces], f.word_a, f.word_b, f.path))
                else:
                    elems.append(Elem([p.copy(split=False) for p in f.pieces], a, b, fx.path))
        return elems

    def _s_declaration_command(self, node: Any, flow: Flow) -> None:
        keyword = node.children[0].type if node.children else ""
        local = keyword in ("local",) or (keyword in ("declare", "typeset") and self._local_frames)
        export = keyword == "export"
        fx = self.fx
        assert fx is not None
        as_array = False
        for child in node.children[1:]:
            text = fx.src[child.start_byte : child.end_byte]
            if child.type == "word" and text.startswith("-"):
                as_array = as_array or "a" in text or "A" in text
                export = export or "x" in text
                continue
            if child.type == "variable_assignment":
                self._assign_node(child, child.end_byte, local=local, export=export)
            elif child.type == "variable_name":
                name = text
                self.assigned_names.add(name)
                if local:
                    self._local(name)
                    if name not in self.state.vars or self._local_frames:
                        self.state.vars[name] = Var(pieces=[], group=Group(name, "", None, None))
                elif as_array and name not in self.state.vars:
                    self.state.vars[name] = Var(elems=[])
                elif export and name in self.state.vars:
                    self.state.vars[name].exported = True

    def _s_unset_command(self, node: Any, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        for child in node.children[1:]:
            name = fx.src[child.start_byte : child.end_byte]
            if child.type == "variable_name" or _ASSIGN.match(name + "=") or re.fullmatch(r"\w+", name):
                self.state.vars.pop(name, None)

    # -- control flow -------------------------------------------------------------------------

    def _cond_text(self, node: Any) -> str:
        fx = self.fx
        assert fx is not None
        return as_text(_squash(fx.src[node.start_byte : node.end_byte]))

    def _s_if_statement(self, node: Any, flow: Flow) -> None:
        clauses: list[tuple[list[Any], list[Any], str]] = []
        cond: list[Any] = []
        body: list[Any] = []
        phase = "if"
        label = ""
        for child in node.children:
            t = child.type
            if t in ("if", "then", "fi"):
                if t == "then":
                    phase = "then"
                continue
            if t in ("elif_clause", "else_clause"):
                continue
            if phase == "if":
                if child.is_named:
                    cond.append(child)
            else:
                body.append(child)
        label = "if " + " ".join(self._cond_text(c) for c in cond)
        clauses.append((cond, body, label))
        for child in node.children:
            if child.type == "elif_clause":
                c2: list[Any] = []
                b2: list[Any] = []
                ph = "elif"
                for g in child.children:
                    if g.type in ("elif",):
                        continue
                    if g.type == "then":
                        ph = "then"
                        continue
                    (c2 if ph == "elif" else b2).append(g)
                c2 = [g for g in c2 if g.is_named]
                clauses.append((c2, b2, "elif " + " ".join(self._cond_text(c) for c in c2)))
            elif child.type == "else_clause":
                clauses.append(([], [g for g in child.children if g.type != "else"], "else"))
        arms = [(self._condition(cond_nodes, flow), body, label) for cond_nodes, body, label in clauses]
        self._branches(arms, flow, clauses[0][2])

    def _condition(self, cond_nodes: list[Any], flow: Flow) -> Callable[[], bool | None]:
        # Evaluated only when the arm is reached, as bash does (`[]` is the else arm: true).
        return lambda: self._decide(cond_nodes, flow) if cond_nodes else True

    def _branches(self, arms: list[tuple[Callable[[], bool | None], list[Any], str]], flow: Flow,
                  merge_label: str) -> None:
        """Walk if/elif/else or case arms: the first arm decided true runs, arms decided false are
        read as dead, and undecided arms run on copies whose outcomes are merged."""
        base = self.state
        outcomes: list[State] = []
        undecided = False
        taken = False
        for decide, body, label in arms:
            if taken:
                self._walk_dead([], body, flow, label)
                continue
            value = decide()
            if value is False or flow.branch == "dead":
                self._walk_dead([], body, flow, label)
                continue
            if value is True and not undecided:
                self.state = base
                self._statements(body, flow.with_(context=label))
                base = self.state
                taken = True
                continue
            self.state = base.copy()
            self._statements(body, flow.with_("conditional", label))
            outcomes.append(self.state)
            self.state = base
            undecided = True
            if value is True:
                taken = True
        if undecided:
            if not taken:
                outcomes.append(base)
            self.state = _merge(outcomes, merge_label)
        else:
            self.state = base

    def _walk_dead(self, cond_nodes: list[Any], body: list[Any], flow: Flow, label: str) -> None:
        saved = self.state
        self.state = saved.copy()
        self.state.exited = False
        try:
            self._statements(body, flow.with_("dead", label))
        finally:
            self.state = saved

    def _decide(self, nodes: list[Any], flow: Flow) -> bool | None:
        """The truth of a condition list (the last command decides), or None if unknown."""
        result: bool | None = None
        for node in nodes:
            if node.type in (";", "\n", "&", "comment"):
                continue
            result = self._truth(node, flow)
        return result

    def _truth(self, node: Any, flow: Flow) -> bool | None:
        t = node.type
        fx = self.fx
        assert fx is not None
        if t == "test_command":
            inner = [c for c in node.children if c.is_named]
            if not inner:
                return False
            first = node.children[0].type if node.children else ""
            if first == "((":
                return self._arith_truth(node)
            return self._test_expr(inner[0], double=first == "[[")
        if t == "negated_command":
            inner = [c for c in node.children if c.is_named]
            value = self._truth(inner[0], flow) if inner else None
            return None if value is None else not value
        if t == "list":
            parts = [c for c in node.children]
            left = self._truth(parts[0], flow)
            op = parts[1].type if len(parts) > 1 else ""
            right_node = parts[2] if len(parts) > 2 else None
            if right_node is None:
                return left
            if op == "&&":
                if left is False:
                    return False
                right = self._truth(right_node, flow)
                if left is True:
                    return right
                return False if right is False else None
            if op == "||":
                if left is True:
                    return True
                right = self._truth(right_node, flow)
                if left is False:
                    return right
                return True if right is True else None
            return None
        if t == "compound_statement" and node.children and node.children[0].type == "((":
            return self._arith_truth(node)
        if t == "command":
            name = node.child_by_field_name("name")
            text = fx.src[name.start_byte : name.end_byte] if name is not None else ""
            if text in ("true", ":") and len(node.children) == 1:
                return True
            if text == "false" and len(node.children) == 1:
                return False
            if text in ("test", "["):
                return self._test_command(node)
        if t == "variable_assignment":
            self.walk(node, flow)
            return True
        # Anything else runs as a command whose status we cannot know.
        self.walk(node, flow)
        return None

    def _test_command(self, node: Any) -> bool | None:
        """`test …` / `[ … ]` written as a plain command: the 1-, 2- and 3-argument forms."""
        fx = self.fx
        assert fx is not None
        args: list[str] = []
        for child in node.children_by_field_name("argument"):
            try:
                fields = fx.expander.fields(child.start_byte, child.end_byte)
            except WordError:
                return None
            for f in fields:
                if f.unknowns:
                    return None
                args.append(f.text)
        if args and args[-1] == "]":
            args = args[:-1]
        negate = False
        if len(args) >= 2 and args[0] == "!":
            negate, args = True, args[1:]
        result: bool | None = None
        if len(args) == 1:
            result = args[0] != ""
        elif len(args) == 2 and args[0] in ("-z", "-n"):
            result = (args[1] == "") if args[0] == "-z" else (args[1] != "")
        elif len(args) == 3:
            a, op, b = args
            if op in ("=", "=="):
                result = a == b
            elif op == "!=":
                result = a != b
            elif op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
                try:
                    x, y = int(a), int(b)
                except ValueError:
                    return None
                result = {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y,
                          "-ge": x >= y}[op]
        if result is None:
            return None
        return not result if negate else result

    def _arith_truth(self, node: Any) -> bool | None:
        fx = self.fx
        assert fx is not None
        try:
            pieces = fx.expander.expand(node.start_byte + 2, node.end_byte - 2, dq=True)
            if has_unknown(pieces):
                return None
            return arith.evaluate(pieces_text(pieces), self.arith_lookup) != 0
        except (arith.ArithError, WordError, ValueError, RecursionError):
            return None

    def _operand(self, node: Any) -> str | None:
        fx = self.fx
        assert fx is not None
        try:
            pieces = fx.expander.word(node.start_byte, node.end_byte)
        except WordError:
            return None
        if has_unknown(pieces):
            return None
        return pieces_text(pieces)

    def _pattern(self, node: Any) -> str | None:
        """A [[ == ]] right side or case pattern: unquoted glob chars are live."""
        fx = self.fx
        assert fx is not None
        try:
            pieces = fx.expander.expand(node.start_byte, node.end_byte)
        except WordError:
            return None
        if has_unknown(pieces):
            return None
        out = []
        for p in pieces:
            if p.kind:
                continue
            if p.q in ("'", '"', "$'", "\\"):
                out.append("".join("\\" + ch for ch in p.text))
            else:
                out.append(p.text)
        return "".join(out)

    def _test_expr(self, node: Any, double: bool) -> bool | None:
        t = node.type
        fx = self.fx
        assert fx is not None
        if t == "parenthesized_expression":
            inner = [c for c in node.children if c.is_named]
            return self._test_expr(inner[0], double) if inner else None
        if t == "unary_expression":
            op_node = node.child_by_field_name("operator") or node.children[0]
            op = fx.src[op_node.start_byte : op_node.end_byte]
            rest = [c for c in node.children if c is not op_node and c.id != op_node.id]
            operand = rest[-1] if rest else None
            if op == "!":
                value = self._test_expr(operand, double) if operand is not None else None
                return None if value is None else not value
            text = self._operand(operand) if operand is not None else ""
            if op == "-v":
                return None if text is None else self.param_state(text, None) != "unset"
            if text is None:
                return None
            if op == "-z":
                return text == ""
            if op == "-n":
                return text != ""
            return None  # file tests and the like need the filesystem
        if t == "binary_expression":
            op_node = node.child_by_field_name("operator")
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if op_node is None:
                kids = node.children
                if len(kids) == 3:
                    left, op_node, right = kids
                else:
                    return None
            op = fx.src[op_node.start_byte : op_node.end_byte]
            if op in ("&&", "-a", "||", "-o"):
                lv = self._test_expr(left, double) if left is not None else None
                if op in ("&&", "-a"):
                    if lv is False:
                        return False
                    rv = self._test_expr(right, double) if right is not None else None
                    return rv if lv is True else (False if rv is False else None)
                if lv is True:
                    return True
                rv = self._test_expr(right, double) if right is not None else None
                return rv if lv is False else (True if rv is True else None)
            if left is None or right is None:
                return None
            lt = self._operand(left)
            if lt is None:
                return None
            if op in ("==", "=", "!=") and double:
                pattern = self._pattern(right)
                if pattern is None:
                    return None
                matched = patterns.glob_match(pattern, lt)
                return matched if op != "!=" else not matched
            rt = self._operand(right)
            if rt is None:
                return None
            if op in ("==", "="):
                return lt == rt
            if op == "!=":
                return lt != rt
            if op == "=~":
                try:
                    return re.search(rt, lt) is not None
                except re.error:
                    return None
            if op in ("<", ">"):
                return lt < rt if op == "<" else lt > rt
            if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
                try:
                    x, y = int(lt.strip()), int(rt.strip())
                except ValueError:
                    return None
                return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y,
                        "-gt": x > y, "-ge": x >= y}[op]
            return None
        text = self._operand(node)
        return None if text is None else text != ""

    def _s_list(self, node: Any, flow: Flow) -> None:
        kids = node.children
        if len(kids) < 3:
            self._statements(kids, flow)
            return
        left, op, right = kids[0], kids[1].type, kids[2]
        if left.type in ("test_command", "negated_command", "list") or (
            left.type == "command" and self._is_true_false(left)
        ):
            value = self._truth(left, flow)
        else:
            self.walk(left, flow)
            value = True if op == "&&" else None  # commands are assumed to succeed
            if op == "||":
                value = True
        runs_right = value if op == "&&" else (None if value is None else not value)
        label = f"{'if' if op == '&&' else 'unless'} {self._cond_text(left)}"
        if runs_right is False:
            self._walk_dead([], [right], flow, label)
        elif runs_right is True:
            self.walk(right, flow)
        else:
            base = self.state
            self.state = base.copy()
            self.walk(right, flow.with_("conditional", label))
            self.state = _merge([self.state, base], label)

    def _is_true_false(self, node: Any) -> bool:
        fx = self.fx
        assert fx is not None
        name = node.child_by_field_name("name")
        return name is not None and fx.src[name.start_byte : name.end_byte] in ("true", "false", ":")

    def _s_negated_command(self, node: Any, flow: Flow) -> None:
        self._statements(node.children, flow)

    def _s_case_statement(self, node: Any, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        value_node = node.child_by_field_name("value")
        subject = self._operand(value_node) if value_node is not None else None
        arms: list[tuple[Callable[[], bool | None], list[Any], str]] = []
        for item in node.children:
            if item.type != "case_item":
                continue
            pats: list[Any] = []
            body: list[Any] = []
            seen_paren = False
            for c in item.children:
                if c.type == ")" and not seen_paren:
                    seen_paren = True
                    continue
                if not seen_paren:
                    if c.is_named:
                        pats.append(c)
                elif c.type not in (";;", ";&", ";;&"):
                    body.append(c)
            label = "case " + "|".join(self._cond_text(p) for p in pats)
            arms.append((self._case_match(pats, subject), body, label))
        self._branches(arms, flow, "case")

    def _case_match(self, pats: list[Any], subject: str | None) -> Callable[[], bool | None]:
        def matched() -> bool | None:
            if subject is None:
                return None
            results = [self._pattern(p) for p in pats]
            if any(r is None for r in results):
                return None
            return any(patterns.glob_match(r, subject) for r in results)  # type: ignore[arg-type]

        return matched

    def _s_for_statement(self, node: Any, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        var_node = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        name = fx.src[var_node.start_byte : var_node.end_byte] if var_node is not None else "_"
        value_nodes = [c for c in node.children_by_field_name("value")]
        items: list[Field] = []
        known = True
        if value_nodes:
            for vn in _merged_ranges(value_nodes):
                try:
                    fs = fx.expander.fields(vn[0], vn[1])
                except WordError:
                    known = False
                    continue
                items.extend(fs)
        else:
            items = self._positional_fields()
        if any(f.unknowns for f in items):
            known = False
        label = f"for {name} in " + _squash(" ".join(fx.src[v.start_byte : v.end_byte] for v in value_nodes) or '"$@"', 50)
        self.assigned_names.add(name)
        if body is None:
            return
        if known and 0 < len(items) <= min(_MAX_LOOP_ITEMS, self._loop_budget):
            self._loop_budget -= len(items)
            for item in items:
                self._set(name, Var(pieces=[p.copy(split=False, elem=None) for p in item.pieces],
                                    group=def_group(name, item.pieces, item.word_a, item.word_b, "", item.path)))
                self.walk(body, flow.with_("loop", f"for {name}={as_text(item.text)}"))
            return
        if known and not items:
            self._walk_dead([], [body], flow, label)
            return
        base = self.state
        self.state = base.copy()
        self._set(name, Var(unknown=f"the loop variable of `{label}`", label=f"loop:{name}"))
        self.walk(body, flow.with_("loop", label))
        self.state = _merge([self.state, base], label)

    def _positional_fields(self) -> list[Field]:
        st = self.state
        if st.args_label is not None:
            return [Field([Piece(unknown_marker("$@"), unknown=f"the arguments of {st.args_label}")], 0, 0, None)]
        return [Field(list(arg), 0, 0, None) for arg in st.args]

    def _s_while_statement(self, node: Any, flow: Flow) -> None:
        cond = node.child_by_field_name("condition")
        label = "while " + (self._cond_text(cond) if cond is not None else "")
        first = node.children[0].type if node.children else "while"
        if cond is not None and first == "while":
            value = self._truth(cond, flow) if cond.type in ("test_command", "command") else None
            if value is False:
                body = node.child_by_field_name("body")
                if body is not None:
                    self._walk_dead([], [body], flow, label)
                return
        body = node.child_by_field_name("body")
        base = self.state
        self.state = base.copy()
        if body is not None:
            self.walk(body, flow.with_("loop", label))
        self.state = _merge([self.state, base], label)

    def _s_c_style_for_statement(self, node: Any, flow: Flow) -> None:
        body = node.child_by_field_name("body")
        label = "for ((…))"
        base = self.state
        self.state = base.copy()
        if body is not None:
            self.walk(body, flow.with_("loop", label))
        self.state = _merge([self.state, base], label)

    def _s_function_definition(self, node: Any, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        self.state.functions[fx.src[name_node.start_byte : name_node.end_byte]] = (body, fx)

    # -- commands ------------------------------------------------------------------------------

    def _s_redirected_statement(self, node: Any, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        body = node.child_by_field_name("body")
        redirects = []
        for child in node.children:
            if child.type in _REDIRECTS:
                text = fx.src[child.start_byte : child.end_byte]
                if child.type == "heredoc_redirect":
                    text = text.split("\n", 1)[0]
                redirects.append(as_text(_squash(text).replace(" ", "")) if child.type == "file_redirect"
                                 else as_text(_squash(text)))
        before = len(self.records)
        if body is not None:
            if body.type == "command":
                self._command(body, flow, node)
            else:
                self.walk(body, flow)
        for rec in self.records[before:]:
            rec.redirects.extend(redirects)

    def _s_pipeline(self, node: Any, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        stages = [c for c in node.children if c.is_named]
        for n, stage in enumerate(stages):
            before = len(self.records)
            self.walk(stage, flow)
            if n + 1 < len(stages):
                rest = " | ".join(_squash(fx.src[s.start_byte : s.end_byte], 60) for s in stages[n + 1 :])
                for rec in self.records[before:]:
                    rec.redirects.append(as_text("| " + rest))

    def _s_command(self, node: Any, flow: Flow) -> None:
        self._command(node, flow, node)

    def _command(self, node: Any, flow: Flow, whole: Any) -> None:
        fx = self.fx
        assert fx is not None
        parts = [c for c in node.children if c.type not in _REDIRECTS and c.type != "comment"
                 and c.type not in ("heredoc_body",) and c.is_named]
        ranges = _merged_ranges(parts)
        # Leading NAME=value words are assignments (bash decides by text, so do we).
        n_assign = 0
        for a, b, kind in ranges:
            if kind == "variable_assignment" or (_ASSIGN.match(fx.src, a, b) and kind != "command_name"):
                n_assign += 1
            else:
                break
        assign_ranges = ranges[:n_assign]
        word_ranges = _with_escaped_spaces(fx.src, ranges[n_assign:])
        assign_nodes = {c.start_byte: c for c in parts if c.type == "variable_assignment"}
        if not word_ranges:
            for a, b, _k in assign_ranges:
                node_a = assign_nodes.get(a)
                if node_a is not None:
                    self._assign_node(node_a, b)
                else:
                    self._assign_text(a, b)
            return
        env: dict[str, str] = {}
        for a, b, _k in assign_ranges:
            m = _ASSIGN.match(fx.src, a, b)
            if m:
                env[m.group(1)] = as_text(pieces_text(self._expand_assign_value(m.end(), b)))
        self.saw_args = False
        fields: list[Field] = []
        for a, b, _k in word_ranges:
            try:
                for f in fx.expander.fields(a, b):
                    f.cmd_a = a
                    fields.append(f)
            except WordError as err:
                fields.append(Field([Piece(unknown_marker("parse-error"), a, b, path=fx.path,
                                           unknown=str(err))], a, b, fx.path))
        passes_args = self.saw_args
        self.saw_args = False
        if not fields:
            return
        name = fields[0].text if not fields[0].unknowns else ""
        if self._builtin(name, fields, node, flow, env):
            return
        if name in self.state.functions:
            self._call_function(name, fields, flow, passes_args)
            return
        self.records.append(CommandRecord(
            fields=fields, env=env, span=fx.span(whole.start_byte, whole.end_byte), path=fx.path,
            branch=flow.branch, context=flow.context, passes_args=passes_args,
            words=[(a, b) for a, b, _k in word_ranges],
        ))

    def _assign_text(self, a: int, b: int) -> None:
        fx = self.fx
        assert fx is not None
        m = _ASSIGN.match(fx.src, a, b)
        if not m:
            return
        name = m.group(1)
        self.assigned_names.add(name)
        pieces = self._expand_assign_value(m.end(), b)
        if m.group(2):
            self._assign_index(name, m.group(2)[1:-1], pieces, m.end(), b, bool(m.group(3)))
            return
        self._set(name, Var(pieces=pieces, group=def_group(name, pieces, m.end(), b, "", fx.path)))

    def _builtin(self, name: str, fields: list[Field], node: Any, flow: Flow, env: dict[str, str]) -> bool:
        fx = self.fx
        assert fx is not None
        args = fields[1:]
        if name in ("source", "."):
            if args:
                self._source(args[0], flow)
            return True
        if name == "cd":
            target = args[0] if args else None
            if target is None or target.unknowns:
                self.state.cwd = None
            elif self.state.cwd is not None:
                t = as_text(target.text)
                self.state.cwd = t if t.startswith("/") else os.path.normpath(os.path.join(self.state.cwd or ".", t))
            return True
        if name == "set":
            if args and args[0].text == "--":
                self.state.args = [list(f.pieces) for f in args[1:]]
                self.state.args_label = None
                self.state.args_known = True
            return True
        if name == "shift":
            count = 1
            if args and args[0].text.isdigit():
                count = int(args[0].text)
            if self.state.args_label is None:
                self.state.args = self.state.args[count:]
            return True
        if name in ("exit",):
            if flow.branch == "live" and flow.depth == 0:
                self.state.exited = True
            return True
        if name == "read":
            for f in args:
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", f.text):
                    self._set(f.text, Var(unknown=f"read from input by `read {f.text}`", label=f"read:{f.text}"))
            return True
        if name in ("export", "local", "declare", "typeset", "readonly"):
            # Only reached when tree-sitter did not parse it as a declaration.
            for f in args:
                m = _ASSIGN.match(f.text)
                if m:
                    value = f.text[m.end():]
                    self._set(m.group(1), Var(pieces=[Piece(value, split=False)],
                                              group=Group(m.group(1), value, None, None)))
            return True
        if name in ("true", "false", ":", "return", "break", "continue", "shopt", "trap", "wait",
                    "umask", "ulimit", "alias", "unalias", "hash", "pushd", "popd"):
            if name in ("pushd",):
                self.state.cwd = None
            return True
        return False

    def _source(self, target: Field, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        label = f"`source {as_text(target.text)}`"
        rel = as_text(target.text)
        script_dir = _SCRIPT_DIR.match(rel)
        if script_dir and self.base_dir is not None and not has_unknown(target.pieces[1:]):
            # `source "$(dirname "$0")/common.sh"`: relative to the script's own directory
            rel = os.path.join(self.base_dir, rel[script_dir.end():].lstrip("/"))
        elif target.unknowns or self.base_dir is None or self.state.cwd is None:
            self.state.unknown_sources.append(label + " (path not known statically)")
            return
        path = rel if os.path.isabs(rel) else os.path.normpath(os.path.join(self.base_dir, self.state.cwd or "", rel))
        if path in self._sourcing or len(self._sourcing) > 4:
            return
        try:
            if not os.path.isfile(path) or os.path.getsize(path) > MAX_SOURCE_BYTES:
                raise OSError("not a readable file")
            with open(path, "rb") as handle:
                data = handle.read()
            if b"\0" in data:
                raise OSError("binary file")
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            self.state.unknown_sources.append(label + " (file not found)")
            return
        self._sourcing.append(path)
        try:
            tree = parse_bytes(data)
            src = (data + b"\n\n").decode("latin-1")
            sub = FileCtx(path, src, line_starts_of(src), None)  # type: ignore[arg-type]
            sub.expander = Expander(src, path, self)
            self._collect_assigned(src)
            outer = self.fx
            self.fx = sub
            try:
                self.walk(tree.root_node, flow.with_(context=label))
            finally:
                self.fx = outer
        finally:
            self._sourcing.pop()

    def _call_function(self, name: str, fields: list[Field], flow: Flow, passes_args: bool) -> None:
        if flow.depth >= _MAX_CALL_DEPTH:
            return
        body, fx = self.state.functions[name]
        saved_args, saved_label, saved_fx = self.state.args, self.state.args_label, self.fx
        self.state.args = [list(f.pieces) for f in fields[1:]]
        self.state.args_label = None
        saved_known, saved_from_script = self.state.args_known, self.state.args_from_script
        self.state.args_known = True
        self.state.args_from_script = passes_args  # `run "$@"` hands the script's arguments on
        self._local_frames.append({})
        self.fx = fx
        try:
            inner = Flow(flow.branch, flow.context + (f"in function {as_text(name)}",), flow.depth + 1)
            self.walk(body, inner)
        finally:
            frame = self._local_frames.pop()
            for var_name, old in frame.items():
                if old is None:
                    self.state.vars.pop(var_name, None)
                else:
                    self.state.vars[var_name] = old
            self.state.args, self.state.args_label, self.fx = saved_args, saved_label, saved_fx
            self.state.args_known, self.state.args_from_script = saved_known, saved_from_script


def _merged_ranges(nodes: list[Any]) -> list[tuple[int, int, str]]:
    """Word ranges of sibling nodes, merging neighbours with no gap between them: bash sees one
    word there (tree-sitter-bash#315 splits `$A/x-$B/y` into two siblings)."""
    out: list[tuple[int, int, str]] = []
    for child in nodes:
        a, b, kind = child.start_byte, child.end_byte, child.type
        if out and out[-1][1] == a and kind != "array":
            pa, _pb, pkind = out[-1]
            out[-1] = (pa, b, pkind)
            continue
        out.append((a, b, kind))
    return out


def _escaped_spaces(src: str, a: int, b: int) -> list[tuple[int, int, str]]:
    """`\\ ` words in the blank stretch src[a:b]: bash passes each as a one-space argument,
    but tree-sitter-bash gives them no node (deps-and-oracle §1c.4)."""
    out = []
    i = a
    while i < b and src[i] != "\n":
        c = src[i]
        if c in " \t":
            i += 1
        elif c == "\\" and i + 1 < b and src[i + 1] in " \t":
            out.append((i, i + 2, "word"))
            i += 2
        else:
            break
    return out


def _with_escaped_spaces(src: str, ranges: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    if not ranges or "\\ " not in src and "\\\t" not in src:
        return ranges
    out: list[tuple[int, int, str]] = []
    for n, rng in enumerate(ranges):
        out.append(rng)
        gap_end = ranges[n + 1][0] if n + 1 < len(ranges) else len(src)
        out.extend(_escaped_spaces(src, rng[1], gap_end))
    return out


def _merge(states: list[State], label: str) -> State:
    """Join the states at the end of alternative branches: a variable that differs between
    them becomes unknown (one of several values)."""
    if len(states) == 1:
        return states[0]
    first = states[0]
    merged = first.copy()
    names = set()
    for st in states:
        names.update(st.vars)
    for name in names:
        values = [st.vars.get(name) for st in states]
        if all(v is values[0] for v in values):
            continue
        if all(v is not None and _same_value(v, values[0]) for v in values):  # type: ignore[arg-type]
            merged.vars[name] = values[0]  # type: ignore[assignment]
            continue
        texts = sorted({_describe(v) for v in values})
        merged.vars[name] = Var(unknown=f"${name} depends on `{as_text(label)}`: one of {', '.join(texts)}",
                                label=f"either:{name}")
    for st in states[1:]:
        merged.functions.update(st.functions)
        for src in st.unknown_sources:
            if src not in merged.unknown_sources:
                merged.unknown_sources.append(src)
    merged.exited = all(st.exited for st in states)
    if any(st.cwd != first.cwd for st in states):
        merged.cwd = None
    return merged


def _same_value(a: Var, b: Var) -> bool:
    if a.unknown or b.unknown:
        return a.unknown == b.unknown and a.label == b.label
    if (a.elems is None) != (b.elems is None):
        return False
    if a.elems is not None and b.elems is not None:
        return [pieces_text(e.pieces) for e in a.elems] == [pieces_text(e.pieces) for e in b.elems]
    return pieces_text(a.pieces or []) == pieces_text(b.pieces or [])


def _describe(v: Var | None) -> str:
    if v is None:
        return "unset"
    if v.unknown:
        return "unknown"
    if v.elems is not None:
        return "(" + " ".join(as_text(pieces_text(e.pieces)) for e in v.elems)[:40] + ")"
    text = as_text(pieces_text(v.pieces or []))
    return repr(text if len(text) <= 40 else text[:39] + "…")
