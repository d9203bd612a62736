"""The fields of a config dataclass as the project's own verl declares it, read statically.

verl builds config sections whose YAML has a `_target_` into dataclasses; a `+key` under such a
section that the dataclass lacks fails when it is built (VK610). Which fields a class has is read
from verl's source per release (generator/data/dataclass_fields.json), but a fork declares its
own: issue 34 found VK610 reporting 13 keys that the project's own copy of the class declares.
Where the project carries its verl, its copy of the class is the evidence.

The `_target_` names the class and its module (`verl.workers.config.McoreActorConfig`): the
module's file, or the `.py` files of its package folder, are parsed (`ast`: never imported, never
run) for that class; its fields are the annotated names of its body and of its base classes found
in the same files. Bounded: at most MAX_FILES files of at most SCRIPT_LIMIT bytes each; a file that
does not parse is skipped. None when the class is not found there (the packaged list then judges).
"""

from __future__ import annotations

import ast
from functools import partial
from pathlib import Path

from generator.base.errors import InputError
from generator.base.files import SCRIPT_LIMIT, read_input
from generator.base.folder_memo import remembered
from generator.reading.python.chunks import checked_tree

MAX_FILES = 40


def fork_fields(package: Path, target: str) -> frozenset[str] | None:
    """The fields the class `target` names has in the project's verl package `package` (the
    folder of the `verl` package), with those of its bases declared beside it; None when that
    copy of verl does not define the class where the target says."""
    module, _, name = target.rpartition(".")
    parts = module.split(".")
    if not name or len(parts) < 2 or parts[0] != package.name or any(not p.isidentifier() for p in parts):
        return None
    classes = remembered(("fork_dataclasses", package, module), partial(_classes_of, package, parts[1:]))
    if name not in classes:
        return None
    fields: set[str] = set()
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen or current not in classes:
            continue
        seen.add(current)
        own, bases = classes[current]
        fields |= own
        todo.extend(bases)
    return frozenset(fields)


def _classes_of(package: Path, parts: list[str]) -> dict[str, tuple[frozenset[str], tuple[str, ...]]]:
    """class name -> (annotated field names, base class names) of the module's files."""
    where = package.joinpath(*parts)
    files = [where.with_suffix(".py")] if where.with_suffix(".py").is_file() else sorted(where.glob("*.py"))
    out: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
    for path in files[:MAX_FILES]:
        try:
            tree = checked_tree(read_input(path, limit=SCRIPT_LIMIT, what="project verl file"), str(path))
        except (InputError, OSError):
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                names = frozenset(item.target.id for item in node.body
                                  if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                                  and not _class_var(item.annotation))
                bases = tuple(base.id if isinstance(base, ast.Name) else base.attr
                              for base in node.bases if isinstance(base, (ast.Name, ast.Attribute)))
                out.setdefault(node.name, (names, bases))
    return out


def _class_var(annotation: ast.expr) -> bool:
    """`ClassVar[...]` is not a dataclass field."""
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))
