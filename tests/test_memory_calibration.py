"""Known outcomes of the memory model (generator/data/memory_calibration.yaml: public evidence with
its source; docs/memory-model.md): every run fits and every OOM is over, each judged with the
fitted constants refitted without it (leave-one-out), and the error band is the measured one."""

from __future__ import annotations

import math

import pytest

from generator.plan import memory
from generator.plan.error_band import MEMORY_ERROR_BAND
from generator.plan.known_outcomes import calibration_points, point_setup, known_outcomes
from generator.plan.memory import evaluate_memory
from generator.plan.memory_fit import Constants, error_band, fit_constants, fits, leave_one_out, peak_gib

POINTS = calibration_points()
OUTCOMES = known_outcomes()
LEFT_OUT = {x.outcome.id: x for x in leave_one_out(OUTCOMES)}


def test_every_point_names_a_row_a_source_and_an_outcome():
    assert len(POINTS) >= 30
    for point in POINTS:
        assert point_setup(point).model is not None and point["source"].startswith("https://") and point["reported"]
        assert point["expect"] in ("fits", "over")
    assert len({p["id"] for p in POINTS}) == len(POINTS)


def test_the_model_uses_the_constants_the_known_outcomes_fit():
    fitted = fit_constants(OUTCOMES)  # to the 0.01 the phases' shown terms are rounded to
    assert memory.OVERHEAD_GIB == pytest.approx(fitted.overhead_gib, abs=0.011)
    assert memory.STEP_TEMP_BYTES == pytest.approx(fitted.step_temp_bytes, abs=0.011)


@pytest.mark.parametrize("outcome", [o for o in OUTCOMES if not o.known_miss], ids=lambda o: o.id)
def test_known_outcome_leave_one_out(outcome):
    """Judged with the constants fitted on every other outcome."""
    left = LEFT_OUT[outcome.id]
    c = left.constants
    where = f"{left.peak_gib:.1f} of {outcome.usable_gib:.1f} GiB at overhead {c.overhead_gib}, step {c.step_temp_bytes}"
    assert left.agrees, f"{outcome.id} expected {outcome.expect}: {where}"


@pytest.mark.parametrize("point", [p for p in POINTS if p.get("phase")], ids=lambda p: p["id"])
def test_an_oom_is_predicted_in_the_phase_it_was_reported(point):
    report = evaluate_memory(point_setup(point))
    assert not report.fits and report.peak_phase == point["phase"]


@pytest.mark.parametrize("outcome", [o for o in OUTCOMES if o.known_miss], ids=lambda o: o.id)
def test_a_known_miss_still_disagrees(outcome):
    """A published outcome the model gets wrong, with the reason in the data file: when the model
    starts to agree, the point drops its known_miss."""
    assert not fits(outcome, Constants(memory.OVERHEAD_GIB, memory.STEP_TEMP_BYTES)) == (outcome.expect == "fits"), \
        f"{outcome.id} now agrees ({peak_gib(outcome, fit_constants(OUTCOMES)):.1f} GiB): drop known_miss"


def test_the_error_band_is_the_leave_one_out_error_on_measured_peaks():
    measured = [x for x in LEFT_OUT.values() if x.error is not None]
    assert measured, "no measured peak in the calibration set"
    band = error_band(list(LEFT_OUT.values()))
    assert MEMORY_ERROR_BAND == math.ceil(band * 100) / 100, band


def test_fitting_moves_with_the_evidence():
    """The fit is a window, not a constant typed in: dropping the outcome that caps the overhead
    (the tightest `fits`) raises it, dropping the step's `over` outcomes lowers the step bytes."""
    base = fit_constants(OUTCOMES)
    no_cap = fit_constants([o for o in OUTCOMES if o.id != "iseekyan-grpo7b-9"])
    assert no_cap.overhead_gib > base.overhead_gib
    no_step_oom = fit_constants([o for o in OUTCOMES if not o.fails_in_step])
    assert no_step_oom.step_temp_bytes < base.step_temp_bytes


def test_host_ram_points():
    for point in (p for p in POINTS if "host_gib" in p):
        low, high = point["host_gib"]
        report = evaluate_memory(point_setup(point))
        assert low <= report.host_ram_per_node_gib <= high, report.host_terms


def test_3124_fails_in_the_step_at_both_lengths_and_the_step_does_not_depend_on_them():
    long, short = (evaluate_memory(point_setup(p)) for p in POINTS if p["id"].startswith("verl-3124"))
    step = [next(p for p in r.stages[0].phases if p.phase == "optimizer_step") for r in (long, short)]
    assert step[0].gib == step[1].gib and step[0].gib > long.usable_gib


# --- the points kept aside from the fit (data/memory_holdout.yaml, bench/known_outcomes.py --holdout) ----

HELD_OUT = calibration_points(held_out=True)


def test_held_out_points_are_sourced_and_kept_out_of_the_fit():
    assert len(HELD_OUT) >= 8
    ids = {p["id"] for p in POINTS}
    for point in HELD_OUT:
        assert point["id"] not in ids and point["source"].startswith("https://") and point["reported"]
        assert point_setup(point).model is not None
    assert not {p["id"] for p in HELD_OUT} & {o.id for o in OUTCOMES}  # the fit never sees them
    assert {o.id for o in known_outcomes(held_out=True)} == {p["id"] for p in HELD_OUT}


@pytest.mark.parametrize("outcome", known_outcomes(held_out=True), ids=lambda o: o.id)
def test_held_out_outcomes_agree_or_tie_inside_the_band(outcome):
    """Judged with the model as it stands: a run predicted over by at most the band is a tie."""
    from generator.plan.memory_fit import CURRENT, agrees

    peak = peak_gib(outcome, CURRENT)
    assert agrees(outcome, CURRENT) or (outcome.expect == "fits" and
                                        peak <= outcome.usable_gib * (1 + MEMORY_ERROR_BAND)), \
        f"{outcome.id} expected {outcome.expect}: {peak:.1f} of {outcome.usable_gib:.1f} GiB"
