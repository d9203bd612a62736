#!/usr/bin/env python3
"""Tag a release: the tag that pre-commit's `rev:` and pip's `@v<version>` pin.

    python tools/release.py            # check only: prints the tag it would create, or what is wrong
    python tools/release.py --tag      # create the annotated tag v<version> on HEAD (never pushes)

The version is the one in pyproject.toml ([project] version, X.Y.Z). Refused (exit 2, one line
each): a version that is not X.Y.Z, a tag v<version> that already exists, uncommitted changes to
tracked files. Push the tag yourself: `git push origin v<version>`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the project depends on tomli there
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
VERSION_RE = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


def project_version(pyproject_text: str) -> str:
    """[project] version from the text of a pyproject.toml ('' when absent)."""
    data = tomllib.loads(pyproject_text)
    version = data.get("project", {}).get("version", "")
    return version if isinstance(version, str) else ""


def release_problems(version: str, existing_tags: set[str], dirty: bool) -> list[str]:
    """Why v<version> cannot be tagged now (an empty list: it can)."""
    problems = []
    if not VERSION_RE.match(version):
        problems.append(f"version {version!r} in pyproject.toml is not X.Y.Z")
    elif f"v{version}" in existing_tags:
        problems.append(f"tag v{version} already exists: raise the version in pyproject.toml first")
    if dirty:
        problems.append("uncommitted changes to tracked files: commit them first")
    return problems


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/release.py", description=__doc__.splitlines()[0])
    parser.add_argument("--tag", action="store_true", help="create the tag (default: check only)")
    opts = parser.parse_args(argv)
    try:
        version = project_version((REPO / "pyproject.toml").read_text(encoding="utf-8"))
        tags = set(_git("tag", "--list").split())
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.CalledProcessError, tomllib.TOMLDecodeError) as exc:
        print(f"release: error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    problems = release_problems(version, tags, dirty)
    for problem in problems:
        print(f"release: error: {problem}", file=sys.stderr)
    if problems:
        return 2
    if not opts.tag:
        print(f"release: ready to tag v{version} (run with --tag)")
        return 0
    _git("tag", "-a", f"v{version}", "-m", f"verl-gen {version}")
    print(f"release: tagged v{version}; push it with: git push origin v{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
