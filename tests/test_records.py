"""One record style for immutable facts (issue 35, "the house"; docs/architecture.md, "Records").

A record off the check path is a `@dataclass(frozen=True, slots=True)`: immutable, compared and
hashed by its fields, no per-object __dict__. A check imports no dataclasses (tests/test_cli_fast.py:
the module and inspect behind it, and each class's generated methods, cost a check's start), so
the records a check builds are `typing.NamedTuple`s, or a plain class with __slots__ where a
subclass adds fields (layout.parallelism.Parallelism). The scan below holds the dataclasses to
that: every one slotted, every one frozen unless it is listed with why it is built up in place.
"""

from __future__ import annotations

import ast

from conftest import REPO

PACKAGE = REPO / "generator"

# Results a command builds up field by field before it reports them: mutable on purpose.
BUILT_IN_PLACE = {
    "calibrate/compare.py:Comparison": "the response share, largest gap and cause are set once all rows are compared",
    "calibrate/logs.py:RunLog": "the run's config and cut-off are set while the log is read",
    "calibrate/match.py:RunConfig": "the differences are set once both sides are read",
    "diff/launches.py:DiffResult": "the release and why are set after the two sides are composed",
    "fix/migrate.py:MigrateResult": "fixes and refusals are added as the migration runs",
    "plan/result.py:Plan": "the search fills in candidates, ranking and the choice",
    "reading/python/override_lists.py:PyOverrideList": "the entry found is set while the module is walked",
    "render/__init__.py:Rendered": "the findings of the rendered config are added after rendering",
}
# Dataclasses that cannot be slotted, with why.
NOT_SLOTTED = {
    "plan/relief.py:KnobChange": "a slotted Generic dataclass breaks KnobChange[T](...) calls",
}


def _dataclasses() -> dict[str, dict[str, bool]]:
    """'path:Class' -> the keyword flags of its @dataclass decorator, for every dataclass in generator/."""
    found: dict[str, dict[str, bool]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for decorator in node.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                target = call.func if call is not None else decorator
                if ast.unparse(target) not in ("dataclass", "dataclasses.dataclass"):
                    continue
                flags = {kw.arg: bool(getattr(kw.value, "value", False)) for kw in (call.keywords if call else [])
                         if kw.arg is not None}
                found[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = flags
    return found


def test_every_dataclass_is_frozen_and_slotted_or_says_why() -> None:
    found = _dataclasses()
    assert len(found) > 50  # the scan sees the package's dataclasses
    unslotted = sorted(name for name, flags in found.items() if not flags.get("slots") and name not in NOT_SLOTTED)
    mutable = sorted(name for name, flags in found.items() if not flags.get("frozen") and name not in BUILT_IN_PLACE)
    assert unslotted == [], "a dataclass without slots=True: add it, or list it in NOT_SLOTTED with why"
    assert mutable == [], "a dataclass without frozen=True: freeze it, or list it in BUILT_IN_PLACE with why"


def test_the_lists_name_dataclasses_that_exist_as_described() -> None:
    found = _dataclasses()
    for name in BUILT_IN_PLACE:
        assert name in found and not found[name].get("frozen"), name
    for name in NOT_SLOTTED:
        assert name in found and not found[name].get("slots"), name
