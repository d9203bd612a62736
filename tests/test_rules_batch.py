"""Batch-chain rules on hand-built configs: the numbers in the messages, the fixes (nearest valid
values that keep P, n and the GPUs), version gating and undecidable values."""

from __future__ import annotations

from generator.layout import derive
from generator.reading.edit_kinds import KeyEdit
from generator.judging import check_config
from generator.judging.examples import config_for

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."


def codes(findings):
    return sorted({f.code for f in findings})


def by_code(findings, code):
    return [f for f in findings if f.code == code]


def test_task_example_micro_message_fsdp_is_error():
    config = config_for(["trainer.n_gpus_per_node=4", "data.train_batch_size=256", f"{R}n=5",
                         f"{A}ppo_mini_batch_size=256", f"{A}ppo_micro_batch_size_per_gpu=24"],
                        config_name="ppo_trainer", base=())
    (finding,) = by_code(check_config(config), "VB107")
    assert finding.severity == "error"
    assert ("per-rank mini batch = ppo_mini_batch_size·n / DP = 256·5 / 4 = 320, not divisible by "
            "ppo_micro_batch_size_per_gpu 24") in finding.message
    (edit,) = finding.fix.edits
    assert edit == KeyEdit(A + "ppo_micro_batch_size_per_gpu", 24, 20)  # 20 divides 320, nearest to 24
    assert finding.fix.applicability == "safe"


def test_same_micro_on_megatron_is_a_silent_warning():
    config = config_for(["trainer.n_gpus_per_node=4", f"{A}megatron.tensor_model_parallel_size=1",
                         f"{R}tensor_model_parallel_size=1", "data.train_batch_size=256", f"{R}n=5",
                         f"{A}ppo_mini_batch_size=256", f"{A}ppo_micro_batch_size_per_gpu=24"])
    findings = check_config(config)
    (finding,) = by_code(findings, "VB107")
    assert finding.severity == "warning"
    assert "14 micro-batches per update, the last one with 8 responses" in finding.message
    # verl's own load check A2: 1280 % (DP 4 · 24) = 32
    (a2,) = by_code(findings, "VB101")
    assert "256·5 = 1280" in a2.message and "4·24 = 96" in a2.message and "1280 % 96 = 32" in a2.message


def test_worked_example_2_megatron_error_fsdp_warning():
    overrides = ["trainer.n_gpus_per_node=8", f"{A}megatron.tensor_model_parallel_size=2",
                 "data.train_batch_size=60", f"{R}n=4", f"{A}ppo_mini_batch_size=24",
                 f"{A}ppo_micro_batch_size_per_gpu=2"]
    meg = check_config(config_for(overrides))
    assert "VB101" not in codes(meg)  # validate_config passes: 240 % 8 == 0
    (finding,) = by_code(meg, "VB106")
    assert finding.severity == "error"
    assert "local batch = G/DP = 240/4 = 60" in finding.message and "60 % 24 = 12" in finding.message
    new_mini = finding.fix.edits[0].new
    chain = derive.batch_chain(prompts=60, n=4, mini=new_mini, dp=4, micro=2)
    assert chain.mini_batch_remainder == 0 and not chain.floored
    assert finding.fix.applicability == "unsafe"
    assert all(e.key not in ("data.train_batch_size", R + "n") for e in finding.fix.edits)

    fsdp = check_config(config_for(overrides[2:] + ["trainer.n_gpus_per_node=8"], config_name="ppo_trainer",
                                   base=()))
    (finding,) = by_code(fsdp, "VB106")
    assert finding.severity == "warning"
    assert "3 mini-batches per epoch (the last has 6) instead of 2.5" in finding.message


def test_worked_example_3_flooring_warning():
    config = config_for(["trainer.n_gpus_per_node=8", f"{A}megatron.tensor_model_parallel_size=1",
                         f"{R}tensor_model_parallel_size=1", "data.train_batch_size=160", f"{R}n=1",
                         f"{A}ppo_mini_batch_size=20", f"{A}ppo_micro_batch_size_per_gpu=1"])
    (finding,) = by_code(check_config(config), "VB105")
    assert finding.severity == "warning"
    assert "20·1 / 8 = 2.5, floored to 2" in finding.message
    assert "each optimizer step sees 16 responses, not 20" in finding.message
    new_mini = finding.fix.edits[0].new
    assert (new_mini * 1) % 8 == 0 and 160 % new_mini == 0


