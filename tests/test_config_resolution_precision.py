"""Precision of errors and warnings on the fixture projects, before and after the resolution.

The fixtures under tests/fixtures/projects/ model layouts seen in public projects built on
verl (a fork vendored at the root with scripts in scripts/ or examples/<algo>/, a submodule,
a fork nested in a sub-folder, an agent fork with its own config sections, an early fork with
the global micro batch keys, a project file pinning the release). Each script's real problems
are listed here by construction. "Before" is what `gen check` did with no verl installed: judge
every script against the newest packaged schema (0.9.1) without saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

PROJECTS = Path(__file__).resolve().parent / "fixtures" / "projects"

# script -> the error/warning codes that are real problems when it runs with its project's verl
REAL: dict[str, set[str]] = {
    "vendored_fork/scripts/train_agent.sh": set(),
    "submodule/examples/run_grpo.sh": set(),
    "nested/sk/verl/examples/run_decompile.sh": set(),
    "agent_fork/examples/gigpo_trainer/run_env.sh": set(),
    "tiny_fork/scripts/train_tiny.sh": set(),
    "toml_configdir/jobs/run.sh": set(),
    # verl 0.6.1 needs a micro batch for the actor, the log-prob passes and the critic.
    "toml_project/scripts/run_ppo.sh": {"VB109", "VB201", "VB204"},
}


@pytest.fixture(autouse=True)
def _no_installed_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("generator.schema.resolution.installed_verl", lambda: None)


def _errors_and_warnings(*argv: str) -> set[str]:
    doc = json.loads(CliRunner().invoke(app, ["check", *argv, "--format", "json"]).output)
    return {f["code"] for f in doc["files"][0]["findings"] if f["severity"] in ("error", "warning")}


def _precision(found: dict[str, set[str]]) -> tuple[int, int]:
    """(real findings, all findings) over every script."""
    real = sum(len(codes & REAL[script]) for script, codes in found.items())
    return real, sum(len(codes) for codes in found.values())


def test_precision_before_and_after() -> None:
    before = {s: _errors_and_warnings(str(PROJECTS / s), "--verl-version", "0.9.1") for s in REAL}
    after = {s: _errors_and_warnings(str(PROJECTS / s)) for s in REAL}
    real_before, all_before = _precision(before)
    real_after, all_after = _precision(after)
    print(f"\nerrors+warnings that are real: before {real_before}/{all_before}, after {real_after}/{all_after}")
    assert all_before > 2 * all_after  # forks judged by upstream's newest config: mostly noise
    assert real_after == all_after  # every finding on these fixtures is a real problem
    for script, codes in REAL.items():
        assert codes <= after[script], script  # and every real problem is still found
