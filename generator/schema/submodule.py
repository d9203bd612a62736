"""A project whose verl is a git submodule that is not checked out.

`.gitmodules` says `path = verl` (or `third_party/verl`) with `url = https://github.com/volcengine/
verl.git`, and the folder is empty: the repository was cloned without `--recursive` (or laid out
from an archive, which never holds submodules). The scripts run that submodule's verl, at a
commit `.gitmodules` does not name, so its release and its config are unknown here. Judging the
calls against the newest packaged release reports its keys and defaults as the project's (a key
the submodule's verl has called unknown). The resolution says so instead: a packaged release
guessed from the keys only stands in, the rules that read keys or defaults stand down, and the
report names the submodule and how to check it out.
"""

from __future__ import annotations

import re
from pathlib import Path

from generator.base.errors import InputError
from generator.base.files import read_text_input

_SECTION = re.compile(r"^\s*\[submodule\s+\"[^\"]*\"\s*\]", re.M)
_SETTING = re.compile(r"^\s*(path|url)\s*=\s*(\S+)\s*$", re.M)
_TEXT_LIMIT = 1 << 16


def absent_verl_submodule(root: Path) -> Path | None:
    """The folder of the checkout's verl submodule when it is not checked out (no files in it);
    None when there is none, or it is checked out (then it is the project's verl, found as such)."""
    try:
        text = read_text_input(root / ".gitmodules", limit=_TEXT_LIMIT, what="project file") \
            if (root / ".gitmodules").is_file() else ""
    except (InputError, OSError, UnicodeDecodeError):
        return None
    for path, url in _submodules(text):
        if not (_names_verl(path) or _names_verl(url)):
            continue
        folder = root / path
        if not _has_files(folder):
            return folder
    return None


def _submodules(text: str) -> list[tuple[str, str]]:
    """(path, url) of each `[submodule]` section; comment lines (`#`, `;`) are not settings."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(("#", ";"))]
    body = "\n".join(lines)
    starts = [m.start() for m in _SECTION.finditer(body)] + [len(body)]
    found = []
    for a, b in zip(starts, starts[1:]):
        settings: dict[str, str] = {m.group(1): m.group(2) for m in _SETTING.finditer(body, a, b)}
        if "path" in settings:
            found.append((settings["path"].strip("\"'"), settings.get("url", "")))
    return found


def _names_verl(text: str) -> bool:
    """`verl`, `third_party/verl`, `https://github.com/volcengine/verl.git`: the last name is verl."""
    last = text.rstrip("/").rsplit("/", 1)[-1]
    return last.removesuffix(".git") == "verl"


def _has_files(folder: Path) -> bool:
    try:
        return folder.is_dir() and any(folder.iterdir())
    except OSError:
        return False
