"""`gen check --format json` on a script inside a throwaway project, as a user runs it: one home for the
helpers the tests of the hold-out samples' mechanisms share."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check_json(script: Path, cwd: Path) -> tuple[int, dict[str, object], list[dict[str, object]]]:
    """The exit code, the resolution and the findings of `gen check --format json SCRIPT` run in `cwd`."""
    done = subprocess.run([sys.executable, "-m", "generator", "check", "--format", "json", str(script)],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    document = json.loads(done.stdout)
    entry = document["files"][0]
    return done.returncode, entry["resolution"] or {}, list(entry["findings"])


def new_project(tmp_path: Path) -> Path:
    """An empty git checkout (a `.git` folder is what marks the project's root)."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    return project


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
