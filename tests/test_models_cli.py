"""`gen models` (issue 22): the models --model accepts by name, as a table and as JSON, and each
name it shows is one --model resolves."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from generator.cli import app
from generator.model import list_models, resolve_model


def test_json_lists_every_packaged_model_with_a_name_that_resolves() -> None:
    result = CliRunner().invoke(app, ["models", "--format", "json"])
    assert result.exit_code == 0
    models = json.loads(result.stdout)["models"]
    assert [m["name"] for m in models] == [m.name for m in list_models()]
    for entry in models:
        assert resolve_model(entry["name"]).name == entry["name"]
        assert resolve_model(entry["slug"]).name == entry["name"]
        assert entry["moe"] == (entry["experts"] is not None)
        assert entry["active_params"] <= entry["params"]
    v3 = next(m for m in models if m["name"] == "DeepSeek-V3")
    assert v3["moe"] and v3["experts"] == 256 and v3["active_params"] < v3["params"] / 10


def test_text_table() -> None:
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split()[:3] == ["NAME", "PARAMS", "ACTIVE"]
    assert len(lines) == len(list_models()) + 1
    assert max(len(line) for line in lines) <= 100
    v3 = next(line for line in lines if line.startswith("DeepSeek-V3 "))
    assert "256 (top 8)" in v3
    assert CliRunner().invoke(app, ["models", "--format", "xml"]).exit_code == 2
