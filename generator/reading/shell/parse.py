"""tree-sitter-bash, loaded once. Input is padded with two newlines: a trailing backslash at
end of file otherwise yields an ERROR node (4 corpus scripts end so); offsets are unchanged."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser, Query, Tree


@lru_cache(maxsize=1)
def _language() -> Language:
    """The grammar, one object for the parser and the queries."""
    from tree_sitter import Language

    return Language(_bash_language())


def _bash_language() -> object:
    """The grammar from tree_sitter_bash's compiled `_binding` alone. The package's __init__
    imports importlib.resources (and with it tempfile, shutil, random, bz2, lzma: ~4 ms of a
    one-script check) only for its highlight queries, which the reader never uses. Where the
    package is laid out otherwise, it is imported as usual."""
    from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, FileFinder
    from importlib.util import find_spec, module_from_spec

    package = find_spec("tree_sitter_bash")  # finds the package without running its __init__
    folders = list(package.submodule_search_locations or ()) if package is not None else []
    for folder in folders:
        spec = FileFinder(folder, (ExtensionFileLoader, EXTENSION_SUFFIXES)).find_spec("tree_sitter_bash._binding")
        if spec is not None and spec.loader is not None:
            binding = module_from_spec(spec)
            spec.loader.exec_module(binding)
            return binding.language()
    import tree_sitter_bash

    return tree_sitter_bash.language()


@lru_cache(maxsize=1)
def _parser() -> Parser:
    from tree_sitter import Parser

    return Parser(_language())


def parse_bytes(data: bytes) -> Tree:
    return _parser().parse(data + b"\n\n")


@lru_cache(maxsize=16)
def _node_query(node_types: tuple[str, ...]) -> Query:
    from tree_sitter import Query

    return Query(_language(), " ".join(f"({t}) @{t}" for t in node_types))


def named_nodes(root: Node, node_types: tuple[str, ...]) -> dict[str, list[Node]] | None:
    """Every named node of each of `node_types` under `root` (itself too), by type, in no
    particular order, found by one tree-sitter query in C (a walk in Python makes an object of
    every node it passes); None when the query stopped early (tree-sitter's match limit)."""
    from tree_sitter import QueryCursor

    cursor = QueryCursor(_node_query(node_types))
    found = cursor.captures(root)
    return None if cursor.did_exceed_match_limit else {t: found.get(t, []) for t in node_types}
