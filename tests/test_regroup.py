"""tools/regroup.py (issue 35, the house): the top of generator/ holds rooms only, the regroup is
done and a second run has nothing to do, and its rewriting of references handles each form a
module is named in (tried on text, not on the tree)."""

from __future__ import annotations

import libcst as cst

from tools import regroup

MOVES = {
    "generator.verl": "generator.verl.constants",
    "generator.files": "generator.base.files",
    "generator.shell": "generator.reading.shell",
    "generator.shell.launchers": "generator.reading.shell.wrappers",
}
OLD_MODULES = {"generator", "generator.verl", "generator.files", "generator.shell", "generator.shell.launchers",
               "generator.shell.walker", "generator.rules"}


def _rewrite(source: str) -> str:
    return cst.parse_module(source).visit(regroup.Rewriter(regroup.Mapper(MOVES, OLD_MODULES))).code


def test_the_top_of_generator_holds_rooms_only() -> None:
    """A module added at the top (or a package no layer knows) is named; the table is applied."""
    todo, lost = regroup.plan_moves()
    assert todo == {} and lost == []
    assert regroup.unplaced_top_level() == []


def test_module_imports_are_split_by_their_new_home() -> None:
    assert _rewrite("from generator import verl, files, rules\n") == (
        "from generator import rules\n"
        "from generator.verl import constants as verl\n"
        "from generator.base import files\n")
    assert _rewrite("from generator.shell import read_script, launchers\n") == (
        "from generator.reading.shell import read_script\n"
        "from generator.reading.shell import wrappers as launchers\n")
    assert _rewrite("import generator.shell.walker as walker\n") == "import generator.reading.shell.walker as walker\n"


def test_names_in_strings_comments_and_attribute_chains() -> None:
    source = ('monkeypatch.setattr("generator.verl.ENTRY", 1)  # see generator/shell/launchers.py\n'
              "x = generator.files.read_input\n")
    assert _rewrite(source) == ('monkeypatch.setattr("generator.verl.constants.ENTRY", 1)'
                                "  # see generator/reading/shell/wrappers.py\n"
                                "x = generator.base.files.read_input\n")


def test_a_new_name_is_not_moved_twice() -> None:
    """`generator.verl` is an old module and the new package: a rewritten import is left alone."""
    once = _rewrite("from generator.verl import ENTRY\n")
    assert once == "from generator.verl.constants import ENTRY\n"
    mapper = regroup.Mapper({}, OLD_MODULES)  # a second run: no row applies
    assert cst.parse_module(once).visit(regroup.Rewriter(mapper)).code == once


def test_markdown_paths_relative_to_generator() -> None:
    mapper = regroup.Mapper(MOVES, OLD_MODULES)
    text = "`verl.py`, `shell/`, `shell/launchers.py`, `launch.py`, generator.shell.walker"
    assert mapper.text(text, markdown=True) == (
        "`verl/constants.py`, `reading/shell/`, `reading/shell/wrappers.py`, `launch.py`, "
        "generator.reading.shell.walker")
