"""Regroup the top level of generator/ so that its folders name the architecture (issue 35, "the house").

One table, MOVES, maps each old dotted module or package name to its new one. The script

1. moves each module or package that still stands at its old place with `git mv` (new packages
   get an `__init__.py` holding the room's one-line description, ROOMS);
2. rewrites every reference to a moved name in generator/, tests/, tools/, bench/, docs/ and the
   top-level project files: Python imports (libcst: `from generator import verl, boundary` is split
   into one import per new home; a module imported under its old leaf keeps that local name with
   `as`), dotted names in strings and comments (monkeypatch and mock targets, `python -m`, the
   layer test's module names), paths (`generator/shell/walker.py`, `generator/launch.py`) and, in
   Markdown, a backquoted path relative to generator/ (`project_root.py`);
3. fixes what a move breaks by itself (a module that found the package folder as its own parent);
4. writes tests/test_layers.py's layer table for the new rooms (LAYERS below);
5. reports every module or package at the top of generator/ that the table does not place (a
   module someone added since: give it a row in MOVES and run again).

It leaves no compatibility shims behind: an old name is gone, not forwarded.

Re-runnable: a row whose old name no longer exists is skipped, so on a regrouped tree the script
changes nothing (exit 0, "nothing to move"). It works on a tree that has changed since the table
was written, as long as the modules it names still stand where the table says; a row whose old
name is gone and whose new name is not there either is reported.

Usage: python tools/regroup.py [--dry-run]   (from the repository root, a git work tree)
Exit: 0 done or nothing to do; 1 a top-level module or room the table does not place.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import libcst as cst

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "generator"

# old dotted name -> new dotted name. A package row moves the whole package (its modules keep
# their names inside it); a module row moves one file.
MOVES: dict[str, str] = {
    # base: what every other room stands on: errors and exit codes, the door for printed bytes,
    # the run's session and memo, the boundary and the door for reads and writes, the caches.
    "generator.errors": "generator.base.errors",
    "generator.safe_text": "generator.base.safe_text",
    "generator.safe_regex": "generator.base.safe_regex",
    "generator.session": "generator.base.session",
    "generator.folder_memo": "generator.base.folder_memo",
    "generator.cache": "generator.base.cache",
    "generator.files": "generator.base.files",
    "generator.boundary": "generator.base.boundary",
    "generator.glob_set": "generator.base.glob_set",
    "generator.pool": "generator.base.pool",
    "generator.resources": "generator.base.resources",
    # verl: facts about verl itself: its releases, what each release does, where its code lies.
    "generator.verl": "generator.verl.constants",
    "generator.versions": "generator.verl.versions",
    "generator.release_semantics": "generator.verl.release_semantics",
    "generator.verl_places": "generator.verl.places",
    # project: which project a script belongs to and what its configuration says.
    "generator.project": "generator.project.settings",
    "generator.project_root": "generator.project.root",
    # reading: a launch script (bash or Python) to the read model, nothing run.
    "generator.shell": "generator.reading.shell",
    "generator.shell.launch_reader": "generator.reading.shell.script_reader",
    "generator.shell.launchers": "generator.reading.shell.wrappers",
    "generator.pylaunch": "generator.reading.python",
    "generator.launch": "generator.reading.launch_script",
    "generator.launch_shape": "generator.reading.recognize",
    "generator.overrides": "generator.reading.overrides",
    "generator.edit_kinds": "generator.reading.edit_kinds",
    "generator.suppress": "generator.reading.suppression_comments",
    "generator.foreign_paths": "generator.reading.foreign_paths",
    "generator.forkcode": "generator.reading.fork_code",
    # layout: the parallel layout and the batch arithmetic over it; GPUs; what a caller pins.
    "generator.layout": "generator.layout.parallelism",
    "generator.candidate": "generator.layout.candidate",
    "generator.pins": "generator.layout.pins",
    "generator.hardware": "generator.layout.hardware",
    "generator.derive": "generator.layout.derive",
    # config: the keys forks of verl add to the batch arithmetic belong with the effective config.
    "generator.forks": "generator.config.forks",
    # inputs: what the commands accept, which files a folder stands for, one file's context.
    "generator.inputs": "generator.inputs.policy",
    "generator.discover": "generator.inputs.discover",
    "generator.file_context": "generator.inputs.file_context",
    # the two commands' work that is no report and no repair
    "generator.checking": "generator.check.runner",
    "generator.diffing": "generator.diff.launches",
    # fix: byte-level splicing was `edits`, a twin of reading/edit_kinds
    "generator.fix.edits": "generator.fix.splice",
}

# New packages' descriptions (their `__init__.py` docstring).
ROOMS: dict[str, str] = {
    "generator.base": "What every other room stands on: one-line errors and exit codes, the one door for printed "
                      "bytes, the run's session and folder memo, the project boundary, the one door for reads and "
                      "writes, the schema cache, compiled globs, worker processes, packaged data.",
    "generator.verl": "Facts about verl itself: its entries and config names (constants), release numbers, what each release "
                      "does with a config, where its code lies on disk (found without importing it).",
    "generator.project": "The project a script belongs to: its root and boundary, and its configuration "
                         "(`.verl-gen.toml`, `[tool.verl-gen]`).",
    "generator.reading": "Reading a launch script without running it: the bash reader (shell/), Python launchers "
                         "(python/), the read model (launch_script), Hydra override text, inline suppressions, "
                         "whether a file looks like a launcher, fork trainer code.",
    "generator.layout": "The parallel layout: the Parallelism and Offload records, a sized candidate, what a "
                        "caller pins, the GPU table, and the batch and parallel arithmetic (derive).",
    "generator.inputs": "What the commands accept as a launch script, which files a folder argument stands for, "
                        "and one file's context (settings, text, release, memory options).",
    "generator.check": "The work behind `gen check` and `gen explain`, one file at a time.",
    "generator.diff": "`gen diff`: two launches as the configs verl would see.",
}

# Text a move breaks by itself, which no dotted name or generator/ path spells, keyed by the row
# that breaks it: (file after the moves, old text, new text). A module that found the package
# folder as its own parent; tests that name a file relative to generator/ (a bare "launch.py" is
# also a fixture's file name elsewhere, so such strings are not rewritten wholesale).
FIXUPS: dict[str, list[tuple[str, str, str]]] = {
    "generator.resources": [
        ("generator/base/resources.py", "_PACKAGE = Path(__file__).resolve().parent\n",
         "_PACKAGE = Path(__file__).resolve().parent.parent  # base/ -> the generator package\n"),
    ],
    "generator.boundary": [
        ("generator/base/boundary.py", "_HERE = Path(__file__).resolve().parent  #",
         "_HERE = Path(__file__).resolve().parent.parent  #"),
    ],
    "generator.derive": [
        ("tests/test_one_home.py", 'home="derive.py"', 'home="layout/derive.py"'),
    ],
    "generator.verl": [
        ("tests/test_one_home.py", 'home="verl.py"', 'home="verl/constants.py"'),
    ],
    "generator.pylaunch": [
        ("generator/reading/python/override_lists.py", "(see pylaunch/chunks.py)", "(see reading/python/chunks.py)"),
        ("generator/reading/python/hydra_main.py", "are pylaunch/override_lists.py",
         "are reading/python/override_lists.py"),
        ("tests/test_cli_fast.py", "(pylaunch.hydra_main)", "(reading.python.hydra_main)"),
    ],
    "generator.shell.launch_reader": [
        ("generator/reading/python/__init__.py", "(shell/launch_reader.read_launch",
         "(shell/script_reader.read_launch"),
    ],
    "generator.forkcode": [
        ("generator/config/forks.py", "# forkcode (ast,", "# reading.fork_code (ast,"),
    ],
    "generator.fix.edits": [
        ("generator/fix/__init__.py", "  edits.py    apply_edits", "  splice.py   apply_edits"),
    ],
    "generator.safe_text": [
        ("tests/test_output_door.py", 'path.name == "safe_text.py" and path.parent == root',
         'path.name == "safe_text.py" and path.parent == root / "base"'),
    ],
}

# tests/test_layers.py's table for the new rooms, top to bottom.
LAYERS = '''LAYERS: list[set[str]] = [
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
'''

TEXT_SUFFIXES = {".py", ".md", ".toml", ".json", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".sh", ".tsv", ".pyi"}
TREES = ("generator", "tests", "tools", "bench", "docs", ".ci", ".github")
TOP_FILES = ("pyproject.toml", "README.md", "CONTRIBUTING.md", ".pre-commit-hooks.yaml", "Makefile")
KEEP_AT_TOP = {"__init__", "__main__", "data", "templates", "recipes"}
SELF = Path(__file__).resolve()

DOTTED = re.compile(r"(?<![\w.])generator(?:\.[A-Za-z_]\w*)+")
PATHLIKE = re.compile(r"(?<![\w.-])generator(?:/[A-Za-z_]\w*)+(?:\.py)?/?")
BACKQUOTED = re.compile(r"(?<=`)[a-z_]\w*(?:/[a-z_]\w*)*(?:\.py|/)(?=`)")


def _old_path(name: str) -> Path | None:
    """Where an old dotted name stands today: a module file or a package folder (None: gone)."""
    base = REPO.joinpath(*name.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base
    return None


def _new_path(name: str, is_package: bool) -> Path:
    base = REPO.joinpath(*name.split("."))
    return base if is_package else base.with_suffix(".py")


def _modules() -> set[str]:
    """Every module and package under generator/ as it stands (dotted)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.add(".".join(parts))
    return found


