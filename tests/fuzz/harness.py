"""Run one fuzzed script through `gen show`, `gen check` and `gen fix` in-process and list
everything that went wrong: a traceback or an escaped exception, an exit code outside the
documented set, an error that spans lines, an "internal error" the CLI caught and masked,
JSON that does not parse, a `fix --write` that is not idempotent, or a command from the
script that ran (a marker file appearing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

MARKER = Path("/tmp/verl_gen_fuzz_marker")
_runner = CliRunner()


def _invoke(args: list[str]):
    return _runner.invoke(app, args, catch_exceptions=True)


def _problems_of(name: str, result, allowed: set[int]) -> list[str]:
    problems = []
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        problems.append(f"{name}: raised {type(result.exception).__name__}: {result.exception}")
    if result.exit_code not in allowed:
        problems.append(f"{name}: exit code {result.exit_code}, expected one of {sorted(allowed)}")
    err = result.stderr if hasattr(result, "stderr") else ""
    text = (result.stdout or "") + (err or "")
    if "Traceback (most recent call last)" in text:
        problems.append(f"{name}: printed a traceback")
    for line in (err or "").splitlines():
        if "internal error" in line:
            problems.append(f"{name}: {line.strip()[:300]}")
    return problems


def run_one(data: bytes, workdir: Path) -> list[str]:
    """All problems found for one input (empty list: the input was handled well)."""
    script = workdir / "run.sh"
    script.write_bytes(data)
    problems: list[str] = []

    show = _invoke(["show", str(script), "--format", "json"])
    problems += _problems_of("show", show, {0, 2})
    if show.exit_code in (0, 2) and show.stdout.strip():
        try:
            json.loads(show.stdout)
        except ValueError:
            problems.append("show: --format json printed something that is not JSON")

    check = _invoke(["check", str(script), "--format", "json"])
    problems += _problems_of("check", check, {0, 1, 2})
    if check.exit_code in (0, 1, 2) and check.stdout.strip():
        try:
            json.loads(check.stdout)
        except ValueError:
            problems.append("check: --format json printed something that is not JSON")

    diff = _invoke(["fix", str(script)])
    problems += _problems_of("fix --diff", diff, {0, 1, 2})
    if script.read_bytes() != data:
        problems.append("fix --diff changed the file")

    first = _invoke(["fix", str(script), "--write"])
    problems += _problems_of("fix --write", first, {0, 1, 2})
    after_first = script.read_bytes()
    second = _invoke(["fix", str(script), "--write"])
    problems += _problems_of("fix --write (again)", second, {0, 1, 2})
    if script.read_bytes() != after_first:
        problems.append("fix is not idempotent: a second --write changed the file again")

    if MARKER.exists():
        problems.append("a command substitution from the script was executed (marker file exists)")
        MARKER.unlink()
    return problems


def clean_marker() -> None:
    if MARKER.exists():
        os.unlink(MARKER)
