"""A cache of schemas composed from a config folder (a verl checkout's or a fork's YAML).

Reading and composing verl's YAML with PyYAML costs about half a second on every `gen check`
inside a checkout; the result depends only on the YAML files' content. So it is kept, as JSON,
under the user's cache folder, named by a SHA-256 of every YAML file's relative path and bytes
(and this format's version): an edit to any of them is a new name, never a stale hit. That name
does not see every file a composition reads: a linked subfolder is not walked, and a `defaults:`
entry may reach `../` out of the folder. So the entry also keeps each file the composition read
(or looked for and did not find), by its path relative to the config folder and a SHA-256 of its
bytes (generator.base.files.recording_reads), and a hit counts only when every one of them is the
same in the folder being judged now: checking one project never changes another's verdict, and
an edit to a file behind a link is seen (issue 35).

The same goes for a packaged data file PyYAML is slow to read (the model registry): its parse
is kept (`cached_parse`), so `gen check` need not import PyYAML at all; and for a small value
derived from many packaged files (`cached_value`: the config-group keys of every packaged
schema, which otherwise means parsing 2 MB of JSON to judge one script). These are verl-gen's
own files, so their entries are keyed as Python's own bytecode cache keys a module's source: by
each file's path, size and modification time (`os.stat`), not its bytes. Hashing the bytes meant
reading the 2 MB and importing hashlib (OpenSSL: ~3 ms) on every one-script check; an edit, a
reinstall or a checkout writes the file anew and so is a new key. The entry's file name is a
CRC of that key, which the entry holds and is checked against: a clash is a miss, never a hit.

Where: `$VERL_GEN_CACHE/schemas` (the project's cache folder, as the oracle's), else
`$XDG_CACHE_HOME/verl-gen/schemas`, else `~/.cache/verl-gen/schemas` (the XDG habit, as pip and
ruff); `VERL_GEN_NO_CACHE=1` turns it off. Data-file parses go to `.../data` beside it.

A cache file is data we wrote, but not trusted: it is read only when it is a regular file owned
by this user and not writable by others, under a size bound, and only when it parses as JSON of
exactly the expected shape with the expected key inside. Anything else — corrupt, truncated,
foreign, hostile — is ignored, the YAML is composed again, and the entry is rewritten. It is
never unpickled or executed. A cache that cannot be written is simply not written.
"""

from __future__ import annotations

import copy
import json
import math
import os
import stat
import zlib
from pathlib import Path
from typing import Any, Callable

# 2: a stale _generated_*.yaml gives way to the primary YAML (schema/generated.py)
# 3: the entry keeps why a generated file was passed over (the notes), so a hit reads no YAML at all
# 4: the entry keeps every file the composition read or looked for (`deps`), checked on a hit
# 5: a primary that cannot be composed gives its own keys over the generated file's (schema/generated.py)
FORMAT = 5
CACHE_ENV = "VERL_GEN_CACHE"  # the project's cache folder (the oracle keeps its environment there too)
SWITCH_ENV = "VERL_GEN_NO_CACHE"
MAX_FILES = 4000  # YAML files hashed for one folder; a larger tree is not cached
MAX_ENTRY_BYTES = 64 << 20
MAX_KEY_BYTES = 64 << 20  # YAML bytes hashed to name one folder's entry; a larger tree is not cached

Configs = dict[str, dict[str, Any]]
Mandatory = dict[str, list[str]]


def cache_dir() -> Path | None:
    """The folder of schema entries, or None when caching is off."""
    if os.environ.get(SWITCH_ENV, "").strip() not in ("", "0"):
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
    import hashlib  # only a checkout's YAML is keyed by content (OpenSSL's _hashlib: ~3 ms of a start)

    digest = hashlib.sha256(f"verl-gen schema cache {FORMAT}\n".encode())
    try:
        # Regular files only, links passed over: a `x.yaml` linked to a huge file elsewhere is not
        # read to name an entry (what a composition reads through a link is in the entry's deps).
        files = sorted(p for p in config_dir.rglob("*") if p.suffix in (".yaml", ".yml") and not p.is_symlink()
                       and p.is_file())
        if len(files) > MAX_FILES:
            return None
        total = 0
        for path in files:
            total += path.stat().st_size
            if total > MAX_KEY_BYTES:  # a tree this large is composed each time, not cached
                return None
            with open(path, "rb") as handle:
                data = handle.read(MAX_KEY_BYTES + 1)
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


Deps = dict[str, str]


