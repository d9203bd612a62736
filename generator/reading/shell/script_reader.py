"""read_launch (and the shell readers under it, read_file / read_script): a launch script →
generator.reading.launch_script.LaunchScript."""

from __future__ import annotations

import os
from bisect import bisect_right

from generator.base.errors import InputError
from generator.reading.launch_script import Hazard, Invocation, LaunchScript, Span
from generator.reading.shell.context import CommandRecord, Flow
from generator.reading.shell.eval_words import held_call_fields
from generator.reading.shell.trainer_calls import (argument_hazards, launcher_placeholder_hazards, orphan_hazard, override_hazards,
                                   recognise)
from generator.reading.shell.hazards import (crlf_hazard, has_unquoted_glob, invisible_hazards, text_hazards,
                                     unused_option_hazards)
from generator.reading.shell.model import WORK_LIMIT, TooMuchWork, as_text
from generator.base.files import MAX_TRAINER_CALLS, SCRIPT_LIMIT, STDIN, read_input
from generator.project.root import enter
from generator.reading.shell.walker import Evaluator
from generator.reading.shell.braces import brace_words
from generator.reading.shell.callee import in_callee, unread_call
from generator.reading.shell.command_traps import command_trap_hazards
from generator.reading.shell.export_placeholders import exported_placeholder_hazards
from generator.reading.shell.source_text import ScriptTree
from generator.reading.shell.syntax_verdict import second_opinion

MAX_SCRIPT_BYTES = SCRIPT_LIMIT
# The one message, in every command, for input that nests deeper than the reader recurses.
NESTS_TOO_DEEPLY = "the script nests too deeply to read"


def read_launch(path: str | os.PathLike[str] | None, *, source: bytes | str | None = None,
                env: dict[str, str] | None = None, args: list[str] | None = None) -> LaunchScript:
    """The one reader entry of every command: a Python launcher (`*.py`) or a shell script,
    read from `source` when the caller already holds its bytes, else from `path` on disk.
    `env`/`args` are the environment and script arguments to assume (shell scripts only).
    Raises InputError (one line) when the file cannot be read or is not text."""
    name = os.fspath(path) if path is not None else None
    if source is None:
        if name is None:
            raise InputError("no script given")
        source = _read_bytes(name)
    if name is not None and name.endswith(".py"):
        # Here, not at the top: a shell script (the usual check) never needs the Python reader.
        from generator.reading.python.override_lists import read_launcher

        try:
            launcher = read_launcher(source, name)
        except RecursionError:  # depth is checked before parsing; this is the last line of defence
            raise InputError(f"{name}: {NESTS_TOO_DEEPLY}") from None
        if len(launcher.invocations) > MAX_TRAINER_CALLS:
            raise _too_many_calls(name)
        return launcher
    return read_script(source, name, env=env, args=args)


def _too_many_calls(label: str) -> InputError:
    return InputError(f"{label}: more than {MAX_TRAINER_CALLS} trainer calls; not a launch script gen checks")


def read_file(path: str | os.PathLike[str], env: dict[str, str] | None = None,
              args: list[str] | None = None) -> LaunchScript:
    """Read a shell script from disk (see read_launch, which also reads Python launchers)."""
    name = os.fspath(path)
    return read_script(_read_bytes(name), name, env=env, args=args)


def _read_bytes(name: str) -> bytes:
    """A launch file's bytes. generator.base.files.read_input refuses FIFOs and devices before
    opening them and caps the size; InputError (one line, naming the file) otherwise."""
    enter(os.getcwd() if name == STDIN else name)
    try:
        return read_input(name, trusted=True)  # named by the user; the project's cap for a launch script (generator.base.files)
    except InputError as err:
        raise InputError(f"{name}: {err}") from None


def read_script(source: bytes | str, path: str | None = None, *, env: dict[str, str] | None = None,
                args: list[str] | None = None) -> LaunchScript:
    """Read a script's text statically: every Hydra entry call, its overrides with provenance,
    and the shell hazards around them. Nothing in the script is ever executed."""
    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    label = path or "<script>"
    if b"\0" in data:
        raise InputError(f"{label}: binary file (contains NUL bytes), not a shell script")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"{label}: not valid UTF-8 text (line {line})") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise InputError(f"{label}: too large for a launch script (limit {SCRIPT_LIMIT // (1024 * 1024)} MB)")
    try:
        return _read_checked(data, path, env, args)
    except RecursionError:
        # Deep `$(…)`, `${…}` or `if` nesting: one message for every command.
        raise InputError(f"{label}: {NESTS_TOO_DEEPLY}") from None
    except TooMuchWork as err:
        raise InputError(f"{label}: reading it takes more than {WORK_LIMIT:,} steps of expansion ({err.cause}); "
                         "not a launch script gen checks") from None


def _held_calls(ev: Evaluator) -> list[CommandRecord]:
    """Calls held in a string the script never runs itself (another script evals it)."""
    out: list[CommandRecord] = []
    for name, whole, words in held_call_fields(ev.state.vars):
        var = ev.state.vars[name]
        g = var.group
        start = g.span_start if g is not None and g.span_start is not None else 0
        end = g.span_end if g is not None and g.span_end is not None else start
        fx_path = g.path if g is not None else None
        table = ev.sourced[fx_path].line_starts if fx_path in ev.sourced else ev.main_line_starts
        if words is None:  # quotes, redirections, continuations: parse the string's text again
            before = len(ev.records)
            ev.fx = ev.main_fx
            ev._reread_string([whole], Flow(), 0, f"another script (held in ${name}, never run here)",
                              variable=(name, fx_path))
            ev.fx = None
            out.extend(ev.records[before:])
            continue
        out.append(CommandRecord(fields=words, env={}, span=Span(start, end, bisect_right(table, start)),
                                 path=fx_path, branch="live", context=(f"held in ${name}, run elsewhere",),
                                 passes_args=False))
    return out


