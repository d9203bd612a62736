"""The import graph keeps the layer order the design promises (docs: ../shared/docs/DESIGN.md,
"Arrows point one way: cli → (plan | library | fix | render) → rules → derive/config →
schema/overrides/shell"), and no files import each other in a circle.

Every import of a project module counts, wherever it stands: at the top, inside a function, or
under `if TYPE_CHECKING:` (a lazy import hides a cost, not a dependency). Imports are read with
`ast`, nothing is imported. A room is a top-level module or a package of generator/.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "generator"

# Top to bottom. A room may import rooms of the layers below its own, never one above it, and
# not another room of its own layer. Rooms that DESIGN.md names in one tier (plan | library |
# fix | render) are ranked here in the order the code composes them; the rooms DESIGN.md does not
# name sit where their imports place them.
LAYERS: list[set[str]] = [
    {"__main__"},
    {"cli"},  # parse arguments, call one function, print one report
    {"calibrate"},  # a run's logs against the plan's predictions for the script that started it
    {"check"},  # check and explain of one file: read, resolve, judge, report
    {"report"},  # every output format
    {"diff"},  # two launches as the configs verl would see
    {"fix", "library"},
    {"inputs"},  # what the commands accept; one file's settings, release and memory options
    {"plan"},
    {"render"},
    {"judging"},  # per call: gather the facts (model, fork code, memory, release), run the pure rule engine
    {"rules"},
    {"script"},
    {"config"},  # the effective config of one trainer call (and the keys forks add)
    {"schema", "layout"},  # verl's keys per release and which release judges; the parallel layout and its arithmetic
    {"reading"},  # bash and Python launchers to the read model; nothing run
    {"project"},  # which project a script belongs to, and its settings
    {"verl", "model"},  # facts about verl; the model's architecture facts
    {"base", "__init__"},  # errors, printed bytes, session, boundary, reads and writes, caches
]

# Arrows that run back up today, each with why it is still there. The test fails on any other
# climb, and on an entry here that the code no longer needs (remove it then).
CLIMBS_ALLOWED: dict[tuple[str, str], str] = {}

# Files that import each other in a circle today, each with why.
CIRCLES_ALLOWED: dict[frozenset[str], str] = {
    frozenset({"generator.rules", "generator.rules.suppression"}):
        "the engine leaves the suppression verdicts (their codes) out of the script rules, and those "
        "rules' documented examples run the engine's other script rules",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported project module: line of the first such import}."""
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")[: None if is_package else -1]
                    base = base[: len(base) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin
                           for alias in node.names]
            for target in targets:
                if target.startswith("generator") and target in modules and target != name:
                    graph[name].setdefault(target, node.lineno)
    return graph


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _rank() -> dict[str, int]:
    return {room: depth for depth, rooms in enumerate(LAYERS) for room in rooms}


def test_every_room_has_a_layer() -> None:
    rooms = {_room(module) for module in _modules()}
    rank = _rank()
    assert sum(len(layer) for layer in LAYERS) == len(rank), "a room is named in two layers"
    assert sorted(rooms - set(rank)) == [], "a new room: give it a layer in LAYERS"
    assert sorted(set(rank) - rooms) == [], "a room in LAYERS no longer exists"


def test_no_import_runs_back_up() -> None:
    modules = _modules()
    rank = _rank()
    climbs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, targets in _imports(modules).items():
        for target, line in targets.items():
            low, high = _room(module), _room(target)
            if low not in rank or high not in rank:
                continue  # a room without a layer: test_every_room_has_a_layer names it
            if low != high and rank[low] >= rank[high]:
                where = f"{modules[module].relative_to(REPO)}:{line} imports {target}"
                climbs[(low, high)].append(where)
    unexplained = {arrow: places for arrow, places in climbs.items() if arrow not in CLIMBS_ALLOWED}
    assert unexplained == {}, "imports that run back up (or sideways within a layer)"
    stale = sorted(set(CLIMBS_ALLOWED) - set(climbs))
    assert stale == [], "no longer needed: remove from CLIMBS_ALLOWED"


def _circles(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_no_files_import_each_other_in_a_circle() -> None:
    circles = _circles(_imports(_modules()))
    unexplained = [sorted(circle) for circle in circles if circle not in CIRCLES_ALLOWED]
    assert unexplained == [], "files that import each other in a circle: move the shared part down"
    stale = [sorted(circle) for circle in CIRCLES_ALLOWED if circle not in circles]
    assert stale == [], "no longer a circle: remove from CIRCLES_ALLOWED"


def test_the_check_sees_a_climb_and_a_circle() -> None:
    """The reader of imports finds what the two tests above forbid (a test that cannot fail is
    no test): relative and absolute forms, inside functions and under TYPE_CHECKING."""
    graph = {"generator.a": {"generator.b": 1}, "generator.b": {"generator.c": 1}, "generator.c": {"generator.a": 1},
             "generator.d": {"generator.a": 1}}
    assert _circles(graph) == [frozenset({"generator.a", "generator.b", "generator.c"})]
    imports = _imports(_modules())
    assert "generator.base.boundary" in imports["generator.base.files"]  # `from generator import boundary`
    assert "generator.reading.launch_script" in imports["generator.reading.shell.script_reader"]
    lazy = imports["generator.inputs.policy"]  # imports inside a function and under TYPE_CHECKING
    assert "generator.project.root" in lazy and "generator.project.settings" in lazy
