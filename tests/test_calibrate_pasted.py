"""`gen calibrate` on logs as users paste them in issues (tests/fixtures/logs/pasted, numbers only,
sources in docs/calibrate.md#fixtures): a step line a terminal wrapped, a list of metrics one a
line, the validation-only step 0, another trainer's timers."""

from __future__ import annotations

from conftest import FIXTURES
from generator.calibrate.logs import parse_log, read_log
from generator.calibrate.summary import summarise

PASTED = FIXTURES / "logs" / "pasted"


def test_a_wrapped_step_line_is_read_whole() -> None:
    run = read_log(str(PASTED / "wrapped-line.log"))
    step = run.steps[83]
    # the key split across the wrap, and every item after it
    assert step["response_length/mean"] == 330.437
    assert step["timing_s/gen"] == 29.641 and step["timing_s/ref"] == 6.307
    assert any("wrapped" in note for note in run.notes)
    assert summarise(run).phases["gen"] == 29.641


def test_a_line_after_a_step_line_that_is_not_its_tail_is_not_joined() -> None:
    text = ("step:1 - timing_s/gen:10.0 - timing_s/step:20.0\n"
            "INFO 05-13 15:17:38 selector.py:115] Using backend - a:1\n"
            "Training Progress:  50% - eta:5\n"
            "step:2 - timing_s/gen:11.0 - timing_s/step:21.0\n")
    run = parse_log(text)
    assert run.steps == {1: {"timing_s/gen": 10.0, "timing_s/step": 20.0},
                         2: {"timing_s/gen": 11.0, "timing_s/step": 21.0}}
    assert not run.notes


def test_a_list_of_metrics_one_a_line_is_one_step() -> None:
    run = read_log(str(PASTED / "metric-list.md"))
    assert list(run.steps) == [1]
    measured = summarise(run)
    assert measured.phases["update_actor"] == 16783.45575751597
    assert measured.phases["gen"] == 1149.9363396018744  # `-  key` (two spaces) as pasted
    assert measured.medians["response_length/mean"] == 11018.05859375
    assert any("one a line" in note for note in run.notes)


def test_a_metric_list_is_not_read_beside_step_lines() -> None:
    run = parse_log("step:3 - timing_s/gen:5.0\n- timing_s/step:9.0\n")
    assert run.steps == {3: {"timing_s/gen": 5.0}}


def test_the_validation_step_zero_is_no_training_step() -> None:
    run = read_log(str(PASTED / "val-step-zero.log"))
    assert sorted(run.steps) == [0, 1]
    measured = summarise(run)
    assert (measured.first, measured.last, measured.steps) == (1, 1, 1)
    assert measured.memory["perf/max_memory_allocated_gb"] == 62.447
    assert any("no timing_s/ key" in note for note in run.notes)


def test_another_trainers_timers_are_named_not_read() -> None:
    run = read_log(str(PASTED / "fork-timers.log"))
    assert summarise(run).phases == {}
    assert summarise(run).memory["perf/max_memory_allocated_gb"] == 36.362
    assert any("perf/delta_time/" in note for note in run.notes)


def test_verl_0_1_timers_are_read() -> None:
    # verl 0.1 named its timers timing/<phase> (no step timer); its quick-start page still shows them
    run = read_log(str(PASTED / "verl-0.1-quickstart.log"))
    measured = summarise(run)
    assert (measured.first, measured.last) == (0, 1)  # step 0 trained in 0.1: it is timed
    assert measured.phases["gen"] == (21.470 + 23.020) / 2
    assert measured.phases["update_critic"] == (15.664 + 15.646) / 2
    assert "step" not in measured.phases
    assert not any("no timing" in note for note in run.notes)


def test_a_step_line_wrapped_at_an_items_dash_loses_no_item() -> None:
    # the paste trimmed the space at the end of the first line, either side of ` - `
    for head, tail in (("step:5 - timing_s/gen:10.0 -", "timing_s/step:20.0 - perf/mfu/actor:0.3"),
                       ("step:5 - timing_s/gen:10.0", "- timing_s/step:20.0 - perf/mfu/actor:0.3")):
        run = parse_log(f"{head}\n{tail}\n")
        assert run.steps == {5: {"timing_s/gen": 10.0, "timing_s/step": 20.0, "perf/mfu/actor": 0.3}}, (head, tail)
