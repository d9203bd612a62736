"""What the evaluator's parts share: the file being walked, the flow a statement runs in, the
recorded commands, and the evaluator's state declared once for the modules that each hold a
part of its methods (scope, conditions, builtins, statements)."""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple, TYPE_CHECKING

from generator.reading.launch_script import Hazard, Span
from generator.reading.shell.model import Field, Piece, Var, Work

if TYPE_CHECKING:  # pragma: no cover
    from tree_sitter import Node, Tree

    from generator.reading.shell.words import Expander

# NAME=, NAME[index]=, NAME+=: bash decides an assignment by the word's text.
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")


class FileCtx:
    """The file being read: its text (latin-1), where its lines start and its expander."""

    __slots__ = ("path", "src", "line_starts", "expander", "has_escaped_blank")
    path: str | None
    src: str  # latin-1
    line_starts: list[int]
    expander: Expander
    # Whether the file holds a `\ ` or `\<tab>` anywhere: searched once here, not once per
    # command (a per-command search of the whole file made reading quadratic).
    has_escaped_blank: bool

    def __init__(self, path: str | None, src: str, line_starts: list[int], expander: Expander) -> None:
        self.path = path
        self.src = src
        self.line_starts = line_starts
        self.expander = expander
        self.has_escaped_blank = "\\ " in src or "\\\t" in src

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset)

    def span(self, a: int, b: int) -> Span:
        return Span(a, b, self.line_of(a))


class State:
    """Everything the script has set so far. Copied (shallowly) for branches."""

    __slots__ = ("vars", "args", "args_label", "args_from_script", "functions", "cwd", "unknown_sources", "exited")
    vars: dict[str, Var]
    args: list[list[Piece]]
    args_label: str | None  # set when the positional args are unknown (inside a function)
    args_from_script: bool  # the positional args are (or carry) the script's own "$@"
    functions: dict[str, tuple[Node, FileCtx]]
    cwd: str | None  # relative to the script's directory; None = unknown
    unknown_sources: list[str]
    exited: bool

    def __init__(self, vars: dict[str, Var] | None = None, args: list[list[Piece]] | None = None,
                 args_label: str | None = None, args_from_script: bool = True,
                 functions: dict[str, tuple[Node, FileCtx]] | None = None, cwd: str | None = "",
                 unknown_sources: list[str] | None = None, exited: bool = False) -> None:
        self.vars = {} if vars is None else vars
        self.args = [] if args is None else args
        self.args_label = args_label
        self.args_from_script = args_from_script
        self.functions = {} if functions is None else functions
        self.cwd = cwd
        self.unknown_sources = [] if unknown_sources is None else unknown_sources
        self.exited = exited

    def copy(self) -> State:
        return State(
            vars=dict(self.vars),
            args=list(self.args),
            args_label=self.args_label,
            args_from_script=self.args_from_script,
            functions=dict(self.functions),
            cwd=self.cwd,
            unknown_sources=list(self.unknown_sources),
            exited=self.exited,
        )


class Flow(NamedTuple):
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


class CommandRecord:
    """One simple command bash would run, with its arguments as bash would pass them."""

    __slots__ = ("fields", "env", "span", "path", "branch", "context", "passes_args", "redirects", "words", "cwd",
                 "pythonpath")
    fields: list[Field]
    env: dict[str, str]
    span: Span
    path: str | None
    branch: str
    context: tuple[str, ...]
    passes_args: bool
    redirects: list[str]
    words: list[tuple[int, int]]  # source ranges of the words
    # Where Python would import from (generator.schema.imports): the working directory after the
    # script's `cd`s ("" = where it started, None = unknown) and the exported PYTHONPATH's text.
    cwd: str | None
    pythonpath: str | None

    def __init__(self, fields: list[Field], env: dict[str, str], span: Span, path: str | None, branch: str,
                 context: tuple[str, ...], passes_args: bool, redirects: list[str] | None = None,
                 words: list[tuple[int, int]] | None = None, cwd: str | None = "",
                 pythonpath: str | None = None) -> None:
        self.fields = fields
        self.env = env
        self.span = span
        self.path = path
        self.branch = branch
        self.context = context
        self.passes_args = passes_args
        self.redirects = [] if redirects is None else redirects
        self.words = [] if words is None else words
        self.cwd = cwd
        self.pythonpath = pythonpath


