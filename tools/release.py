#!/usr/bin/env python3
"""Tag a release: the tag that pre-commit's `rev:` and pip's `@v<version>` pin, and the version itself.

    python tools/release.py 0.1.0          # check only: prints the tag it would create, or what is wrong
    python tools/release.py 0.1.0 --tag    # create the annotated tag v0.1.0 on HEAD (never pushes)

The package's version is read from this tag when it is built (hatch-vcs; docs/release.md), so the
tag is the one place the version is written. Refused (exit 2, one line each): a version that is
not X.Y.Z, a tag v<version> that already exists, uncommitted changes to tracked files, a
CHANGELOG.md without a `## <version>` section. Push the tag yourself: `git push origin v<version>`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSION_RE = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


def changelog_versions(text: str) -> set[str]:
    """The versions CHANGELOG.md has a section for (`## 0.1.0`, `## 0.1.0 - 2026-12-07`)."""
    return {m.group(1) for m in re.finditer(r"^## v?(\S+?)(?:\s|$)", text, flags=re.M)}


def release_problems(version: str, existing_tags: set[str], dirty: bool, logged: set[str]) -> list[str]:
    """Why v<version> cannot be tagged now (an empty list: it can)."""
    problems = []
    if not VERSION_RE.match(version):
        problems.append(f"version {version!r} is not X.Y.Z")
    elif f"v{version}" in existing_tags:
        problems.append(f"tag v{version} already exists: release a higher version")
    elif version not in logged:
        problems.append(f"CHANGELOG.md has no '## {version}' section: say what changed first")
    if dirty:
        problems.append("uncommitted changes to tracked files: commit them first")
    return problems


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/release.py", description=__doc__.splitlines()[0])
    parser.add_argument("version", help="the release, X.Y.Z (tagged as vX.Y.Z)")
    parser.add_argument("--tag", action="store_true", help="create the tag (default: check only)")
    opts = parser.parse_args(argv)
    version = opts.version.removeprefix("v")
    try:
        logged = changelog_versions((REPO / "CHANGELOG.md").read_text(encoding="utf-8"))
        tags = set(_git("tag", "--list").split())
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"release: error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    problems = release_problems(version, tags, dirty, logged)
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
