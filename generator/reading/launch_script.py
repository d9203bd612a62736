"""The read model of a launch script: what bash would hand each trainer call, and where
every value was written.

This module knows nothing about verl. `generator.reading.shell` produces these objects; `config`,
`rules` and `fix` consume them. Offsets are byte offsets into the script's UTF-8 bytes, so a
fix can splice the original text without re-encoding it.

Unknown pieces of a value (an unset environment variable, `$(...)`, a loop variable, `$1`)
are written into the value text as `<?label>`, e.g. `<?unset:HOME>/data/train.parquet`, and
listed in `Override.unknowns` with a human reason. A value with no unknowns is *resolved*.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Source = Literal["literal", "variable", "array", "string", "unknown"]
Branch = Literal["live", "conditional", "loop", "dead"]
Op = Literal["=", "+", "++", "~"]

UNKNOWN_OPEN = "<?"
UNKNOWN_CLOSE = ">"


def unknown_marker(label: str) -> str:
    """The placeholder written into value text for an unknown piece, e.g. `<?unset:HOME>`.

    A `>` inside the label (`$(cd .. >/dev/null 2>&1; pwd)`) would end the marker early, and the
    rest of the label would read as the value's own text: it is written as `_` instead."""
    return f"{UNKNOWN_OPEN}{label.replace(UNKNOWN_CLOSE, '_')}{UNKNOWN_CLOSE}"


class Span(NamedTuple):
    """Bytes [start, end) of the script; `line` is the 1-based line of `start`."""

    start: int
    end: int
    line: int


class Provenance(NamedTuple):
    """Where the text that defines a value lives, so that a fix edits exactly there.

    source:
      literal   the value is written in the word on the command line
      variable  the value comes whole from a variable: `span` is its assignment's value, or
                the `:-` default inside `${VAR:-default}` when the default is what bash used
      array     the word is an element of an array expanded as "${ARR[@]}"
      string    the word is a piece of a string variable that bash word-split into the call
      unknown   the value depends on something we cannot see (see Override.unknowns)
    span:      the bytes to replace to change the value (value only, not `key=`), or None when
               no single place defines it (e.g. `key=${A}_${B}`)
    quoting:   the quoting context at `span`: "" (bare), "'" or '"', so a fix can re-quote
    variable:  the variable whose definition holds the value, when source is variable
    path:      the file holding `span` when it is not the script itself (a sourced file)
    """

    source: Source
    span: Span | None
    quoting: str = ""
    variable: str | None = None
    path: str | None = None


class Override(NamedTuple):
    """One Hydra override as the trainer receives it after shell processing."""

    text: str  # the whole argument, e.g. "+actor_rollout_ref.actor.megatron.foo=3"
    key: str  # "actor_rollout_ref.actor.megatron.foo" ("" when the text has no key)
    op: Op
    value: str | None  # text after the first "=", None for a bare "~key"
    line: int  # line of the word on the command line
    word: Span  # the shell word (on the command line, in the array or the string) it came from
    provenance: Provenance
    unknowns: tuple[str, ...] = ()  # why parts of the value are unknown; empty = resolved
    # Where the placeholder text in the value is written when it is not in this word (a variable's
    # assignment): (file, byte offset) per piece, so one placeholder that reaches several keys
    # is reported once (shell/trainer_calls.py override_hazards).
    placeholder_origins: tuple[tuple[str | None, int], ...] = ()
    # An element of an array the call expands (`"${ARR[@]}"`) in the call's own file: the
    # element's line, which is where a reader looks and a fix edits (None otherwise).
    element_line: int | None = None

    @property
    def resolved(self) -> bool:
        return not self.unknowns

    @property
    def written_line(self) -> int:
        """The line a person reads and edits for this override: an array element's own line
        (`"${ARR[@]}"` hands it to the call on the call's line), else the word's line."""
        return self.line if self.element_line is None else self.element_line


class Hazard(NamedTuple):
    """A shell-level trap found while reading; `gen check` reports these as findings.

    kind: comment-in-continuation | backslash-space | empty-expansion | duplicate-key |
          unquoted-glob | orphan-overrides | parse-error | brace-expansion (an unquoted
          `{a,b}` that bash splits into several arguments, e.g. a Hydra dict `k={a:1,b:2}`) |
          crlf | split-assignment | stray-argument | unterminated-quote | placeholder-value |
          unset-in-value | env-in-value | unused-option | invisible-byte (rules VS710-VS720 in rules/shell.py)
    """

    kind: str
    line: int
    message: str
    span: Span | None = None


