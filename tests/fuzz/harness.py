"""Run one fuzzed script through `gen show`, `gen check` and `gen fix` in-process and list
everything that went wrong: a traceback or an escaped exception, an exit code outside the
documented set, an error that spans lines, an "internal error" the CLI caught and masked,
JSON that does not parse, a `fix --write` that is not idempotent, a command from the
script that ran (a marker file appearing), or more than CPU_LIMIT seconds of work on one input.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

from hostile import FuzzCase
from hostile_project import SECRET

MARKER = Path("/tmp/verl_gen_fuzz_marker")
# Seconds of CPU all commands together may spend on one input (issue 13: bounded work). The
# largest accepted inputs take a few seconds; an exponential blow-up takes minutes.
CPU_LIMIT = 20.0
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


def run_one(data: bytes | FuzzCase, workdir: Path) -> list[str]:
    """All problems found for one input (empty list: the input was handled well)."""
    return run_case(data if isinstance(data, FuzzCase) else FuzzCase(data), workdir)[0]


def run_case(case: FuzzCase, workdir: Path) -> tuple[list[str], float]:
    """The problems found for one case, and the CPU seconds its commands took. The case's
    script and files are written to a fresh folder under `workdir`, removed afterwards."""
    folder = workdir / "case"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    try:
        started = time.process_time()
        # the folder's name differs per run: leave it out so the same problem reads the same
        problems = [p.replace(str(folder), "<case>") for p in _run_commands(case, folder)]
        seconds = time.process_time() - started
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if seconds > CPU_LIMIT:
        problems.append(f"slow: {seconds:.1f} s of CPU on one input (limit {CPU_LIMIT:.0f} s)")
    return problems, seconds


def _run_commands(case: FuzzCase, folder: Path) -> list[str]:
    outside = folder.parent / "outside"
    place = str(outside).encode()
    if case.outside or case.links:  # issue 21: a repository, and secrets beside it
        (folder / ".git").mkdir()
        shutil.rmtree(outside, ignore_errors=True)
        outside.mkdir()
        for relative, content in case.outside.items():
            (outside / relative).write_bytes(content)
    for relative, content in case.files.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.replace(b"{OUTSIDE}", place))
    for relative, name in case.links.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(outside / name)
    script = folder / case.name
    script.write_bytes(case.script.replace(b"{OUTSIDE}", place))
    data = script.read_bytes()
    try:
        return _commands(case, folder, script, data)
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def _commands(case: FuzzCase, folder: Path, script: Path, data: bytes) -> list[str]:
    options = [str(folder / a) if a in case.files else a for a in case.check_args]
    problems: list[str] = []

    show = _invoke(["show", str(script), "--format", "json"])
    problems += _problems_of("show", show, {0, 2})
    if show.exit_code in (0, 2) and show.stdout.strip():
        try:
            json.loads(show.stdout)
        except ValueError:
            problems.append("show: --format json printed something that is not JSON")

    check = _invoke(["check", str(script), "--format", "json", *options])
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
    for name, result in (("show", show), ("check", check), ("fix --diff", diff), ("fix --write", first)):
        err = result.stderr if hasattr(result, "stderr") else ""
        if SECRET in (result.stdout or "") + (err or ""):
            problems.append(f"{name}: printed the content of a file outside the project")
    return problems


def clean_marker() -> None:
    if MARKER.exists():
        os.unlink(MARKER)
