"""bench/rank_vs_published.py: its Spearman arithmetic and its data file (every point sourced and evaluated)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

BENCH = Path(__file__).resolve().parent.parent / "bench" / "rank_vs_published.py"
_spec = importlib.util.spec_from_file_location("rank_vs_published", BENCH)
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_spearman_by_hand():
    assert bench.ranks([30.0, 10.0, 20.0, 10.0]) == [4.0, 1.5, 3.0, 1.5]
    assert bench.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert bench.spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    # d = (0, -1, 1): rho = 1 − 6·2/(3·8) = 0.5
    assert bench.spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert bench.spearman([1, 2], [1, 2]) is None and bench.spearman([1, 1, 1], [1, 2, 3]) is None


def test_every_point_has_a_source_and_an_estimate():
    data = yaml.safe_load(bench.DATA.read_text())
    for raw in data["points"]:
        point = {**data["defaults"], **raw}
        assert point["source"].startswith("https://github.com/") and point["step_s"] > 0
        estimate, _ = bench.estimate(point)
        assert estimate is not None and estimate > 0, point["id"]


def test_the_benchmark_prints_a_figure_per_group(capsys):
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-7b-dapo-h100: Spearman" in out and "all points, GPU-seconds per token: Spearman" in out


def test_an_unreadable_data_file_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("points: [")
    assert bench.main(["--data", str(bad)]) == 2
    assert "cannot read" in capsys.readouterr().err
