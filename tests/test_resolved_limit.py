"""Issue 35: `gen show --resolved` bounds what it prints (generator.cli.show.MAX_RESOLVED_CHARS),
counted while the calls are composed, before anything is formatted."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import generator.cli.show as show
from generator.cli import app

runner = CliRunner()
CALL = "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.project_name=p\n"


def test_a_file_whose_configs_print_past_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n" + CALL * 3)
    done = runner.invoke(app, ["show", "--resolved", str(script)])
    assert done.exit_code == 0 and done.stdout.count("trainer:") == 3
    one_call = len(done.stdout) // 3
    monkeypatch.setattr(show, "MAX_RESOLVED_CHARS", 2 * one_call)  # two calls fit, not three
    done = runner.invoke(app, ["show", "--resolved", str(script)])
    assert done.exit_code == 2
    assert "resolved configs would print more than" in done.stderr and "the resolved output limit" in done.stderr
    assert "trainer:" not in done.stdout
