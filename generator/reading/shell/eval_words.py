"""`eval "$CMD"` (and `bash -c "$CMD"`): the words bash runs when the string is plain words.

eval joins its arguments with spaces and parses the result as shell text. When that text holds
no quote, expansion or operator (`'"$\\`;&|<>(){}` — the common `CMD="python3 -m verl… k=v …"`),
parsing it again is word splitting at blanks, so the command it runs is read from the string's
own pieces and every override keeps its place in the string's definition. Any other text is
not re-parsed here: the command is recorded as written, and VS709 says no call was read.
"""

from __future__ import annotations

from generator.reading.shell.fields import split_fields
from generator.reading.recognize import names_trainer
from generator.reading.shell.model import Field, Piece, Var, pieces_text

_SHELL_SYNTAX = frozenset("'\"$\\`;&|<>(){}#")


def eval_fields(args: list[Field]) -> list[Field] | None:
    """The fields `eval ARGS` runs, or None when the joined text would need the shell's parser."""
    if not args or args[0].pieces[:1] and args[0].pieces[0].unknown:
        return None  # the command itself unknown
    pieces: list[Piece] = []
    for n, f in enumerate(args):
        if n:
            pieces.append(Piece(" ", split=True))
        for p in f.pieces:
            # `\` + newline in the text is a continuation when it is parsed again: a blank.
            if p.unknown:  # a value not known statically stays one unknown part of its word
                pieces.append(p.copy(split=False))
                continue
            text = p.text.replace("\\\n", "  ")
            if any(c in _SHELL_SYNTAX for c in text):
                return None
            pieces.append(p.copy(split=True) if text == p.text else p.copy(text=text, split=True, exact=False))
    if "\n" in pieces_text([p for p in pieces if not p.unknown]).strip():
        return None  # several command lines
    first = args[0]
    return split_fields(pieces, first.word_a, args[-1].word_b, first.path) or None


# Shells whose `-c STRING` runs the string as a command line.
_SHELLS = frozenset({"bash", "sh"})
# tmux's names for keys sent after the text (`C-m` is Enter).
_TMUX_KEYS = frozenset({"C-m", "Enter", "KPEnter", "C-j"})


def string_args(fields: list[Field]) -> tuple[str, list[Field]] | None:
    """(how, the string's words) of a string-running command: `eval ARGS`, `bash -c "cmd"`, or
    `tmux send-keys [-t T] "cmd" C-m` (the text typed into a pane runs there as a command line);
    None for any other command."""
    if not fields or fields[0].unknowns:
        return None
    name = fields[0].text
    if name in LAUNCH_WRAPPERS:
        inner = _shell_behind_wrapper(fields)
        return string_args(inner) if inner is not None else None
    if name == "eval":
        return "`eval`", fields[1:]
    if name in _SHELLS and len(fields) >= 3 and fields[1].text == "-c":
        return f"`{name} -c`", fields[2:3]  # the words after the string are its $0, $1, …
    if name == "sbatch":
        wrapped = _sbatch_wrap(fields)
        return ("`sbatch --wrap`", [wrapped]) if wrapped is not None else None
    if name != "tmux" or len(fields) < 3 or fields[1].text != "send-keys":
        return None
    rest = fields[2:]
    while rest and rest[0].text.startswith("-"):
        rest = rest[2:] if rest[0].text in ("-t", "-N") else rest[1:]
    while rest and rest[-1].text in _TMUX_KEYS:
        rest = rest[:-1]
    return "`tmux send-keys`", rest


# Commands that run the command after their own words on another machine or process (a Slurm
# step, a detached job): `srun -N1 -w "$head" bash -c "…"` runs the string as `bash -c` would, and so
# does `ray job submit … -- bash -c "…"` (the Ray job's entrypoint).
LAUNCH_WRAPPERS = frozenset({"srun", "nohup", "timeout", "mpirun", "setsid", "stdbuf", "nice", "ray"})


def _shell_behind_wrapper(fields: list[Field]) -> list[Field] | None:
    """The `bash -c STRING …` a wrapper runs (`srun --nodes=1 -w "$node" bash -c "…"`): its words
    from the shell on, else None. The wrapper's own options are stepped over up to the first
    `bash -c`/`sh -c` pair; no other command behind a wrapper is taken for one."""
    for k in range(1, len(fields) - 1):
        if fields[k].unknowns:
            continue
        if fields[k].text in _SHELLS and fields[k + 1].text == "-c" and not fields[k + 1].unknowns:
            return fields[k:]
    return None


def _sbatch_wrap(fields: list[Field]) -> Field | None:
    """The command line of `sbatch ... --wrap="cmd"` (or `--wrap cmd`): sbatch runs it with sh as the
    job (issue 34: a trainer call in the string was never read). None without one."""
    for n, f in enumerate(fields[1:], 1):
        if f.text == "--wrap" and n + 1 < len(fields):
            return fields[n + 1]
        if f.text.startswith("--wrap=") and f.pieces and not f.pieces[0].unknown \
                and f.pieces[0].text.startswith("--wrap="):
            first = f.pieces[0]
            cut = len("--wrap=")
            head = first.copy(text=first.text[cut:], a=first.a + cut if first.a is not None and first.exact else
                              first.a, exact=first.exact)
            return Field([head, *f.pieces[1:]], f.word_a, f.word_b, f.path, f.origin, f.cmd_a)
    return None


def run_string_fields(fields: list[Field]) -> list[Field] | None:
    """The command a string-running command runs, when its string is plain words; else None."""
    found = string_args(fields)
    return eval_fields(found[1]) if found is not None else None


def held_call_fields(vars_: dict[str, Var]) -> list[tuple[str, Field, list[Field] | None]]:
    """Strings the script sets but never runs that hold a trainer call (`RUN_SCRIPT="python3 -m
    …"`, run by another script with `eval $RUN_SCRIPT`): (name, the string, the words the call
    would be when it is plain words, else None), for a script in which no call was read otherwise."""
    out: list[tuple[str, Field, list[Field] | None]] = []
    for name, var in vars_.items():
        if not var.pieces or not names_trainer(pieces_text(var.pieces).encode("latin-1")):
            continue
        whole = Field(list(var.pieces), 0, 0, var.pieces[0].path)
        out.append((name, whole, eval_fields([whole])))
    return out
