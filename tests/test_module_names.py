"""Each module's name says its job, once: no two modules under generator/ share a basename, except
`__init__`/`__main__` and the cli/ modules named after their command (`gen plan` is cli/plan.py;
the work it calls lives in a module named for that work)."""

from __future__ import annotations

from collections import defaultdict

from conftest import REPO

PACKAGE = REPO / "generator"
COMMANDS = REPO / "generator" / "cli"

# Names allowed twice, each with why (none since issue 24's renames); the test fails when one is
# resolved and still listed, so the list only shrinks.
PENDING: dict[str, str] = {}


def _command_modules() -> set[str]:
    """cli/ modules that register a command of the same name (`app.command("plan")`)."""
    names = set()
    for path in COMMANDS.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        if f'command("{path.stem}")' in text:
            names.add(path.stem)
    return names


def test_module_basenames_are_unique() -> None:
    commands = _command_modules()
    holders: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.stem in ("__init__", "__main__"):
            continue
        if path.parent == COMMANDS and path.stem in commands:
            continue
        holders[path.stem].append(str(path.relative_to(REPO)))
    repeated = {name: paths for name, paths in holders.items() if len(paths) > 1}
    assert {name: paths for name, paths in repeated.items() if name not in PENDING} == {}, \
        "two modules share a name: rename one for what it does"
    assert sorted(set(PENDING) - set(repeated)) == [], "renamed: remove from PENDING"


def test_a_command_module_is_found_by_its_registration() -> None:
    commands = _command_modules()
    assert {"plan", "recipe", "show", "diff", "check", "fix"} <= commands
    assert "common" not in commands and "options" not in commands
