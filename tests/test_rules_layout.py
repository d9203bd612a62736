"""Layout, dynamic-bsz, rollout and model-shape rules: numbers in messages, fixes, gating."""

from __future__ import annotations

import json

from generator.reading.edit_kinds import KeyEdit
from generator.judging import check_config, check_script
from generator.judging.examples import config_for
from generator.reading.shell import read_script

A = "actor_rollout_ref.actor."
M = A + "megatron."
R = "actor_rollout_ref.rollout."


def by_code(findings, code):
    return [f for f in findings if f.code == code]


def test_expert_grid_message_and_dp_unaffected_by_ep():
    findings = check_config(config_for([M + "expert_model_parallel_size=8", M + "pipeline_model_parallel_size=2",
                                        A + "ppo_micro_batch_size_per_gpu=4"]))
    (finding,) = by_code(findings, "VP303")
    assert finding.message.startswith("8 GPUs are not divisible by ETP·EP·PP = 2·8·2 = 32")
    assert not by_code(findings, "VB103")  # DP = 8/(2·2·1) = 2 regardless of EP


def test_layout_rules_only_on_megatron():
    config = config_for([A + "ulysses_sequence_parallel_size=1"], config_name="ppo_trainer", base=())
    assert not [f for f in check_config(config) if f.code.startswith("VP30") and f.code != "VP307"]


def test_critic_layout_fix_copies_actor_sizes():
    findings = check_config(config_for(["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=2",
                                        M + "pipeline_model_parallel_size=2", A + "ppo_micro_batch_size_per_gpu=4"]))
    (finding,) = by_code(findings, "VP305")
    edits = {e.key: e.new for e in finding.fix.edits}
    assert edits == {"critic.megatron.tensor_model_parallel_size": 2, "critic.megatron.pipeline_model_parallel_size": 2}


def test_vpp_micro_batch_counts_per_pass():
    findings = check_config(config_for([M + "pipeline_model_parallel_size=2", M + "tensor_model_parallel_size=1",
                                        M + "virtual_pipeline_model_parallel_size=2",
                                        A + "ppo_micro_batch_size_per_gpu=3", R + "log_prob_micro_batch_size_per_gpu=8"]))
    # DP = 8/2 = 4, m = 16·4/4 = 16, ceil(16/3) = 6 (ok, multiple of 2); B = 64, ceil(64/8) = 8 (ok)
    assert by_code(findings, "VD402") == []
    findings = check_config(config_for([M + "pipeline_model_parallel_size=2", M + "tensor_model_parallel_size=1",
                                        M + "virtual_pipeline_model_parallel_size=2",
                                        A + "ppo_micro_batch_size_per_gpu=4", R + "log_prob_micro_batch_size_per_gpu=13"]))
    (finding,) = by_code(findings, "VD402")
    assert "log-prob: ceil(local batch 64 / log_prob_micro_batch_size_per_gpu 13) = 5 micro-batches % 2 = 1" in finding.message


def test_token_caps_each_role_and_cp():
    findings = check_config(config_for(["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=2",
                                        A + "use_dynamic_bsz=True", A + "ppo_max_token_len_per_gpu=4096",
                                        "critic.ppo_max_token_len_per_gpu=2048"]))
    caps = {f.key: f for f in by_code(findings, "VD401")}
    # the critic cap is not inherited from the actor (H9): it fails while the actor's passes; the
    # critic's forward cap follows the critic's update cap, so it is reported (and fixed) once
    assert set(caps) == {"critic.ppo_max_token_len_per_gpu"}
    assert "critic update: ppo_max_token_len_per_gpu·CP = 2048·1 = 2048 < prompt + response = 3072" in \
        caps["critic.ppo_max_token_len_per_gpu"].message
    assert caps["critic.ppo_max_token_len_per_gpu"].fix.edits == (KeyEdit("critic.ppo_max_token_len_per_gpu", 2048, 3072),)


def test_inherited_cap_reported_once_explicit_cap_separately():
    base = [A + "use_dynamic_bsz=True", A + "ppo_max_token_len_per_gpu=2048"]
    assert [f.key for f in by_code(check_config(config_for(base)), "VD401")] == [A + "ppo_max_token_len_per_gpu"]
    explicit = base + [R + "log_prob_max_token_len_per_gpu=1024"]
    keys = sorted(f.key for f in by_code(check_config(config_for(explicit)), "VD401"))
    assert keys == [A + "ppo_max_token_len_per_gpu", R + "log_prob_max_token_len_per_gpu"]


def test_rollout_replica_and_version_gated_mode():
    findings = check_config(config_for([R + "tensor_model_parallel_size=3"]))
    (finding,) = by_code(findings, "VR501")
    assert finding.message == "8 GPUs are not divisible by the rollout replica size TP·DP·PP = 3·1·1 = 3"
    assert by_code(check_config(config_for([R + "mode=sync"])), "VR508")
    assert not by_code(check_config(config_for([R + "mode=sync"], version="0.6.1")), "VR508")


def test_model_rules_from_model_config(tmp_path):
    config_json = tmp_path / "config.json"
    config_json.write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24,
        "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936,
        "max_position_embeddings": 32768, "tie_word_embeddings": True}))
    source = (b"python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer \\\n"
              b"    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 \\\n"
              b"    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \\\n"
              b"    actor_rollout_ref.rollout.name=vllm\n")
    script = read_script(source, str(tmp_path / "run.sh"))
    (_inv, _config, findings), = [r for r in check_script(script, version="0.7.0", model_config=str(config_json))
                                  if r[0] is not None]
    codes = {f.code for f in findings}
    assert {"VM801", "VM802", "VM808"} <= codes
    (heads,) = by_code(findings, "VM801")
    assert "14 attention heads are not divisible by TP 4" in heads.message and heads.line == 2
    # without model facts the model-shape rules stay silent
    (_i, _c, plain), = [r for r in check_script(script, version="0.7.0") if r[0] is not None]
    assert not [f for f in plain if f.code.startswith("VM")]


def test_unknown_gpu_count_gives_one_info_and_no_batch_verdicts():
    config = config_for(["trainer.n_gpus_per_node=${oc.env:GPUS}", "data.train_batch_size=30", R + "n=3"])
    findings = check_config(config)
    (info,) = by_code(findings, "VB117")
    assert info.severity == "info" and "n_gpus_per_node" in info.message
    assert not [f for f in findings if f.code in ("VB103", "VB106", "VP301", "VR501")]
