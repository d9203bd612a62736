"""The shared layout records (generator.layout.parallelism): the typed keyword view stays in step with the
fields, and the records sit beneath every layer that speaks them."""

from __future__ import annotations

import ast
import pickle
from dataclasses import fields
from pathlib import Path

import pytest

from generator.layout.candidate import Candidate
from generator.layout.derive import Layout
from generator.layout.parallelism import Parallelism

ROOT = Path(__file__).resolve().parents[1] / "generator"


def test_sizes_names_every_parallelism_field_in_order() -> None:
    layout = Parallelism(tp=2, pp=4, cp=2, ep=8, etp=1, vpp=2, first_stage_layers=3, last_stage_layers=5)
    assert list(layout.sizes()) == list(Parallelism.__slots__) == list(Parallelism._NAMES)
    assert layout._values() == tuple(layout.sizes().values())
    assert Candidate(**layout.sizes()).sizes() == layout.sizes()


def test_candidate_declares_the_parallelism_fields_first() -> None:
    # Parallelism is a plain class, so the Candidate dataclass declares its fields again.
    names = [f.name for f in fields(Candidate)]
    assert names[:len(Parallelism._NAMES)] == list(Parallelism._NAMES)
    defaults = {f.name: f.default for f in fields(Candidate)}
    assert {name: defaults[name] for name in Parallelism._NAMES} == Parallelism().sizes()


def test_layouts_are_values_as_the_frozen_dataclasses_were() -> None:
    layout = Layout(gpus=8, tp=2, gpus_per_node=4, loss_in_pipeline_split=True)
    assert layout == Layout(gpus=8, tp=2, gpus_per_node=4, loss_in_pipeline_split=True)
    assert hash(layout) == hash(Layout(gpus=8, tp=2, gpus_per_node=4, loss_in_pipeline_split=True))
    assert layout != Layout(gpus=8, tp=2, gpus_per_node=4) and layout != Layout(gpus=16, tp=2, gpus_per_node=4,
                                                                                    loss_in_pipeline_split=True)
    assert Parallelism(tp=2) == Parallelism(2) and Parallelism(tp=2) != Candidate(tp=2)
    assert list(Layout._NAMES) == [*Parallelism._NAMES, *Layout.__slots__]
    assert layout._values() == tuple(getattr(layout, name) for name in Layout._NAMES)
    for record in (layout, Parallelism(tp=4, vpp=2), Candidate(tp=2, rollout_tp=4)):
        assert pickle.loads(pickle.dumps(record)) == record
        with pytest.raises(AttributeError):
            record.tp = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        Layout(8)  # type: ignore[misc]  # keyword only


def test_layers_below_plan_take_the_records_from_generator_layout() -> None:
    # script/, render/, rules/ and config/ stand beneath plan/: an import of plan/ from them climbs.
    climbing = []
    for folder in ("script", "render", "rules", "config"):
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("generator.plan"):
                    climbing.append(f"{folder}/{path.name}: {node.module}")
    assert not climbing
