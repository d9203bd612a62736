"""The validation arithmetic of generator.plan.step_fit: rank agreement and the pair band, by hand."""

from __future__ import annotations

import math

import pytest

from generator.layout.candidate import StepTime
from generator.plan.step_fit import Case, estimated, kendall_tau, measure, pair_errors, pair_order, published, quantile


def test_pair_order_counts_concordant_discordant_and_tied_pairs():
    assert pair_order([1, 2, 3], [10, 20, 30]) == (3, 0, 0)
    assert pair_order([3, 2, 1], [10, 20, 30]) == (0, 3, 0)
    # (1,2) in order, (1,3) in order, (2,3) estimated equal: tied.
    assert pair_order([1, 2, 2], [10, 20, 30]) == (2, 0, 1)


def test_kendall_tau_over_the_untied_pairs():
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau([1, 3, 2], [10, 20, 30]) == pytest.approx(1 / 3)
    assert kendall_tau([1, 1], [10, 20]) is None


def test_pair_errors_ignore_a_shared_bias():
    # Every estimate twice the published: the ratios between layouts are exact.
    assert pair_errors([200, 400, 800], [100, 200, 400]) == pytest.approx([0, 0, 0])
    # One layout estimated 10 % slow relative to the other.
    assert pair_errors([110, 100], [100, 100]) == pytest.approx([math.log(1.1)])


def test_quantile_interpolates_between_order_statistics():
    assert quantile([3, 1, 2], 0.5) == 2
    assert quantile([1, 2, 3, 4], 0.5) == 2.5
    assert quantile([1, 2, 3, 4, 5], 0.8) == pytest.approx(4.2)
    assert quantile([], 0.5) == 0.0


def test_a_phase_only_point_is_judged_on_its_update():
    step = StepTime(rollout_s=10, log_prob_s=2, update_s=5, offload_s=1, bubble_s=1, weight_sync_s=0, comm_s=1)
    whole = Case(id="a", group="g", estimate=lambda k: step, step_s=30.0, update_s=9.0)
    phases = Case(id="b", group="g", estimate=lambda k: step, step_s=None, update_s=9.0)
    assert measure(whole) == "step_s" and published(whole) == 30.0 and estimated(whole, step) == step.total_s
    # The update as published includes its communication, bubble and offload.
    assert measure(phases) == "update_s" and published(phases) == 9.0 and estimated(phases, step) == 8.0
