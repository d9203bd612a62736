"""The FSDP memory model against public evidence (generator/data/fsdp_calibration.yaml): verl's own
tuning scripts (docs/perf/device_tuning.rst's fit table at v0.5.0, and the out-of-memory batches
their bisection comments mark), each run through `gen check --gpu` as the source reports it."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from generator.cli import app
from generator.base.resources import data_dir

runner = CliRunner()
CALIBRATION = yaml.safe_load((data_dir() / "fsdp_calibration.yaml").read_text())
POINTS = {p["id"]: p for p in CALIBRATION["points"]}
ALLOWED = re.compile(r"fits while sequences average at most ([\d,]+) of")


@lru_cache(maxsize=None)
def _verdict(point_id: str, corpus: str, tmp: str) -> tuple[str, int | None]:
    """('fits' | 'error' | 'warning' | 'not-predicted', allowed mean tokens per sequence)."""
    point = POINTS[point_id]
    text = (Path(corpus) / "scripts" / point["script"]).read_text()
    if "replace" in point:
        old, new = point["replace"]
        assert old in text, f"{point_id}: the script no longer says {old!r}"
        text = text.replace(old, new)
    path = Path(tmp) / f"{point_id}.sh"
    path.write_text(text)
    args = ["check", str(path), "--gpu", point["gpu"], "--verl-version", str(point["verl"]),
            "--select", "VM811,VM812"]
    if "model" in point:
        args += ["--model", point["model"]]
    out = runner.invoke(app, args).stdout
    if "VM812" in out:
        return "not-predicted", None
    found = re.search(r"VM811 (error|warning)", out)
    if not found:
        return "fits", None
    allowed = ALLOWED.search(out)
    return found.group(1), int(allowed.group(1).replace(",", "")) if allowed else None


def test_at_least_ten_points_with_sources() -> None:
    assert len(POINTS) >= 10
    assert {p["expect"] for p in POINTS.values()} == {"fits", "over"}
    for point in POINTS.values():
        assert point["source"].startswith("https://github.com/verl-project/verl/"), point["id"]
        assert point["reported"].strip()


@pytest.mark.parametrize("point_id", sorted(POINTS))
def test_calibration_point(point_id: str, corpus_dir: Path, tmp_path_factory: Any) -> None:
    point = POINTS[point_id]
    tmp = str(tmp_path_factory.mktemp("fsdp"))
    kind, allowed = _verdict(point_id, str(corpus_dir), tmp)
    assert kind != "not-predicted", f"{point_id}: the model could not judge the script"
    if point["expect"] == "fits":
        assert kind in ("fits", "warning"), f"{point_id}: a reported fit judged {kind}"
        if kind == "warning":
            assert allowed is not None and allowed >= CALIBRATION["min_mean_tokens"], (point_id, allowed)
    else:
        assert kind in ("error", "warning"), f"{point_id}: a reported OOM judged {kind}"
        if kind == "warning":
            _kind, fitting = _verdict(point["below"], str(corpus_dir), str(tmp_path_factory.mktemp("fsdp")))
            assert allowed is not None and fitting is not None and allowed < fitting, (point_id, allowed, fitting)
