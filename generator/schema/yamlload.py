"""YAML loading that reads scalars the way OmegaConf (and so Hydra and verl) reads them, with
bounds for hostile input.

PyYAML alone follows YAML 1.1 and reads `1e-6` as a string; OmegaConf adds a float rule so
that it is a float. Config values must match what verl sees, so we use the same rule.

Bounds: a file is size-checked before it is read (generator.base.files), and the document is
refused when its aliases would expand it past MAX_EXPANDED_NODES nodes (an 899-byte "billion
laughs" file expands to gigabytes once merged or flattened) or past MAX_EXPANDED_BYTES of
scalar text (one 1 MB value referenced by 1,000 aliases is 1 GB once flattened, cached or
copied: 2 GB of memory and a 955 MB cache file before issue 35); both are one-line InputErrors.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from generator.base.errors import InputError
from generator.base.boundary import OutsideProject
from generator.base.files import DATA_LIMIT, read_text_input

# verl's largest composed config has ~1,500 nodes; a real one never comes near this.
MAX_EXPANDED_NODES = 200_000
# Characters of scalar text (keys and values) the document holds once every alias is expanded,
# counted before it is built. A file without aliases holds at most its own size (generator.base.files
# .DATA_LIMIT), so the bound only refuses alias amplification; verl's composed trainer config
# holds ~40 KB.
MAX_EXPANDED_BYTES = DATA_LIMIT

# Floats as OmegaConf accepts them: 1.0, 1e-6, .5, 1_000.0, +inf, .nan (case-insensitive).
# Compiled with the loader (a check of a script outside a checkout reads no YAML).
_FLOAT = r"""^(?:
        [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
      | [-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
      | \.[0-9_]+(?:[eE][-+][0-9]+)?
      | [-+]?\.(?:inf|Inf|INF)
      | \.(?:nan|NaN|NAN)
    )$"""


class InvalidYaml(ValueError):
    """The text is not YAML (callers that fall back on a bad config catch ValueError)."""


@lru_cache(maxsize=1)
def _loader() -> type:
    import yaml

    # libyaml's parser when PyYAML has it: the pure-Python one takes ~5 s on an 800 KB file (and
    # a 4 MB one, under every cap, would take half a minute). Same resolvers and constructors.
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        pass

    # Drop PyYAML's float rule and install OmegaConf's.
    resolvers = {
        key: [(tag, rx) for tag, rx in value if tag != "tag:yaml.org,2002:float"]
        for key, value in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.yaml_implicit_resolvers = resolvers
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(_FLOAT, re.X), list("-+0123456789."))
    return Loader


def load_yaml_text(text: str, where: str = "YAML") -> Any:
    """The document in `text`. InputError when its aliases expand it past the bound;
    InvalidYaml (a ValueError) when it is not YAML."""
    import yaml

    try:
        return construct_bounded(_loader()(text), text, where)
    except yaml.YAMLError as err:
        if "maximum nesting depth" in str(err):  # libyaml's own bound on `[[[[…` or deep blocks
            raise InputError(f"{where}: the YAML nests too deeply to read") from None
        raise InvalidYaml(f"{where}: not valid YAML ({' '.join(str(err).split())})") from None
    except RecursionError:  # `a: [[[[…` thousands deep: the parser recurses per level
        raise InputError(f"{where}: the YAML nests too deeply to read") from None


def construct_bounded(loader: Any, text: str, where: str) -> Any:
    """The document a PyYAML loader (built over `text`) constructs, refused (InputError) past
    MAX_EXPANDED_NODES nodes, before or after expanding aliases: every YAML gen reads, the
    user's recipe library too, goes through this bound. YAML errors propagate."""
    _count_nodes(text, where)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        nodes, chars = _expanded_size(node, {}, set())
        if nodes > MAX_EXPANDED_NODES:
            raise InputError(f"{where}: aliases expand it to more than {MAX_EXPANDED_NODES} nodes (refused)")
        if chars > MAX_EXPANDED_BYTES:
            raise InputError(f"{where}: aliases expand it to more than {MAX_EXPANDED_BYTES // (1024 * 1024)} MiB "
                             "of values (refused; the YAML byte limit)")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _count_nodes(text: str, where: str) -> None:
    """InputError when the document has more than MAX_EXPANDED_NODES nodes before any alias is
    expanded: counted from the parser's events (libyaml's when installed), stopping at the bound,
    before the pure-Python composer builds them (a 4 MB flow list `[1,1,1,…]` took 157 s and
    1.2 GiB there, issue 21). Syntax errors are left to the loader, which reports them."""
    import yaml

    parser: Any = None
    try:
        from yaml import cyaml

        parser = getattr(cyaml, "CParser")  # noqa: B009 - not in cyaml's __all__, so the stubs hide it
    except ImportError:  # pragma: no cover - PyYAML without libyaml
        pass
    events = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
    count = 0
    try:
        if parser is not None:
            source = parser(text)
            try:
                while True:
                    event = source.get_event()
                    if event is None or isinstance(event, yaml.StreamEndEvent):
                        break
                    if isinstance(event, events):
                        count += 1
                        if count > MAX_EXPANDED_NODES:
                            break
            finally:
                source.dispose()
        else:  # pragma: no cover - PyYAML without libyaml
            for event in yaml.parse(text, Loader=yaml.SafeLoader):
                if isinstance(event, events):
                    count += 1
                    if count > MAX_EXPANDED_NODES:
                        break
    except (yaml.YAMLError, RecursionError):
        return
    if count > MAX_EXPANDED_NODES:
        raise InputError(f"{where}: more than {MAX_EXPANDED_NODES} nodes (refused; a config has a few thousand)")


def _expanded_size(node: Any, sizes: dict[int, tuple[int, int]], open_nodes: set[int]) -> tuple[int, int]:
    """(nodes, scalar characters) in the document once every alias is expanded, counted without
    expanding it: each node's size is computed once (an alias reuses the node object). Stops
    early past either bound. A node that contains itself (a recursive alias) expands without end."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_nodes:
        return MAX_EXPANDED_NODES + 1, MAX_EXPANDED_BYTES + 1
    value = node.value
    if not isinstance(value, list):
        size = (1, len(value) if isinstance(value, str) else 1)
        sizes[key] = size
        return size
    open_nodes.add(key)
    total, chars = 1, 0
    for item in value:
        children = item if isinstance(item, tuple) else (item,)
        for child in children:
            more, text = _expanded_size(child, sizes, open_nodes)
            total += more
            chars += text
            if total > MAX_EXPANDED_NODES or chars > MAX_EXPANDED_BYTES:
                break
        if total > MAX_EXPANDED_NODES or chars > MAX_EXPANDED_BYTES:
            break
    open_nodes.discard(key)
    sizes[key] = (total, chars)
    return total, chars


def load_yaml_file(path: str | Path) -> Any:
    """A YAML config file: a regular file of at most DATA_LIMIT bytes (checked before reading)."""
    try:
        text = read_text_input(path, limit=DATA_LIMIT, what="YAML config")
    except OutsideProject:  # names the path already; callers keep the config unknown
        raise
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    return load_yaml_text(text, str(path))
