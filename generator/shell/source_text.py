"""What the text-hazard finders (hazards.py, command_traps.py, export_placeholders.py) ask of the
script's source: is a byte quoted text (inside a string, a heredoc or a comment, by the syntax
tree), which nodes of a kind bash reads as code, does a line end with a `\\` continuation (an odd
run of backslashes before its newline), and what a line says."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

# Syntax-tree nodes whose text bash does not read as code.
QUOTED_TYPES = frozenset({"comment", "string", "raw_string", "heredoc_body", "ansi_c_string", "heredoc_redirect"})
# A hostile file's tree is walked this far and no further.
MAX_WALKED_NODES = 200_000


def code_nodes(tree: Tree, wanted: Callable[[Node], bool], *, inside_matches: bool = True) -> list[Node]:
    """The nodes `wanted` picks outside quoted text (QUOTED_TYPES), in source order, visiting at
    most MAX_WALKED_NODES; without `inside_matches` a picked node's own children are not searched."""
    out: list[Node] = []
    stack = [tree.root_node]
    seen = 0
    while stack and seen < MAX_WALKED_NODES:
        node = stack.pop()
        seen += 1
        if wanted(node):
            out.append(node)
            if not inside_matches:
                continue
        if node.type not in QUOTED_TYPES:
            stack.extend(node.children)
    return sorted(out, key=lambda n: n.start_byte)


def in_quoted_text(tree: Tree, offset: int) -> bool:
    """Whether the byte at `offset` lies inside a node of QUOTED_TYPES."""
    node = tree.root_node.descendant_for_byte_range(offset, offset + 1)
    while node is not None:
        if node.type in QUOTED_TYPES:
            return True
        node = node.parent
    return False


def continues(src: str, line_end: int) -> bool:
    """Does the line ending at `line_end` (index of its newline) end with a continuation?"""
    j = line_end - 1
    count = 0
    while j >= 0 and src[j] == "\\":
        count += 1
        j -= 1
    return count % 2 == 1


def line_from(src: str, start: int) -> str:
    """The text from `start` to the end of its line (the newline left out)."""
    end = src.find("\n", start)
    return src[start : len(src) if end < 0 else end]
