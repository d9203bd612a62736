"""What the text-hazard finders (hazards.py, command_traps.py, export_placeholders.py) ask of the
script's source: is a byte quoted text (inside a string, a heredoc or a comment, by the syntax
tree), which nodes of a kind bash reads as code, does a line end with a `\\` continuation (an odd
run of backslashes before its newline), and what a line says."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import TYPE_CHECKING

from generator.reading.shell.parse import named_nodes

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

# Syntax-tree nodes whose text bash does not read as code.
QUOTED_TYPES = frozenset({"comment", "string", "raw_string", "heredoc_body", "ansi_c_string", "heredoc_redirect"})
# A hostile file's tree is walked this far and no further.
MAX_WALKED_NODES = 200_000


# Walk or query (ski rental): compiling the query costs ~8 ms, once a process (tree-sitter
# analyses the grammar for it); a walk costs ~0.35 us a node it passes, each time. A process walks
# until it has walked about the compile's worth of nodes, then compiles the query and uses it
# from then on: a one-script check (183 nodes, three passes: ~0.2 ms) never compiles it, and a
# corpus run pays at most about the compile again (its first ~50 scripts of 585 are walked).
QUERY_AFTER_WALKED_NODES = 20_000
_nodes_walked = 0  # by _walked, in this process

# The node types the text-hazard passes look for: one query finds them all.
_SEARCHED_TYPES = ("command", "comment", "declaration_command")


class ScriptTree:
    """A script's syntax tree and its nodes of the types the text-hazard passes look for,
    found by one tree-sitter query when a pass first asks (a query per pass went over the
    whole tree once for each)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._searched = False
        self._found: dict[str, list[Node]] | None = None

    def named_nodes(self, node_type: str) -> list[Node] | None:
        """The named nodes of `node_type`, in no particular order; None when the query stopped early."""
        if node_type not in _SEARCHED_TYPES:
            found = named_nodes(self.tree.root_node, (node_type,))
            return None if found is None else found[node_type]
        if not self._searched:
            self._found = named_nodes(self.tree.root_node, _SEARCHED_TYPES)
            self._searched = True
        return None if self._found is None else self._found[node_type]


def code_nodes(script: ScriptTree, node_type: str, wanted: Callable[[Node], bool] | None = None, *,
               inside_matches: bool = True, opaque: frozenset[str] = QUOTED_TYPES,
               limit: int | None = MAX_WALKED_NODES) -> list[Node]:
    """The named nodes of `node_type` that `wanted` (if given) picks, outside the node types
    `opaque` (quoted text: QUOTED_TYPES), in source order, visiting at most `limit` nodes;
    without `inside_matches` a picked node's own children are not searched.

    The nodes are the ones a walk from the root would reach. Once the process has walked
    QUERY_AFTER_WALKED_NODES nodes they are found by a tree-sitter query (in C) instead and kept
    when no node above them stops the walk: a walk in Python makes an object of every node and
    was the reader's largest own cost in a corpus run. A tree with syntax errors (its recovery
    makes empty nodes, e.g. a `command` before a stray `|`, that a query does not match), one
    too large for `limit`, and two picks at one byte (only the walk's order says which comes
    first) are walked either way."""

    def picks(node: Node) -> bool:
        return node.type == node_type and (wanted is None or wanted(node))

    root = script.tree.root_node
    if (_nodes_walked < QUERY_AFTER_WALKED_NODES or root.has_error
            or (limit is not None and root.descendant_count > limit)):
        return _walked(root, picks, inside_matches, opaque, limit)
    found = _queried(script, node_type, picks, inside_matches, opaque)
    return _walked(root, picks, inside_matches, opaque, limit) if found is None else found


def _queried(script: ScriptTree, node_type: str, picks: Callable[[Node], bool], inside_matches: bool,
             opaque: frozenset[str]) -> list[Node] | None:
    """code_nodes found by the query; None where only a walk tells (the query stopped early, or
    two picks start at one byte)."""
    found = script.named_nodes(node_type)
    if found is None:
        return None
    out = [node for node in found if picks(node) and _reached(node, picks, inside_matches, opaque)]
    out.sort(key=_start)
    if any(a.start_byte == b.start_byte for a, b in pairwise(out)):
        return None
    return out


def _start(node: Node) -> int:
    return node.start_byte


def _reached(node: Node, picks: Callable[[Node], bool], inside_matches: bool, opaque: frozenset[str]) -> bool:
    """Whether a walk from the root gets to `node`: no node above it is opaque, or (without
    `inside_matches`) picked."""
    above = node.parent
    while above is not None:
        if above.type in opaque or (not inside_matches and picks(above)):
            return False
        above = above.parent
    return True


def _walked(root: Node, picks: Callable[[Node], bool], inside_matches: bool, opaque: frozenset[str],
            limit: int | None) -> list[Node]:
    global _nodes_walked
    out: list[Node] = []
    stack = [root]
    seen = 0
    while stack and (limit is None or seen < limit):
        node = stack.pop()
        seen += 1
        if picks(node):
            out.append(node)
            if not inside_matches:
                continue
        if node.type not in opaque:
            stack.extend(node.children)
    _nodes_walked += seen
    return sorted(out, key=_start)


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