def test_d3_step_not_divisible_names_dp_equation():
    # Dynamic batches: verl skips VB101's load check, so the dispatch meets the remainder (static,
    # VB101 reports the same 90 at load and VB103 stands down: tests/test_one_cause_once.py).
    config = config_for(["data.train_batch_size=30", f"{R}n=3", f"{A}ppo_mini_batch_size=10", f"{A}use_dynamic_bsz=True"])
    (finding,) = by_code(check_config(config), "VB103")
    assert "G = train_batch_size·n = 30·3 = 90" in finding.message
    assert "not divisible by DP = W / (TP·PP·CP) = 8 / (2·1·1) = 4 (90 % 4 = 2)" in finding.message
    assert finding.fix is None  # never change train_batch_size or n


def test_dp_excludes_cp():
    config = config_for([f"{A}megatron.context_parallel_size=2", "data.train_batch_size=6", f"{R}n=2",
                         f"{A}ppo_mini_batch_size=6"])
    # DP = 8/(2·1·2) = 2; G = 12 divisible by 2 -> no VB103
    assert "VB103" not in codes(check_config(config))


def test_a2_skipped_with_dynamic_bsz_from_060_but_not_on_050():
    overrides = [f"{A}ppo_micro_batch_size_per_gpu=3", f"{A}use_dynamic_bsz=True",
                 f"{A}ppo_max_token_len_per_gpu=4096"]
    assert "VB101" not in codes(check_config(config_for(overrides, version="0.7.0")))
    assert "VB101" in codes(check_config(config_for(overrides, version="0.5.0")))


def test_version_gating_agent_loop_vs_sync_dispatch():
    overrides = ["data.train_batch_size=30", f"{R}n=2", f"{A}ppo_mini_batch_size=30"]
    assert "VB112" in codes(check_config(config_for(overrides, version="0.7.0")))
    old = check_config(config_for(overrides, version="0.4.1"))
    assert "VB112" not in codes(old)
    (sync,) = by_code(old, "VB113")
    assert "train_batch_size 30 (prompts, not yet repeated) is not divisible by 8 GPUs" in sync.message


def test_unknown_values_are_not_decided():
    config = config_for(["data.train_batch_size=30", f"{R}n=3", f"{A}ppo_mini_batch_size=10"])
    config.unknown["data.train_batch_size"] = "depends on $TRAIN_BS"
    assert not {"VB103", "VB105", "VB106", "VB112"} & set(codes(check_config(config)))


def test_critic_interpolation_trap_and_fix():
    config = config_for(["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size=16"])
    (finding,) = by_code(check_config(config), "VB204")
    assert "only critic.ppo_micro_batch_size=16 is set" in finding.message
    edits = {e.key: e.new for e in finding.fix.edits}
    assert edits == {"critic.ppo_micro_batch_size": None, "critic.ppo_micro_batch_size_per_gpu": 4}  # 16 // DP 4


def test_critic_rules_only_when_critic_is_used():
    config = config_for(["critic.ppo_micro_batch_size=16", "critic.ppo_mini_batch_size=24"])  # grpo: no critic
    assert not [c for c in codes(check_config(config)) if c.startswith("VB2") and c in ("VB204", "VB206", "VB207")]


def test_token_cap_times_cp():
    overrides = [f"{A}use_dynamic_bsz=True", f"{A}ppo_max_token_len_per_gpu=2048",
                 f"{R}log_prob_max_token_len_per_gpu=4096"]
    findings = by_code(check_config(config_for(overrides)), "VD401")
    assert [f.key for f in findings] == [A + "ppo_max_token_len_per_gpu"]
    assert "ppo_max_token_len_per_gpu·CP = 2048·1 = 2048 < prompt + response = 3072" in findings[0].message
    assert findings[0].fix.edits[0].new == 3072
    with_cp = overrides + [f"{A}megatron.context_parallel_size=2"]
    assert by_code(check_config(config_for(with_cp)), "VD401") == []  # 2048·2 = 4096 ≥ 3072


def test_nearest_fix_keeps_train_batch_n_and_gpus():
    config = config_for([f"{A}ppo_mini_batch_size=1", f"{R}n=1"])
    for finding in check_config(config):
        if finding.fix:
            keys = {e.key for e in finding.fix.edits if isinstance(e, KeyEdit)}
            assert not keys & {"data.train_batch_size", R + "n", "trainer.n_gpus_per_node", "trainer.nnodes"}


