"""`gen calibrate`: every log format verl writes, its key names by release, the summary, the
match to a configuration, the comparison, and each kind of bad input (docs/calibrate.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typing import Any
from typer.testing import CliRunner

from conftest import FIXTURES
from generator.calibrate import metric_keys as keys
from generator.calibrate.compare import compare
from generator.calibrate.logs import number, parse_log, read_log
from generator.calibrate.match import contradictions, run_config
from generator.calibrate.summary import summarise
from generator.cli import app
from generator.base.errors import InputError
from generator.plan.script_setup import memory_options

LOGS = FIXTURES / "logs"
runner = CliRunner()


def gen(*args: str) -> Any:
    return runner.invoke(app, ["calibrate", *args])


# --- formats -----------------------------------------------------------------------------------


def test_console_three_decimals_as_verl_0_4_prints_them() -> None:
    run = read_log(str(LOGS / "verl-issue-1208" / "metrics.log"))
    assert run.format == "console" and sorted(run.steps) == [2]
    step = run.steps[2]
    assert step["timing_s/gen"] == 74.020 and step["timing_s/update_actor"] == 14.302
    assert step["perf/max_memory_reserved_gb"] == 61.611 and step["response_length/max"] == 1024.0


def test_console_numpy_reprs_as_verl_0_5_on_prints_them() -> None:
    run = parse_log("step:3 - a/b:np.float64(1.25) - c:np.int64(7) - d:0.5 - e:True - f:nan - g:text\n")
    assert run.steps == {3: {"a/b": 1.25, "c": 7.0, "d": 0.5, "e": 1.0}}
    assert number("numpy.float32(2)") == 2.0 and number("tensor(1.0)") is None


def test_console_skips_ray_prefixes_colours_and_other_lines() -> None:
    text = ("INFO starting\n\x1b[36m(TaskRunner pid=12, ip=10.0.0.2)\x1b[0m step:1 - timing_s/gen:3.0\n"
            "(WorkerDict pid=3) something step:x\n")
    assert parse_log(text).steps == {1: {"timing_s/gen": 3.0}}


def test_file_logger_jsonl_nested_and_flat() -> None:
    run = parse_log('{"step": 1, "data": {"timing_s/gen": 2.5, "x": "s"}}\n{"_step": 2, "timing_s/gen": 3}\nnot json\n',
                    "run.jsonl")
    assert run.format == "jsonl" and run.steps == {1: {"timing_s/gen": 2.5}, 2: {"timing_s/gen": 3.0}}
    assert "1 line(s)" in run.notes[0]


def test_csv_wide_wandb_export_and_long_tbparse_form() -> None:
    wide = parse_log('Step,"run - timing_s/gen","run - timing_s/gen__MIN",run - timing_s/step\n1,10,9,20\n2,,,30\n',
                     "x.csv")
    assert wide.steps == {1: {"timing_s/gen": 10.0, "timing_s/step": 20.0}, 2: {"timing_s/step": 30.0}}
    long = read_log(str(LOGS / "iseekyan-moe30b-4" / "metrics.csv"))
    assert long.steps[1]["timing_s/gen"] == 355.0 and long.steps[1]["timing_s/step"] == 562.0


def test_format_is_sniffed_without_an_extension() -> None:
    assert parse_log('{"step": 1, "data": {"k": 1}}\n', "log").format == "jsonl"
    assert parse_log("step,tag,value\n1,k,2\n", "log").format == "csv"


# --- keys by release -----------------------------------------------------------------------------


def test_timing_keys_map_to_phases_and_agent_loop_keys_do_not() -> None:
    assert keys.phase_of("timing_s/gen") == "gen" and keys.phase_of("timing_s/update_weights") == "update_weights"
    assert keys.phase_of("timing_s/agent_loop/generate_sequences/mean") is None
    assert keys.phase_of("timing_per_token_ms/gen") is None


def test_release_generation_read_from_keys() -> None:
    assert keys.newest_first_release(read_log(str(LOGS / "verl-issue-7412" / "metrics.log")).keys) == "0.7.1"
    assert keys.newest_first_release({"actor/perf/max_memory_allocated_gb", "timing_s/update_weights"}) == "0.8.0"
    assert keys.newest_first_release({"timing_s/reward", "timing_s/agent_loop/generate_sequences/mean"}) == "0.5.0"
    assert keys.newest_first_release({"perf/throughput", "timing_s/gen"}) is None
    assert keys.newest_first_release({"timing_s/gen"}) is None  # every release 0.3-0.7 logs it


def test_update_weights_gets_its_own_row_from_0_8() -> None:
    run = read_log(str(LOGS / "verl-issue-7412" / "metrics.log"))
    found = compare(summarise(run), None, memory_options(None, None, None, 0.0))
    labels = [r.label for r in found.rows]
    assert "weight sync (update_weights)" in labels
    assert [r.measured for r in found.rows if r.label.startswith("log-prob")] == [pytest.approx(72.40668 + 72.03436,
                                                                                              rel=1e-6)]


# --- summary -------------------------------------------------------------------------------------


def test_median_after_warmup_and_peak_memory_over_all_steps() -> None:
    text = "".join(f"step:{i} - timing_s/gen:{g} - perf/max_memory_allocated_gb:{m}\n"
                   for i, g, m in ((1, 100, 30), (2, 10, 20), (3, 30, 21), (4, 20, 22)))
    run = parse_log(text)
    m = summarise(run)
    assert (m.skipped, m.steps, m.first, m.phases["gen"]) == (1, 3, 2, 20)
    assert m.memory["perf/max_memory_allocated_gb"] == 30
    assert summarise(run, warmup=0).phases["gen"] == 25
    assert summarise(parse_log("step:1 - timing_s/gen:5\n")).skipped == 0


# --- matching ------------------------------------------------------------------------------------


def test_start_up_config_dump_is_read_and_wins_over_the_script() -> None:
    run = read_log(str(LOGS / "synthetic" / "dumped-config.log"))
    assert run.config is not None and run.config["actor_rollout_ref.rollout.n"] == 8
    assert run.config["actor_rollout_ref.actor.grad_clip"] is None  # pprint's bare inf
    found = run_config(run, str(LOGS / "iseekyan-dapo7b-5" / "run.sh"), verl_version=None)
    assert found.source == "the log's start-up config"
    assert found.differences == ["actor_rollout_ref.rollout.n is 8 in the log, 16 in the script"]


def test_log_numbers_that_contradict_the_script_are_named(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.max_prompt_length=256 data.max_response_length=512\n")
    run = read_log(str(LOGS / "verl-issue-1208" / "metrics.log"))
    found = run_config(run, str(script), verl_version=None)
    assert found.config is not None
    said = contradictions(found.config, summarise(run))
    assert said == ["responses reached 1024 tokens, above data.max_response_length=512"]


PUBLISHED = [  # fixture, gpu, published (gen, log-prob, update, step) seconds: docs/calibrate.md#fixtures
    ("iseekyan-dapo7b-5", "h100", (157, 84, 203, 450)),
    ("iseekyan-dapo7b-9", "h100", (90, 24, 55, 175)),
    ("iseekyan-dapo7b-12", "h100", (162, 74, 185, 426)),
    ("iseekyan-dapo7b-16", "h100", (158, 57, 168, 389)),
    ("iseekyan-moe30b-4", "h100", (355, 41, 160, 562)),
    ("iseekyan-moe30b-7", "h100", (331, 45, 105, 486)),
    ("iseekyan-grpo7b-2", "h100", (92.0, 41.7, 102.0, 280)),
    ("iseekyan-dapo32b-6", "h20", (1360.001, 315.388, 840.336, 2527.259)),
    ("iseekyan-dapo14b-8", "h20", (2385.81, None, 933.793, 4398.413)),
    ("verl-docs-dpsk-96", "h20", (1050, None, None, 1700)),
]


@pytest.mark.parametrize("name,gpu,published", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_published_runs_are_read_matched_and_predicted(name: str, gpu: str, published: tuple[float | None, ...]) -> None:
    folder = LOGS / name
    (log,) = folder.glob("metrics.*")
    run = read_log(str(log))
    measured = summarise(run)
    found = run_config(run, str(folder / "run.sh"), verl_version=None)
    assert found.source.endswith("run.sh:3")
    result = compare(measured, found.config, memory_options(gpu, None, None, 0.0))
    rows = {r.label.split(" ")[0]: r for r in result.rows}
    assert not [p for p in result.problems if p.startswith("step time")]
    for label, value in zip(("rollout", "log-prob", "update", "step"), published):
        row = rows[label]
        assert row.measured == (pytest.approx(value) if value is not None else None)
        assert row.predicted is not None and row.predicted > 0
        if value is not None:
            assert row.ratio == pytest.approx(value / row.predicted)
    assert result.largest is not None and result.cause


# --- bad input and the command line ---------------------------------------------------------------


def test_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = gen(str(tmp_path / "nope.log"))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip().count("\n") == 0 and result.stderr.startswith("gen: error: ")


def test_binary_file_is_refused(tmp_path: Path) -> None:
    events = tmp_path / "events.out.tfevents.1"
    events.write_bytes(b"\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7fK\x22\x09\x00")
    result = gen(str(events))
    assert result.exit_code == 2 and "not a text log" in result.stderr and "CSV" in result.stderr


def test_log_without_step_lines_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "run.log"
    empty.write_text("Traceback (most recent call last):\n  OOM\n")
    result = gen(str(empty))
    assert result.exit_code == 2 and "no step lines found" in result.stderr
    with pytest.raises(InputError):
        read_log(str(empty))


def test_cut_off_log_compares_the_whole_steps_and_exits_1() -> None:
    result = gen(str(LOGS / "synthetic" / "dumped-config.log"))
    assert result.exit_code == 1
    assert "half line" in result.stderr and "steps 2-4 (3 summarised, 1 warm-up step skipped)" in result.stdout


def test_other_configuration_than_the_script_exits_1_with_the_difference() -> None:
    result = gen(str(LOGS / "synthetic" / "dumped-config.log"), "--script",
                 str(LOGS / "iseekyan-dapo7b-5" / "run.sh"), "--format", "json")
    assert result.exit_code == 1
    assert "another configuration" in result.stderr and "rollout.n is 8 in the log, 16 in the script" in result.stderr
    import json

    (doc,) = json.loads(result.stdout)["logs"]
    assert doc["differences"] and doc["steps"]["warmup_skipped"] == 1


def test_full_comparison_exits_0_and_bad_option_exits_2() -> None:
    folder = LOGS / "iseekyan-dapo7b-9"
    ok = gen(str(folder / "metrics.jsonl"), "--script", str(folder / "run.sh"))
    assert ok.exit_code == 0, ok.output
    assert "largest miss:" in ok.stdout and "rollout (gen)" in ok.stdout and "update (update_actor) " in ok.stdout
    assert gen(str(folder / "metrics.jsonl"), "--format", "yaml").exit_code == 2
    assert gen(str(folder / "metrics.jsonl"), "--script", str(folder / "missing.sh")).exit_code == 2


def _dump_of_defaults(version: str, config_name: str, **values: object) -> str:
    """A start-up dump as verl prints it (pprint of the resolved config, Ray's prefix on each
    line), built from the packaged schema's defaults of `version`."""
    import pprint

    from generator.schema import load

    tree: dict[str, Any] = {}
    for key, value in {**load(version).configs[config_name], **values}.items():
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            if not isinstance(node.get(leaf), dict):
                node[leaf] = value
    return "".join(f"(TaskRunner pid=1) {line}\n" for line in pprint.pformat(tree).splitlines())


