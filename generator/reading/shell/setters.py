"""Every way bash sets a variable besides `NAME=value`: evaluated where a static reading is
exact, else the variable becomes unknown, so no value is shown as known when bash could have
changed it (issue 35: `eval "BS=7"` left the old value shown as known).

The ways, and what the reader does with each:
- arithmetic that assigns (`((x=1))`, `((x++))`, `let x=1`, `$((x+=2))`, `for ((i=0;…))`, an
  index `a[i++]`, `declare -i x=1+2`): one plain assignment whose right side is known is
  evaluated; anything else (several assignments, unknown operands) makes each name assigned unknown;
- `eval`: a string of plain assignments is evaluated, a string re-read as shell is walked;
  otherwise every name the string assigns is unknown, and every variable when its text is not known;
- `source`/`.` of a file that cannot be read (not found, outside the project, over the budget,
  a path not known): every variable the script has set is unknown (the file could set any);
- `read`, `mapfile`/`readarray`, `printf -v`, `getopts`, `wait -p`, `select`, `coproc`,
  `exec {fd}>…`: the names they set are unknown (their values come from input or the run);
- `declare`/`typeset`/`local` with `-i`, `-u`, `-l`, `-c`: the value goes through the attribute
  (integer, upper, lower, capitalised) when the declaration is at the top level, else unknown;
  with `-n` (a name reference) an assignment through the reference makes the reference and its
  target unknown;
- `trap '…' DEBUG|RETURN|ERR`: the handler runs between commands, so the names it assigns are unknown;
- `unset` of a name not known statically: every variable is unknown; `unset -f` leaves variables;
- pipelines: every stage runs in a subshell (bash's default without `shopt -s lastpipe`), so a
  stage sets nothing in the script; with lastpipe the last stage's changes merge as unknown.
  `bash -c`/`sh -c` strings run in a child process: what they set is not kept.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from generator.reading.shell import arith
from generator.reading.shell.context import ASSIGN, EvaluatorParts
from generator.reading.shell.model import Field, Group, Piece, Var, as_text, has_unknown, pieces_text
from generator.reading.shell.scan import WordError

if TYPE_CHECKING:
    from tree_sitter import Node

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ONE_ASSIGNMENT = re.compile(r"\s*([A-Za-z_]\w*)\s*(<<|>>|[-+*/%&^|])?=(?!=)(.*)", re.S)
_PREFIX_STEP = re.compile(r"\s*(\+\+|--)\s*([A-Za-z_]\w*)\s*")
_POSTFIX_STEP = re.compile(r"\s*([A-Za-z_]\w*)\s*(\+\+|--)\s*")
# Names a shell text assigns anywhere (for a string `eval` runs but the reader cannot walk):
# `NAME=`, `NAME+=`, `NAME[…]=`, `for NAME`, `read … NAME`, and the builtins below.
_TEXT_SETS = re.compile(
    r"(?:^|[\s;(&|`{])(?:([A-Za-z_]\w*)(?:\[[^\]]*\])?\+?="
    r"|(?:for|select)\s+([A-Za-z_]\w*)"
    r"|(?:read|mapfile|readarray|getopts\s+\S+|printf\s+-v|declare|typeset|local|export|readonly|let)"
    r"((?:\s+[-\w]+)+))")
# Signals whose trap handler runs while the script runs (before every command, on a function's
# return, after a failing command); EXIT and the asynchronous signals do not change what follows.
_RUNNING_TRAPS = frozenset({"DEBUG", "RETURN", "ERR"})
_ATTRIBUTES = "iulcn"
# Commands whose output a script `eval`s to set up a tool, and the variables that output sets
# (each tool's documented shell hook): conda/mamba `shell.bash hook` sets CONDA_*, _CE_*, PATH,
# PS1 and defines functions; `pyenv init -` PYENV_* and PATH; `ssh-agent -s` SSH_AUTH_SOCK and
# SSH_AGENT_PID. Ten corpus scripts run `eval "$(conda shell.bash hook)"` before their call;
# any other text not known statically may set any variable.
_SETUP_HOOKS = (
    (re.compile(r"<\?cmd:[^>]*?\b(?:conda|mamba|micromamba)_shell(?:\.\w+)?_hook"),
     ("CONDA_", "_CE_", "_CONDA", "MAMBA_", "PATH", "PS1")),
    (re.compile(r"<\?cmd:[^>]*?\bpyenv_(?:virtualenv-)?init"), ("PYENV", "PATH")),
    (re.compile(r"<\?cmd:[^>]*?\bssh-agent"), ("SSH_AUTH_SOCK", "SSH_AGENT_PID")),
)
# Options of mapfile/readarray that take an argument (the array is the word after them).
_MAPFILE_ARGS = frozenset({"-d", "-n", "-O", "-s", "-u", "-C", "-c"})


def names_arith_sets(text: str) -> list[str]:
    """The names an arithmetic expression assigns, in order, each once."""
    return arith.assigned_names(text)


def names_text_sets(text: str) -> list[str]:
    """The names a piece of shell text may assign (a superset: any word after `read`…)."""
    out: list[str] = []
    for m in _TEXT_SETS.finditer(text):
        if m.group(1) or m.group(2):
            out.append(m.group(1) or m.group(2))
        else:
            out += [w.split("=", 1)[0] for w in m.group(3).split() if _NAME.fullmatch(w.split("=", 1)[0])]
    for m in re.finditer(r"\(\((.*?)\)\)", text, re.S):
        out += names_arith_sets(m.group(1))
    return list(dict.fromkeys(out))


class ArithStep(NamedTuple):
    """One plain assignment: `name op= rhs` (op "" for `=`), `++name` / `name--` (rhs None)."""

    name: str
    op: str
    rhs: str | None
    postfix: bool = False


def one_arith_step(text: str) -> ArithStep | None:
    """The expression as one plain assignment whose right side assigns nothing, else None."""
    m = _ONE_ASSIGNMENT.fullmatch(text)
    if m and not names_arith_sets(m.group(3)) and "," not in m.group(3):
        return ArithStep(m.group(1), m.group(2) or "", m.group(3))
    m = _PREFIX_STEP.fullmatch(text)
    if m:
        return ArithStep(m.group(2), m.group(1)[0], None)
    m = _POSTFIX_STEP.fullmatch(text)
    if m:
        return ArithStep(m.group(1), m.group(2)[0], None, postfix=True)
    return None


def _literal(name: str, text: str) -> Var:
    return Var(pieces=[Piece(text, split=False)], group=Group(name, text, None, None))


class Setters(EvaluatorParts):
    """The ways of setting a variable other than `NAME=value` (mixed into walker.Evaluator)."""

    # -- arithmetic ---------------------------------------------------------------------------

    def arith_value(self, text: str) -> int | None:
        """The value of arithmetic `text` (already expanded), applying the assignments it makes:
        one plain assignment is evaluated, any other makes the names it assigns unknown. None
        when the value is not known."""
        names = names_arith_sets(text)
        if not names:
            try:
                return arith.evaluate(text, self.arith_lookup)
            except (arith.ArithError, ValueError, RecursionError, OverflowError):
                return None
        step = one_arith_step(text)
        if step is not None:
            try:
                return self._arith_step(step)
            except (arith.ArithError, ValueError, RecursionError, OverflowError):
                pass
        self.clobber(names, f"set by the arithmetic `{text.strip()[:60]}`", "arith")
        return None

    def _arith_step(self, step: ArithStep) -> int:
        if step.rhs is None:
            old = self.arith_lookup(step.name)
            new = arith.wrap64(old + (1 if step.op == "+" else -1))
            result = old if step.postfix else new
        else:
            value = arith.evaluate(step.rhs, self.arith_lookup)
            new = arith.wrap64(arith.apply_binary(step.op, self.arith_lookup(step.name), value) if step.op else value)
            result = new
        self._set(step.name, _literal(step.name, str(new)))
        self.assigned_names.add(step.name)
        return result

    def arith_text_effects(self, text: str | None, raw: str) -> int | None:
        """Arithmetic whose expanded text may not be known (None): the names the written text
        assigns become unknown; else as arith_value."""
        if text is None:
            self.clobber(names_arith_sets(raw), f"set by the arithmetic `{raw.strip()[:60]}`", "arith")
            return None
        return self.arith_value(text)

    # -- unknowns -----------------------------------------------------------------------------

    def clobber(self, names: list[str], reason: str, kind: str) -> None:
        """These variables now hold values the reader does not know."""
        for name in names:
            self.assigned_names.add(name)
            self._set(name, Var(unknown=reason, label=f"{kind}:{name}"))

    def clobber_all(self, reason: str, kind: str) -> None:
        """Any variable may have changed (a file that could not be read was sourced, a string
        not known statically was evaluated): every variable the script or --env set is unknown."""
        for name in list(dict.fromkeys([*self.state.vars, *self.env])):
            var = self.state.vars.get(name)
            if var is None or not var.unknown:
                self._set(name, Var(unknown=f"${name} {reason}", label=f"{kind}:{name}"))

    def _declare_computed(self, keyword: str, child: Node, flags: str) -> None:
        """`declare "$n=7"`, `export $n=7`, `typeset "$n"=7`: the word is expanded first, so the
        name it sets is only known from its value. A known plain `NAME=VALUE` is set (unless an
        attribute would change the value: then the name becomes unknown); a name not known
        statically may be any variable."""
        fx = self.fx
        assert fx is not None
        words = fx.src[child.start_byte : child.end_byte]
        try:
            fields = fx.expander.fields(child.start_byte, child.end_byte)
        except WordError:
            fields = []
        if not fields or any(f.unknowns for f in fields):
            self.clobber_all(f"may be set by `{keyword} {as_text(words)}` (a name not known statically)", "declare")
            return
        for field in fields:
            m = ASSIGN.match(field.text)
            name = m.group(1) if m else field.text.split("[", 1)[0]
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                continue  # bash: "not a valid identifier"; nothing is set
            if m is None:
                continue  # `declare "$n"`: declares without a value
            if m.group(2) or m.group(3) or any(c in flags for c in "iulcnaA") or name in self._attributes:
                self.clobber([name], f"set by `{keyword} {as_text(words)}`", "declare")
                continue
            value = field.text[m.end():]
            self.assigned_names.add(name)
            if keyword == "local" or (keyword in ("declare", "typeset") and self._local_frames and "g" not in flags):
                self._local(name)
            self._set(name, Var(pieces=[Piece(value, split=False)], group=Group(name, value, None, None),
                                exported=keyword == "export" or "x" in flags))

    # -- attributes (`declare -i/-u/-l/-c/-n`) ----------------------------------------------

    def declare_attributes(self, flags: str, names: list[str], local: bool) -> None:
        """Note the value attributes a declaration gives (flags: its option letters)."""
        for letter in _ATTRIBUTES:
            if letter in flags:
                for name in names:
                    self._attributes[name] = letter if not local else letter.upper()

    def through_attribute(self, name: str, var: Var) -> Var:
        """The value bash stores when `var` is assigned to `name`, which has an attribute."""
        letter = self._attributes[name]
        if letter == "n":  # the reference and what it names (when known) are no longer known
            target = self._namerefs.get(name)
            if target is not None and target != name:
                self._set(target, Var(unknown=f"set through the name reference ${name}", label=f"nameref:{target}"))
            return Var(unknown=f"${name} is a name reference (`declare -n`)", label=f"nameref:{name}")
        if var.unknown:
            return var
        if letter.isupper() or var.elems is not None or var.pieces is None or has_unknown(var.pieces):
            return Var(unknown=f"${name} has the `declare -{letter.lower()}` attribute", label=f"declare:{name}",
                       exported=var.exported)
        text = pieces_text(var.pieces)
        if letter == "i":
            if self._attribute_declaring or re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):
                value = self.arith_value(text)
                if value is not None:
                    return _literal(name, str(value))
            # Not evaluated here, but bash evaluates it: `X='V=7'` assigns V as well.
            self.clobber(names_arith_sets(text), f"set by the arithmetic of `{name}={text.strip()[:60]}` "
                         "(an integer variable)", "arith")
            return Var(unknown=f"${name} has the integer attribute (`declare -i`)", label=f"declare:{name}")
        changed = text.upper() if letter == "u" else text.lower() if letter == "l" else text[:1].upper() + text[1:].lower()
        return _literal(name, changed)

    # -- builtins -----------------------------------------------------------------------------

    def _b_let(self, args: list[Field], flow: object) -> None:
        for f in args:
            self.arith_text_effects(None if f.unknowns else f.text, f.text)

    def _b_mapfile(self, args: list[Field], flow: object) -> None:
        rest = list(args)
        name = "MAPFILE"
        while rest:
            word = rest.pop(0).text
            if word in _MAPFILE_ARGS:
                rest = rest[1:]
            elif not word.startswith("-") and _NAME.fullmatch(word):
                name = word
        self.clobber([name], f"read from input by `mapfile {name}`", "mapfile")

    def _b_printf(self, args: list[Field], flow: object) -> bool:
        if len(args) < 2 or args[0].text != "-v":
            return False  # printf to the output: a command like any other
        target = args[1].text.split("[", 1)[0]
        if not _NAME.fullmatch(target):
            return True
        rest = args[2:]
        fmt = rest[0] if rest else None
        value: str | None = None
        if fmt is not None and not fmt.unknowns and not any(f.unknowns for f in rest[1:]):
            if "%" not in fmt.text and "\\" not in fmt.text and len(rest) == 1:
                value = fmt.text
            elif fmt.text == "%s" and len(rest) == 2:
                value = rest[1].text
        if value is None or "[" in args[1].text:
            self.clobber([target], f"set by `printf -v {target}`", "printf")
        else:
            self.assigned_names.add(target)
            self._set(target, _literal(target, value))
        return True

    def _b_getopts(self, args: list[Field], flow: object) -> None:
        names = [args[1].text] if len(args) > 1 and _NAME.fullmatch(args[1].text) else []
        self.clobber([*names, "OPTARG", "OPTIND"], "set by `getopts` from the arguments", "getopts")

    def _b_wait(self, args: list[Field], flow: object) -> None:
        for n, f in enumerate(args[:-1]):
            if f.text == "-p" and _NAME.fullmatch(args[n + 1].text):
                self.clobber([args[n + 1].text], "the job `wait -p` reports", "wait")

    def _b_coproc(self, args: list[Field], flow: object) -> bool:
        name = args[0].text if len(args) > 1 and _NAME.fullmatch(args[0].text) and args[1].text == "{" else "COPROC"
        self.clobber([name, f"{name}_PID"], "set by `coproc`", "coproc")
        return False  # the command it runs is still recorded

    def _b_trap(self, args: list[Field], flow: object) -> None:
        if len(args) < 2 or not any(f.text in _RUNNING_TRAPS for f in args[1:]):
            return
        handler = args[0]
        if handler.unknowns:
            self.clobber_all("may be set by a `trap` handler not known statically", "trap")
            return
        self.clobber(names_text_sets(handler.text), f"set by the `trap` handler `{handler.text[:60]}`", "trap")

    def eval_assignments(self, words: list[Field]) -> bool:
        """`eval "A=1 B=2"` as plain words: set them (True), unless a word is not an assignment."""
        found = []
        for f in words:
            text = f.text
            m = ASSIGN.match(text)
            if m is None or m.group(2) or m.group(3) or f.pieces[:1] and f.pieces[0].unknown:
                return False
            found.append((m.group(1), f, m.end()))
        for name, f, end in found:
            self.assigned_names.add(name)
            if f.unknowns:
                self._set(name, Var(unknown="set by `eval` from a value not known statically", label=f"eval:{name}"))
            else:
                self._set(name, _literal(name, f.text[end:]))
        return bool(found)

    def eval_unread(self, words: list[Field], line: int) -> None:
        """A string `eval` runs that the reader could not walk: what it may set is unknown."""
        known = " ".join(pieces_text([p for p in f.pieces if not p.unknown]) for f in words)
        names = names_text_sets(known)
        unknown = [p.text for f in words for p in f.pieces if p.unknown]
        prefixes = [_hook_prefixes(text) for text in unknown]
        if any(found is None for found in prefixes):
            self.clobber_all(f"may be set by `eval` at line {line} (its text is not known statically)", "eval")
            return
        starts = tuple(prefix for found in prefixes if found for prefix in found)
        if starts:
            names += [name for name in (*self.state.vars, *self.env) if name.startswith(starts)]
        self.clobber(list(dict.fromkeys(names)), f"set by `eval` at line {line}", "eval")


def _hook_prefixes(marker: str) -> tuple[str, ...] | None:
    """The variable names (prefixes) a known setup hook's output sets, None for other text."""
    for pattern, prefixes in _SETUP_HOOKS:
        if pattern.search(marker):
            return prefixes
    return None
