"""The static evaluator: walks a script's statements the way bash would run them, without
running anything, and records every simple command with its expanded arguments.

Decidable `if`/`case`/`[[ ]]`/`&&` conditions pick their branch (the others are walked as
`dead`); undecidable ones walk every branch (`conditional`) and merge what they set into
unknown-or-either values. Loops are walked as `loop`; functions when they are called;
`source` reads the file when it can be found. The evaluator's parts: scope.py (variables),
conditions.py (branches), builtins.py (source, cd, set, shift, function calls); this module
holds the statement walk itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from generator.reading.launch_script import Hazard, unknown_marker
from generator.reading.shell.builtins import Builtins
from generator.reading.shell.callee import Callees
from generator.reading.shell.conditions import Conditions
from generator.reading.shell.context import ASSIGN, CommandRecord, FileCtx, Flow, State, line_starts_of, merged_ranges, squash
from generator.reading.shell.model import Field, Group, Piece, Var, Work, as_text, from_text, pieces_text
from generator.reading.shell.comment_subst import mask_comment_substitutions
from generator.reading.shell.eval_words import LAUNCH_WRAPPERS, eval_fields, string_args
from generator.reading.shell.scan import WordError
from generator.reading.shell.scope import Scope, merge_states
from generator.reading.shell.setters import Setters, names_arith_sets
from generator.reading.shell.words import Expander, def_group

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
# Where the text splits into shell-ish tokens (at blanks and ; ( & | `), for the names a file
# assigns: `NAME=`, `NAME[…]=`, `NAME+=` at a token's start, and the NAME of `for NAME`. The
# pattern starts with the separator before the token (searched for fast, as a set of
# characters); the text is searched with a blank in front, so its first token has one too.
_SEP, _NOT_SEP = r"[\s;(&|`]", r"[^\s;(&|`]"
_ASSIGNED_NAME = re.compile(
    rf"{_SEP}(?:([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]\s;(&|`]*\])?\+?="
    rf"|for(?={_SEP}+([A-Za-z_][A-Za-z0-9_]*)(?!{_NOT_SEP})))")
# `read [-opts] NAME…`, `read` at a word's start: the literal comes first (searched for fast),
# the look-behind then asks that no word character stands before it.
_READ_NAMES = re.compile(r"read(?<!\wread)\s+(?:-\w+\s+)*([A-Za-z_][A-Za-z0-9_ ]*)")
_MAX_LOOP_ITEMS = 16
# Builtins that change the script's variables or arguments, run through `builtin`/`command` too.
_STATE_BUILTINS = frozenset({"eval", "read", "mapfile", "readarray", "printf", "declare", "typeset", "local",
                             "export", "readonly", "let", "getopts", "wait", "source", ".", "unset", "shift",
                             "set", "cd", "trap", "shopt"})
# `{NAME}>file`, `{NAME}<&0`: a redirection that stores the descriptor number in NAME.
_FD_VARIABLE = re.compile(r"(?<![\w$])\{([A-Za-z_][A-Za-z0-9_]*)\}(?=[<>])")


class Evaluator(Scope, Setters, Conditions, Builtins, Callees):
    def __init__(self, *, base_dir: str | None, env: dict[str, str], args: list[str]) -> None:
        self.base_dir = base_dir
        self.env = {k: from_text(v) for k, v in env.items()}
        # A script runs with the arguments given by --arg and no others: `$#` is their number
        # and `$1…` beyond them are unset, so argument-parsing loops are decided.
        self.state = State(args=[[Piece(from_text(a), split=False)] for a in args])
        self.records: list[CommandRecord] = []
        self.hazards: list[Hazard] = []
        self.saw_args = False
        self.assigned_names: set[str] = set()
        self._local_frames: list[dict[str, Var | None]] = []
        self._returned: State | None = None
        self._sourcing: list[str] = []
        self._arith_depth = 0
        self._loop_budget = 256  # loop-body walks with a known item, across the whole script
        self.work = Work()
        self._break_requested = False
        self.sourced: dict[str, FileCtx] = {}
        self._sourced_bytes = 0
        self._source_trees: dict[str, tuple[Tree, FileCtx]] = {}
        self._default_reads: list[str] | None = None
        self._args_given = bool(args)
        self._attributes: dict[str, str] = {}
        self._namerefs: dict[str, str | None] = {}
        self._attribute_declaring = False
        self._lastpipe = False
        self.fx: FileCtx | None = None

    def run_file(self, data: bytes, path: str | None) -> Tree:
        data, tree = mask_comment_substitutions(data)  # `# note` in backticks: what bash reads
        src = (data + b"\n\n").decode("latin-1")  # the bytes tree-sitter parsed (offsets unchanged)
        fx = FileCtx(path, src, line_starts_of(src), None)  # type: ignore[arg-type]
        fx.expander = Expander(src, path, self)
        self.main_line_starts = fx.line_starts
        self.main_fx = fx  # the script's own file (restring reads strings written in it)
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
        for m in _ASSIGNED_NAME.finditer(" " + src):  # one scan of the text, not a match per token
            self.assigned_names.add(m.group(1) or m.group(2))
        for m in _READ_NAMES.finditer(src):
            self.assigned_names.update(m.group(1).split())

    def _report_errors(self, node: Node, fx: FileCtx) -> None:
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
                snippet = squash(fx.src[start : min(n.end_byte, start + 40)], 40)
                what = (f"missing `{n.type}`" if n.is_missing else
                        f"`{as_text(snippet)}`" if snippet else "unexpected end of file")
                self.hazards.append(Hazard("parse-error", line,
                                           f"bash syntax the reader cannot parse at line {line}: {what}",
                                           fx.span(start, min(max(n.end_byte, start), len(fx.src) - 2))))
                continue
            if n.has_error:
                stack.extend(n.children)

    def walk(self, node: Node, flow: Flow) -> None:
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

    def _statements(self, children: list[Node], flow: Flow) -> None:
        for n, child in enumerate(children):
            if not child.is_named:
                continue
            before = len(self.records)
            nxt = children[n + 1] if n + 1 < len(children) else None
            if nxt is not None and nxt.type == "&":
                # `cmd &` runs in a subshell: what it sets is not seen by the script after it.
                saved = self.state
                self.state = saved.copy()
                try:
                    self.walk(child, flow)
                finally:
                    self.state = saved
                for rec in self.records[before:]:
                    rec.redirects.append("&")
                continue
            self.walk(child, flow)

    def _s_program(self, node: Node, flow: Flow) -> None:
        self._statements(node.children, flow)

    def _s_compound_statement(self, node: Node, flow: Flow) -> None:
        if node.children and node.children[0].type == "((":  # an arithmetic command: its assignments
            self._arith_command(node.start_byte + 2, node.end_byte - 2)
            return
        self._statements(node.children, flow)

    _s_do_group = _s_program

    def _arith_command(self, a: int, b: int) -> int | None:
        """`(( … ))` (or a part of `for (( … ))`) over the text [a, b): its value, its assignments applied."""
        fx = self.fx
        assert fx is not None
        try:
            pieces = fx.expander.expand(a, b, dq=True)
        except WordError:
            pieces = [Piece("", unknown="not readable")]
        text = None if any(p.unknown for p in pieces) else pieces_text(pieces)
        return self.arith_text_effects(text, fx.src[a:b])

    def _s_subshell(self, node: Node, flow: Flow) -> None:
        saved = self.state
        self.state = saved.copy()
        try:
            self._statements(node.children, flow)
        finally:
            self.state = saved

    def _s_comment(self, node: Node, flow: Flow) -> None:
        return

    def _s_for_statement(self, node: Node, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        var_node = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        name = fx.src[var_node.start_byte : var_node.end_byte] if var_node is not None else "_"
        value_nodes = [c for c in node.children_by_field_name("value")]
        items: list[Field] = []
        known = True
        if value_nodes:
            for vn in merged_ranges(value_nodes):
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
        written = " ".join(fx.src[v.start_byte : v.end_byte] for v in value_nodes)
        label = f"for {name} in " + squash(written or '"$@"', 50)
        self.assigned_names.add(name)
        if body is None:
            return
        if node.children and node.children[0].type == "select":
            known = False  # `select` sets its variable from what the user types
            label = "select " + label.removeprefix("for ")
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
        self.state = merge_states([self.state, base], label)

    def _positional_fields(self) -> list[Field]:
        st = self.state
        if st.args_label is not None:
            return [Field([Piece(unknown_marker("$@"), unknown=f"the arguments of {st.args_label}")], 0, 0, None)]
        return [Field(list(arg), 0, 0, None) for arg in st.args]

    def _s_while_statement(self, node: Node, flow: Flow) -> None:
        """`while`/`until`: unrolled while its condition stays decided (an argument-parsing loop
        over known arguments runs exactly as bash would run it); once undecided, the rest is one
        walk of the body whose changes merge with the state before it."""
        cond = node.child_by_field_name("condition")
        body = node.child_by_field_name("body")
        keyword = node.children[0].type if node.children else "while"
        until = keyword == "until"
        label = f"{keyword} " + (self._cond_text(cond) if cond is not None else "")
        for _ in range(_MAX_LOOP_ITEMS):
            if cond is None or cond.type not in ("test_command", "command", "list", "negated_command"):
                if cond is not None:
                    self.walk(cond, flow)  # `until V=7`: the condition runs at least once, whatever it is
                break
            value = self._truth(cond, flow)
            if value is None or self._loop_budget <= 0:
                break
            if value is until:  # the loop ends (or never starts)
                if body is not None:
                    self._walk_dead([], [body], flow, label)
                return
            self._loop_budget -= 1
            before = _progress_key(self.state)
            self._break_requested = False
            if body is not None:
                self.walk(body, flow.with_("loop", label))
            if self.state.exited or self._break_requested or _progress_key(self.state) == before:
                return  # left by `break`/`exit`, or it would spin without changing anything
        base = self.state
        self.state = base.copy()
        if body is not None:
            self.walk(body, flow.with_("loop", label))
        self.state = merge_states([self.state, base], label)

    def _s_c_style_for_statement(self, node: Node, flow: Flow) -> None:
        """`for ((init; cond; step))`: init runs once; the names the condition and the step assign
        are unknown in the body and after the loop (how often it ran is not followed)."""
        fx = self.fx
        assert fx is not None
        body = node.child_by_field_name("body")
        label = "for ((…))"
        init = node.child_by_field_name("initializer")
        if init is not None:
            self._arith_command(init.start_byte, init.end_byte)
        stepped: list[str] = []
        for field in ("condition", "update"):
            for part in node.children_by_field_name(field):
                stepped += names_arith_sets(fx.src[part.start_byte : part.end_byte])
        base = self.state
        self.state = base.copy()
        self.clobber(list(dict.fromkeys(stepped)), f"changed by each round of `{label}`", "loop")
        if body is not None:
            self.walk(body, flow.with_("loop", label))
        self.state = merge_states([self.state, base], label)

    def _s_function_definition(self, node: Node, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        self.state.functions[fx.src[name_node.start_byte : name_node.end_byte]] = (body, fx)

    def _s_redirected_statement(self, node: Node, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        body = node.child_by_field_name("body")
        redirects = []
        for child in node.children:
            if child.type in _REDIRECTS:
                text = fx.src[child.start_byte : child.end_byte]
                if child.type == "heredoc_redirect":
                    text = text.split("\n", 1)[0]
                redirects.append(as_text(squash(text).replace(" ", "")) if child.type == "file_redirect"
                                 else as_text(squash(text)))
        fds = _FD_VARIABLE.findall(fx.src, node.start_byte, node.end_byte)
        if fds and flow.branch != "dead":  # `exec {fd}>log`: bash stores the descriptor it picks in fd
            self.clobber(fds, "a file descriptor number bash picks (`{NAME}>…`)", "fd")
        before = len(self.records)
        if body is not None:
            if body.type == "command":
                self._command(body, flow, node)
            else:
                self.walk(body, flow)
        for rec in self.records[before:]:
            rec.redirects.extend(redirects)

    def _s_pipeline(self, node: Node, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        stages = [c for c in node.children if c.is_named]
        base = self.state
        for n, stage in enumerate(stages):
            before = len(self.records)
            if len(stages) > 1:  # each stage runs in a subshell: what it sets is not kept
                self.state = base.copy()
            self.walk(stage, flow)
            if len(stages) > 1:
                last = self.state
                self.state = base
                if n + 1 == len(stages) and self._lastpipe:  # `shopt -s lastpipe`: the last stage runs here
                    self.state = merge_states([last, base], "the last stage of a pipeline")
            if n + 1 < len(stages):
                rest = " | ".join(squash(fx.src[s.start_byte : s.end_byte], 60) for s in stages[n + 1 :])
                for rec in self.records[before:]:
                    rec.redirects.append(as_text("| " + rest))

    def _s_command(self, node: Node, flow: Flow) -> None:
        self._command(node, flow, node)

    def _command(self, node: Node, flow: Flow, whole: Node) -> None:
        """A simple command: its leading NAME=value words, then its expanded arguments; a
        builtin or a function of the script runs, anything else is recorded."""
        fx = self.fx
        assert fx is not None
        parts = [c for c in node.children if c.type not in _REDIRECTS and c.type != "comment"
                 and c.type not in ("heredoc_body",) and c.is_named]
        ranges = merged_ranges(parts)
        # Leading NAME=value words are assignments (bash decides by text, so do we).
        n_assign = 0
        for a, b, kind in ranges:
            if kind == "variable_assignment" or (ASSIGN.match(fx.src, a, b) and kind != "command_name"):
                n_assign += 1
            else:
                break
        assign_ranges = ranges[:n_assign]
        word_ranges = _with_escaped_spaces(fx, ranges[n_assign:])
        if not word_ranges:  # `A=1 B=2` alone sets variables
            assign_nodes = {c.start_byte: c for c in parts if c.type == "variable_assignment"}
            for a, b, _k in assign_ranges:
                node_a = assign_nodes.get(a)
                if node_a is not None:
                    self._assign_node(node_a, b)
                else:
                    self._assign_text(a, b)
            return
        env: dict[str, str] = {}  # `A=1 cmd`: the command's own environment
        env_pieces: dict[str, list[Piece]] = {}
        for a, b, _k in assign_ranges:
            m = ASSIGN.match(fx.src, a, b)
            if m:
                env_pieces[m.group(1)] = self._expand_assign_value(m.end(), b)
                env[m.group(1)] = as_text(pieces_text(env_pieces[m.group(1)]))
        self.saw_args = False
        fields = self._command_fields(word_ranges, flow)
        passes_args = self.saw_args
        self.saw_args = False
        if not fields:
            return
        name = fields[0].text if not fields[0].unknowns else ""
        while name == "time" and len(fields) > 1:  # `time [-p] CMD`: the keyword, then CMD as it is
            fields = fields[2:] if fields[1].text == "-p" else fields[1:]
            name = fields[0].text if fields and not fields[0].unknowns else ""
        if not fields:
            return
        while name in ("builtin", "command") and len(fields) > 1 and fields[1].text in _STATE_BUILTINS:
            fields = fields[1:]  # `command eval …`, `builtin read …`: the builtin itself runs
            name = fields[0].text if not fields[0].unknowns else ""
        found = string_args(fields) if name in ("eval", "tmux", "bash", "sh", "sbatch") or name in LAUNCH_WRAPPERS \
            else None
        if found is not None:  # `eval "$CMD"`, `bash -c "…"`, `tmux send-keys "cmd" C-m`: what the string runs
            if self._string_command(name, found, flow, fx.line_of(whole.start_byte)):
                return
            words = eval_fields(found[1])
            if words:
                fields, name = words, (words[0].text if not words[0].unknowns else "")
        if name in ("export", "readonly") and env:
            # `V=7 export V`: the temporary value of a name the builtin is given stays (bash).
            for f in fields[1:]:
                if not f.unknowns and f.text in env_pieces:
                    self.assigned_names.add(f.text)
                    self._set(f.text, Var(pieces=env_pieces[f.text], group=Group(f.text, env[f.text], None, None),
                                          exported=name == "export"))
        if self._builtin(name, fields, node, flow, env):
            return
        if name in self.state.functions:
            self._call_function(name, fields, flow, passes_args)
            return
        if self._run_script_command(fields, flow, env, fx.line_of(whole.start_byte)):
            return
        self.records.append(CommandRecord(
            fields=fields, env=env, span=fx.span(whole.start_byte, whole.end_byte), path=fx.path,
            branch=flow.branch, context=flow.context, passes_args=passes_args,
            words=[(a, b) for a, b, _k in word_ranges],
            cwd=self.state.cwd, pythonpath=env.get("PYTHONPATH", self._exported_text("PYTHONPATH")),
        ))

    def _string_command(self, name: str, found: tuple[str, list[Field]], flow: Flow, line: int) -> bool:
        """Run the string of `eval`/`bash -c`/`tmux send-keys` where it can be read (True: done).
        `eval` runs in this shell: plain assignments are set, a string re-read as shell is walked,
        anything else makes what it may set unknown (setters.py). The others run in another
        process: their string is walked on a copy of the state, which is then dropped."""
        how, words = found
        in_shell = name == "eval"
        try:
            return self._run_string(in_shell, how, words, flow, line)
        finally:
            if in_shell and any(f.unknowns for f in words):
                # a value not known statically is parsed again: `eval "$CMD"`, `eval "$(conda
                # shell.bash hook)"`, even `eval "run $X"` (X may hold `; BS=7`) can set anything
                self.eval_unread(words, line)

    def _run_string(self, in_shell: bool, how: str, words: list[Field], flow: Flow, line: int) -> bool:
        plain = eval_fields(words)
        if plain:
            return in_shell and self.eval_assignments(plain)
        base = self.state
        if not in_shell:
            self.state = base.copy()
        try:
            if self._reread_string(words, flow, line, how):
                return True
        finally:
            if not in_shell:
                self.state = base
        if in_shell and not any(f.unknowns for f in words):
            self.eval_unread(words, line)
        return False

    def _exported_text(self, name: str) -> str | None:
        """The text of an exported scalar variable (unknown parts as `<?label>`), else None."""
        var = self.state.vars.get(name)
        if var is None or not var.exported or var.pieces is None:
            return None
        return pieces_text(var.pieces)

    def _command_fields(self, word_ranges: list[tuple[int, int, str]], flow: Flow) -> list[Field]:
        """The arguments bash passes for these words; a word whose quote never closes becomes an
        unknown (and, outside dead code, the unterminated-quote hazard)."""
        fx = self.fx
        assert fx is not None
        fields: list[Field] = []
        for a, b, _k in word_ranges:
            try:
                for f in fx.expander.fields(a, b):
                    f.cmd_a = a
                    fields.append(f)
            except WordError as err:
                fields.append(Field([Piece(unknown_marker("parse-error"), a, b, path=fx.path,
                                           unknown=str(err))], a, b, fx.path))
                if str(err).startswith("unterminated") and flow.branch != "dead":
                    line = fx.line_of(a)
                    self.hazards.append(Hazard(
                        "unterminated-quote", line,
                        f"the {str(err).removeprefix('unterminated ')} opened in `{as_text(squash(fx.src[a:b], 40))}` "
                        f"(line {line}) is never closed: bash stops with a syntax error at the end of the file "
                        "and runs nothing of it", fx.span(a, b)))
        return fields

def _escaped_spaces(src: str, a: int, b: int) -> list[tuple[int, int, str]]:
    """`\\ ` words in the blank stretch src[a:b]: bash passes each as a one-space argument,
    but tree-sitter-bash gives them no node."""
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


def _with_escaped_spaces(fx: FileCtx, ranges: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    if not ranges or not fx.has_escaped_blank:
        return ranges
    src = fx.src
    out: list[tuple[int, int, str]] = []
    for n, rng in enumerate(ranges):
        out.append(rng)
        gap_end = ranges[n + 1][0] if n + 1 < len(ranges) else len(src)
        out.extend(_escaped_spaces(src, rng[1], gap_end))
    return out


def _progress_key(state: State) -> tuple[object, ...]:
    """What a loop iteration can change that its condition may read: the arguments and the
    variables' values (a `while true` loop that changes neither would spin forever)."""
    def value(var: Var) -> object:
        if var.unknown:
            return var.label
        if var.elems is not None:
            return tuple(pieces_text(e.pieces) for e in var.elems)
        return pieces_text(var.pieces or [])

    return (tuple(pieces_text(a) for a in state.args), state.args_label,
            tuple(sorted((name, value(var)) for name, var in state.vars.items())))