def _valid(document: object, key: str) -> tuple[Configs, Mandatory, list[str], Deps] | None:
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("key") != key:
        return None
    deps = document.get("deps")
    if not isinstance(deps, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in deps.items()):
        return None
    configs, mandatory, notes = document.get("configs"), document.get("mandatory"), document.get("notes")
    if not isinstance(configs, dict) or not configs or not isinstance(mandatory, dict):
        return None
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        return None
    for name, values in configs.items():
        if not isinstance(name, str) or not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
            return None
    for name, keys in mandatory.items():
        if name not in configs or not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return None
    return configs, mandatory, notes, deps


def load_entry(key: str, config_dir: Path, digest: Callable[[str], str | None]
               ) -> tuple[Configs, Mandatory, list[str]] | None:
    """The cached (configs, mandatory, notes) for `key`, or None (no entry, one not to be
    trusted, or one composed from a file that differs in `config_dir` now). `digest(path)`: what
    generator.base.files.recording_reads notes for the file now, None when it cannot be read (the
    caller's reader: this module sits below the project's file door)."""
    folder = cache_dir()
    if folder is None or len(key) != 64 or not all(c in "0123456789abcdef" for c in key):
        return None
    document = _read_document(folder / f"{key}.json", MAX_ENTRY_BYTES)
    found = None if document is None else _valid(document, key)
    if found is None:
        return None
    configs, mandatory, notes, deps = found
    # Every file the entry was composed from must be the same in `config_dir` now.
    if any(digest(os.path.join(config_dir, relative)) != noted for relative, noted in deps.items()):
        return None
    return configs, mandatory, notes


def relative_deps(config_dir: Path, reads: dict[str, str]) -> Deps:
    """The recorded reads (absolute path -> digest) by their path relative to `config_dir`."""
    base = os.path.abspath(config_dir)
    return {os.path.relpath(path, base): digest for path, digest in reads.items()}


def store_entry(key: str, configs: Configs, mandatory: Mandatory, notes: list[str], deps: Deps) -> None:
    """Write the entry (atomically: a reader sees the old file or the whole new one); any
    failure leaves no entry and is not an error. `notes`: why a file of the folder was passed
    over (a stale _generated_*.yaml), which depends on the same YAML as the key; `deps`: every
    file the composition read or looked for (relative_deps), checked on a hit."""
    folder = cache_dir()
    if folder is None:
        return
    _write_json(folder / f"{key}.json", {"format": FORMAT, "key": key, "configs": configs, "mandatory": mandatory,
                                         "notes": list(notes), "deps": dict(deps)},
                # a value JSON would change (a non-text key, say): not cached rather than wrong
                check=lambda back: back["configs"] == configs)


def cached_parse(path: Path, parse: Callable[[Path], Any], valid: Callable[[Any], bool]) -> Any:
    """`parse(path)` for a packaged data file that is slow to parse (a YAML file PyYAML reads),
    from an entry keyed by the file's stamp (path, size, modification time) when there is a
    trusted one that `valid` accepts; else parsed and the entry written. Only for values JSON
    keeps exactly (checked before writing)."""
    key = _stamp("data", path.name, [path])
    return parse(path) if key is None else _through_entry(key, lambda: parse(path), valid)


def cached_value(name: str, paths: list[Path], compute: Callable[[], Any], valid: Callable[[Any], bool]) -> Any:
    """`compute()` for a value derived from several packaged data files (the group keys of every
    packaged schema, say): from an entry keyed by `name` and every file's stamp (path, size,
    modification time) when there is a trusted one that `valid` accepts; else computed and the
    entry written. An edit to any file is a new key. Only for values JSON keeps exactly (checked
    before writing)."""
    key = _stamp("derived", name, paths)
    return compute() if key is None else _through_entry(key, compute, valid)


def _stamp(kind: str, name: str, paths: list[Path]) -> str | None:
    """The key of an entry about packaged files: what Python's bytecode cache checks of a source
    (size and modification time, to the nanosecond), with each file's absolute path; None when
    one cannot be read."""
    parts = [f"verl-gen {kind} cache {FORMAT}", name]
    try:
        for path in paths:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):
                return None
            parts.append(f"{os.path.abspath(path)}\0{info.st_size}\0{info.st_mtime_ns}")
    except (OSError, ValueError):
        return None
    return "\n".join(parts)


def _data_entry(key: str) -> Path | None:
    """Where the entry of a stamped `key` lives (named by a CRC of it: the entry holds the key,
    checked on reading, so a clash is a miss); None when caching is off."""
    folder = cache_dir()
    return folder.parent / "data" / f"{zlib.crc32(key.encode('utf-8', 'surrogateescape')):08x}.json" if folder else None


