"""One cause, one finding (issue 34's second sample): a batch chain that fails on one remainder is
reported by the rule whose check verl runs first, and the later checks that the same fix would
satisfy stand down. Every config here is written by the test."""

from __future__ import annotations

from generator.judging import check_config
from generator.judging.examples import config_for

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."


def fsdp(overrides: list[str], gpus: int = 6, version: str = "0.4.1"):
    return config_for(overrides, config_name="ppo_trainer", version=version,
                      base=(f"trainer.n_gpus_per_node={gpus}", "trainer.nnodes=1", f"{R}name=vllm"))


def codes(findings) -> list[str]:
    return sorted(f.code for f in findings if f.severity != "info")


# 6 GPUs: 1000·10 = 10000 responses, 10000 % 6 = 4; mini 256·10/6 = 426.67 floored, micro 8 does not divide 426.
STEP = ["data.train_batch_size=1000", f"{R}n=10", f"{A}ppo_mini_batch_size=256",
        f"{A}ppo_micro_batch_size_per_gpu=8", "trainer.balance_batch=True", f"{A}use_dynamic_bsz=False"]


def test_the_step_remainder_is_reported_once_by_the_load_check():
    found = codes(check_config(fsdp(STEP)))
    assert found.count("VB101") == 1
    assert "VB103" not in found and "VB114" not in found


def test_the_later_checks_still_report_when_the_load_check_passes():
    # With dynamic batches after 0.5.0 verl skips the load check, so the runtime checks carry the remainder.
    found = codes(check_config(fsdp([*STEP[:-1], f"{A}use_dynamic_bsz=True"], version="0.6.0")))
    assert "VB101" not in found
    assert "VB114" in found or "VB103" in found


def test_the_floored_mini_batch_is_reported_once_by_the_micro_check():
    found = codes(check_config(fsdp(STEP)))
    assert "VB107" in found and "VB105" not in found


def test_the_floor_alone_is_still_a_warning():
    # micro 2 divides the floored 426: the flooring is the only effect and VB105 says so.
    found = codes(check_config(fsdp([*STEP[:3], f"{A}ppo_micro_batch_size_per_gpu=2", f"{A}use_dynamic_bsz=False"])))
    assert "VB105" in found and "VB107" not in found


# Dynamic batches after 0.5.0: verl skips the mini <= train check, and FSDP runs one update per step.
DYNAMIC = ["data.train_batch_size=64", f"{R}n=4", f"{A}use_dynamic_bsz=True", f"{A}ppo_micro_batch_size_per_gpu=2"]


def vb106(overrides: list[str]):
    findings = check_config(fsdp(overrides, gpus=8, version="0.6.0"))
    return next((f for f in findings if f.code == "VB106"), None)


def test_a_mini_batch_the_script_sets_above_the_train_batch_is_a_warning():
    found = vb106([*DYNAMIC, f"{A}ppo_mini_batch_size=256"])
    assert found is not None and found.severity == "warning"


def test_the_default_mini_batch_the_script_never_sets_is_only_info():
    found = vb106(DYNAMIC)
    assert found is not None and found.severity == "info" and "never sets" in found.message


def test_a_later_check_selected_alone_still_reports_its_cause():
    # --select VB103: VB101 does not run, so nothing else reports the remainder.
    findings = check_config(fsdp(STEP), select=["VB103", "VB114"])
    assert {f.code for f in findings} == {"VB103", "VB114"}