@pytest.mark.parametrize("version", ["0.5.0", "0.9.1"])
def test_a_whole_release_config_dump_is_read(version: str) -> None:
    text = _dump_of_defaults(version, "ppo_megatron_trainer", **{"actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B",
                                                                  "actor_rollout_ref.rollout.n": 4})
    run = parse_log(text + "step:1 - timing_s/gen:10.0 - timing_s/step:30.0\n")
    assert run.config is not None and len(run.config) > 300 and not run.notes
    found = run_config(run, None, verl_version=version)
    assert found.config is not None and found.config.backend == "megatron"
    assert found.config.values["actor_rollout_ref.rollout.n"] == 4


def test_an_fsdp_run_gets_memory_only_and_says_why(tmp_path: Path) -> None:
    text = _dump_of_defaults("0.7.0", "ppo_trainer", **{"actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B",
                                                        "actor_rollout_ref.actor.strategy": "fsdp"})
    log = tmp_path / "fsdp.log"
    log.write_text(text + "step:1 - timing_s/gen:10.0 - timing_s/step:30.0 - perf/max_memory_allocated_gb:20.5\n")
    result = gen(str(log))
    assert result.exit_code == 1, result.output
    assert "step time not predicted: the memory model covers the Megatron actor" in result.stdout
    assert "GPU peak allocated (training)" in result.stdout