class Invocation:
    """One call of a Hydra entry point (verl's trainer, a recipe, a wrapper module or file)."""

    # A plain class with __slots__, as LaunchScript: a check's start imports no dataclasses.
    __slots__ = ("line", "span", "entry", "entry_kind", "launcher", "config_path", "config_name", "branch",
                 "passes_args", "overrides", "other_args", "env", "redirects", "context", "cwd", "pythonpath", "path",
                 "own_command_line")
    line: int
    span: Span  # the whole command, wrappers included
    entry: str  # "verl.trainer.main_ppo", "recipe.dapo.main_dapo", or "path/to/main.py"
    entry_kind: Literal["module", "file"]
    launcher: str  # "python3 -m", "ray job submit python3 -m", "torchrun", "srun python -m", ...
    config_path: str | None
    config_name: str | None
    branch: Branch
    passes_args: bool  # "$@" (or $@, ${@:2}, $*) reaches the call: a run can override anything
    overrides: list[Override]
    other_args: list[str]  # arguments that are not overrides
    env: dict[str, str]  # VAR=x prefixes and `env VAR=x`
    redirects: list[str]  # "2>&1", "| tee log", "> out.log", "&"
    context: list[str]  # e.g. ["if [[ $backend == megatron ]]"]
    # Where Python would import the entry from: the working directory after the script's `cd`s
    # ("" = where the script started, None = unknown) and the PYTHONPATH it exported (text).
    cwd: str | None
    pythonpath: str | None
    # The file the command is written in when it is not the script itself (a script it runs with
    # `bash x.sh`, a string it evals): its spans are offsets in that file, so no edit is made there.
    path: str | None
    # The project's entry module when it reads its own command line (argparse, no Hydra: issue 34's
    # `python3 -m verl.trainer.main_ppo ./x.yaml` of a fork): its words are not Hydra overrides and
    # its config is unknown. None for a Hydra entry or one not read.
    own_command_line: str | None

    def __init__(self, line: int, span: Span, entry: str, entry_kind: Literal["module", "file"], launcher: str,
                 config_path: str | None, config_name: str | None, branch: Branch, passes_args: bool,
                 overrides: list[Override] | None = None, other_args: list[str] | None = None,
                 env: dict[str, str] | None = None, redirects: list[str] | None = None,
                 context: list[str] | None = None, cwd: str | None = "", pythonpath: str | None = None,
                 path: str | None = None) -> None:
        self.line = line
        self.span = span
        self.entry = entry
        self.entry_kind = entry_kind
        self.launcher = launcher
        self.config_path = config_path
        self.config_name = config_name
        self.branch = branch
        self.passes_args = passes_args
        self.overrides = [] if overrides is None else overrides
        self.other_args = [] if other_args is None else other_args
        self.env = {} if env is None else env
        self.redirects = [] if redirects is None else redirects
        self.context = [] if context is None else context
        self.cwd = cwd
        self.pythonpath = pythonpath
        self.path = path
        self.own_command_line: str | None = None


def written_elsewhere(script_path: str | None, invocation: Invocation) -> bool:
    """The call's command is written in another file than the script (its spans are that file's
    offsets, not the script's): nothing edits it."""
    return invocation.path is not None and invocation.path != script_path


class LaunchScript:
    """A script as read: its bytes, the trainer calls found in it and the shell hazards met on the way."""

    __slots__ = ("path", "source", "invocations", "hazards", "assumed_env", "assumed_args")
    path: str | None
    source: bytes
    invocations: list[Invocation]
    hazards: list[Hazard]
    # The environment and arguments the reading assumed (from --env/--arg); everything else
    # is unset, and `$@` is empty except where it is reported as passes_args.
    assumed_env: dict[str, str]
    assumed_args: list[str]

    def __init__(self, path: str | None, source: bytes, invocations: list[Invocation] | None = None,
                 hazards: list[Hazard] | None = None, assumed_env: dict[str, str] | None = None,
                 assumed_args: list[str] | None = None) -> None:
        self.path = path
        self.source = source
        self.invocations = [] if invocations is None else invocations
        self.hazards = [] if hazards is None else hazards
        self.assumed_env = {} if assumed_env is None else assumed_env
        self.assumed_args = [] if assumed_args is None else assumed_args

    @property
    def text(self) -> str:
        return self.source.decode("utf-8")

    def line_of(self, offset: int) -> int:
        return self.source.count(b"\n", 0, offset) + 1