def _read_document(path: Path, limit: int) -> Any:
    """The JSON of a trusted entry file read up to `limit` bytes; None when there is none to trust."""
    if not _trusted(path):
        return None
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read(limit + 1))
    except (OSError, ValueError, RecursionError):
        return None


def _through_entry(key: str, compute: Callable[[], Any], valid: Callable[[Any], bool]) -> Any:
    entry = _data_entry(key)
    document = _read_document(entry, MAX_ENTRY_BYTES) if entry is not None else None
    try:
        if isinstance(document, dict) and document.get("key") == key and valid(document.get("data")):
            return document["data"]
    except (ValueError, RecursionError, TypeError, KeyError):  # a `valid` that meets a shape it did not expect
        pass
    value = compute()
    if entry is not None:
        _write_json(entry, {"format": FORMAT, "key": key, "data": value},
                    check=lambda back: back["key"] == key and back["data"] == value)
    return value


MAX_ANSWERS = 4096  # answers one entry keeps; past it, new ones are not kept (a hostile script's thousands)
MAX_QUESTION = 4096  # characters of a question worth keeping an answer to
MAX_ANSWERS_BYTES = 4 << 20


class RememberedAnswers:
    """A slow library's answers to questions put as text (what Hydra's grammar makes of an
    override that our fast path leaves to it: ~0.13 s to import Hydra, in every process that
    meets one), kept in one entry keyed by the stamp of the files the answers depend on, as
    `cached_value` keys. Only JSON values (checked exactly before writing) are kept. Adding one
    merges it with what the entry holds at that moment, so processes checking at once (the
    workers of one check) lose at most an answer, which the next run adds again. The entry is
    written at the 1st, 2nd, 4th, 8th … new answer of a process, so the writes of a script with
    thousands of new answers add up to about twice the entry, not the entry once per answer;
    answers after a process's last write are added by a later run."""

    def __init__(self, name: str, paths: list[Path]) -> None:
        self._key = _stamp("answers", name, paths) if cache_dir() is not None else None
        self._entry = _data_entry(self._key) if self._key is not None else None
        self._answers = self._read()
        self._learned: dict[str, Any] = {}  # by this process
        self._save_at = 1  # how many it will have learned at its next write

    def get(self, question: str) -> Any:
        """A copy of the kept answer (its owner may change it), or None."""
        answer = self._answers.get(question)
        return None if answer is None else copy.deepcopy(answer)

    def add(self, question: str, answer: Any) -> None:
        """Keep a copy of `answer`: the caller's lists and mappings may change after, and what
        is written is what was answered."""
        if self._entry is None or len(question) > MAX_QUESTION or not _json_exact(answer):
            return
        answer = copy.deepcopy(answer)
        self._answers[question] = answer
        self._learned[question] = answer
        if len(self._learned) < self._save_at:
            return
        self._save_at *= 2
        merged = {**self._read(), **self._learned}
        if len(merged) <= MAX_ANSWERS:
            _write_json(self._entry, {"format": FORMAT, "key": self._key, "answers": merged},
                        check=lambda back: back["key"] == self._key and back["answers"] == merged)

    def _read(self) -> dict[str, Any]:
        document = _read_document(self._entry, MAX_ANSWERS_BYTES) if self._entry is not None else None
        if not isinstance(document, dict) or document.get("key") != self._key:
            return {}
        answers = document.get("answers")
        if not isinstance(answers, dict) or len(answers) > MAX_ANSWERS:
            return {}
        return answers


def _json_exact(value: Any, depth: int = 0) -> bool:
    """Whether JSON gives `value` back with the same types (a bool stays a bool, a float a float;
    NaN, which equals nothing, and a non-text mapping key do not qualify)."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return not math.isnan(value)
    if depth > 64:
        return False
    if isinstance(value, list):
        return all(_json_exact(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v, depth + 1) for k, v in value.items())
    return False


def _write_json(target: Path, document: dict[str, Any], check: Callable[[Any], bool]) -> None:
    import tempfile  # only a cache miss writes (with random and shutil, ~3 ms of a check's start)

    try:
        text = json.dumps(document)
        if len(text) > MAX_ENTRY_BYTES:  # never read back (see _trusted): not written at all
            return
        if not check(json.loads(text)):
            return
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temporary, 0o600)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except (OSError, TypeError, ValueError):
        return


__all__ = ["CACHE_ENV", "SWITCH_ENV", "RememberedAnswers", "cache_dir", "cached_parse", "cached_value", "content_key", "load_entry", "relative_deps",
           "store_entry"]