def test_csv_row_cut_off_at_the_end_is_dropped_a_whole_one_kept() -> None:
    cut = parse_log("step,timing_s/gen,timing_s/step\n1,10,20\n2,11", "x.csv")
    assert cut.cut_off and sorted(cut.steps) == [1]
    whole = parse_log("step,timing_s/gen,timing_s/step\n1,10,20\n2,11,21", "x.csv")
    assert not whole.cut_off and sorted(whole.steps) == [1, 2]
    jsonl = parse_log('{"step": 1, "data": {"k": 1}}\n{"step": 2, "da', "x.jsonl")
    assert jsonl.cut_off and sorted(jsonl.steps) == [1]


def test_json_output_on_a_bad_option_is_a_document() -> None:
    import json

    result = gen(str(LOGS / "iseekyan-dapo7b-9" / "metrics.jsonl"), "--gpu", "nosuchgpu", "--format", "json")
    assert result.exit_code == 2 and json.loads(result.stdout)["errors"]


def test_causes_named_for_the_largest_miss() -> None:
    from generator.calibrate.compare import Comparison, Row, likely_cause
    from generator.calibrate.summary import Measured

    memory = Measured(3, 1, 2, 4, memory={keys.ALLOCATED: 28.0, keys.RESERVED: 60.0})
    reserved = Row("memory", "GPU peak reserved (training)", 60.0, 30.0, unit="GiB")
    assert likely_cause(reserved, memory, Comparison([reserved])).startswith("reserved exceeds allocated by 32.0 GiB")
    tie = Row("time", "rollout (gen)", 102.0, 100.0)
    from generator.plan.error_band import MEMORY_ERROR_BAND, STEP_TIME_ERROR_BAND

    assert likely_cause(tie, memory, Comparison([tie])) == f"inside the model's error band ({STEP_TIME_ERROR_BAND:.0%}): a tie"
    near = Row("memory", "GPU peak allocated (training)", 31.0, 30.0, unit="GiB")
    assert likely_cause(near, memory, Comparison([near])) == f"inside the model's error band ({MEMORY_ERROR_BAND:.0%}): a tie"
    clipped = Measured(3, 1, 2, 4, medians={keys.RESPONSE_CLIP: 0.4})
    slow = Row("time", "rollout (gen)", 300.0, 100.0)
    assert "40% of responses hit max_response_length" in likely_cause(slow, clipped, Comparison([slow]))