def _run_files(invocations: list[Invocation], path: str | None) -> list[str]:
    """The text of the scripts this one runs its trainer calls in (`bash x.sh`), which may read
    what it exports."""
    texts: list[str] = []
    for file in dict.fromkeys(inv.path for inv in invocations if inv.path and inv.path != path):
        try:
            with open(file, "rb") as handle:
                texts.append(handle.read(1 << 20).decode("latin-1"))
        except OSError:
            continue
    return texts


def _read_checked(data: bytes, path: str | None, env: dict[str, str] | None, args: list[str] | None
                  ) -> LaunchScript:
    env = dict(env or {})
    args = list(args or [])
    base_dir = os.path.dirname(os.path.abspath(path)) if path else None
    ev = Evaluator(base_dir=base_dir, env=env, args=args)
    tree = ev.run_file(data, path)

    src = data.decode("latin-1")
    starts = ev.main_line_starts
    line_cache: dict[str | None, list[int]] = {None: starts, path: starts}

    def line_of(file: str | None, offset: int) -> int:
        table = line_cache.get(file)
        if table is None:
            sourced = ev.sourced.get(file) if file is not None else None
            table = sourced.line_starts if sourced is not None else starts
            line_cache[file] = table
        return bisect_right(table, max(offset, 0))

    script = LaunchScript(path=path, source=data, assumed_env=env, assumed_args=args)
    hazards: list[Hazard] = list(ev.hazards)
    script_tree = ScriptTree(tree)  # the passes below share its one search for nodes
    hazards.extend(text_hazards(src, script_tree, lambda off: line_of(None, off)))
    hazards.extend(unused_option_hazards(src, lambda off: line_of(None, off)))
    hazards.extend(command_trap_hazards(src, script_tree, lambda off: line_of(None, off)))
    read = [(rec, recognise(rec, line_of, path)) for rec in ev.records]  # each command recognised once
    if not any(inv is not None and rec.branch != "dead" for rec, inv in read):
        read.extend((rec, recognise(rec, line_of, path)) for rec in _held_calls(ev))
    for rec, inv in read:
        if inv is None:
            orphan = orphan_hazard(rec) if rec.path == path else None
            if orphan is not None:
                hazards.append(orphan)
            unread = unread_call(rec) if rec.branch != "dead" else None
            if unread is not None:
                hazards.append(unread)
            continue
        script.invocations.append(inv)
        if len(script.invocations) > MAX_TRAINER_CALLS:
            raise _too_many_calls(path or "<script>")
        found = override_hazards(inv, ev.assigned_names, src if rec.path == path else None, path)
        if rec.branch != "dead":
            found.extend(argument_hazards(rec, inv, line_of))
            found.extend(launcher_placeholder_hazards(rec, inv, line_of))
        hazards.extend(in_callee(found, inv))
        if rec.path == path:  # words written in another file are that file's to report
            hazards.extend(_word_expansion_hazards(src, inv, path))
    hazards.extend(exported_placeholder_hazards(src, script_tree, lambda off: line_of(None, off),
                                                _run_files(script.invocations, path),
                                                has_calls=bool(script.invocations)))
    crlf = crlf_hazard(src, script.invocations, lambda off: line_of(None, off))
    if crlf is not None:
        hazards.append(crlf)
    hazards.extend(invisible_hazards(src, lambda off: line_of(None, off)))
    hazards = second_opinion(hazards, data)
    seen = set()
    for hz in sorted(hazards, key=lambda h: (h.line, h.kind)):
        key = (hz.kind, hz.line, hz.message)
        if key not in seen:
            seen.add(key)
            script.hazards.append(hz)
    return script


def _word_expansion_hazards(src: str, inv: Invocation, path: str | None) -> list[Hazard]:
    """brace-expansion and unquoted-glob hazards of a call's override words written in `src`
    (the file at `path`): bash rewrites such a word before verl sees it."""
    hazards: list[Hazard] = []
    braced: set[int] = set()  # one finding per word, however many overrides bash makes of it
    for ov in inv.overrides:
        if ov.provenance.source in ("array", "string") and ov.provenance.path not in (None, path):
            continue  # an element of an array (or a string) set in a sourced file: its offsets are that file's
        if (ov.word.start not in braced and "{" in src[ov.word.start : ov.word.end]
                and brace_words(src, ov.word.start, ov.word.end) is not None):
            braced.add(ov.word.start)
            parts = [o.text for o in inv.overrides if o.word.start == ov.word.start]
            word_text = as_text(src[ov.word.start : ov.word.end])
            hazards.append(Hazard(
                "brace-expansion", ov.word.line,
                f"bash's brace expansion splits `{word_text[:60]}` into {len(parts)} arguments "
                f"({' '.join(parts)[:80]}); quote the value to pass it whole", ov.word))
        # The override's own text first: a word read from a string (`eval $CMD`) may span many lines
        # of the file, another override's `[...]` among them.
        if "[" in ov.text and "[" in src[ov.word.start : ov.word.end] \
                and has_unquoted_glob(src, ov.word.start, ov.word.end):
            hazards.append(Hazard(
                "unquoted-glob", ov.word.line,
                f"`{ov.text[:60]}` has unquoted [...]: bash treats it as a glob pattern and would replace "
                "it if a matching file exists; quote the value", ov.word))
    return hazards
