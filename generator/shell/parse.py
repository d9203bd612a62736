"""tree-sitter-bash, loaded once. Input is padded with two newlines: a trailing backslash at
end of file otherwise yields an ERROR node (4 corpus scripts end so); offsets are unchanged."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Parser, Tree


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
    from tree_sitter import Language, Parser

    return Parser(Language(_bash_language()))


def parse_bytes(data: bytes) -> Tree:
    return _parser().parse(data + b"\n\n")
