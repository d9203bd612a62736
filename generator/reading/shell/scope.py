"""Variables: how a name expands (scalars, arrays, positional and special parameters), how
assignments and declarations change them, and how the states of alternative branches merge."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from generator.reading.launch_script import unknown_marker
from generator.reading.shell import arith
from generator.reading.shell.context import ASSIGN, EvaluatorParts, Flow, State, merged_ranges
from generator.reading.shell.model import (BREAK, TOO_LARGE, Elem, Field, Group, Piece, Var, as_text, has_unknown,
                                   pieces_text, too_large, var_size)
from generator.reading.shell.scan import WordError
from generator.reading.shell.words import def_group

if TYPE_CHECKING:
    from tree_sitter import Node

# `${NAME:-…}` / `${NAME-…}` as the whole value of an assignment (quoted or not).
_SELF_DEFAULT = re.compile(r'"?\$\{(\w+):?-[^}]*\}"?\s*')
# `${2:-…}` as the whole value of an assignment: a positional argument's default.
_ARG_DEFAULT = re.compile(r'"?\$\{([1-9]):?-[^}]*\}"?\s*')


def _defaults_itself(name: str, value: str) -> bool:
    """`NAME=${NAME:-default}`: the script takes NAME from the environment when it is set."""
    m = _SELF_DEFAULT.fullmatch(value) if "${" in value else None  # most values have no `${`
    return m is not None and m.group(1) == name


class Scope(EvaluatorParts):
    """The evaluator's variables (mixed into walker.Evaluator)."""

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
            self._read_default(name)
            label = f"unset:{name}"
            return [Piece(unknown_marker(label), a, b, False, quote, None, None, path,
                          unknown=self._unset_reason(name))]
        if var.unknown:
            return [Piece(unknown_marker(var.label), a, b, False, quote, None, None, path,
                          unknown=var.unknown, group=var.group)]
        if var.elems is not None:
            return self._array_pieces(var, name, index, a, b, dq)
        if var.env_default:
            self._read_default(name)
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
        return self.arith_value(index)  # `a[i++]` assigns too

    def _array_pieces(self, var: Var, name: str, index: str | None, a: int, b: int, dq: bool) -> list[Piece]:
        elems = var.elems or []
        path = self.fx.path if self.fx else None
        quote = '"' if dq else ""
        if index in ("@", "*"):
            out: list[Piece] = []
            for n, el in enumerate(e for e in elems if e.present):
                if n:
                    out.append(BREAK if (index == "@" or not dq) else Piece(" ", split=False))
                elem = (el.a, el.b, el.path) if el.a is not None and el.b is not None else None
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
            if st.args_label is None:
                self._read_default(f"${n}")
            why = (f"argument ${n} of {st.args_label}" if st.args_label
                   else f"the script's argument ${n} (give it with --arg)")
            return [Piece(unknown_marker(f"${n}"), a, b, False, quote, None, None, path, unknown=why)]
        if ch == "#":
            if st.args_label is None:
                if not self._args_given and st.args_from_script:
                    self._read_default("$#")
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
                self._read_default(f"${n}")
                return "unset"
            return "null" if pieces_text(st.args[n - 1]) == "" else "set"
        if name in ("@", "*"):
            if st.args_label is not None:
                return "unknown"
            return "set" if st.args else "unset"
        var = self.get_var(name)
        if var is None:
            self._read_default(name)
            return "unset"
        if var.unknown:
            return "unknown"
        if var.env_default:
            self._read_default(name)
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

    def _read_default(self, name: str) -> None:
        """Note that a condition being decided read a value the script never set (an unset
        variable, a missing argument, `$#` of no arguments): see conditions.Conditions._guard."""
        if self._default_reads is not None and name not in self._default_reads:
            self._default_reads.append(name)

    def require(self, name: str, why: str, arguments: int = 0) -> None:
        """`name` must be set for the script to go on (`${X:?}`, a guard that exits when it is
        empty): an unknown the run provides, `<?required:NAME>`; for an argument, all of them, and
        a variable set to the default of one of the first `arguments` arguments is that argument's."""
        if name.startswith("$"):
            self.state.args_label = f"the script ({why})"
            for var_name, var in list(self.state.vars.items()):
                if 0 < var.arg_default <= arguments:
                    self._set(var_name, Var(unknown=f"argument ${var.arg_default} of the script ({why})",
                                            label=f"${var.arg_default}", exported=var.exported))
            return
        self._set(name, Var(unknown=f"${name} must be set: {why}", label=f"required:{name}"))

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

    def _set(self, name: str, var: Var) -> None:
        if name in self._attributes:  # `declare -i/-u/-l/-c/-n`: the value bash stores (setters.py)
            var = self.through_attribute(name, var)
        # Storing a value costs its size (`a+=(x)` line after line copies an ever longer list).
        parts, chars = var_size(var)
        self.work.charge(parts, chars)
        if too_large(parts, chars) or (var.pieces and all(p.unknown == TOO_LARGE for p in var.pieces)):
            # (the second: `x=$x$x` on a value already too large stays one unknown, not two)
            var = Var(unknown=TOO_LARGE, label="too-large", exported=var.exported)
        old = self.state.vars.get(name)
        if old is not None and old.exported:
            var.exported = True
        self.state.vars[name] = var

    def _local(self, name: str) -> None:
        if self._local_frames and name not in self._local_frames[-1]:
            self._local_frames[-1][name] = self.state.vars.get(name)

    # -- assignments and declarations ---------------------------------------------------------

    def _s_variable_assignment(self, node: Node, flow: Flow) -> None:
        self._assign_node(node, node.end_byte)

    def _s_variable_assignments(self, node: Node, flow: Flow) -> None:
        for child in node.children:
            if child.type == "variable_assignment":
                self._assign_node(child, child.end_byte)

    def _assign_node(self, node: Node, end: int, *, local: bool = False, export: bool = False) -> None:
        fx = self.fx
        assert fx is not None
        m = ASSIGN.match(fx.src, node.start_byte, end)
        if not m:
            return
        name, index, plus = m.group(1), m.group(2), m.group(3) == "+"
        self.assigned_names.add(name)
        if local:
            self._local(name)
        value_node = node.child_by_field_name("value")
        va = m.end()
        if value_node is not None and value_node.type == "array" and value_node.end_byte == end:
            if _KEYED_ELEMENT.search(self.fx.src if self.fx is not None else "", value_node.start_byte,
                                     value_node.end_byte):
                # `V=([0]=7 [3]=x)`: elements placed by index (or keys of an associative array)
                self.clobber([name], f"${name} is assigned elements by index (`[i]=value`)", "index")
                return
            elems = self._array_elems(value_node)
            old = self.state.vars.get(name)
            if plus and old is not None and not old.unknown:
                scalar = [Elem(old.pieces or [], None, None, None)] if old.pieces is not None else []
                base = old.elems if old.elems is not None else scalar
                elems = list(base) + elems
            self._set(name, Var(elems=elems, exported=export))
            return
        pieces = self._expand_assign_value(va, end)
        if index is not None:
            self._assign_index(name, index[1:-1], pieces, va, end, plus)
            return
        old = self.get_var(name)
        if plus and old is not None:
            self._set(name, self._appended(name, old, pieces, va, end, export))
            return
        group = def_group(name, pieces, va, end, "", fx.path)
        if len(pieces) == 1 and pieces[0].unknown:
            # X=$(cmd) or X=$UNSET: the variable is unknown; its definition is still editable
            p = pieces[0]
            self._set(name, Var(unknown=p.unknown, label=p.text[2:-1], exported=export,
                                group=Group(name, p.text, va, end, "", fx.path)))
            return
        self._set(name, Var(pieces=pieces, group=group, exported=export,
                            env_default=old is None and _defaults_itself(name, fx.src[va:end]),
                            arg_default=self._arg_default(fx.src[va:end])))

    def _arg_default(self, value: str) -> int:
        """N when `value` is `${N:-default}` and the script's N-th argument is not given (so the
        default stood in); else 0."""
        m = _ARG_DEFAULT.fullmatch(value) if "${" in value else None
        if m is None or self.state.args_label is not None or self._args_given:
            return 0
        n = int(m.group(1))
        return n if n > len(self.state.args) else 0

    def _appended(self, name: str, old: Var, pieces: list[Piece], va: int, end: int, export: bool) -> Var:
        """`NAME+=value` on a variable that has a value: the string or the array grows; an unknown stays unknown."""
        fx = self.fx
        assert fx is not None
        if old.unknown:
            return Var(unknown=old.unknown, label=old.label, exported=export)
        if old.elems is not None:
            return Var(elems=old.elems + [Elem(pieces, va, end, fx.path)], exported=export)
        joined = (old.pieces or []) + pieces
        group = (Group(name, pieces_text(joined), None, None, "", fx.path) if old.pieces
                 else def_group(name, pieces, va, end, "", fx.path))
        return Var(pieces=joined, group=group, exported=export)

    def _expand_assign_value(self, a: int, b: int) -> list[Piece]:
        fx = self.fx
        assert fx is not None
        try:
            pieces = fx.expander.word(a, b, assign=True)
        except WordError as err:
            return [Piece(unknown_marker("parse-error"), a, b, path=fx.path, unknown=str(err))]
        # Every piece an expansion returns is its own copy (lookups copy what they read), so the
        # value is marked in place: a second copy doubled the cost of `y=$x` on a large $x.
        for piece in pieces:
            piece.split = False
            piece.elem = None
        return pieces

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

    def _array_elems(self, array_node: Node) -> list[Elem]:
        fx = self.fx
        assert fx is not None
        ranges = merged_ranges([c for c in array_node.children if c.type not in ("(", ")", "comment")])
        elems: list[Elem] = []
        for a, b, _t in ranges:
            try:
                fields = fx.expander.fields(a, b)
            except WordError as err:
                fields = [Field([Piece(unknown_marker("parse-error"), a, b, path=fx.path, unknown=str(err))],
                                a, b, fx.path)]
            for f in fields:
                # The pieces of a field are its own (see _expand_assign_value): marked in place.
                for piece in f.pieces:
                    piece.split = False
                if f.origin == "string":
                    elems.append(Elem(f.pieces, f.word_a, f.word_b, f.path))
                else:
                    elems.append(Elem(f.pieces, a, b, fx.path))
        return elems

    def _assign_text(self, a: int, b: int) -> None:
        fx = self.fx
        assert fx is not None
        m = ASSIGN.match(fx.src, a, b)
        if not m:
            return
        name = m.group(1)
        self.assigned_names.add(name)
        pieces = self._expand_assign_value(m.end(), b)
        if m.group(2):
            self._assign_index(name, m.group(2)[1:-1], pieces, m.end(), b, bool(m.group(3)))
            return
        self._set(name, Var(pieces=pieces, group=def_group(name, pieces, m.end(), b, "", fx.path)))

    def _s_declaration_command(self, node: Node, flow: Flow) -> None:
        keyword = node.children[0].type if node.children else ""
        if keyword == "local" and not self._local_frames:
            return  # bash: "local: can only be used in a function"; nothing is set
        local = keyword == "local" or (keyword in ("declare", "typeset") and bool(self._local_frames))
        export = keyword == "export"
        fx = self.fx
        assert fx is not None
        as_array = False
        flags = ""
        for child in node.children[1:]:
            text = fx.src[child.start_byte : child.end_byte]
            if child.type == "word" and text.startswith(("-", "+")):
                if text.startswith("-"):
                    flags += text[1:] if keyword != "export" else text[1:].replace("n", "")  # export -n: not exported
                as_array = as_array or "a" in text or "A" in text
                export = export or "x" in text
                continue
            if "f" in flags or "F" in flags or "p" in flags:
                return  # functions, or printing: no variable changes
            name = text.split("=", 1)[0].split("+", 1)[0].split("[", 1)[0]
            if child.type in ("variable_assignment", "variable_name") and any(c in flags for c in "iulcn"):
                self._declare_with_attributes(child, name, flags, local, export)
            elif child.type == "variable_assignment":
                self._assign_node(child, child.end_byte, local=local, export=export)
            elif child.type not in ("variable_name", "comment"):
                self._declare_computed(keyword, child, flags)
            elif child.type == "variable_name":
                self.assigned_names.add(name)
                if local:
                    self._local(name)
                    if name not in self.state.vars or self._local_frames:
                        self.state.vars[name] = Var(pieces=[], group=Group(name, "", None, None))
                elif as_array and name not in self.state.vars:
                    self.state.vars[name] = Var(elems=[])
                elif export and name in self.state.vars:
                    self.state.vars[name].exported = True

    def _declare_with_attributes(self, child: Node, name: str, flags: str, local: bool, export: bool) -> None:
        """`declare -i x=1+2`, `local -u y`, `declare -n ref=x`: the attribute first, then the value through it."""
        if local:
            self._local(name)
        self.assigned_names.add(name)
        if "n" in flags:
            self._namerefs.pop(name, None)
            self._attributes.pop(name, None)
        self.declare_attributes(flags.replace("n", ""), [name], bool(self._local_frames))
        if child.type == "variable_assignment":
            self._attribute_declaring = True
            try:
                self._assign_node(child, child.end_byte, export=export)
            finally:
                self._attribute_declaring = False
        if "n" in flags:
            var = self.state.vars.get(name)
            target = pieces_text(var.pieces) if var is not None and var.pieces is not None and not has_unknown(
                var.pieces) else None
            self._namerefs[name] = target if target and re.fullmatch(r"[A-Za-z_]\w*", target) else None
            self.declare_attributes("n", [name], False)
            self.state.vars[name] = Var(unknown=f"${name} is a name reference (`declare -n`)", label=f"nameref:{name}")

    def _s_unset_command(self, node: Node, flow: Flow) -> None:
        fx = self.fx
        assert fx is not None
        words = [fx.src[c.start_byte : c.end_byte] for c in node.children[1:]]
        if any(w.startswith("-") and "f" in w for w in words):
            return  # `unset -f NAME` removes a function
        for child in node.children[1:]:
            name = fx.src[child.start_byte : child.end_byte]
            if name.startswith("-"):
                continue
            if child.type != "variable_name" and not re.fullmatch(r"\w+", name):
                try:
                    fields = fx.expander.fields(child.start_byte, child.end_byte)
                except WordError:
                    fields = []
                if not fields or any(f.unknowns for f in fields):
                    self.clobber_all(f"may be unset by `unset {as_text(name)}` (a name not known statically)", "unset")
                    continue
                names = [f.text for f in fields]
            else:
                names = [name]
            for one in names:
                if "[" in one:  # an element: the array is no longer followed
                    self.clobber([one.split("[", 1)[0]], f"an element is removed by `unset {as_text(one)}`", "unset")
                    continue
                self.state.vars.pop(one, None)
                target = self._namerefs.get(one)
                if target is not None:
                    self.state.vars.pop(target, None)


