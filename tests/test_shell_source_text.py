"""code_nodes finds nodes by a walk in Python until the process has walked
QUERY_AFTER_WALKED_NODES nodes, by a tree-sitter query from then on (generator/reading/shell/source_text.py,
issue 22): the two must give the same nodes, or a corpus run would judge its first scripts
differently from the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.reading.shell import source_text
from generator.reading.shell.parse import parse_bytes
from generator.reading.shell.source_text import QUOTED_TYPES, ScriptTree, code_nodes

FIXTURES = Path(__file__).parent / "fixtures"
TEXTS = {
    "nested": (b"#!/bin/bash\n# a comment\nexport A=1 B=\"$(echo '# not a comment')\"\nfoo() { local x=1; bar \"$x\"; }\n"
               b"arr=(a # inside an array\n  b)\nif [ -n \"$A\" ]; then export C=$(date); fi\n"
               b"cat <<EOF\n# a heredoc line\nEOF\npython3 -m verl.trainer.main_ppo a=1 \\\n  b=2 # trailing\n"),
    "syntax error": b"export A=1\nif then | fi\npython3 -m verl.trainer.main_ppo a=1 # left\n",
}
# The three passes of the reader: comments (hazards.py), commands (command_traps.py), exports
# (export_placeholders.py).
PASSES = [("comment", None, True, frozenset({"array", "heredoc_body", "string", "raw_string"}), None),
          ("command", None, True, QUOTED_TYPES, source_text.MAX_WALKED_NODES),
          ("declaration_command", lambda node: node.children[0].type == "export", False, QUOTED_TYPES,
           source_text.MAX_WALKED_NODES)]


def _texts() -> list[bytes]:
    files = [FIXTURES / "shell" / name for name in ("hazards.sh", "array_heredoc.sh", "strings_srun.sh",
                                                     "trailing_backslash.sh")]
    return [*TEXTS.values(), *(path.read_bytes() for path in files)]


def _found(text: bytes, walked_before: int, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, int, int]]]:
    monkeypatch.setattr(source_text, "_nodes_walked", walked_before)
    script = ScriptTree(parse_bytes(text))
    return [[(node.type, node.start_byte, node.end_byte)
             for node in code_nodes(script, kind, wanted, inside_matches=inside, opaque=opaque, limit=limit)]
            for kind, wanted, inside, opaque, limit in PASSES]


@pytest.mark.parametrize("text", _texts())
def test_the_walk_and_the_query_find_the_same_nodes(text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _found(text, 0, monkeypatch)
    assert walked == _found(text, source_text.QUERY_AFTER_WALKED_NODES, monkeypatch)
    assert walked[1]  # every text has commands


def test_the_query_takes_over_once_the_walks_cost_its_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = ScriptTree.named_nodes
    monkeypatch.setattr(ScriptTree, "named_nodes", lambda self, kind: asked.append(kind) or real(self, kind))
    text = TEXTS["nested"]
    _found(text, 0, monkeypatch)
    assert asked == [] and source_text._nodes_walked > 0  # walked, and counted
    _found(text, source_text.QUERY_AFTER_WALKED_NODES, monkeypatch)
    assert asked == ["comment", "command", "declaration_command"]
    asked.clear()
    _found(TEXTS["syntax error"], source_text.QUERY_AFTER_WALKED_NODES, monkeypatch)
    assert asked == []  # a tree with errors is walked: the query misses its recovery's empty nodes