def line_starts_of(src: str) -> list[int]:
    starts = [0]
    find = src.find
    i = find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = find("\n", i + 1)
    return starts


def squash(text: str, limit: int = 70) -> str:
    text = " ".join(text.replace("\\\n", " ").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def merged_ranges(nodes: list[Node]) -> list[tuple[int, int, str]]:
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


class EvaluatorParts:
    """The evaluator's state and the methods its parts call on each other (see walker.Evaluator,
    which combines scope.Scope, conditions.Conditions and builtins.Builtins)."""

    base_dir: str | None
    env: dict[str, str]
    state: State
    records: list[CommandRecord]
    hazards: list[Hazard]
    saw_args: bool
    assigned_names: set[str]
    fx: FileCtx | None
    _local_frames: list[dict[str, Var | None]]
    _returned: State | None  # the state at the `return` that ended the function being walked
    _sourcing: list[str]
    sourced: dict[str, FileCtx]  # every file read through `source`, by path (each read once)
    _sourced_bytes: int  # bytes walked through `source` so far (see builtins.SOURCE_BUDGET)
    _source_trees: dict[str, tuple[Tree, FileCtx]]
    _arith_depth: int
    _loop_budget: int
    work: Work  # expansion work spent so far (model.WORK_LIMIT)
    _break_requested: bool  # a `break` ran on a live path of the loop being unrolled
    _default_reads: list[str] | None  # while a condition is decided: the unset names it read
    _args_given: bool  # --arg was given, so `$#` is the user's, not a default
    # `declare -i/-u/-l/-c/-n` names and their attribute letter (upper case: declared in a
    # function, so later values are not followed); name references and the name each refers to.
    _attributes: dict[str, str]
    _namerefs: dict[str, str | None]
    _attribute_declaring: bool  # a declaration is assigning (`declare -i x=1+2` is evaluated)
    _lastpipe: bool  # `shopt -s lastpipe` ran: a pipeline's last stage runs in this shell

    if TYPE_CHECKING:  # pragma: no cover - implemented by the parts
        def walk(self, node: Node, flow: Flow) -> None: ...
        def _statements(self, children: list[Node], flow: Flow) -> None: ...
        def _collect_assigned(self, src: str) -> None: ...
        def _walk_dead(self, cond_nodes: list[Node], body: list[Node], flow: Flow, label: str) -> None: ...
        def _truth(self, node: Node, flow: Flow) -> bool | None: ...
        def _set(self, name: str, var: Var) -> None: ...
        def _local(self, name: str) -> None: ...
        def get_var(self, name: str) -> Var | None: ...
        def param_state(self, name: str, index: str | None) -> str: ...
        def arith_lookup(self, name: str) -> int: ...
        def _index_value(self, index: str) -> int | None: ...
        def require(self, name: str, why: str, arguments: int = 0) -> None: ...
        def _positional_fields(self) -> list[Field]: ...
        def arith_value(self, text: str) -> int | None: ...
        def arith_text_effects(self, text: str | None, raw: str) -> int | None: ...
        def clobber(self, names: list[str], reason: str, kind: str) -> None: ...
        def clobber_all(self, reason: str, kind: str) -> None: ...
        def through_attribute(self, name: str, var: Var) -> Var: ...
        def declare_attributes(self, flags: str, names: list[str], local: bool) -> None: ...
        def _declare_computed(self, keyword: str, child: Node, flags: str) -> None: ...
