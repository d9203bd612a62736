"""VS7xx — shell-level hazards found while reading the script (LaunchScript.hazards), with
structural text fixes where a safe one exists."""

from __future__ import annotations

import re
from typing import Iterator

from generator.edits import TextEdit
from generator.launch import Hazard, LaunchScript
from generator.rules.core import Context, Example, Finding, Fix, rule

_SCRIPT = ("megatron", "fsdp", "unknown")


def _line_bounds(source: bytes, offset: int) -> tuple[int, int]:
    """[start, end) of the line holding `offset`, end excluding the newline."""
    start = source.rfind(b"\n", 0, offset) + 1
    end = source.find(b"\n", offset)
    return start, (len(source) if end == -1 else end)


def _line_start_of(source: bytes, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        pos = source.find(b"\n", pos) + 1
        if pos == 0:
            return len(source)
    return pos


def _hazard_offset(script: LaunchScript, hazard: Hazard) -> int:
    return hazard.span.start if hazard.span else _line_start_of(script.source, hazard.line)


def _command_start(source: bytes, line_start: int) -> int:
    """Start of the first line of the continued command that `line_start` belongs to."""
    start = line_start
    while start > 0:
        prev_start, prev_end = _line_bounds(source, start - 1)
        prev = source[prev_start:prev_end].rstrip()
        if prev.endswith(b"\\") or prev.lstrip().startswith(b"#"):
            start = prev_start
            continue
        break
    # do not move above leading comment lines that precede the command itself
    while True:
        first_start, first_end = _line_bounds(source, start)
        if source[first_start:first_end].lstrip().startswith(b"#") and first_end < line_start:
            start = first_end + 1
            continue
        return start


def _comment_fix(script: LaunchScript, hazard: Hazard) -> Fix | None:
    source = script.source
    start, end = _line_bounds(source, _hazard_offset(script, hazard))
    line = source[start:end]
    if not line.lstrip().startswith(b"#"):
        return None  # a trailing comment after a word: no safe structural move
    target = _command_start(source, start)
    if target >= start:
        return None
    comment = line.strip().decode("utf-8", "replace")
    indent = source[target:_line_bounds(source, target)[1]]
    indent = indent[: len(indent) - len(indent.lstrip())].decode()
    return Fix("move the comment line above the command so the continuation is not cut",
               (TextEdit(target, target, f"{indent}{comment}\n"), TextEdit(start, min(end + 1, len(source)), "")))


_BACKSLASH_SPACE_COMMENT = re.compile(rb"\\([ \t]+)(#.*)$")


def _backslash_fix(script: LaunchScript, hazard: Hazard) -> Fix | None:
    """The one repair of a backslash followed by whitespace: delete the whitespace; when a
    trailing comment follows (`key=v \\  # note`), deleting it would leave `\\#`, an escaped `#`
    that bash passes as an argument, so the comment moves above the command instead."""
    source = script.source
    start, end = _line_bounds(source, _hazard_offset(script, hazard))
    line = source[start:end]
    stripped = line.rstrip(b" \t\r")
    if stripped.endswith(b"\\") and len(stripped) < len(line):
        return Fix("delete the whitespace after the trailing backslash",
                   (TextEdit(start + len(stripped), end, ""),))
    match = _BACKSLASH_SPACE_COMMENT.search(line)
    if match is None or b"'" in line[: match.start()] or b'"' in line[: match.start()]:
        return None  # no trailing comment, or quotes we would have to reason about: leave it
    comment = match.group(2).rstrip().decode("utf-8", "replace")
    first_start = _continued_from(source, start)
    first_text = source[first_start:_line_bounds(source, first_start)[1]]
    indent = first_text[: len(first_text) - len(first_text.lstrip(b" \t"))].decode()
    return Fix(f"line {hazard.line}: move the trailing comment above the command so the backslash "
               "ends the line and continues the command",
               (TextEdit(first_start, first_start, f"{indent}{comment}\n"),
                TextEdit(start + match.start() + 1, end, "")),
               applicability="safe")


def _continued_from(source: bytes, line_start: int) -> int:
    """Start of the first line of the backslash-continued command holding the line at `line_start`."""
    start = line_start
    while start > 0:
        prev_start, prev_end = _line_bounds(source, start - 1)
        prev = source[prev_start:prev_end]
        if not (prev.endswith(b"\\") and not prev.endswith(b"\\\\")):
            break
        start = prev_start
    return start


def hazard_fix(script: LaunchScript, hazard: Hazard) -> Fix | None:
    """The structural repair of a shell hazard, when one exists (used by the rules below and by
    the fix engine for findings that came without one)."""
    fixer = _FIXERS.get(hazard.kind)
    return fixer(script, hazard) if fixer else None


def _quote_word_fix(why: str):
    def fixer(script: LaunchScript, hazard: Hazard) -> Fix | None:
        if hazard.span is None:
            return None
        word = script.source[hazard.span.start:hazard.span.end].decode("utf-8", "replace")
        if any(ch in word for ch in "'\"$`\\"):
            return None
        return Fix(f"single-quote the word so bash cannot {why}",
                   (TextEdit(hazard.span.start, hazard.span.end, f"'{word}'"),))

    return fixer


_FIXERS = {"comment-in-continuation": _comment_fix, "backslash-space": _backslash_fix, "unquoted-glob": _quote_word_fix("expand it as a glob"),
           "brace-expansion": _quote_word_fix("split it by brace expansion")}


def _hazard_rule(code: str, kind: str, title: str, severity: str, why: str, failing: str, passing: str,
                 fix_safety: str = "No automatic fix."):
    def check(ctx: Context) -> Iterator[Finding]:
        script = ctx.script
        if script is None:
            return
        for hazard in script.hazards:
            if hazard.kind != kind:
                continue
            yield registered.finding(hazard.message, line=hazard.line, fix=hazard_fix(script, hazard))

    registered = rule(code, kind, title, severity=severity, stage="shell", verl_ref="",
                      backends=_SCRIPT, scope="script", why=why, fix_safety=fix_safety,
                      failing=Example((), script=failing), passing=Example((), script=passing))(check)
    return registered


_CALL = "python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\\n"
_hazard_rule("VS701", "comment-in-continuation", "comment line inside a continued command", "error",
             "A comment line ends the command: the overrides after it never reach the trainer and bash tries to run "
             "them as a separate command.",
             _CALL + "    # the rollout\n    actor_rollout_ref.rollout.n=4\n",
             _CALL + "    actor_rollout_ref.rollout.n=4\n",
             fix_safety="Moves the comment line above the command (safe: comments do not run).")
_hazard_rule("VS702", "backslash-space", "whitespace after a line-continuation backslash", "error",
             "'\\ ' escapes the space instead of the newline, so the command ends on that line.",
             _CALL.replace("=64 \\\n", "=64 \\ \n") + "    actor_rollout_ref.rollout.n=4\n",
             _CALL + "    actor_rollout_ref.rollout.n=4\n",
             fix_safety="Deletes the trailing whitespace (safe).")
_hazard_rule("VS703", "empty-expansion", "an override takes its value from an empty or unset variable", "warning",
             "With the assumed (empty) environment the value expands to nothing; Hydra then sees `key=` or a "
             "missing word.",
             _CALL + "    data.train_files=$train_path\n",
             "train_path=$HOME/data/train.parquet\n" + _CALL + "    data.train_files=$train_path\n")
_hazard_rule("VS704", "duplicate-key", "the same key is set twice with different values", "warning",
             "Hydra keeps the last value; the earlier one is dead and misleading.",
             _CALL + "    data.train_batch_size=128\n", _CALL + "    actor_rollout_ref.rollout.n=4\n")
_hazard_rule("VS705", "unquoted-glob", "an unquoted word bash may expand as a glob", "info",
             "Unquoted '*', '?' or '[...]' are filename patterns: if a file matches, bash replaces the word.",
             _CALL + "    data.train_files=[a*.parquet]\n", _CALL + "    'data.train_files=[a*.parquet]'\n",
             fix_safety="Single-quotes the word (safe when it holds no expansion).")
_hazard_rule("VS706", "orphan-overrides", "override lines not attached to any command", "error",
             "Lines that look like overrides but belong to no trainer command (typically after a broken "
             "continuation) are run by bash as commands and never reach verl.",
             _CALL + "\n    actor_rollout_ref.rollout.n=4\n", _CALL + "    actor_rollout_ref.rollout.n=4\n")
_hazard_rule("VS707", "parse-error", "bash cannot parse the script", "error",
             "The script has a syntax error; what follows it cannot be read reliably.",
             "python3 -m verl.trainer.main_ppo data.train_files=(\n", _CALL)
_hazard_rule("VS708", "brace-expansion", "an unquoted {a,b} in a value that bash splits into several arguments", "error",
             "Bash expands `key={a:1,b:2}` into two words, `key=a:1` and `key=b:2`, before Hydra sees it: the trainer "
             "gets two overrides of the same key instead of one mapping.",
             _CALL + "    +trainer.extra={a:1,b:2}\n", _CALL + "    '+trainer.extra={a:1,b:2}'\n",
             fix_safety="Single-quotes the word (safe when it holds no expansion).")


def _strip_crs(script: LaunchScript, hazard: Hazard) -> Fix | None:
    source = script.source
    edits = tuple(TextEdit(m.start(), m.start() + 1, "") for m in re.finditer(rb"\r(?=\n)", source))
    return Fix("convert the file to LF line endings (delete the CR before each newline)", edits) if edits else None


_FIXERS["crlf"] = _strip_crs


@rule("VS709", "no-trainer-call", "no trainer call was read in the script", severity="warning", stage="shell",
      verl_ref="", backends=_SCRIPT, scope="script",
      why="A script whose trainer call the reader cannot find is not checked at all; passing it silently would "
          "hide every mistake in it. The launcher may be one the reader does not know, the call may sit in "
          "another file, or the script may not launch training.",
      fix_safety="No automatic fix.",
      failing=Example((), script="python3 prepare_data.py --out /data\n"),
      passing=Example((), script=_CALL + "    actor_rollout_ref.rollout.n=4\n"))
def no_trainer_call(ctx: Context) -> Iterator[Finding]:
    script = ctx.script
    if script is None or any(inv.branch != "dead" for inv in script.invocations):
        return
    if script.invocations:
        first = script.invocations[0]
        why = (f"the call at line {first.line} is never reached"
               + (f" ({first.context[-1]})" if first.context else ""))
    else:
        why = "no command runs verl's trainer or a Hydra entry point"
    yield no_trainer_call.finding(f"no trainer call was read, so nothing in this script was checked: {why}",
                                  line=script.invocations[0].line if script.invocations else None)


_hazard_rule("VS710", "crlf", "Windows (CRLF) line endings", "error",
             "Bash does not treat CR as whitespace: a line-continuation backslash followed by CR escapes the CR, "
             "so the command ends there and the overrides on the next lines never reach the trainer; the last "
             "word of every line also ends in a CR.",
             _CALL.replace("\n", "\r\n") + "    actor_rollout_ref.rollout.n=4\r\n",
             _CALL + "    actor_rollout_ref.rollout.n=4\n",
             fix_safety="Deletes the CR before each newline (safe: bash never needs it).")
_hazard_rule("VS711", "split-assignment", "a space around `=` splits an override into two words", "error",
             "`key= value` passes `key=` (an empty value) and a stray `value`; `key =value` passes `key` and `=value`. "
             "Hydra refuses the stray word and verl never starts.",
             _CALL + "    actor_rollout_ref.rollout.n= 4\n", _CALL + "    actor_rollout_ref.rollout.n=4\n")
_hazard_rule("VS712", "stray-argument", "a word among the overrides that is not `key=value`", "error",
             "verl's trainer takes only Hydra overrides and Hydra's own options: a bare word or an unknown `-x` "
             "stops it with a command-line error before training.",
             _CALL + "    --verbose\n", _CALL + "    actor_rollout_ref.rollout.n=4\n")
_hazard_rule("VS713", "unterminated-quote", "a quote that is never closed", "error",
             "Bash reads to the end of the file looking for the closing quote and then refuses the whole script "
             "with a syntax error: nothing in it runs.",
             _CALL + "    trainer.project_name=\"verl\n", _CALL + "    trainer.project_name=\"verl\"\n")
_hazard_rule("VS714", "placeholder-value", "a placeholder left as a value", "warning",
             "Values such as `<path_to_model>`, `TO_BE_FILLED` or `xxx` are meant to be replaced; verl receives the "
             "text itself and fails later (a path not found, a number that is not one).",
             _CALL + "    actor_rollout_ref.model.path=TO_BE_FILLED\n",
             _CALL + "    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct\n")
_hazard_rule("VS715", "unset-in-value", "a value built on a variable the script never sets", "warning",
             "`$ckpt_dir/run1` with `ckpt_dir` never assigned expands to `/run1`: the run writes or reads somewhere "
             "else than intended, without any error.",
             _CALL + "    trainer.default_local_dir=$ckpt_dir/run1\n",
             "ckpt_dir=/data/ckpt\n" + _CALL + "    trainer.default_local_dir=$ckpt_dir/run1\n")
_hazard_rule("VS716", "env-in-value", "a value built on an environment variable the script does not set", "info",
             "An upper-case variable such as `$DATA_ROOT` is usually meant to come from the environment; when it "
             "is not set, the value silently loses that part (`$DATA_ROOT/train.parquet` becomes `/train.parquet`).",
             _CALL + "    data.train_files=$DATA_ROOT/train.parquet\n",
             "DATA_ROOT=${DATA_ROOT:-$HOME/data}\n" + _CALL + "    data.train_files=$DATA_ROOT/train.parquet\n")
_hazard_rule("VS717", "unused-option", "an option parsed from the script's arguments but never used", "warning",
             "The argument loop accepts the option and stores its value in a variable no command reads: a user "
             "who passes it believes it took effect.",
             "while [[ $# -gt 0 ]]; do case $1 in --lr) LR=$2; shift 2;; *) shift;; esac; done\n"
             + _CALL + "    actor_rollout_ref.rollout.n=4\n",
             "while [[ $# -gt 0 ]]; do case $1 in --lr) LR=$2; shift 2;; *) shift;; esac; done\n"
             + _CALL + "    actor_rollout_ref.actor.optim.lr=${LR:-1e-6}\n")
