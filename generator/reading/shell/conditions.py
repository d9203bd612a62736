"""Conditions: `if`/`elif`/`else`, `case`, `&&`/`||` lists, `test`/`[ ]`/`[[ ]]`/`(( ))`.
A condition decided true or false picks its branch (the others are walked as `dead`); an
undecided one walks every branch on a copy of the state and merges the outcomes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from generator.reading.shell import patterns
from generator.reading.shell.context import EvaluatorParts, Flow, State, squash
from generator.reading.shell.model import as_text, has_unknown, pieces_text
from generator.reading.shell.scan import WordError
from generator.reading.shell.scope import merge_states
from generator.reading.shell.truth import both, compare, either, evaluate_test, negate

if TYPE_CHECKING:
    from tree_sitter import Node

# `$# -ge 3`, `"$#" -lt 2`: the count of arguments a test compares with.
_ARG_COUNT = re.compile(r'"?\$#"?\s+-(ge|gt|eq|lt|le|ne)\s+"?(\d+)')


def _arguments_asked(label: str, goes_on_when_true: bool) -> int:
    """How many arguments a run that goes on past a guard on `$#` has: `[ $# -ge 3 ]` true (or
    `[ $# -lt 3 ]` false, the exiting arm) means 3; 0 when the test is not such a comparison."""
    m = _ARG_COUNT.search(label)
    if m is None:
        return 0
    op, n = m.group(1), int(m.group(2))
    if not goes_on_when_true:
        op = {"lt": "ge", "le": "gt", "ge": "lt", "gt": "le", "eq": "ne", "ne": "eq"}[op]
    return {"ge": n, "gt": n + 1, "eq": n}.get(op, 0)


# The names a `-z "$X"` test reads.
_EMPTY_TESTED = re.compile(r'-z\s+"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"?')
# A condition about emptiness or the number of arguments: `-z`, `-n`, `-v`, `$#`, `""`.
_EMPTINESS = re.compile(r"(?:^|[\s!])-[znv]\s|\$#|\$\{#|\"\"|''")


class Conditions(EvaluatorParts):
    """Branch selection (mixed into walker.Evaluator)."""

    def _cond_text(self, node: Node) -> str:
        fx = self.fx
        assert fx is not None
        return as_text(squash(fx.src[node.start_byte : node.end_byte]))

    def _s_if_statement(self, node: Node, flow: Flow) -> None:
        clauses: list[tuple[list[Node], list[Node], str]] = []
        cond: list[Node] = []
        body: list[Node] = []
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
                c2: list[Node] = []
                b2: list[Node] = []
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

    def _condition(self, cond_nodes: list[Node], flow: Flow) -> Callable[[], bool | None]:
        # Evaluated only when the arm is reached, as bash does (`[]` is the else arm: true).
        return lambda: self._decide(cond_nodes, flow) if cond_nodes else True

    def _branches(self, arms: list[tuple[Callable[[], bool | None], list[Node], str]], flow: Flow,
                  merge_label: str) -> None:
        """Walk if/elif/else or case arms: the first arm decided true runs, arms decided false are
        read as dead, and undecided arms run on copies whose outcomes are merged."""
        base = self.state
        outcomes: list[State] = []
        undecided = False
        taken = False
        for index, (decide, body, label) in enumerate(arms):
            if taken:
                self._walk_dead([], body, flow, label)
                continue
            value, reads = self._tracking_defaults(decide)
            if value is not False and flow.branch != "dead" and self._guard(reads, body, flow, label):
                base = self.state
                continue
            if value is False and index == 0 and flow.branch != "dead" and self._guard_by_else(reads, arms, label):
                # `if [ $# -ge 3 ]; then shift 3; else usage; exit 1; fi`: the run gives what the test
                # asks for (the else only stops a run without it), so this arm is the one read.
                self.state = base
                self._statements(body, flow.with_(context=label))
                base = self.state
                taken = True
                continue
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
            self.state = merge_states(outcomes, merge_label)
        else:
            self.state = base

    def _tracking_defaults(self, decide: Callable[[], bool | None]) -> tuple[bool | None, list[str]]:
        """Decide a condition, noting the unset names (variables, arguments, `$#`) it read."""
        outer = self._default_reads
        self._default_reads = []
        try:
            value = decide()
            return value, self._default_reads
        finally:
            self._default_reads = outer

    def _guard(self, reads: list[str], body: list[Node], flow: Flow, label: str) -> bool:
        """A guard (`[ -z "$MODEL_PATH" ] && exit 1`, `if [ $# -lt 2 ]; then usage; exit 1; fi`)
        is an assertion that the run provides what it tests: the names become required unknowns
        and the exiting branch is read as not taken, so the rest of the script is still read."""
        reads = reads or self._option_reads(label)
        if not reads or not _EMPTINESS.search(label) or not self._exits(body):
            return False
        for name in reads:
            self.require(name, f"the script exits at `{label}` otherwise", _arguments_asked(label, False))
        self._walk_dead([], body, flow, label)
        return True

    def _option_reads(self, label: str) -> list[str]:
        """The names an emptiness test reads that the script sets empty and then from one of its
        arguments (`MODEL_PATH=""`, then `--model_path) MODEL_PATH="$2"` in its option loop, then
        `[ -z "$MODEL_PATH" ] && exit 1`): the run gives that option, as the guard asserts."""
        fx = self.fx
        if fx is None:
            return []
        out = []
        for name in _EMPTY_TESTED.findall(label):
            var = self.state.vars.get(name)
            if var is None or var.unknown or var.elems is not None or pieces_text(var.pieces or []).strip():
                continue
            if re.search(rf"(?<![\w$]){re.escape(name)}=[\"']?\$\{{?[1-9]", fx.src):
                out.append(name)
        return out

    def _guard_by_else(self, reads: list[str], arms: list[tuple[Callable[[], bool | None], list[Node], str]],
                       label: str) -> bool:
        """The inverted guard: a first arm testing arguments or emptiness (decided false only
        because nothing was given) whose `else` exits. The names it read become required unknowns."""
        if len(arms) != 2 or arms[-1][2] != "else" or not reads or not _EMPTINESS.search(label):
            return False
        if not self._exits(arms[-1][1]):
            return False
        for name in reads:
            self.require(name, f"the script exits at the else of `{label}` otherwise", _arguments_asked(label, True))
        return True

    def _exits(self, nodes: list[Node], src: str | None = None, depth: int = 0) -> bool:
        """Does running these statements reach `exit` (directly or in a function they call)?"""
        fx = self.fx
        assert fx is not None
        text_of = src if src is not None else fx.src
        stack = list(nodes)
        while stack:
            node = stack.pop()
            if node.type in ("function_definition", "subshell", "command_substitution"):
                continue
            if node.type == "command":
                name = node.child_by_field_name("name")
                word = text_of[name.start_byte : name.end_byte] if name is not None else ""
                if word == "exit":
                    return True
                called = self.state.functions.get(word)
                if called is not None and depth < 2 and self._exits([called[0]], called[1].src, depth + 1):
                    return True
            stack.extend(node.children)
        return False

    def _walk_dead(self, cond_nodes: list[Node], body: list[Node], flow: Flow, label: str) -> None:
        saved = self.state
        self.state = saved.copy()
        self.state.exited = False
        try:
            self._statements(body, flow.with_("dead", label))
        finally:
            self.state = saved

    def _decide(self, nodes: list[Node], flow: Flow) -> bool | None:
        """The truth of a condition list (the last command decides), or None if unknown."""
        result: bool | None = None
        for node in nodes:
            if node.type in (";", "\n", "&", "comment"):
                continue
            result = self._truth(node, flow)
        return result

    def _truth(self, node: Node, flow: Flow) -> bool | None:
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
            return negate(self._truth(inner[0], flow) if inner else None)
        if t == "list":
            return self._list_truth(node, flow)
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

    def _list_truth(self, node: Node, flow: Flow) -> bool | None:
        """`a && b`, `a || b` as a condition: short-circuited as bash runs it."""
        parts = list(node.children)
        left = self._truth(parts[0], flow)
        op = parts[1].type if len(parts) > 1 else ""
        if len(parts) < 3:
            return left
        right_node = parts[2]
        if op == "&&":
            return both(left, lambda: self._truth(right_node, flow))
        if op == "||":
            return either(left, lambda: self._truth(right_node, flow))
        return None

    def _test_command(self, node: Node) -> bool | None:
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
        return evaluate_test(args)

    def _arith_truth(self, node: Node) -> bool | None:
        fx = self.fx
        assert fx is not None
        a, b = node.start_byte + 2, node.end_byte - 2
        try:
            pieces = fx.expander.expand(a, b, dq=True)
        except WordError:
            self.arith_text_effects(None, fx.src[a:b])
            return None
        value = self.arith_text_effects(None if has_unknown(pieces) else pieces_text(pieces), fx.src[a:b])
        return None if value is None else value != 0

    def _operand(self, node: Node) -> str | None:
        fx = self.fx
        assert fx is not None
        try:
            pieces = fx.expander.word(node.start_byte, node.end_byte)
        except WordError:
            return None
        if has_unknown(pieces):
            return None
        return pieces_text(pieces)

    def _pattern(self, node: Node) -> str | None:
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

    def _test_expr(self, node: Node, double: bool) -> bool | None:
        """An expression inside `[[ ]]` (double) or `test`/`[ ]` as tree-sitter parsed it."""
        t = node.type
        if t == "parenthesized_expression":
            inner = [c for c in node.children if c.is_named]
            return self._test_expr(inner[0], double) if inner else None
        if t == "unary_expression":
            return self._test_unary(node, double)
        if t == "binary_expression":
            return self._test_binary(node, double)
        text = self._operand(node)
        return None if text is None else text != ""

    def _test_unary(self, node: Node, double: bool) -> bool | None:
        """`! e`, `-z w`, `-n w`, `-v name`; file tests need the filesystem: undecided."""
        fx = self.fx
        assert fx is not None
        op_node = node.child_by_field_name("operator") or node.children[0]
        op = fx.src[op_node.start_byte : op_node.end_byte]
        rest = [c for c in node.children if c is not op_node and c.id != op_node.id]
        operand = rest[-1] if rest else None
        if op == "!":
            return negate(self._test_expr(operand, double) if operand is not None else None)
        text = self._operand(operand) if operand is not None else ""
        if op == "-v":
            return None if text is None else self.param_state(text, None) != "unset"
        if text is None or op not in ("-z", "-n"):
            return None
        return (text == "") if op == "-z" else (text != "")

    def _test_binary(self, node: Node, double: bool) -> bool | None:
        """`a && b`, `a -o b`, `w == pattern` (`[[ ]]`), `w OP w` (strings, integers, `=~`)."""
        fx = self.fx
        assert fx is not None
        op_node = node.child_by_field_name("operator")
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if op_node is None:
            if len(node.children) != 3:
                return None
            left, op_node, right = node.children
        op = fx.src[op_node.start_byte : op_node.end_byte]
        if op in ("&&", "-a", "||", "-o"):
            lv = self._test_expr(left, double) if left is not None else None

            def rv() -> bool | None:
                return self._test_expr(right, double) if right is not None else None

            return both(lv, rv) if op in ("&&", "-a") else either(lv, rv)
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
        return None if rt is None else compare(op, lt, rt)

    def _s_list(self, node: Node, flow: Flow) -> None:
        kids = node.children
        if len(kids) < 3:
            self._statements(kids, flow)
            return
        left, op, right = kids[0], kids[1].type, kids[2]
        reads: list[str] = []
        if left.type in ("test_command", "negated_command", "list") or (
            left.type == "command" and self._is_true_false(left)
        ):
            value, reads = self._tracking_defaults(lambda: self._truth(left, flow))
        else:
            self.walk(left, flow)
            value = True if op == "&&" else None  # commands are assumed to succeed
            if op == "||":
                value = True
        runs_right = value if op == "&&" else (None if value is None else not value)
        label = f"{'if' if op == '&&' else 'unless'} {self._cond_text(left)}"
        if runs_right is not False and flow.branch != "dead" and self._guard(reads, [right], flow, label):
            return
        if runs_right is False:
            self._walk_dead([], [right], flow, label)
        elif runs_right is True:
            self.walk(right, flow)
        else:
            base = self.state
            self.state = base.copy()
            self.walk(right, flow.with_("conditional", label))
            self.state = merge_states([self.state, base], label)

    def _is_true_false(self, node: Node) -> bool:
        fx = self.fx
        assert fx is not None
        name = node.child_by_field_name("name")
        return name is not None and fx.src[name.start_byte : name.end_byte] in ("true", "false", ":")

    def _s_negated_command(self, node: Node, flow: Flow) -> None:
        self._statements(node.children, flow)

    def _s_test_command(self, node: Node, flow: Flow) -> None:
        # `[[ $((V=7)) ]]`, `[ $((N++)) ]` or `((N=7))` as a statement of its own: its status is
        # not used, but its expansions still assign.
        self._truth(node, flow)

    def _s_case_statement(self, node: Node, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        value_node = node.child_by_field_name("value")
        subject = self._operand(value_node) if value_node is not None else None
        items: list[tuple[list[Node], list[Node], str]] = []  # (patterns, body, terminator)
        for item in node.children:
            if item.type != "case_item":
                continue
            pats: list[Node] = []
            body: list[Node] = []
            ends = ";;"
            seen_paren = False
            for c in item.children:
                if c.type == ")" and not seen_paren:
                    seen_paren = True
                    continue
                if not seen_paren:
                    if c.is_named:
                        pats.append(c)
                elif c.type in (";;", ";&", ";;&"):
                    ends = c.type
                else:
                    body.append(c)
            items.append((pats, body, ends))
        if any(ends == ";;&" for _p, _b, ends in items):
            subject = None  # `;;&` goes on testing the next patterns: which arms run is not followed
        arms: list[tuple[Callable[[], bool | None], list[Node], str]] = []
        for index, (pats, body, _ends) in enumerate(items):
            # `;&` falls through: the next arm's body runs too, without its pattern being tested.
            ran, at = list(body), index
            while items[at][2] == ";&" and at + 1 < len(items):
                at += 1
                ran += items[at][1]
            label = "case " + "|".join(self._cond_text(p) for p in pats)
            arms.append((self._case_match(pats, subject), ran, label))
        self._branches(arms, flow, "case")

    def _case_match(self, pats: list[Node], subject: str | None) -> Callable[[], bool | None]:
        def matched() -> bool | None:
            if subject is None:
                return None
            results = [self._pattern(p) for p in pats]
            if any(r is None for r in results):
                return None
            return any(patterns.glob_match(r, subject) for r in results)  # type: ignore[arg-type]

        return matched