# An element `[i]=value` (or `[i]+=value`) of an array literal: at its start or after blank space.
_KEYED_ELEMENT = re.compile(r"(?:\(|\s)\[[^\]\s]*\]\+?=")


def merge_states(states: list[State], label: str) -> State:
    """Join the states at the end of alternative branches: a variable that differs between
    them becomes unknown (one of several values)."""
    if len(states) == 1:
        return states[0]
    first = states[0]
    merged = first.copy()
    names: set[str] = set()
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
        reason = f"${name} depends on `{as_text(label)}`: one of {', '.join(texts)}"
        merged.vars[name] = (_common_prefix_array(name, values, reason) or _common_prefix_words(name, values, reason)
                             or Var(unknown=reason, label=f"either:{name}"))
    for st in states[1:]:
        merged.functions.update(st.functions)
        for src in st.unknown_sources:
            if src not in merged.unknown_sources:
                merged.unknown_sources.append(src)
    merged.exited = all(st.exited for st in states)
    if any(st.cwd != first.cwd for st in states):
        merged.cwd = None
    return merged


def _common_prefix_array(name: str, values: list[Var | None], reason: str) -> Var | None:
    """An array that only some branches append to (`A+=(x)` under an `if`): the elements every
    branch has, in order, stay known (with their spans) and one unknown element stands for the
    rest. verl's 0.8+ examples build every override list this way; losing the whole array would
    lose every override in it. None when the branches share no leading element."""
    arrays = [v.elems for v in values if v is not None and not v.unknown and v.elems is not None]
    if len(arrays) != len(values) or not arrays:
        return None
    prefix: list[Elem] = []
    for column in zip(*arrays):
        head = column[0]
        if not all(e.present == head.present and e.a == head.a and e.b == head.b and e.path == head.path
                   and pieces_text(e.pieces) == pieces_text(head.pieces) for e in column[1:]):
            break
        prefix.append(head)
    if not prefix:
        return None
    if all(len(a) == len(prefix) for a in arrays):
        return None  # identical arrays are merged by the caller
    tail = Elem(pieces=[Piece(unknown_marker(f"either:{name}"), unknown=reason)], a=None, b=None, path=None)
    return Var(elems=[*prefix, tail])


def _common_prefix_words(name: str, values: list[Var | None], reason: str) -> Var | None:
    """A string that only some branches append words to (`CMD+=" key=value"` under an `if`, then
    `eval $CMD`): the text every branch has stays known and one unknown word stands for the
    rest, the way _common_prefix_array keeps an array's shared elements. Only where each branch's
    own part starts a new word (a blank first), so no word of the prefix changes; None otherwise."""
    strings = [v.pieces for v in values if v is not None and not v.unknown and v.elems is None
               and v.pieces is not None]
    if len(strings) != len(values) or not strings:
        return None
    prefix: list[Piece] = []
    for column in zip(*strings):
        head = column[0]
        if not all((p.text, p.a, p.b, p.path, p.unknown) == (head.text, head.a, head.b, head.path, head.unknown)
                   for p in column[1:]):
            break
        prefix.append(head)
    if not prefix or not pieces_text(prefix).strip():
        return None
    rests = [s[len(prefix):] for s in strings]
    if all(not r for r in rests) or not all(not r or r[0].text[:1] in (" ", "\t", "\n") for r in rests):
        return None
    tail = [Piece(" ", split=True), Piece(unknown_marker(f"either:{name}"), unknown=reason)]
    return Var(pieces=[*prefix, *tail])


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
