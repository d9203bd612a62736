"""Issue 34 (fifth hold-out sample): shell-reading mechanisms, one per test, on fixtures written here:
variables a job platform sets, runtime guards, comments after the last override, `bash -c` strings
under `ray job submit`, launchers that build the overrides themselves, and fork entries run through
an interpreter variable."""

from __future__ import annotations

import pytest

from generator.judging import script_findings
from generator.reading.shell import read_script

TRAINER = "python3 -m verl.trainer.main_ppo \\\n"


def _codes(text: str, select: list[str]) -> list[str]:
    return [f.code for f in script_findings(read_script(text, "t.sh"), select=select)]


@pytest.mark.parametrize("nodes, gpus", [
    ("LEPTON_JOB_TOTAL_WORKERS", "LEPTON_RESOURCE_ACCELERATOR_NUM"),
    ("PBS_NUM_NODES", "PBS_NUM_PPN"),
    ("SKYPILOT_NUM_NODES", "SKYPILOT_NUM_GPUS_PER_NODE"),
    ("AWS_BATCH_JOB_NUM_NODES", "MLP_WORKER_GPU"),
    ("PET_NNODES", "ARNOLD_WORKER_GPU"),
    ("VC_WORKER_NUM", "LSB_MAX_NUM_PROCESSORS"),
])
def test_variables_a_job_platform_sets_are_not_unset(nodes: str, gpus: str) -> None:
    text = (TRAINER + "    data.train_batch_size=64 \\\n"
            f'    trainer.n_gpus_per_node="${{{gpus}}}" \\\n    trainer.nnodes="${{{nodes}}}"\n')
    assert _codes(text, ["VS703", "VS715", "VS716"]) == []


def test_a_variable_no_platform_sets_is_still_unset() -> None:
    text = TRAINER + "    data.train_batch_size=64 \\\n    trainer.nnodes=\"${MY_NODES}\"\n"
    assert _codes(text, ["VS703"]) == ["VS703"]


def test_comments_after_the_last_override_lose_nothing() -> None:
    text = (TRAINER + "    data.train_batch_size=64 \\\n    trainer.nnodes=1 \\\n"
            "    # trainer.total_epochs=3 \\\n    # \"$@\"\n    # trainer.test_freq=5 \\\n\necho done\n")
    assert _codes(text, ["VS701"]) == []
    at_the_end = TRAINER + "    trainer.nnodes=1 \\\n    # trainer.total_epochs=3 \\\n    # trainer.test_freq=5"
    assert _codes(at_the_end, ["VS701"]) == []


def test_a_comment_before_more_overrides_still_cuts_the_call() -> None:
    text = (TRAINER + "    trainer.nnodes=1 \\\n    # trainer.total_epochs=3 \\\n    # note\n"
            "    trainer.test_freq=5 \\\n    trainer.save_freq=10\n")
    assert _codes(text, ["VS701"]) == ["VS701"]


@pytest.mark.parametrize("fill", ["free=($(nvidia-smi --query-gpu=index))\n",
                                  "pick() {\n    out=()\n    echo \"${out[@]}\"\n}\nfree=($(pick))\n"])
def test_an_array_filled_at_run_time_leaves_its_guard_open(fill: str) -> None:
    text = fill + 'if [ "${#free[@]}" -ge 8 ]; then\n    ' + TRAINER + "        trainer.nnodes=1\nfi\n"
    script = read_script(text, "t.sh")
    assert [inv.branch for inv in script.invocations] == ["conditional"]
    assert _codes(text, ["VS709"]) == []


def test_an_array_of_known_words_still_decides_its_guard() -> None:
    text = 'free=(0 1)\nif [ "${#free[@]}" -ge 8 ]; then\n    ' + TRAINER + "        trainer.nnodes=1\nfi\n"
    assert [inv.branch for inv in read_script(text, "t.sh").invocations] == ["dead"]


def test_a_bash_c_string_under_ray_job_submit_is_the_call() -> None:
    text = ("ray job submit --address http://127.0.0.1:8265 --runtime-env-json '{\"conda\": \"verl\"}' \\\n"
            "    -- bash -c \"cd /workspace/proj && python3 -m verl.trainer.main_ppo \\\n"
            "    data.train_batch_size=32 \\\n    trainer.nnodes=2\"\n")
    script = read_script(text, "t.sh")
    assert {ov.key: ov.value for inv in script.invocations for ov in inv.overrides} == {
        "data.train_batch_size": "32", "trainer.nnodes": "2"}
    assert _codes(text, ["VS709"]) == []


def test_a_fork_entry_run_through_an_unknown_interpreter_with_switches_is_the_call() -> None:
    text = ('"${PYTHON_BIN}" -u -m myfork.trainers.main_ppo \\\n    data.train_batch_size=32 \\\n'
            "    trainer.nnodes=2\n")
    script = read_script(text, "t.sh")
    assert [inv.entry for inv in script.invocations] == ["myfork.trainers.main_ppo"]
    assert _codes(text, ["VS709", "VS730"]) == []


def test_an_unknown_command_with_a_non_python_option_is_not_taken_for_python() -> None:
    text = '"${TOOL}" --verbose -m myfork.trainers.main_ppo data.train_batch_size=32\n'
    assert read_script(text, "t.sh").invocations == []


def test_a_python_launcher_given_its_own_config_is_noted_not_warned() -> None:
    text = ('extra=()\nif [[ -n "${MODEL_PATH:-}" ]]; then\n  extra+=("actor_rollout_ref.model.path=$MODEL_PATH")\nfi\n'
            'python -m myproj.main_search \\\n  --config "${CONFIG:-myproj/config/run.yaml}" \\\n  "${extra[@]}" "$@"\n')
    findings = script_findings(read_script(text, "t.sh"), select=["VS709", "VS730"])
    assert [(f.code, f.severity) for f in findings] == [("VS730", "info")]
    assert "myproj.main_search" in findings[0].message and "configuration file" in findings[0].message
