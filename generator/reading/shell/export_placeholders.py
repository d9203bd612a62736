"""Placeholders a script exports and never uses itself: `export PYTHONPATH=<your_path>/verl:$PYTHONPATH`,
`export WANDB_API_KEY=YOUR_WANDB_API_KEY`.

A placeholder that reaches an override is reported there (shell/trainer_calls.py). One that is only
exported reaches every program the script starts through the environment: Python imports from
the placeholder folder (so not the fork the script was written for), wandb logs in with the
placeholder key. Reported at the `export` line, once per variable. A variable the script reads
itself (`$NAME` anywhere but its own assignment), or a script it runs its trainer call in reads,
is left to where it is used, except PYTHONPATH and service keys, which programs read themselves; a service
credential (`WANDB_*`) only counts when the script mentions the service at all, and
`export NAME=${NAME:-<placeholder>}` (take it from the environment) is not a placeholder left in.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from generator.reading.launch_script import Hazard, Span
from generator.reading.shell.placeholders import is_placeholder
from generator.reading.shell.source_text import ScriptTree, code_nodes

if TYPE_CHECKING:
    from tree_sitter import Node

# A short phrase starting with "your" (`"your wandb key"`, `"your judge server/v1"`): what an
# exported setting says when left for the user; prose would not be exported as a setting.
_YOUR_PHRASE = re.compile(r"(?i)your\s+\S+(?:\s+\S+){0,4}")
# Credentials of a service: a placeholder there matters only when the script uses that service.
_SERVICES = {"WANDB_": "wandb", "SWANLAB_": "swanlab", "HF_": "huggingface", "OPENAI_": "openai"}


def _names_itself(name: str, value: str) -> bool:
    """`export WANDB_API_KEY='API_KEY'`: a value that is the variable's own name, or its last
    parts (a word of capitals and underscores), names what belongs there instead of being it."""
    if not re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*", value) or len(value) < 3:
        return False
    if name == value:
        return True
    # One word names a placeholder only for a secret (`HF_TOKEN=TOKEN`); elsewhere it is a setting
    # whose value repeats the name's last word (`NCCL_DEBUG=DEBUG` turns NCCL's debug output on).
    return name.endswith("_" + value) and ("_" in value or value in _SECRET_WORDS)


_SECRET_WORDS = frozenset({"KEY", "TOKEN", "SECRET", "PASSWORD"})


def _is_export(declaration: Node) -> bool:
    return declaration.child_count > 0 and declaration.children[0].type == "export"


def _read_elsewhere(src: str, name: str, start: int, end: int) -> bool:
    pattern = re.compile(r"\$\{?" + re.escape(name) + r"(?![A-Za-z0-9_])")
    return any(not (start <= m.start() < end) for m in pattern.finditer(src))


def _consumed_by_programs(name: str) -> bool:
    """Python (PYTHONPATH) and a service's client (WANDB_API_KEY) read these from the environment
    themselves: that the script also reads one (`echo $PYTHONPATH`) does not report it elsewhere."""
    return name == "PYTHONPATH" or any(name.startswith(prefix) for prefix in _SERVICES)


def _service_unused(name: str, src: str) -> bool:
    for prefix, service in _SERVICES.items():
        if name.startswith(prefix):
            rest = src.lower().replace(name.lower(), "")
            return service not in rest
    return False


def _exported_assignments(src: str, script: ScriptTree) -> list[tuple[Node, Node]]:
    """(the export, the assignment it exports): `export NAME=value`, and `export NAME` of a name the
    script assigned before at the top level (`NAME='Your Log Directory'` ... `export NAME`)."""
    plain: dict[str, list[Node]] = {}
    for node in code_nodes(script, "variable_assignment", lambda n: n.parent is not None
                           and n.parent.type == "program", inside_matches=False):
        name_node = node.child_by_field_name("name")
        if name_node is not None:
            plain.setdefault(src[name_node.start_byte : name_node.end_byte], []).append(node)
    out: list[tuple[Node, Node]] = []
    for export in code_nodes(script, "declaration_command", _is_export, inside_matches=False):
        for child in export.children:
            if child.type == "variable_assignment":
                out.append((export, child))
            elif child.type == "variable_name":
                before = [a for a in plain.get(src[child.start_byte : child.end_byte], [])
                          if a.start_byte < export.start_byte]
                if before:
                    out.append((before[-1], before[-1]))
    return out


def exported_placeholder_hazards(src: str, script: ScriptTree, line_of: Callable[[int], int],
                                 run_files: list[str] | None = None, *, has_calls: bool = True) -> list[Hazard]:
    """`run_files`: the text of the scripts this one runs its calls in (they may read the variable).
    `has_calls`: the script has a trainer call read; without one (a script that starts a cluster or
    submits a job: `ray start --address=$MASTER_ADDR`), no override reports a placeholder the script
    reads itself, so it is reported here (issue 34: `export MASTER_ADDR=YOUR_SERVER_IP` missed)."""
    out: list[Hazard] = []
    callees = "\n".join(run_files or [])
    reported: set[str] = set()
    for export, assignment in _exported_assignments(src, script):
        name_node = assignment.child_by_field_name("name")
        value_node = assignment.child_by_field_name("value")
        if name_node is None or value_node is None:
            continue
        name = src[name_node.start_byte : name_node.end_byte]
        value = src[value_node.start_byte : value_node.end_byte]
        text = value.strip("'\"")
        if re.match(r"\$\{" + re.escape(name) + r":?-", text):
            continue  # `${NAME:-<placeholder>}`: the environment is meant to give it; the default only shows the shape
        head, colon, rest = text.partition(":")
        path_list = colon and (not rest or rest.startswith(("$", "/")))  # `<your_path>:$PYTHONPATH`
        shaped = (is_placeholder(text) or (path_list and is_placeholder(head)) or _YOUR_PHRASE.fullmatch(text)
                  or _names_itself(name, text))
        if (name in reported or not shaped
                or not _consumed_by_programs(name) and has_calls and (
                    _read_elsewhere(src, name, export.start_byte, export.end_byte)
                    or _read_elsewhere(callees, name, 0, 0))
                or _service_unused(name, src)):
            continue
        reported.add(name)
        line = line_of(value_node.start_byte)
        out.append(Hazard(
            "placeholder-value", line,
            f"export {name}={value[:80]}: a placeholder left in the script, exported to every program it "
            f"starts (the trainer too); fill in the real value",
            Span(value_node.start_byte, value_node.end_byte, line)))
    return out


__all__ = ["exported_placeholder_hazards"]
