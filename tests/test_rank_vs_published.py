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
        # Every point publishes the step, or at least the update (the source's phase-only rows).
        assert point["source"].startswith("https://github.com/") and (point["step_s"] or point["update_s"]) > 0
        estimate, _ = bench.estimate(point)
        assert estimate is not None and estimate > 0, point["id"]


POINTS = bench.load_points(bench.DATA)
# Published points the calibrated model misses by more than 2x, and why (docs/step-time-model.md):
# the 235B run's rollout TP16 spans two nodes and its decode is 4x slower than the network figures
# explain; the fixed-micro CP2 run takes 3x its TP4 twin (not modelled).
KNOWN_MISSES = {"dapo-moe235b-2", "grpo7b-3"}


@pytest.mark.parametrize("point", POINTS, ids=[p["id"] for p in POINTS])
def test_each_published_point_is_estimated_within_2x(point):
    from generator.plan.step_fit import estimated, published
    from generator.plan.step_time import calibrated

    case, _ = bench.case_for(point)
    assert case is not None
    ratio = estimated(case, case.estimate(calibrated())) / published(case)
    if point["id"] in KNOWN_MISSES:
        assert not 0.5 <= ratio <= 2.0, f"{point['id']} is now within 2x ({ratio:.2f}): drop it from KNOWN_MISSES"
    else:
        assert 0.5 <= ratio <= 2.0, f"{point['id']}: estimate/published {ratio:.2f}"


def test_the_published_response_share_is_the_median_of_the_published_means():
    from generator.plan.step_time import calibrated

    share = bench.published_response_share(POINTS)
    assert calibrated().mean_response_share == pytest.approx(share, rel=1e-3)
    assert bench.published_response_share([{"mean_response_len": 1, "response_len": 4},
                                           {"mean_response_len": 3, "response_len": 4}]) == 0.5


@pytest.mark.slow
def test_the_benchmark_prints_held_out_figures_and_meets_the_issue_targets(capsys):
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-7b-dapo-h100: median |error|" in out and "GPU-seconds per token: +" in out
    assert "Kendall tau" in out and "pairs in order" in out
    share = float(out.split("within 0.5-2x: ")[1].split("(")[1].split("%")[0])
    assert share >= 80
    # The band the planner treats as a tie is the one this benchmark measures.
    from generator.plan.error_band import STEP_TIME_ERROR_BAND

    measured = float(out.split("STEP_TIME_ERROR_BAND measured: ")[1].split()[0])
    assert measured == pytest.approx(STEP_TIME_ERROR_BAND, abs=0.005)


@pytest.mark.slow
def test_the_stored_constants_are_the_fit_on_every_point():
    from dataclasses import replace

    from generator.plan.step_fit import fit
    from generator.plan.step_time import FREE_CONSTANTS, StepConstants, calibrated

    cases = [case for case, _ in map(bench.case_for, POINTS) if case is not None]
    start = replace(StepConstants(), mean_response_share=bench.published_response_share(POINTS))
    fitted = fit(cases, start)
    for name in FREE_CONSTANTS:
        assert getattr(calibrated(), name) == pytest.approx(getattr(fitted, name), rel=1e-3), name


def test_an_unreadable_data_file_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("points: [")
    assert bench.main(["--data", str(bad)]) == 2
    assert "cannot read" in capsys.readouterr().err


def _series_with_calibrated_estimates() -> dict[tuple[str, int, str], list[tuple[float, float]]]:
    """(estimate with the stored constants, published) per series: one group, GPU count and measure."""
    from generator.plan.step_fit import estimated, measure, published
    from generator.plan.step_time import calibrated

    sets: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
    for point in POINTS:
        case, _ = bench.case_for(point)
        assert case is not None
        sets.setdefault((point["group"], point["gpus"], measure(case)), []).append(
            (estimated(case, case.estimate(calibrated())), published(case)))
    return sets


