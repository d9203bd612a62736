"""Every JSON document a command writes matches its shape in docs/json.md (issue 14)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from generator.cli import app

DOC = Path(__file__).resolve().parent.parent / "docs" / "json.md"
SCRIPT = (
    "#!/bin/bash\n"
    "python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer \\\n"
    "    trainer.n_gpus_per_node=8 data.train_batch_size=60 actor_rollout_ref.rollout.n=4 \\\n"
    "    actor_rollout_ref.actor.ppo_mini_batch_size=24 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2\n"
)
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def shapes() -> dict[str, dict[str, Any]]:
    """The ```json NAME blocks of docs/json.md."""
    blocks = re.findall(r"```json ([\w-]+)\n(.*?)```", DOC.read_text(), flags=re.S)
    return {name: json.loads(body) for name, body in blocks}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[kind])


def problems(value: Any, shape: dict[str, Any], where: str = "$") -> list[str]:
    """Where `value` departs from the JSON Schema subset the doc uses (type, const, enum,
    required, properties, items)."""
    found: list[str] = []
    if "const" in shape and value != shape["const"]:
        found.append(f"{where}: {value!r} != {shape['const']!r}")
    if "enum" in shape and value not in shape["enum"]:
        found.append(f"{where}: {value!r} not in {shape['enum']}")
    kinds = shape.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            return found + [f"{where}: {type(value).__name__} is not {'/'.join(kinds)}"]
    if isinstance(value, dict):
        found += [f"{where}: missing {key!r}" for key in shape.get("required", []) if key not in value]
        for key, sub in shape.get("properties", {}).items():
            if key in value:
                found += problems(value[key], sub, f"{where}.{key}")
    if isinstance(value, list) and "items" in shape:
        for index, item in enumerate(value):
            found += problems(item, shape["items"], f"{where}[{index}]")
    return found


def test_the_validator_catches_departures():
    shape = {"type": "object", "required": ["a"], "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    assert problems({"a": [1, 2]}, shape) == []
    assert problems({"a": [1, "x"]}, shape) == ["$.a[1]: str is not integer"]
    assert problems({}, shape) == ["$: missing 'a'"]
    assert problems({"schema_version": 2, "rules": []}, shapes()["rules"]) == ["$.schema_version: 2 != 1"]


def test_every_json_command_has_a_documented_shape():
    assert set(shapes()) == {"check", "explain", "show", "show-resolved", "show-recipe", "diff", "plan", "rules",
                             "list", "models", "sarif-properties"}


@pytest.fixture()
def scripts(tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "a.sh"
    a.write_text(SCRIPT)
    b = tmp_path / "b.sh"
    b.write_text(SCRIPT.replace("=24", "=20"))
    return a, b


def _first_recipe() -> str:
    recipes = Path(__file__).resolve().parent.parent / "recipes"
    return sorted(recipes.rglob("*.yaml"))[0].stem


@pytest.mark.parametrize("name", ["check", "explain", "show", "show-resolved", "show-recipe", "diff", "plan", "rules",
                                  "list", "models"])
def test_command_output_matches_its_documented_shape(name, scripts):
    a, b = scripts
    argv = {
        "check": ["check", str(a)], "explain": ["explain", str(a)], "show": ["show", str(a)], "show-resolved": ["show", str(a), "--resolved"],
        "show-recipe": ["show", _first_recipe()], "diff": ["diff", str(a), str(b)],
        "plan": ["plan", "--model", "qwen2-7b", "--gpus", "8"], "rules": ["rules"], "list": ["list"],
        "models": ["models"],
    }[name]
    result = CliRunner().invoke(app, [*argv, "--format", "json"])
    assert result.exit_code in {"check": (1,)}.get(name, (0,)), result.output
    document = json.loads(result.stdout)
    assert list(document)[0] == "schema_version"
    assert problems(document, shapes()[name]) == []


def test_the_failure_document_of_check(scripts):
    a, _ = scripts
    result = CliRunner().invoke(app, ["check", str(a), "--format", "json", "--select", "XX9"])
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert problems(document, shapes()["check"]) == [] and document["error"]


def test_sarif_run_properties_match_their_documented_shape_with_each_calls_resolution(tmp_path):
    """SARIF names the verl of the file and of each call that composed its own config, as JSON does."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "ppo_trainer.yaml").write_text("data:\n  train_batch_size: 8\nactor_rollout_ref:\n  rollout:\n    n: 1\n")
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT + f"python3 -m verl.trainer.main_ppo --config-path={conf} --config-name=ppo_trainer "
                      "data.train_batch_size=16\n")
    argv = ["check", str(script), "--verl-version", "0.7.0"]
    sarif = json.loads(CliRunner().invoke(app, [*argv, "--format", "sarif"]).stdout)
    properties = sarif["runs"][0]["properties"]
    assert problems(properties, shapes()["sarif-properties"]) == []
    (call,) = properties["verl"][0]["call_resolutions"]
    assert call["line"] == 5 and call["config_dir"] == str(conf) and call["release"] == "0.7.0"
    as_json = json.loads(CliRunner().invoke(app, [*argv, "--format", "json"]).stdout)
    assert properties["verl"][0]["call_resolutions"] == as_json["files"][0]["call_resolutions"]
