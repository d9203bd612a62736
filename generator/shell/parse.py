"""tree-sitter-bash, loaded once. Input is padded with two newlines: a trailing backslash at
end of file otherwise yields an ERROR node (4 corpus scripts end so); offsets are unchanged."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Parser, Tree


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def parse_bytes(data: bytes) -> Tree:
    return _parser().parse(data + b"\n\n")