class Mapper:
    """Old dotted name -> new, by the longest row of the table that is a prefix of it."""

    def __init__(self, moves: dict[str, str], modules: set[str]) -> None:
        self.moves = moves
        self.modules = modules  # the old tree's modules: what `from P import n` may name
        self._by_length = sorted(moves, key=len, reverse=True)

    def __call__(self, name: str) -> str:
        for old in self._by_length:
            if name == old or name.startswith(old + "."):
                return self.moves[old] + name[len(old):]
        return name

    def is_module(self, name: str) -> bool:
        return name in self.modules

    def text(self, text: str, markdown: bool = False) -> str:
        text = DOTTED.sub(lambda m: self(m.group(0)), text)
        text = PATHLIKE.sub(self._path, text)
        if markdown:
            text = BACKQUOTED.sub(self._relative, text)
        return text

    def _path(self, match: re.Match[str]) -> str:
        whole = match.group(0)
        slash = whole.endswith("/")
        stem = whole.rstrip("/")
        suffix = ".py" if stem.endswith(".py") else ""
        stem = stem[: len(stem) - len(suffix)]
        dotted = stem.replace("/", ".")
        if dotted.endswith(".__init__"):
            return whole
        new = self(dotted)
        if new == dotted:
            return whole
        return new.replace(".", "/") + suffix + ("/" if slash else "")

    def _relative(self, match: re.Match[str]) -> str:
        """`project_root.py` or `shell/launchers.py` in Markdown: a path under generator/ that
        names an old module (exactly), rewritten relative to generator/ again."""
        whole = match.group(0)
        suffix = ".py" if whole.endswith(".py") else "/"
        dotted = "generator." + whole[: -len(suffix)].rstrip("/").replace("/", ".")
        if dotted not in self.modules:
            return whole
        new = self(dotted)
        if new == dotted:
            return whole
        return new.removeprefix("generator.").replace(".", "/") + suffix


