"""Following a script the script runs: `bash x.sh ARGS`, `sh x.sh`, `./x.sh` (`source x.sh` and
`. x.sh` are builtins.Builtins._source: they run in the caller's own shell).

A wrapper that exports settings and runs `bash ./examples/…/run_x.sh` hands the callee a new
shell: only the caller's exported variables (and the command's own `A=1 bash x.sh` words)
reach it, its `$1…` are the words after the path, and nothing it sets comes back. The callee
is read through the same bounded path as a sourced file (builtins._parsed_source → generator.
files.read_input, one budget for every file read), and its calls are recorded at its own lines
with the context "in <callee>, run by line N".

Where the callee is: the path as written, relative to the caller's working directory; failing
that, relative to each folder above the caller (wrappers are often written to run from the
project root, `bash examples/x/run.sh`); an absolute path written on another machine
(`bash /mnt/<team>/<user>/proj/examples/run.sh`) is this checkout's copy at its tail
(generator.reading.foreign_paths). Wrappers in front (`ray job submit … -- bash x.sh`, `nohup`, `srun`)
are stepped over. A path that is not known statically, or a file not found, leaves the command
recorded as it is (VS709 then names it when no call is read).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, cast

from generator.reading.launch_script import Hazard, Invocation
from generator.reading.foreign_paths import checkout_copy
from generator.reading.recognize import names_trainer
from generator.reading.shell.wrappers import WRAPPERS, Argv, find_entry, skip_wrapper
from generator.reading.shell.context import CommandRecord, EvaluatorParts, FileCtx, Flow, State
from generator.reading.shell.builtins import SOURCE_BUDGET
from generator.reading.shell.comment_subst import mask_comment_substitutions
from generator.reading.shell.model import Field, Piece, Var, as_text, from_text
from generator.reading.shell.restring import definition_word, fields_region, reparse_text
from generator.reading.shell.words import Expander, ExpansionHost

if TYPE_CHECKING:
    from tree_sitter import Tree

_SHELLS = frozenset({"bash", "sh", "/bin/bash", "/bin/sh", "/usr/bin/bash", "/usr/bin/env bash"})
_MAX_DEPTH = 4  # scripts running scripts, sourced files included (builtins._sourcing)
_UP_LEVELS = 6


class Callees(EvaluatorParts):
    """Mixed into walker.Evaluator."""

    def _run_script_command(self, fields: list[Field], flow: Flow, env: dict[str, str], line: int) -> bool:
        """Walk the script `fields` runs in a child shell; True when it was read (the command
        is then not recorded itself)."""
        start, env = _past_wrappers(fields, env)
        k = _script_index(fields[start:])
        if k is None:
            return False
        k += start
        target = fields[k]
        if target.unknowns:
            return False
        rel = as_text(target.text)
        path = self._find_callee(rel)
        if path is None or path in self._sourcing or len(self._sourcing) >= _MAX_DEPTH:
            return False
        label = f"`{as_text(fields[0].text)} {rel}`"
        parsed = self._parsed_source(path, label)  # type: ignore[attr-defined]  # builtins.Builtins
        if parsed is None:
            return False
        tree, sub = parsed
        self._walk_callee(tree, sub, fields[k + 1 :], flow, env, rel, line, path)
        return True

    def _find_callee(self, rel: str) -> str | None:
        if not rel.endswith((".sh", ".bash")) or self.base_dir is None:
            return None
        if os.path.isabs(rel):  # as written, else this checkout's copy of another machine's path
            return checkout_copy(rel, self.base_dir)
        here = os.path.normpath(os.path.join(self.base_dir, self.state.cwd or "")) if self.state.cwd is not None \
            else None
        tried = [here] if here is not None else []
        folder = self.base_dir
        for _ in range(_UP_LEVELS):
            tried.append(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
        for base in dict.fromkeys(tried):
            candidate = os.path.normpath(os.path.join(base, rel))
            if os.path.isfile(candidate):
                return candidate
        return None

    def _walk_callee(self, tree: Tree, sub: FileCtx, args: list[Field], flow: Flow, env: dict[str, str],
                     rel: str, line: int, path: str) -> None:
        caller = self.state
        child = State(
            vars={name: var for name, var in caller.vars.items() if var.exported},
            args=[list(f.pieces) for f in args],
            args_from_script=False,
        )
        for name, value in env.items():
            child.vars[name] = Var(pieces=[Piece(from_text(value), split=False)], exported=True)
        saved_base, saved_fx = self.base_dir, self.fx
        old_dir = os.path.normpath(os.path.join(saved_base or "", caller.cwd)) if caller.cwd is not None else None
        self.base_dir = os.path.dirname(path)
        child.cwd = os.path.relpath(old_dir, self.base_dir) if old_dir is not None else None
        if child.cwd == ".":
            child.cwd = ""
        self.state = child
        self.fx = sub
        self._sourcing.append(path)
        try:
            self.walk(tree.root_node, Flow(flow.branch, flow.context + (f"in {rel}, run by line {line}",),
                                           flow.depth))
        finally:
            self._sourcing.pop()
            self.state, self.base_dir, self.fx = caller, saved_base, saved_fx


    def _reread_string(self, args: list[Field], flow: Flow, line: int, how: str,
                       variable: tuple[str, str | None] | None = None) -> bool:
        """Parse and walk the text of a command string written as one word (restring.py): the
        string `args`, or the value of `variable` (name, file); True when it was read (its
        commands are then recorded at the word's own lines)."""
        if variable is not None:
            text = self._file_text(variable[1])
            word = definition_word(text, variable[0]) if text is not None else None
            region = (variable[1], word[0], word[1]) if word is not None else None
            if word is not None and text is not None:
                line = text.count("\n", 0, word[0]) + 1  # where the string is set
        else:
            region = fields_region(args, self._file_text)
        if region is None:
            return False
        path, qa, qb = region
        holder = self.fx if self.fx is not None and self.fx.path == path else self.sourced.get(path or "")
        label = f"{path or '<script>'} (string at line {line})"
        if holder is None or label in self._sourcing or len(self._sourcing) >= _MAX_DEPTH:
            return False
        cached = self._source_trees.get(label)
        if cached is None:
            if self._sourced_bytes + len(holder.src) > SOURCE_BUDGET:
                return False
            self._sourced_bytes += len(holder.src)
            text = reparse_text(holder.src, qa, qb)
            data, tree = mask_comment_substitutions(text[:-2].encode("latin-1"))
            src = (data + b"\n\n").decode("latin-1")
            sub = FileCtx(label, src, holder.line_starts, None)  # type: ignore[arg-type]
            sub.expander = Expander(src, label, cast("ExpansionHost", self))
            cached = self._source_trees[label] = (tree, sub)
            self.sourced[label] = sub
        tree, sub = cached
        saved_fx = self.fx
        self.fx = sub
        self._sourcing.append(label)
        try:
            self.walk(tree.root_node, flow.with_(context=f"in the string run by {how} at line {line}"))
        finally:
            self._sourcing.pop()
            self.fx = saved_fx
        return True


    def _file_text(self, path: str | None) -> str | None:
        if self.fx is not None and self.fx.path == path:
            return self.fx.src
        held = self.sourced.get(path or "")
        return held.src if held is not None else None


def callee_label(context: list[str]) -> str | None:
    """The "in <callee>, run by line N" of a call recorded in a script this one runs; for a
    script run by a script this one runs, the innermost first (the call's lines are its lines),
    then the scripts that ran it: "in b.sh, run by line 3; in a.sh, run by line 9"."""
    labels = [c for c in context if c.startswith("in ") and ", run by line " in c]
    return "; ".join(reversed(labels)) if labels else None


def in_callee(hazards: list[Hazard], inv: Invocation) -> list[Hazard]:
    """Hazards of a call in a callee, their messages saying which file their lines are in."""
    label = callee_label(inv.context)
    if label is None:
        return hazards
    return [h._replace(message=f"{h.message} [{label}]") for h in hazards]


def unread_call(rec: CommandRecord) -> Hazard | None:
    """Why a command may hold the trainer call the reader did not read: a string run by `eval`
    or `bash -c` that names a trainer, or a script run by `bash x.sh` whose file was not found
    (VS709 gives this reason instead of its general one)."""
    texts = [as_text(f.text) for f in rec.fields]
    if not texts:
        return None
    line = rec.span.line
    joined = " ".join(texts[1:])
    if texts[0] == "eval" or (texts[0] in _SHELLS and "-c" in texts[1:2]):
        how = "`eval`" if texts[0] == "eval" else f"`{texts[0]} -c`"
        if names_trainer(joined.encode()):
            return Hazard(UNREAD_STRING, line, f"the call at line {line} is in a string run by {how}, which the "
                          "reader does not re-read (it holds quotes, expansions or operators); check the command "
                          "itself")
    submitted = _submitted_job(texts, line)
    if submitted is not None:
        return submitted
    launcher = _python_launcher(rec.fields, texts, line)
    if launcher is not None:
        return launcher
    head = texts[: next((n for n, t in enumerate(texts) if "=" in t and not t.startswith("-")), len(texts))]
    if any(f.unknowns for f in rec.fields[: len(head)]) and len(head) <= 4 and _holds_overrides(texts[len(head):]):
        # `python -m ${TRAINER_MODULE} k=v …` (often from `eval $CMD`) after a `source` of a file not
        # known statically: a trainer call whose entry is not known
        return Hazard(UNREAD_STRING, line, f"line {line} gives Hydra overrides to `{' '.join(head)[:60]}`, a "
                      "command not known statically, so its call was not read; check the command itself")
    start, _ = _past_wrappers(rec.fields, {})
    k = _script_index(rec.fields[start:])
    k = k + start if k is not None else None
    if k is not None and not rec.fields[k].unknowns:
        return Hazard("unread-call", line, f"line {line} runs `{' '.join(texts[: k + 1])[:80]}`, whose file was not "
                      "found (looked in the working directory and the folders above the script)")
    if k is not None and _ARGUMENT.fullmatch(texts[k]):
        # `bash "$1"`, `SCRIPT=$1 … bash $SCRIPT`: a generic wrapper (start a cluster, then run the
        # script it is given); the call is in that script, never in this file (VS730 says so)
        return Hazard(ARGUMENT_SCRIPT, line, f"line {line} runs the script its argument names "
                      f"(`{' '.join(texts[: k + 1])[:80]}`): the call is in that script; check it instead")
    if k is not None:
        return Hazard("unread-call", line, f"line {line} runs a script whose path is not known statically "
                      f"(`{' '.join(texts[: k + 1])[:80]}`)")
    return None


# A job submitted with its command in a string (`sbatch --wrap="..."`), or a cluster client given the
# trainer's overrides behind a flag each (`./client job run -T data.train_batch_size=128 ...`): the
# run is the job's, in a command line the reader did not read; at least this many flagged overrides.
_FLAGGED_OVERRIDES_AT_LEAST = 3


def _submitted_job(texts: list[str], line: int) -> Hazard | None:
    """A command that hands the trainer call to a scheduler or a cluster client without the reader
    reading it (issue 34: VS709 'no trainer call' blamed the script): the wrapper hazard (VS730,
    info), since the call lives where that job runs."""
    from generator.reading.overrides import looks_like_override

    name = texts[0].rsplit("/", 1)[-1]
    wrap = next((t[len("--wrap="):] for t in texts[1:] if t.startswith("--wrap=")), None)
    if name == "sbatch" and wrap is not None:
        return Hazard(ARGUMENT_SCRIPT, line, f"line {line} submits a job (`sbatch --wrap`) whose command line "
                      f"(`{wrap[:60]}`) is built in a way the reader does not re-read: the call is in what that "
                      "job runs; check it there")
    flagged = [t for flag, t in zip(texts[1:], texts[2:]) if flag.startswith("-") and not flag.startswith("--")
               and len(flag) == 2 and looks_like_override(t) and "." in t.split("=", 1)[0]]
    if len(flagged) >= _FLAGGED_OVERRIDES_AT_LEAST:
        return Hazard(ARGUMENT_SCRIPT, line, f"line {line} passes {len(flagged)} Hydra overrides to `{texts[0][:40]}` "
                      f"behind a flag each (`{flagged[0][:50]}`, ...): that client starts the trainer with its own "
                      "entry and config; check the job it runs")
    return None


# The hazard of a wrapper that runs the script named by its own argument (`bash "$1"`).
ARGUMENT_SCRIPT = "argument-script"
# The hazard of a trainer call held in a string (`eval "$CMD"`, `bash -c "…"`) that the reader could
# not re-read: the call exists, only its words are not known (VS730, info; not VS709's "no call").
UNREAD_STRING = "unread-string"


# Options an argparse launcher takes its own configuration file by (`python -m pkg.main_x --config
# cfg.yaml`); Hydra's own are `--config-path`/`--config-name`, read as a Hydra call.
_OWN_CONFIG_OPTIONS = ("--config", "--config-file", "--config_file")


def _python_launcher(fields: list[Field], texts: list[str], line: int) -> Hazard | None:
    """A Python entry that is given its own configuration file (issue 34: `python -m
    verl_ttt_discover.main_erdos --config X` builds the trainer's overrides itself and starts
    verl's trainer): the call is made in that program, which the reader does not run (VS730, info)."""
    entry = find_entry(Argv(fields), [], {})
    if entry is None:
        return None
    rest = texts[entry.next:]
    if not any(t in _OWN_CONFIG_OPTIONS or t.startswith(tuple(o + "=" for o in _OWN_CONFIG_OPTIONS))
               for t in rest):
        return None
    return Hazard(UNREAD_STRING, line, f"line {line} runs `{entry.entry}`, a Python launcher given its own "
                  "configuration file: it builds the trainer's call itself, which the reader does not follow; "
                  "check that configuration")


def _holds_overrides(texts: list[str]) -> bool:
    """Whether a string's words pass Hydra overrides (`a.b=c`), enough of them to be a trainer call."""
    from generator.reading.overrides import looks_like_override

    dotted = [t for t in texts if looks_like_override(t) and "." in t.split("=", 1)[0]]
    return len(dotted) >= _FLAGGED_OVERRIDES_AT_LEAST
# A word that is exactly one of the script's positional arguments, as the reader leaves it unknown.
_ARGUMENT = re.compile(r"<\?\$(?:[1-9]|\{[1-9]\})>")


def _past_wrappers(fields: list[Field], env: dict[str, str]) -> tuple[int, dict[str, str]]:
    """(index of the command the wrappers in front run, the environment with their NAME=value
    words): `ray job submit --working-dir . -- bash x.sh`, `nohup bash x.sh`, `srun -N1 bash x.sh`
    run the script as plainly as `bash x.sh` does. 0 and `env` when no wrapper leads."""
    i, found = 0, dict(env)
    argv = Argv(fields)
    for _ in range(4):  # `nohup srun bash x.sh`: a few wrappers deep at most
        name = argv.text(i)
        wrapper = WRAPPERS.get(name or "") if argv.known(i) else None
        if wrapper is None or wrapper.runs_python:
            break
        if wrapper.options == "scan":  # its options are not listed: the shell word (or the next wrapper:
            # `setsid nohup env A=1 bash x.sh`, whose NAME=value words reach the script) ends them
            nxt = next((j for j in range(i + 1, len(argv)) if argv.known(j)
                        and (argv.word(j) in _SHELLS or argv.word(j) in WRAPPERS)), None)
        else:
            nxt = skip_wrapper(argv, i, wrapper, found)
        if nxt is None or nxt >= len(argv):
            return 0, env
        i = nxt
    return (i, found) if i else (0, env)


def _script_index(fields: list[Field]) -> int | None:
    """Index of the script path in `bash [-opts] x.sh …` or `./x.sh …`, else None."""
    if not fields or fields[0].unknowns:
        return None
    name = as_text(fields[0].text)
    if name.endswith((".sh", ".bash")) and "/" in name:
        return 0
    if name not in _SHELLS:
        return None
    k = 1
    while k < len(fields) and as_text(fields[k].text).startswith("-") and not fields[k].unknowns:
        if as_text(fields[k].text) in ("-c", "-s", "--"):
            return None  # a command string or stdin, not a file
        k += 1
    return k if k < len(fields) else None
