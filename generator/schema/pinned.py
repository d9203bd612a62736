"""The verl release a project pins in its dependency files (`verl==0.8.0`).

A project that installs verl from the package index names the release in its dependencies:
`dependencies = ["verl==0.8.0"]` or an extra in `pyproject.toml`, `verl[vllm]==0.5.0` in a
`requirements*.txt`, `install_requires=["verl==0.4.1"]` in `setup.py`, or a `pip install
verl==0.6.1` line in its README. Where no verl is vendored, installed or named by an option,
that pin says which verl the scripts run far better than a guess from their keys
(generator.schema.resolution takes it before guessing).

Only exact pins count (`==`): a range (`verl>=0.5`) says what is allowed, not what runs. A file
whose pins disagree, or that also installs verl from its git repository at a commit (an extra
that runs a newer verl than the pinned one), names no single release and is passed over.
Comments are skipped (`# verl==0.4.0.dev0  # editable install`). The files are read from the
script's folder up to the checkout's root, nearest first; the nearest file with a pin wins.
A pinned release without a packaged schema is judged by the packaged release of the same minor
version (0.4.0 -> 0.4.1), else the nearest older one; the reason says so.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from functools import partial
from pathlib import Path

from generator.base import boundary
from generator.base.errors import InputError
from generator.base.files import read_text_input
from generator.base.folder_memo import remembered
from generator.schema.releases import nearest_older, packaged_releases
from generator.verl.versions import parse
from generator.base.safe_regex import lazy_pattern

# Dependency files that declare what the project installs.
_DEPENDENCY_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "environment.yml", "environment.yaml")
_REQUIREMENTS = re.compile(r"requirements[\w.-]*\.txt\Z")
_README = ("README.md", "README.rst", "README")
# `verl==0.8.0`, `verl[vllm] == 0.5.0`, `"verl==0.4.1"`: the package name on its own (not
# `verl-tool==`, `myverl==`), extras allowed.
_PIN = lazy_pattern(r"(?<![\w.-])verl(?:\[[\w,\s-]*\])?\s*==\s*v?([0-9]+(?:\.[0-9]+){1,2}(?:[.\w+-]*)?)")
_PIP_LINE = lazy_pattern(r"pip3?\s+install\b")
# verl installed from its repository at a commit (`verl @ git+https://github.com/volcengine/verl@…`,
# a `[tool.uv.sources]` entry): another verl than the pinned release runs some of the scripts.
_GIT_SOURCE = lazy_pattern(r"github\.com[/:](?:volcengine|verl-project)/verl(?:\.git)?\b")
_TEXT_LIMIT = 1 << 20
_MAX_UP = 8


class PinnedRelease(NamedTuple):
    release: str   # a packaged schema id
    pinned: str    # the version as the project writes it
    where: Path    # the file that pins it

    def reason(self, root: Path) -> str:
        try:
            shown = str(self.where.relative_to(root))
        except ValueError:
            shown = str(self.where)
        said = f"the project pins verl=={self.pinned} ({shown})"
        if self.release != _plain(self.pinned):
            said += f"; judged by packaged {self.release}, the nearest packaged release"
        return said


def pinned_release(script_path: str, root: Path) -> PinnedRelease | None:
    """The release the nearest dependency file from the script's folder up to `root` pins."""
    here = Path(script_path).absolute().parent
    folders = [here, *here.parents][:_MAX_UP]
    if root not in folders:
        folders = [here] if here == root else [here, root]
    else:
        folders = folders[: folders.index(root) + 1]
    for folder in folders:
        # The scripts' folders share their ancestors: each folder is listed and read once per
        # run (under the boundary in force, which decides what may be read).
        found = remembered(("pinned_in", folder, boundary.current()), partial(_pinned_in, folder))
        if found is not None:
            return found
    return None


def _pinned_in(folder: Path) -> PinnedRelease | None:
    """The release the first dependency file of `folder` with a usable pin names."""
    for path in _candidates(folder):
        pinned = _pin_in(path)
        if pinned is not None:
            release = _packaged_for(pinned)
            if release is not None:
                return PinnedRelease(release, pinned, path)
    return None


def _candidates(folder: Path) -> list[Path]:
    try:
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
    except OSError:
        return []
    wanted = [n for n in names if n in _DEPENDENCY_FILES or _REQUIREMENTS.match(n)]
    wanted += [n for n in names if n in _README]
    return [folder / n for n in wanted]


def _pin_in(path: Path) -> str | None:
    try:
        text = read_text_input(path, limit=_TEXT_LIMIT, what="project file")
    except (InputError, OSError, UnicodeDecodeError):
        return None
    readme = path.name in _README
    pins: list[str] = []
    from_git = False
    pin, pip_line, git_source = _PIN(), _PIP_LINE(), _GIT_SOURCE()
    for line in text.splitlines():
        code = line if readme else line.split("#", 1)[0]
        if readme and not pip_line.search(code):
            continue  # a README pins only in the install command it tells the user to run
        from_git = from_git or git_source.search(code) is not None
        found = pin.search(code)
        if found:
            pins.append(found.group(1).rstrip("."))
    if from_git or len(set(pins)) != 1:
        return None  # verl also installed from a git commit, or pins that disagree: no one release
    return pins[0]


def _plain(version: str) -> str:
    try:
        return ".".join(str(p) for p in parse(version))
    except ValueError:
        return version


def _packaged_for(pinned: str) -> str | None:
    """The packaged release judged for a pinned version: itself; else the same minor's nearest
    packaged release; else the nearest older one."""
    try:
        wanted = parse(pinned)
    except ValueError:
        return None
    releases = packaged_releases()
    plain = _plain(pinned)
    if plain in releases:
        return plain
    same_minor = [r for r in releases if parse(r)[:2] == wanted[:2]]
    if same_minor:
        return same_minor[0]
    return nearest_older(plain)
