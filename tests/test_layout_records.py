"""The shared layout records (generator.layout): the typed keyword view stays in step with the
fields, and the records sit beneath every layer that speaks them."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from generator.layout import Parallelism
from generator.candidate import Candidate

ROOT = Path(__file__).resolve().parents[1] / "generator"


def test_sizes_names_every_parallelism_field_in_order() -> None:
    layout = Parallelism(tp=2, pp=4, cp=2, ep=8, etp=1, vpp=2, first_stage_layers=3, last_stage_layers=5)
    assert list(layout.sizes()) == [f.name for f in fields(Parallelism)]
    assert Candidate(**layout.sizes()).sizes() == layout.sizes()


def test_layers_below_plan_take_the_records_from_generator_layout() -> None:
    # script/, render/, rules/ and config/ stand beneath plan/: an import of plan/ from them climbs.
    climbing = []
    for folder in ("script", "render", "rules", "config"):
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("generator.plan"):
                    climbing.append(f"{folder}/{path.name}: {node.module}")
    assert not climbing