def test_responses_shorter_than_assumed_are_named_with_the_prediction_at_their_length() -> None:
    folder = LOGS / "iseekyan-dapo32b-6"
    run = read_log(str(folder / "metrics.log"))
    measured = summarise(run)
    result = compare(measured, run_config(run, str(folder / "run.sh"), verl_version=None).config,
                     memory_options("h20", None, None, 0.0))
    assert result.expected_response and result.expected_response > 1.5 * 1544.39
    assert result.largest is not None and result.cause.startswith("responses averaged 1544 tokens")
    largest = result.largest
    assert largest.at_measured_length is not None and largest.measured is not None and largest.predicted
    assert abs(largest.measured - largest.at_measured_length) < abs(largest.measured - largest.predicted)


# --- corrections (fitted, not stored yet) ----------------------------------------------------------


def test_corrections_are_geometric_means_with_their_spread() -> None:
    import math

    from generator.calibrate.compare import Comparison, Row
    from generator.calibrate.fit import corrected, fit, named

    a = Comparison([Row("time", "rollout (gen)", 200.0, 100.0, 160.0), Row("time", "step", 400.0, 200.0),
                    Row("memory", "GPU peak allocated (training)", 50.0, 40.0, unit="GiB")],
                   model="A", response_share=0.2)
    b = Comparison([Row("time", "rollout (gen)", 100.0, 100.0), Row("time", "step", 100.0, 200.0),
                    Row("memory", "GPU peak allocated (training)", 44.0, 40.0, unit="GiB")],
                   model="B", response_share=0.4)
    found = fit([a, b])
    rollout = named(found, "rollout")
    assert rollout is not None and rollout.value == pytest.approx(math.sqrt(200 / 160 * 1.0))  # a at its length
    step = named(found, "step")
    # 2x and 0.5x: logs ±ln 2, their sample standard deviation √2·ln 2
    assert step is not None and step.value == pytest.approx(1.0)
    assert step.spread == pytest.approx(math.exp(math.sqrt(2) * math.log(2)) - 1)
    memory = named(found, "GPU peak allocated")
    assert memory is not None and (memory.value, memory.spread) == (pytest.approx(7.0), pytest.approx(math.sqrt(18)))
    assert corrected(40.0, memory) == pytest.approx(47.0) and corrected(10.0, rollout) == pytest.approx(10 * rollout.value)
    share = named(fit([a, b], model="B"), "response share")
    assert share is not None and (share.value, share.spread, share.runs) == (0.4, None, 1)
    at_default = named(fit([a, b], at_length=False), "rollout")
    assert at_default is not None and at_default.value == pytest.approx(math.sqrt(2.0))
    assert "1 run" in share.describe() and "+-" in step.describe()