def test_the_stored_constants_order_each_model_and_gpu_count_as_published():
    """Within one series of 3 or more layouts, the calibrated estimates rank the runs as the
    published times do, at Spearman >= 0.6 (the 30B-A3B 16-GPU set holds a DeepEP twin the model
    cannot tell from its plain run; the held-out figures are the slow test above)."""
    sets = _series_with_calibrated_estimates()
    checked = {key: bench.spearman([e for e, _ in pairs], [p for _, p in pairs])
               for key, pairs in sets.items() if len(pairs) >= 3}
    assert ("qwen3-30b-a3b-dapo-h100", 32, "step_s") in checked and len(checked) >= 6
    for key, rho in checked.items():
        assert rho is not None and rho >= 0.6, (key, rho)


def test_layouts_published_further_apart_than_the_band_are_ordered_as_published():
    """A pair of runs of one workload whose published times differ by more than the step-time
    error band must come out in the published order (closer pairs are ties by the planner's own
    rule): at least 80 % of such pairs do (the misses are the fixed-micro GRPO runs)."""
    import math

    from generator.plan.error_band import STEP_TIME_ERROR_BAND
    from generator.plan.step_fit import pair_order

    apart = agree = 0
    for pairs in _series_with_calibrated_estimates().values():
        for i in range(len(pairs)):
            for j in range(i + 1, len(pairs)):
                (est_i, pub_i), (est_j, pub_j) = pairs[i], pairs[j]
                if abs(math.log(pub_i / pub_j)) > math.log1p(STEP_TIME_ERROR_BAND):
                    apart += 1
                    agree += pair_order([est_i, est_j], [pub_i, pub_j])[0]
    assert apart >= 40 and agree / apart >= 0.8, (agree, apart)


def test_each_point_with_a_script_keeps_that_scripts_rollout_memory():
    # The 30B-A3B 32-GPU runs differ in gpu_memory_utilization (0.7 for EP32, 0.5 for EP8, as
    # DAPO_MOE30B/7-9 set it); a point without a script assumes 0.6.
    by_id = {p["id"]: p for p in POINTS}
    assert by_id["dapo-moe30b-7"]["gpu_memory_utilization"] == 0.7
    assert by_id["dapo-moe30b-9"]["gpu_memory_utilization"] == 0.5
    assert by_id["dapo7b-20"]["gpu_memory_utilization"] == 0.6 and "script" not in by_id["dapo7b-20"]
    for point in POINTS:
        if "script" in point:
            assert point["script"].endswith(".sh") and point["source"].startswith(
                "https://github.com/ISEEKYAN/verl_megatron_practice/"), point["id"]


CROSS = bench.load_points(bench.CROSS_CHECK)
# NeMo-RL points the model misses by more than 2x (a cross-check, never fitted): Llama-3.1-8B on 16
# H100 with PP2 and recompute, estimated at ~0.45x, no term explains it yet; Qwen3-235B on 128 with
# rollout TP16 across two nodes, ~2.1x: the cross-node latency the verl 235B run needs (its rollout
# is 4x slower than the bandwidth explains) makes NeMo-RL's same shape too slow (docs/step-time-model.md).
CROSS_MISSES = {"nemo-llama8b-16", "nemo-qwen3-235b-128"}


@pytest.mark.parametrize("point", CROSS, ids=[p["id"] for p in CROSS])
def test_each_cross_check_point_is_sourced_consistent_and_estimated(point):
    assert point["source"].startswith("https://github.com/NVIDIA-NeMo/RL/blob/v0.5.0/docs/about/")
    # The assumed split keeps the published average sequence: half the prompt maximum + the mean response.
    assert point["prompt_len"] / 2 + point["mean_response_len"] == point["average_seq_len"]
    assert point["train_batch_size"] * point["n"] in (512, 2048)  # the table's G-GBS
    ratio = dict((i, e / p) for i, p, e in bench.cross_check(bench.CROSS_CHECK, _calibrated()))[point["id"]]
    if point["id"] in CROSS_MISSES:
        assert not 0.5 <= ratio <= 2.0, f"{point['id']} is now within 2x ({ratio:.2f}): drop it from CROSS_MISSES"
    else:
        assert 0.5 <= ratio <= 2.0, f"{point['id']}: estimate/published {ratio:.2f}"


def _calibrated():
    from generator.plan.step_time import calibrated

    return calibrated()