def _dotted(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _expression(name: str) -> cst.Attribute | cst.Name:
    parts = name.split(".")
    node: cst.Attribute | cst.Name = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


class Rewriter(cst.CSTTransformer):
    """Imports, strings, comments and `generator.x.y` attribute chains of one Python file."""

    def __init__(self, mapper: Mapper) -> None:
        super().__init__()
        self.map = mapper

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if len(updated.body) != 1 or not isinstance(updated.body[0], cst.ImportFrom):
            return updated
        imports = self._import_from(updated.body[0])
        if len(imports) == 1:
            return updated.with_changes(body=[imports[0]])
        lines = [updated.with_changes(body=[imports[0]])]
        lines += [cst.SimpleStatementLine(body=[one], leading_lines=[]) for one in imports[1:]]
        return cst.FlattenSentinel(lines)

    def _import_from(self, node: cst.ImportFrom) -> list[cst.ImportFrom]:
        if node.relative or isinstance(node.names, cst.ImportStar):
            return [node]
        origin = _dotted(node.module)
        if not origin.startswith("generator"):
            return [node]
        stay: list[cst.ImportAlias] = []
        moved: dict[str, list[cst.ImportAlias]] = {}
        for alias in node.names:
            imported = _dotted(alias.name)
            full = f"{origin}.{imported}"
            new_full = self.map(full)
            if self.map.is_module(full) and new_full != full and "." not in imported:
                parent, leaf = new_full.rsplit(".", 1)
                local = alias.asname or (cst.AsName(name=cst.Name(imported)) if leaf != imported else None)
                moved.setdefault(parent, []).append(cst.ImportAlias(name=cst.Name(leaf), asname=local))
            else:
                stay.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        if not moved:
            new_origin = self.map(origin)
            return [node if new_origin == origin else node.with_changes(module=_expression(new_origin))]
        out: list[cst.ImportFrom] = []
        if stay:
            out.append(cst.ImportFrom(module=_expression(self.map(origin)), names=stay))
        for parent, names in moved.items():
            fixed = [alias.with_changes(comma=cst.MaybeSentinel.DEFAULT) for alias in names]
            out.append(cst.ImportFrom(module=_expression(parent), names=fixed))
        return out

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # the names are rewritten whole on leaving, not part by part

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False  # leave_SimpleStatementLine rewrites the statement whole

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return not _dotted(node).startswith("generator.")  # a chain is rewritten whole, outermost

    def leave_Import(self, original: cst.Import, updated: cst.Import) -> cst.Import:
        names = []
        for alias in updated.names:
            name = _dotted(alias.name)
            new = self.map(name) if name.startswith("generator") else name
            names.append(alias if new == name else alias.with_changes(name=_expression(new)))
        return updated.with_changes(names=names)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        name = _dotted(updated)
        if not name.startswith("generator."):
            return updated
        new = self.map(name)
        return updated if new == name else _expression(new)

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        return updated.with_changes(value=self.map.text(updated.value))

    def leave_FormattedStringText(
        self, original: cst.FormattedStringText, updated: cst.FormattedStringText
    ) -> cst.FormattedStringText:
        return updated.with_changes(value=self.map.text(updated.value))

    def leave_Comment(self, original: cst.Comment, updated: cst.Comment) -> cst.Comment:
        return updated.with_changes(value=self.map.text(updated.value))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout


def _tracked_text_files() -> list[Path]:
    listed = _git("ls-files", "-z", "--", *TREES, *TOP_FILES).split("\0")
    files = []
    for name in listed:
        path = REPO / name
        if name and path.suffix in TEXT_SUFFIXES and path.is_file() and path.resolve() != SELF:
            files.append(path)
    return files


def rewrite_file(path: Path, mapper: Mapper) -> bool:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        try:
            new = cst.parse_module(text).visit(Rewriter(mapper)).code
        except cst.ParserSyntaxError:
            new = mapper.text(text)  # a fixture that is not Python 3: its text only
    else:
        new = mapper.text(text, markdown=path.suffix == ".md")
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def plan_moves() -> tuple[dict[str, str], list[str]]:
    """The rows to apply now (their old name stands) and the rows neither old nor new stand for."""
    todo: dict[str, str] = {}
    lost: list[str] = []
    for old, new in MOVES.items():
        here = _old_path(old)
        # done already: the new name stands (`generator.verl` is now the package holding `facts`)
        if here is not None and _old_path(new) is None:
            todo[old] = new
        elif _old_path(new) is None:
            lost.append(f"{old} -> {new}: neither stands")
    return todo, lost


def move(todo: dict[str, str], run: Callable[..., object]) -> None:
    # Packages whose parent moves go along with it: move only the outermost rows, then the rows
    # inside a moved package by their place after that move.
    for old in sorted(todo, key=lambda name: name.count(".")):
        new = todo[old]
        outer = [o for o in todo if old.startswith(o + ".") and o != old]
        source_name = old
        if outer:
            parent = max(outer, key=len)
            source_name = todo[parent] + old[len(parent):]
        source = _old_path(source_name)
        if source is None:
            continue
        is_package = source.is_dir()
        target = _new_path(new, is_package)
        for folder in reversed(list(target.relative_to(PACKAGE).parents)[:-1]):
            _ensure_package(PACKAGE / folder, run)
        run("git", "mv", str(source.relative_to(REPO)), str(target.relative_to(REPO)))


def _ensure_package(folder: Path, run: Callable[..., object]) -> None:
    init = folder / "__init__.py"
    if init.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    name = ".".join(folder.relative_to(REPO).parts)
    about = ROOMS.get(name, f"The {folder.name} room.")
    init.write_text(f'"""{_wrap(about)}"""\n', encoding="utf-8")
    run("git", "add", str(init.relative_to(REPO)))


def _wrap(text: str, width: int = 100) -> str:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "\n".join(lines) + ("\n" if len(lines) > 1 else "")


def fixups(todo: dict[str, str]) -> None:
    for old in todo:
        for name, text_old, text_new in FIXUPS.get(old, []):
            path = REPO / name
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            if text_old not in text:
                print(f"regroup: {name}: expected {text_old.strip()!r}; check it by hand")
                continue
            path.write_text(text.replace(text_old, text_new), encoding="utf-8")


def write_layers(old_modules: set[str]) -> None:
    """Replace the table; a room of the old table that the new one does not know is reported."""
    path = REPO / "tests" / "test_layers.py"
    text = path.read_text(encoding="utf-8")
    block = re.search(r"^LAYERS: list\[set\[str\]\] = \[\n.*?^\]\n", text, flags=re.S | re.M)
    if block is None:
        print("regroup: tests/test_layers.py: no LAYERS table found; write it by hand")
        return
    known = set(re.findall(r'"([\w_]+)"', LAYERS))
    old_rooms = set(re.findall(r'"([\w_]+)"', block.group(0)))
    mapper = Mapper(MOVES, old_modules)
    unplaced = sorted(room for room in old_rooms
                      if room not in known and mapper(f"generator.{room}").split(".")[1] not in known)
    for room in unplaced:
        print(f"regroup: tests/test_layers.py: room {room!r} is in no layer of the new table; place it")
    path.write_text(text[: block.start()] + LAYERS + text[block.end():], encoding="utf-8")


def unplaced_top_level() -> list[str]:
    """Modules and packages at the top of generator/ that are neither a room of the new layout
    nor kept there on purpose."""
    rooms = {new.split(".")[1] for new in MOVES.values()} | set(re.findall(r'"([\w_]+)"', LAYERS))
    found = []
    for path in sorted(PACKAGE.iterdir()):
        name = path.stem if path.suffix == ".py" else path.name
        if name.startswith((".", "__pycache__")) or name in KEEP_AT_TOP:
            continue
        if f"generator.{name}" in MOVES:
            continue  # still to move: the table places it
        if path.suffix == ".py" or (path / "__init__.py").is_file():
            if path.suffix == ".py" or name not in rooms:
                found.append(str(path.relative_to(REPO)))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dry-run", action="store_true", help="print the moves, change nothing")
    options = parser.parse_args(argv)
    todo, lost = plan_moves()
    for line in lost:
        print(f"regroup: {line}")
    if not todo:
        print("regroup: nothing to move")
    elif options.dry_run:
        for old, new in todo.items():
            print(f"{old} -> {new}")
    else:
        old_modules = _modules()
        move(todo, lambda *args: subprocess.run(args, cwd=REPO, check=True))
        fixups(todo)
        mapper = Mapper(todo, old_modules)
        changed = [path for path in _tracked_text_files() if rewrite_file(path, mapper)]
        write_layers(old_modules)
        print(f"regroup: {len(todo)} moved, {len(changed)} files rewritten")
    unplaced = unplaced_top_level()
    for name in unplaced:
        print(f"regroup: {name} stands at the top of generator/ and the table does not place it")
    return 1 if unplaced else 0


if __name__ == "__main__":
    sys.exit(main())
