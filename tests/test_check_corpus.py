"""`gen check` over the real corpus (../shared): every script checked against its own release.

1. Error-severity findings appear only where verl (or bash) really fails: each (snapshot, path,
   code) is in TRUE_BUGS with the reason it is a bug.
2. The statically decidable bugs of the independent reading (corpus/FINDINGS.tsv) are reported,
   except the rows listed in NOT_DECIDED with why.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from generator.judging import check_script
from generator.schema import snapshot_version
from generator.reading.shell import read_script

_CUT = "bash cuts the command (see the VS7xx finding), so the trainer never receives the later overrides"
_NO_MICRO = "no micro batch key at all with static batching: verl refuses the config at load (A4/A11)"
_NO_FIELD = "adds a key the section's dataclass lacks (VK610): building it raises"
TRUE_BUGS: dict[tuple[str, str, str], str] = {
    # a '+key' the dataclass built from the section's _target_ does not have (VK610, issue 25)
    ("v0.6.0", "examples/sglang_multiturn/run_qwen2.5-0.5b_gsm8k_multiturn_w_interaction.sh", "VK610"):
        _NO_FIELD + ": HFModelConfig has no enable_activation_offloading at v0.6.0 (verl/workers/config/model.py), "
        "and the workers build actor_rollout_ref.model with omega_conf_to_dataclass",
    ("v0.8.0", "examples/sapo_trainer/run_qwen3_30b_a3b_fsdp.sh", "VK610"):
        _NO_FIELD + ": tau_pos/tau_neg are FSDPActorConfig fields at v0.8.0, not PolicyLossConfig ones",
    ("v0.8.0", "examples/sapo_trainer/run_qwen3_8b_fsdp.sh", "VK610"):
        _NO_FIELD + ": tau_pos/tau_neg are FSDPActorConfig fields at v0.8.0, not PolicyLossConfig ones",
    # shell: the command is cut in two
    ("v0.4.1", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VS702"): "backslash + spaces + comment",
    ("v0.5.0", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VS702"): "backslash + spaces + comment",
    ("v0.4.1", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VS706"): _CUT,
    ("v0.5.0", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VS706"): _CUT,
    ("v0.4.1", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VB109"): _CUT,
    ("v0.5.0", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VB109"): _CUT,
    ("v0.4.1", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VB201"): _CUT,
    ("v0.5.0", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VB201"): _CUT,
    ("v0.4.1", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VB204"): _CUT,
    ("v0.5.0", "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh", "VB204"): _CUT,
    ("v0.6.1", "examples/grpo_trainer/run_qwen3_vl-30b-megatron.sh", "VS701"): "comment line inside the continuation",
    ("v0.6.1", "examples/grpo_trainer/run_qwen3_vl-30b-megatron.sh", "VS706"): _CUT,
    # batch chain
    ("HEAD", "examples/rollout_correction/run_with_rollout_corr.sh", "VB107"):
        "FSDP on the default 8 GPUs with n=1: per-rank mini 32·1/8 = 4 < micro 8, C11 asserts",
    ("HEAD", "examples/rollout_correction/run_with_rollout_corr_multi_rs.sh", "VB107"):
        "FSDP on the default 8 GPUs with n=1: per-rank mini 32·1/8 = 4 < micro 8, C11 asserts",
    ("v0.4.1", "examples/grpo_trainer/run_qwen2-7b_seq_balance_math_megatron.sh", "VB109"):
        "G6: ≤ 0.5.0 ran Megatron's DP·micro check even with dynamic bsz; micro is null → TypeError",
    ("v0.5.0", "examples/grpo_trainer/run_qwen2-7b_seq_balance_math_megatron.sh", "VB109"):
        "G6: ≤ 0.5.0 ran Megatron's DP·micro check even with dynamic bsz; micro is null → TypeError",
    ("v0.6.1", "examples/rollout_correction/run_with_rollout_corr.sh", "VB109"): _NO_MICRO,
    ("v0.7.0", "examples/rollout_correction/run_with_rollout_corr.sh", "VB109"): _NO_MICRO,
    ("v0.6.1", "examples/rollout_correction/run_with_rollout_corr.sh", "VB201"): _NO_MICRO,
    ("v0.7.0", "examples/rollout_correction/run_with_rollout_corr.sh", "VB201"): _NO_MICRO,
    ("v0.6.0", "examples/rollout_importance_sampling/run_with_rollout_is.sh", "VB109"): _NO_MICRO,
    ("v0.6.0", "examples/rollout_importance_sampling/run_with_rollout_is.sh", "VB201"): _NO_MICRO,
    ("v0.6.0", "examples/rollout_importance_sampling/run_with_rollout_is.sh", "VB204"):
        "adv_estimator=gae with no critic micro batch: A14 at load",
    ("v0.6.0", "examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh", "VB203"):
        "KL loss with dynamic bsz and no ref micro batch: the Megatron ref worker's ungated assert (C3)",
    ("v0.6.1", "examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh", "VB203"):
        "KL loss with dynamic bsz and no ref micro batch: the Megatron ref worker's ungated assert (C3)",
    # parallel layout (corpus-report §4 check (e))
    ("v0.7.0", "recipe/dapo/test_dapo_qwen3_moe_30b_megatron_fp16.sh", "VP303"): "32 GPUs vs ETP·EP·PP = 128",
    ("verl-recipe@48ea0a7", "low_precision/run_dapo_qwen3_moe_30b_megatron_fp8e2e.sh", "VP303"):
        "8 GPUs (NNODES defaults to 1) vs ETP·EP·PP = 16",
    ("v0.6.0", "recipe/langgraph_agent/example/run_qwen2.5_3b.sh", "VP307"):
        "GPUS_PER_NODE defaults to 2 but ulysses SP is 4: the device mesh cannot be built",
    ("v0.6.1", "recipe/langgraph_agent/example/run_gpt_oss_20b_bf16.sh", "VP307"):
        "GPUS_PER_NODE defaults to 2 but ulysses SP is 4: the device mesh cannot be built",
    # rollout
    ("v0.7.0", "recipe/dapo/test_dapo_8b_megatron_fp8train.sh", "VR508"): "rollout.mode=sync raises from 0.7.0 (A24)",
    ("verl-recipe@48ea0a7", "rep_exp/eval.sh", "VR508"): "rollout.mode=sync raises from 0.7.0 (A24)",
    ("verl-recipe@48ea0a7", "rep_exp/train_elliptical.sh", "VR508"): "rollout.mode=sync raises from 0.7.0 (A24)",
    # keys Hydra refuses (FINDINGS.tsv, confirmed by real compose)
    ("v0.7.0", "examples/cispo_trainer/run_cispo_qwen2_5_0_5b_gsm8k.sh", "VK601"): "model.torch_dtype unknown",
    ("v0.4.1", "examples/ppo_trainer/run_deepseek_full_hh_rlhf.sh", "VK601"): "reward_model.param_offload unknown",
    ("v0.5.0", "examples/ppo_trainer/run_deepseek_full_hh_rlhf.sh", "VK601"): "reward_model.param_offload unknown",
    ("v0.6.0", "examples/ppo_trainer/run_deepseek_full_hh_rlhf.sh", "VK601"): "reward_model.param_offload unknown",
    ("v0.5.0", "examples/ppo_trainer/run_qwen1.5_moe_a2.7b-gsm8k_megatron.sh", "VK601"):
        "critic.model.enable_gradient_checkpointing unknown in 0.5.0",
    ("v0.6.0", "examples/grpo_trainer/run_gptoss_20b.sh", "VK602"): "+fsdp_config.model_dtype exists",
    ("v0.6.1", "examples/grpo_trainer/run_gptoss_20b.sh", "VK602"): "+fsdp_config.model_dtype exists",
    ("v0.7.0", "examples/grpo_trainer/run_gptoss_20b.sh", "VK602"): "+fsdp_config.model_dtype exists",
    ("v0.4.1", "examples/grpo_trainer/run_minicpmo2_6.sh", "VK602"): "+data.trust_remote_code exists",
    ("v0.7.0", "examples/sglang_multiturn/run_qwen2.5-0.5b_gsm8k_multiturn_w_interaction.sh", "VK602"):
        "+model.enable_activation_offload exists in 0.7.0",
    ("v0.6.0", "examples/grpo_trainer/run_gptoss_20b.sh", "VK605"): "engine_kwargs.sglang.attention_backend",
    ("v0.6.1", "examples/grpo_trainer/run_gptoss_20b.sh", "VK605"): "engine_kwargs.sglang.attention_backend",
    ("v0.7.0", "examples/grpo_trainer/run_gptoss_20b.sh", "VK605"): "engine_kwargs.sglang.attention_backend",
    ("v0.4.1", "examples/grpo_trainer/run_deepseek671b_math_megatron.sh", "VK606"): "<path_to_...> template",
    ("v0.5.0", "examples/grpo_trainer/run_deepseek671b_math_megatron.sh", "VK606"): "<path_to_...> template",
    ("v0.6.0", "examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh", "VK606"): "<path_to_...> template",
    ("v0.6.1", "examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh", "VK606"): "<path_to_...> template",
    ("v0.4.1", "recipe/dapo/test_dapo_dspk_671b_megatron.sh", "VK606"): "<path_to_...> template",
    ("v0.5.0", "recipe/dapo/test_dapo_dspk_671b_megatron.sh", "VK606"): "<path_to_...> template",
    ("v0.6.0", "recipe/dapo/test_dapo_dspk_671b_megatron_96gb.sh", "VK606"): "<path_to_...> template",
    ("v0.7.0", "examples/grpo_trainer/run_qwen3_4b_grpo_vllm_1k_npu.sh", "VK606"): "stray '}' in two values",
    # The recipe's config, found where Hydra looks (the entry module's folder), lacks the key
    ("verl-recipe@48ea0a7", "reward_queue/train_async.sh", "VK601"):
        "rollout.test_freq: the top-level rollout section of reward_queue/config/fully_async.yaml has no test_freq",
    ("verl-recipe@48ea0a7", "low_precision/run_dapo_asyncrl_qwen3_moe_30b_fp8rollout.sh", "VK601"):
        "reward.reward_manager.name is not in the verl this snapshot is checked against (0.7.0+b178a3c; added "
        "in 0.7.1): Hydra refuses it there",
    # --- the newer snapshots (corpus/NEW-SNAPSHOTS.md), each confirmed by real Hydra compose or
    # by verl's source at that commit (tests/test_megatron_examples_hydra.py composes the Megatron ones)
    ("v0.7.1", "examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh", "VK606"): "<path_to_...> template",
    ("v0.7.1", "examples/grpo_trainer/run_deepseek671b_math_megatron_80gb.sh", "VB203"):
        "KL loss with dynamic bsz and no ref micro batch on 0.7.1's legacy Megatron ref worker (C3)",
    **{(tag, "examples/grpo_trainer/run_gpt_oss_20b_fsdp.sh", code): why for tag in ("v0.8.0", "HEAD-2608")
       for code, why in (("VK602", "+fsdp_config.model_dtype exists: Hydra 'Could not append ... already at'"),
                         ("VK605", "engine_kwargs.sglang.attention_backend without '+': Hydra 'Could not override'"))},
    **{(tag, "examples/tuning/lora/run_qwen3_8b_merge_fsdp.sh", "VK602"):
       "+model.lora.merge exists (lora.merge is in the 0.8+ model config): Hydra refuses the '+'"
       for tag in ("v0.8.0", "HEAD-2608")},
    **{(tag, path, "VP303"): why for tag in ("v0.8.0", "HEAD-2608") for path, why in (
        ("examples/grpo_trainer/run_qwen3_235b_a22b_megatron.sh",
         "64 GPUs (8 nodes x 8) vs ETP·EP·PP = 4·4·8 = 128 (expert_tensor_parallel_size null = TP)"),
        ("examples/grpo_trainer/run_qwen3_30b_a3b_megatron.sh",
         "8 GPUs (NNODES defaults to 1) vs ETP·EP·PP = 4·2·2 = 16 (expert_tensor_parallel_size null = TP)"))},
    **{(tag, path, "VR502"): why for tag in ("v0.8.0", "HEAD-2608") for path, why in (
        ("examples/grpo_trainer/run_qwen3_235b_a22b_megatron.sh",
         "vLLM rollout EP 64 != TP 8 x DP 1 (ROLLOUT_DP empty): RolloutConfig asserts "
         "(verl/workers/config/rollout.py:292 @ 1dda039)"),
        ("examples/grpo_trainer/run_qwen3_30b_a3b_megatron.sh",
         "vLLM rollout EP 2 != TP 4 x DP 1: RolloutConfig asserts (verl/workers/config/rollout.py:292 @ 1dda039)"))},
    **{(tag, path, "VB107"): "FSDP engine on the default 8 GPUs with n=1: per-rank mini 32·1/8 = 4 is not a multiple "
       "of micro 8; the engine's prepare_micro_batches asserts (verl/workers/engine/utils.py:125, 0.9.1 wheel)"
       for tag in ("v0.8.0", "HEAD-2608") for path in ("examples/rollout_correction/run_qwen2_5_7b_fsdp.sh",
                                                       "examples/rollout_correction/run_qwen2_5_7b_fsdp_multi_rs.sh")},
    # router_replay: `actor_rollout_ref.actor.model_engine=megatron` is not a key (the group is the
    # top-level `model_engine`), so Hydra refuses it and every actor/ref megatron.* key; read as
    # written the engine stays FSDP on 6 nodes x 8 GPUs with 3 prompts x n=8
    **{(tag, "examples/router_replay/run_qwen3_30b_a3b_megatron.sh", code): why for tag in ("v0.8.0", "HEAD-2608")
       for code, why in (("VK601", "actor_rollout_ref.actor.model_engine and the megatron.* keys: Hydra refuses them"),
                         ("VB101", "3·8 = 24 responses not divisible by the 48 GPUs: validate_config's A2 "
                                   "(the dispatch's same 24 % 48, VB103, is one cause reported once)"),
                         ("VB116", "mini 3·8 = 24 not divisible by DP 48: the engine's update asserts"))},
    ("v0.8.0", "examples/router_replay/run_qwen3_30b_a3b_megatron.sh", "VK610"):
        "+actor.megatron.override_transformer_config.* adds 'megatron' to the FSDP actor (model_engine not selected): "
        "FSDPActorConfig has no such field",
    **{(tag, "examples/tuning/scaling/run_qwen2_5_32b_megatron.sh", "VK601"):
       "actor_rollout_ref.actor.model_engine is not a key (Hydra refuses it and, the engine staying FSDP, "
       "the actor/ref megatron.* keys)" for tag in ("v0.8.0", "HEAD-2608")},
    ("verl-recipe@e7f8895", "fault_recover/run_qwen2_5_0.5b_megatron.sh", "VX911"):
        "megatron.use_mbridge=False on the engine workers (the only ones from 0.8.0): "
        "transformer_impl.py asserts use_mbridge",
    ("verl-recipe@e7f8895", "grpo_mindspeed_mm/run_qwen3_5-35b_npu.sh", "VK605"):
        "trainer.use_legacy_worker_impl without '+' (removed in 0.8.0): Hydra 'Could not override'",
    ("verl-recipe@e7f8895", "swe_agent/example/run_simple_test.sh", "VK605"):
        "trainer.use_legacy_worker_impl without '+' (removed in 0.8.0): Hydra 'Could not override'",
    ("v0.9.0", "examples/grpo_trainer/run_hy_v3_megatron.sh", "VK612"):
        "legacy reward keys under main_ppo from 0.9.0: verl/trainer/main_ppo.py@v0.9.0 no longer calls migrate_legacy_reward_impl (only fully_async_main.py does), so the DAPO reward manager and overlong penalty is silently lost",
    ("HEAD-2608", "examples/grpo_trainer/run_nemotron_nano_v3_30b_a3b_megatron.sh", "VK612"):
        "legacy reward keys under main_ppo from 0.9.0: verl/trainer/main_ppo.py@v0.9.0 no longer calls migrate_legacy_reward_impl (only fully_async_main.py does), so the DAPO reward manager and overlong penalty is silently lost",
    ("HEAD-2608", "examples/grpo_trainer/run_qwen3_30b_a3b_megatron.sh", "VK612"):
        "legacy reward keys under main_ppo from 0.9.0: verl/trainer/main_ppo.py@v0.9.0 no longer calls migrate_legacy_reward_impl (only fully_async_main.py does), so the DAPO reward manager and overlong penalty is silently lost",
    ("verl-recipe@e7f8895", "swe_agent/example/run_simple_test.sh", "VK612"):
        "legacy reward keys under main_ppo from 0.9.0: verl/trainer/main_ppo.py@v0.9.0 no longer calls migrate_legacy_reward_impl (only fully_async_main.py does), so the custom reward function is silently lost",
    # relative --config-path: Hydra resolves it against verl/trainer/, not the working directory
    ("v0.6.0", "recipe/deepeyes/run_deepeyes_grpo.sh", "VK611"):
        "--config-path base_dir/recipe/deepeyes/configs is looked up in verl/trainer/ (MissingConfigException; "
        "verl 0.7.0 confirms it in the oracle)",
}

# FINDINGS.tsv rows (first snapshot, path) we do not report, and why.
NOT_DECIDED: dict[str, str] = {
    "recipe/entropy/32b_clip_cov.sh": "recipe.entropy's own config is not packaged: keys skipped (VK609)",
    "recipe/entropy/32b_kl_cov.sh": "recipe.entropy's own config is not packaged: keys skipped (VK609)",
    "recipe/flowrl/run_flowrl_qwen2.5_7b_fp16.sh": "recipe.flowrl's own config is not packaged: keys skipped",
    "recipe/dapo/run_dapo_early_qwen2.5_32b.sh": "verl-recipe HEAD vs older verl: dapo config not resolved",
    "recipe/dapo/run_dapo_qwen2.5_32b.sh": "verl-recipe HEAD vs older verl: dapo config not resolved",
    "recipe/dapo/run_dapo_qwen2.5_32b_rollout_corr.sh": "dapo config (recipe entry) not resolved",
    "recipe/dapo/run_dapo_qwen3_moe_30b_vllm_fp8_rollout.sh": "dapo config (recipe entry) not resolved",
    "recipe/dapo/run_dapo_wo_ds_qwen2.5_32b.sh": "verl-recipe HEAD vs older verl: dapo config not resolved",
    "recipe/dapo/test_dapo_7b.sh": "verl-recipe HEAD vs older verl: dapo config not resolved",
    "low_precision/run_dapo_qwen3_moe_30b_fsdp_fp8_rollout.sh": "version skew (verl-recipe HEAD), recipe config",
    "tests/special_e2e/run_one_step_off_policy.sh": "the bad key is in a dead branch",
    "examples/router_replay/run_qwen30_a3b_megatron_vllm.sh":
        "soft: dynamic bsz, verl skips A2 (FINDINGS marks it warn); not an error",
}

# FINDINGS category -> codes that report it
CATEGORY_CODES = {
    "megatron:(e)": {"VP303"},
    "megatron:(a)": {"VB101"},
    "megatron:(d)": {"VB107"},
    "hydra:unknown_key": {"VK601", "VK604", "VK605"},
    "hydra:plus_on_existing_key": {"VK602"},
    "hydra:grammar_error": {"VK606"},
    "hydra:template placeholder (<path_to_...>) breaks Hydra grammar": {"VK606"},
    "shell:comment line inside continued command": {"VS701", "VS702"},
    "shell:backslash followed by whitespace": {"VS702"},
    "shell:orphan override line": {"VS706"},
    "hydra:key given twice with different values": {"VS704"},
}


@pytest.fixture(scope="module")
def corpus_findings(corpus_dir: Path, verl_config_dir: Path):
    """(tag, path) -> list of (branch, finding) for every corpus script, each against its release."""
    out: dict[tuple[str, str], list] = defaultdict(list)
    scripts_root = corpus_dir / "scripts"
    for tag_dir in sorted(p for p in scripts_root.iterdir() if p.is_dir()):
        version = snapshot_version(tag_dir.name)
        for path in sorted(tag_dir.rglob("*.sh")):
            rel = str(path.relative_to(tag_dir))
            script = read_script(path.read_bytes(), str(path))
            for invocation, _config, findings in check_script(script, version=version,
                                                              config_root=str(verl_config_dir / tag_dir.name)):
                branch = invocation.branch if invocation else "script"
                out[(tag_dir.name, rel)].extend((branch, f) for f in findings)
    return out


def test_every_corpus_script_is_checked(corpus_findings, corpus_dir):
    assert len(list((corpus_dir / "scripts").rglob("*.sh"))) >= 500


def test_errors_only_on_true_bugs(corpus_findings):
    errors = {(tag, path, f.code) for (tag, path), items in corpus_findings.items()
              for _branch, f in items if f.severity == "error"}
    unexpected = sorted(errors - TRUE_BUGS.keys())
    assert not unexpected, f"error findings on calls verl accepts: {unexpected}"
    # the allow-list stays honest: every listed bug is still found
    missing = sorted(TRUE_BUGS.keys() - errors)
    assert not missing, f"true bugs no longer reported: {missing}"


def test_findings_tsv_bugs_are_reported(corpus_findings, corpus_dir):
    reported: dict[tuple[str, str], set[str]] = defaultdict(set)
    for key, items in corpus_findings.items():
        reported[key].update(f.code for _b, f in items)
    missed = []
    checked = 0
    with open(corpus_dir / "FINDINGS.tsv", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            codes = CATEGORY_CODES.get(row["category"])
            if codes is None or row["path"] in NOT_DECIDED:
                continue
            checked += 1
            if not codes & reported[(row["first_tag"], row["path"])]:
                missed.append((row["first_tag"], row["path"], row["category"], row["detail"][:80]))
    assert checked >= 40
    assert not missed, f"FINDINGS.tsv bugs not reported: {missed}"


def test_megatron_soft_findings_are_warnings(corpus_findings):
    # corpus-report §4 (d): dspk 671b, per-rank mini 1 < micro 2 on Megatron: runs, micro does nothing
    items = corpus_findings[("v0.4.1", "recipe/dapo/test_dapo_dspk_671b_megatron.sh")]
    (finding,) = [f for _b, f in items if f.code == "VB107"]
    assert finding.severity == "warning"
    assert "16·2 / 32 = 1" in finding.message and "does nothing" in finding.message