def test_non_trainer_entry_gets_key_checks_only():
    config = config_for(["data.train_batch_size=30", f"{R}n=3", "actor_rollout_ref.actor.ppo_mini_batchsize=1"])
    config.entry = "verl.trainer.main_generation"
    assert codes(check_config(config)) == ["VK601"]


def test_select_and_ignore_prefixes():
    config = config_for(["data.train_batch_size=30", f"{R}n=3", f"{A}ppo_mini_batch_size=10"])
    assert set(codes(check_config(config, select=["VB103"]))) == {"VB103"}
    assert "VB103" not in codes(check_config(config, ignore=["VB1"]))


def test_balance_batch_judges_the_batch_the_actor_trains():
    # main_ppo trains what it generates (gen_batch_size 48 prompts: 48 % 16 GPUs = 0); DAPO with the
    # group filter trains train_batch_size 40 prompts' groups, which 16 GPUs do not divide.
    overrides = ["trainer.n_gpus_per_node=8", "trainer.nnodes=2", "trainer.balance_batch=True",
                 "data.train_batch_size=40", "+data.gen_batch_size=48", f"{R}n=1", f"{A}ppo_mini_batch_size=8",
                 f"{A}ppo_micro_batch_size_per_gpu=1", "+algorithm.filter_groups.enable=True",
                 f"{A}use_dynamic_bsz=True"]  # VB101's load check skipped: VB114 is the only report of 40 % 16
    found = {}
    for entry in ("verl.trainer.main_ppo", "recipe.dapo.main_dapo"):
        config = config_for(overrides, version="0.6.1", config_name="ppo_trainer", base=())
        config.entry = entry
        found[entry] = by_code(check_config(config), "VB114")
    assert found["verl.trainer.main_ppo"] == []
    (finding,) = found["recipe.dapo.main_dapo"]
    assert "= 40·1 = 40 is not divisible by the 16 GPUs" in finding.message


def test_global_micro_checks_with_dynamic_bsz_by_release():
    """Issue 34: A7/A8 (VB110/VB111) ran with use_dynamic_bsz=True only in the FSDP worker's
    normalisation of 0.2.0-0.4.1; verl 0.1's worker has no such assert (its dp_actor splits by the
    micro batch only without dynamic batches), and from 0.5.0 the trainer's check is gated."""
    overrides = ["actor_rollout_ref.actor.strategy=fsdp", "critic.strategy=fsdp", "trainer.n_gpus_per_node=8",
                 "data.train_batch_size=64", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
                 "actor_rollout_ref.actor.ppo_micro_batch_size=64", "actor_rollout_ref.actor.use_dynamic_bsz=True"]
    config = config_for(overrides, version="0.4.1", config_name="ppo_trainer")
    assert "VB110" in codes(check_config(config, select=["VB110"]))
    config.version = "0.1.0"  # a fork of verl 0.1 (its version file), judged on the same values
    assert "VB110" not in codes(check_config(config, select=["VB110"]))
    static = config_for([*overrides[:-1], "actor_rollout_ref.actor.use_dynamic_bsz=False"], version="0.4.1",
                        config_name="ppo_trainer")
    static.version = "0.1.0"
    assert "VB110" in codes(check_config(static, select=["VB110"]))


def test_mini_batch_larger_than_the_step_is_one_finding():
    """Issue 34: VB102 (the A6 check) and VB106 (what the update then does) named one cause twice."""
    overrides = ["actor_rollout_ref.actor.strategy=fsdp", "critic.strategy=fsdp", "trainer.n_gpus_per_node=8",
                 "data.train_batch_size=128", "actor_rollout_ref.actor.ppo_mini_batch_size=256",
                 "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
                 "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
                 "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"]
    found = codes(check_config(config_for(overrides, version="0.7.0", config_name="ppo_trainer")))
    assert "VB102" in found and "VB106" not in found
    # with dynamic batches verl skips A6: VB106 alone says what the update does
    dynamic = [*overrides, "actor_rollout_ref.actor.use_dynamic_bsz=True"]
    found = codes(check_config(config_for(dynamic, version="0.7.0", config_name="ppo_trainer")))
    assert "VB102" not in found and "VB106" in found