def test_several_logs_each_with_its_script_are_fitted_together() -> None:
    import json
    import math

    names = ("iseekyan-moe30b-4", "iseekyan-moe30b-7")
    args = [str(next((LOGS / n).glob("metrics.*"))) for n in names]
    for n in names:
        args += ["--script", str(LOGS / n / "run.sh")]
    result = gen(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    ratios = [next(r["ratio"] for r in log["rows"] if r["phase"] == "step") for log in doc["logs"]]
    (step,) = [c for c in doc["corrections"] if c["name"] == "step"]
    assert step["runs"] == 2 and step["value"] == pytest.approx(math.sqrt(ratios[0] * ratios[1]))
    text = gen(*args)
    assert "corrections fitted on 2 runs (shown; --save stores them):" in text.stdout
    assert gen(args[0], "--script", "a", "--script", "b").exit_code == 2


def test_a_dump_with_values_verl_would_refuse_is_compared_in_part(tmp_path: Path) -> None:
    log = tmp_path / "odd.log"
    log.write_text("{'actor_rollout_ref': {'actor': {'strategy': 'megatron', 'ppo_mini_batch_size': 'x=y\\nz',\n"
                   "                       'megatron': {'tensor_model_parallel_size': -3}}, 'rollout': {'n': None}},\n"
                   " 'data': {'train_batch_size': 1e400, 'max_prompt_length': [1, 2]}}\n"
                   "step:1 - timing_s/gen:1.0 - timing_s/step:2.0\n")
    result = gen(str(log))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "step time and memory not predicted: data.train_batch_size or rollout.n is not known" in result.stdout


def test_a_validation_only_step_does_not_take_the_warmups_place() -> None:
    text = ("step:0 - val-core/acc:0.3\n" + "".join(f"step:{i} - timing_s/gen:{g}\n" for i, g in ((1, 90), (2, 10),
                                                                                                  (3, 30))))
    m = summarise(parse_log(text))
    assert (m.first, m.skipped, m.phases["gen"]) == (2, 1, 20)


def test_memory_under_the_engine_workers_names_from_0_8() -> None:
    legacy = summarise(parse_log("step:1 - perf/max_memory_allocated_gb:30.5 - perf/max_memory_reserved_gb:40\n"))
    engine = summarise(parse_log("step:1 - actor/perf/max_memory_allocated_gb:30.5 - "
                                 "actor/perf/max_memory_reserved_gb:40\n"))
    assert legacy.memory == engine.memory == {keys.ALLOCATED: 30.5, keys.RESERVED: 40.0}


def test_a_last_line_without_newline_is_cut_only_when_shorter_than_the_step_before() -> None:
    cut = parse_log("step:1 - a:1 - b:2 - c:3\nstep:2 - a:1 - b:2")
    assert cut.cut_off and sorted(cut.steps) == [1]
    whole = parse_log("step:1 - a:1 - b:2\nstep:2 - a:1 - b:2")
    assert not whole.cut_off and sorted(whole.steps) == [1, 2]
    pasted = parse_log("(TaskRunner pid=1) step:7 - timing_s/gen:12.5 - timing_s/step:20")
    assert not pasted.cut_off and pasted.steps == {7: {"timing_s/gen": 12.5, "timing_s/step": 20.0}}
    assert "no newline" in pasted.notes[0]
