"""A cache of schemas composed from a config folder (a verl checkout's or a fork's YAML).

Reading and composing verl's YAML with PyYAML costs about half a second on every `gen check`
inside a checkout; the result depends only on the YAML files' content. So it is kept, as JSON,
under the user's cache folder, named by a SHA-256 of every YAML file's relative path and bytes
(and this format's version): an edit to any of them is a new name, never a stale hit.

Where: `$VERL_GEN_CACHE_DIR`, else `$XDG_CACHE_HOME/verl-gen`, else `~/.cache/verl-gen` (the
XDG habit, as pip and ruff); `VERL_GEN_CACHE=0` turns it off.

A cache file is data we wrote, but not trusted: it is read only when it is a regular file owned
by this user and not writable by others, under a size bound, and only when it parses as JSON of
exactly the expected shape with the expected key inside. Anything else — corrupt, truncated,
foreign, hostile — is ignored, the YAML is composed again, and the entry is rewritten. It is
never unpickled or executed. A cache that cannot be written is simply not written.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

FORMAT = 2  # 2: a stale _generated_*.yaml gives way to the primary YAML (schema/generated.py)
CACHE_ENV = "VERL_GEN_CACHE_DIR"
SWITCH_ENV = "VERL_GEN_CACHE"
MAX_FILES = 4000  # YAML files hashed for one folder; a larger tree is not cached
MAX_ENTRY_BYTES = 64 << 20

Configs = dict[str, dict[str, Any]]
Mandatory = dict[str, list[str]]


def cache_dir() -> Path | None:
    """The folder of schema entries, or None when caching is off."""
    if os.environ.get(SWITCH_ENV, "").strip() == "0":
        return None
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen:
        return Path(chosen) / "schemas"
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "verl-gen" / "schemas"


def content_key(config_dir: Path) -> str | None:
    """SHA-256 of the folder's YAML (relative paths and bytes, in path order); None when the
    tree cannot be read whole or is too large to be worth it."""
    digest = hashlib.sha256(f"verl-gen schema cache {FORMAT}\n".encode())
    try:
        files = sorted(p for p in config_dir.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        if len(files) > MAX_FILES:
            return None
        for path in files:
            data = path.read_bytes()
            name = path.relative_to(config_dir).as_posix().encode("utf-8", "surrogateescape")
            digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
    except (OSError, ValueError, RecursionError):
        return None
    return digest.hexdigest()


def _trusted(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    return not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _valid(document: object, key: str) -> tuple[Configs, Mandatory] | None:
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("key") != key:
        return None
    configs, mandatory = document.get("configs"), document.get("mandatory")
    if not isinstance(configs, dict) or not configs or not isinstance(mandatory, dict):
        return None
    for name, values in configs.items():
        if not isinstance(name, str) or not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
            return None
    for name, keys in mandatory.items():
        if name not in configs or not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return None
    return configs, mandatory


def load_entry(key: str) -> tuple[Configs, Mandatory] | None:
    """The cached (configs, mandatory) for `key`, or None (no entry, or one not to be trusted)."""
    folder = cache_dir()
    if folder is None or len(key) != 64 or not all(c in "0123456789abcdef" for c in key):
        return None
    path = folder / f"{key}.json"
    if not _trusted(path):
        return None
    try:
        with open(path, "rb") as handle:
            document = json.loads(handle.read(MAX_ENTRY_BYTES + 1))
    except (OSError, ValueError, RecursionError):
        return None
    return _valid(document, key)


def store_entry(key: str, configs: Configs, mandatory: Mandatory) -> None:
    """Write the entry (atomically: a reader sees the old file or the whole new one); any
    failure leaves no entry and is not an error."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        text = json.dumps({"format": FORMAT, "key": key, "configs": configs, "mandatory": mandatory})
        if json.loads(text)["configs"] != configs:
            return  # a value JSON would change (a non-text key, say): not cached rather than wrong
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temporary, 0o600)
            os.replace(temporary, folder / f"{key}.json")
        except BaseException:
            os.unlink(temporary)
            raise
    except (OSError, TypeError, ValueError):
        return


__all__ = ["CACHE_ENV", "SWITCH_ENV", "cache_dir", "content_key", "load_entry", "store_entry"]
