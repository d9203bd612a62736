"""Every rule is a pure function of the facts gathered for its call (issue 35, item 2).

generator/rules/ holds the rule engine and the rule families; everything a verdict needs from
disk or from the run (the fork's code, the model's config.json, the memory verdict, the
release's schema) is gathered before any rule runs, by generator.judging. This test reads every
module of the package with `ast` (found by walking the folder, as `judging.load_rules` finds
them) and fails on what would let a rule read a file, reach the command's session or keep state
between calls: an import of a module that reads files or holds the run's state, a call that
opens, lists, stats or resolves a path, a module-level cache or container, a `global`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

RULES = REPO / "generator" / "rules"

# Modules that read files, list folders, or hold the run's state; a rule gets their answers as
# facts (generator.judging.gather) instead. A name here forbids the module and its submodules.
FORBIDDEN_MODULES = (
    "io", "os", "glob", "shutil", "subprocess", "tempfile", "importlib", "pkgutil", "functools",
    "generator.base.session", "generator.base.files", "generator.base.cache", "generator.base.folder_memo", "generator.base.boundary",
    "generator.project.settings", "generator.project.root", "generator.verl.places", "generator.reading.fork_code",
    "generator.config.forks", "generator.base.pool", "generator.judging", "generator.schema.resolution",
    "generator.schema.release_schema", "generator.config.build", "generator.config.locate",
    "generator.model.registry", "generator.model.loader",
)
# Names that read files or compose configs, imported from a package face.
FORBIDDEN_NAMES = {
    "generator.schema": {"load", "available", "register_dir"},
    "generator.model": {"find_model", "load_model_config"},
    "generator.config": {"build_config", "config_from_overrides"},
}
# Calls that touch the disk, whatever they are called on.
FORBIDDEN_CALLS = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob", "rglob",
                   "scandir", "listdir", "walk", "stat", "lstat", "exists", "is_file", "is_dir", "resolve",
                   "realpath", "read_input", "read_text_input"}
# The one piece of module state the package has: the registry, filled by `@rule` as each family
# module is imported and never changed after.
ALLOWED_STATE = {("core.py", "REGISTRY")}


def _modules() -> list[Path]:
    return sorted(RULES.rglob("*.py"))


def _forbidden_module(name: str) -> bool:
    return any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN_MODULES)


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:` (names for annotations, never run)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            inside.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return inside


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] in (
        "dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque", "WeakValueDictionary")


def impurities(path: Path) -> list[str]:
    """What in one module of generator/rules/ could read a file or keep state, as 'line: what'."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    annotations_only = _type_checking_only(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _forbidden_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if _forbidden_module(node.module):
                found.append(f"{node.lineno}: from {node.module} import ...")
            banned = FORBIDDEN_NAMES.get(node.module, set())
            found += [f"{node.lineno}: from {node.module} import {a.name}" for a in node.names if a.name in banned]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in FORBIDDEN_CALLS:
                found.append(f"{node.lineno}: {ast.unparse(func)}(...)")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.append(f"{node.lineno}: {type(node).__name__.lower()} {', '.join(node.names)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [f"{node.lineno}: @{ast.unparse(d)} on {node.name}" for d in node.decorator_list
                      if "cache" in ast.unparse(d)]
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _mutable(stmt.value):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                name = ast.unparse(target)
                if name.startswith("__"):
                    continue  # __all__
                if (path.name, name) not in ALLOWED_STATE and not name.isupper():
                    found.append(f"{stmt.lineno}: module state {name}")
                elif (path.name, name) not in ALLOWED_STATE and isinstance(stmt.value, (ast.Dict, ast.List, ast.Set)) \
                        and not (getattr(stmt.value, "keys", None) or getattr(stmt.value, "elts", None)):
                    found.append(f"{stmt.lineno}: module state {name} (starts empty: filled as it runs)")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(RULES)))
def test_rule_modules_read_no_file_and_keep_no_state(path: Path) -> None:
    assert impurities(path) == []


def test_every_registered_rule_lives_in_a_scanned_module() -> None:
    # The scan above covers the rules as load_rules finds them: each rule's check is defined in a
    # module of generator/rules/ (a family registered from elsewhere would escape it).
    from generator.judging import load_rules

    scanned = {".".join(p.relative_to(REPO).with_suffix("").parts) for p in _modules()}
    registry = load_rules()
    assert len(registry) > 100
    outside = {code: rule.check.__module__ for code, rule in registry.items() if rule.check.__module__ not in scanned}
    assert outside == {}


def test_the_scan_sees_each_kind_of_impurity(tmp_path: Path) -> None:
    # The checks above can fail: a module doing each forbidden thing is caught.
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from functools import lru_cache\n"
        "from generator.config.forks import fork_code\n"
        "from generator.schema import load\n"
        "import os.path\n"
        "_SEEN = {}\n"
        "CACHE: dict[str, int] = {}\n"
        "@lru_cache\n"
        "def f(ctx):\n"
        "    global _SEEN\n"
        "    return open('x').read() + ctx.path.read_text()\n")
    found = "\n".join(impurities(bad))
    for expected in ("from functools", "from generator.config.forks", "import load", "import os.path", "module state _SEEN",
                     "module state CACHE", "@lru_cache", "global _SEEN", "open(...)", "read_text(...)"):
        assert expected in found, expected
