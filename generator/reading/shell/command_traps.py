"""Traps in how a script's commands are written, found on its syntax tree and text:

- `$rm_key=$KEY` run as a command: a would-be assignment (bash expands `$rm_key` and runs the
  result as a program: "command not found", the variable is never set);
- `source /home/<someone>/…` under `set -e`: a file in one person's home folder; on any other
  machine `source` fails and `set -e` stops the script before training starts;
- a blank line right after a `\\` continuation: the continuation joins the blank line, the
  command ends there, and the next line (`-- python3 -m verl…` after `ray job submit … \\`)
  runs as a command of its own. Not a finding where both halves are whole commands (a data step
  ending in a stray `\\`, then `python3 -m verl…`): each runs as it would have anyway.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from generator.reading.launch_script import Hazard, Span
from generator.reading.recognize import looks_like_launcher
from generator.reading.shell.source_text import ScriptTree, code_nodes, continues, in_quoted_text, line_from

if TYPE_CHECKING:
    from tree_sitter import Tree

_ASSIGN_LIKE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?=")
_HOME_PATH = re.compile(r"/home/([^/\s]+)/")
_ERREXIT = re.compile(r"^[ \t]*set[ \t]+(?:-[a-zA-Z]*e[a-zA-Z]*\b|-o[ \t]+errexit\b|.*[ \t]-[a-zA-Z]*e[a-zA-Z]*\b)",
                      re.MULTILINE)
_SHEBANG_E = re.compile(r"\A#![^\n]*\bbash[ \t]+-[a-zA-Z]*e")


def command_trap_hazards(src: str, script: ScriptTree, line_of: Callable[[int], int]) -> list[Hazard]:
    out: list[Hazard] = []
    errexit = _errexit_line(src, line_of)
    for cmd in code_nodes(script, "command"):
        name = cmd.child_by_field_name("name")
        if name is None:
            continue
        word = src[name.start_byte : name.end_byte]
        line = line_of(name.start_byte)
        m = _ASSIGN_LIKE.match(word)
        if m:
            var = m.group(1)
            out.append(Hazard(
                "assignment-as-command", line,
                f"`{word[:60]}` runs as a command, not an assignment: bash expands ${var} and tries to run the "
                f"result as a program (command not found), and no variable is set; to set {var}, write "
                f"`{var}={word[m.end():][:40]}` (no `$` before the name)",
                Span(name.start_byte, name.end_byte, line)))
            continue
        if word not in ("source", ".") or errexit is None or errexit[1] > name.start_byte:
            continue
        args = [c for c in cmd.children if c.is_named and c.type != "command_name"]
        if not args:
            continue
        target = src[args[0].start_byte : args[0].end_byte].strip("'\"")
        home = _HOME_PATH.match(target)
        if home is None:
            continue
        out.append(Hazard(
            "source-home-path", line,
            f"`{word} {target[:80]}` reads a file in {home.group(1)}'s home folder; with `set -e` (line "
            f"{errexit[0]}) the script stops here on any machine without that file, before training starts; use "
            "a path relative to the project or one the run sets (`$HOME`, `$CONDA_PREFIX`)",
            Span(args[0].start_byte, args[0].end_byte, line)))
    out.extend(_blank_line_cuts(src, script.tree, line_of))
    return out


def _errexit_line(src: str, line_of: Callable[[int], int]) -> tuple[int, int] | None:
    """(line, offset) of the first `set -e` (or `-o errexit`, or `bash -e` in the shebang)."""
    if _SHEBANG_E.match(src):
        return 1, 0
    m = _ERREXIT.search(src)
    return (line_of(m.start()), m.start()) if m else None


def _blank_line_cuts(src: str, tree: Tree, line_of: Callable[[int], int]) -> list[Hazard]:
    out: list[Hazard] = []
    start = 0
    while True:
        k = src.find("\\\n", start)
        if k < 0:
            return out
        start = k + 2
        if not continues(src, k + 1):
            continue  # the backslash is escaped
        nl = src.find("\n", start)
        blank_end = len(src) if nl < 0 else nl
        if src[start:blank_end].strip() or in_quoted_text(tree, k):
            continue  # the next line is not blank, or the backslash is quoted text
        rest_start = blank_end + 1
        while rest_start < len(src):  # the next line of code: past blank and comment lines
            nxt_end = src.find("\n", rest_start)
            nxt_end = len(src) if nxt_end < 0 else nxt_end
            code = src[rest_start:nxt_end].strip()
            if code and not code.startswith("#"):
                break
            rest_start = nxt_end + 1
        following = line_from(src, rest_start).strip()
        if not following or not (following.startswith("-") or looks_like_launcher(following.encode("latin-1"))):
            continue  # nothing after it that belonged to the command
        if _starts_a_command(following) and _complete(_command_before(src, k)):
            continue  # a stray backslash after a whole command (`make_data … \`), then a whole trainer call
        line = line_of(start)
        out.append(Hazard(
            "blank-in-continuation", line,
            f"line {line} is blank right after a `\\` continuation: bash ends the command at line {line - 1}, and "
            f"runs `{following[:60]}` (line {line_of(rest_start)}) as a separate command; delete the blank line",
            Span(start, blank_end, line)))



# Programs that run the command after their own options: cut off before it, they run nothing
# (`ray job submit … \\` + blank + `-- python3 -m …`, `CUDA_VISIBLE_DEVICES=0 \\` + blank + `python3 …`).
_WRAPPERS = frozenset({"nohup", "env", "time", "srun", "ray", "exec", "sudo", "nice", "timeout", "numactl",
                       "stdbuf", "mpirun", "uv", "accelerate", "deepspeed", "torchrun", "xargs", "command"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _command_before(src: str, k: int) -> str:
    """The logical command the `\\` at offset `k` continues: its line and the continued lines above."""
    start = src.rfind("\n", 0, k) + 1
    while start > 1 and src[start - 2] == "\\":
        start = src.rfind("\n", 0, start - 2) + 1
    return src[start:k].replace("\\\n", " ")


def _words_after_assignments(text: str) -> list[str]:
    words = text.split()
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    return words


def _starts_a_command(line: str) -> bool:
    """The line begins a command of its own (a program, perhaps after VAR=x), not an override."""
    words = _words_after_assignments(line)
    return bool(words) and "=" not in words[0] and not words[0].startswith(("-", "\\"))


def _complete(command: str) -> bool:
    """Whether the command runs something by itself: not only assignments, not a wrapper or an
    interpreter still waiting for what to run."""
    words = _words_after_assignments(command)
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program in _WRAPPERS:
        return False
    if re.fullmatch(r"python[0-9.]*", program):
        return any(w in ("-m", "-c") or w.endswith(".py") for w in words[1:])
    return True
