"""The recipe model: which keys each algorithm sets, layouts shared with the critic and ref,
version differences, and the errors users get."""

from __future__ import annotations

import pytest

from generator.base.errors import InputError
from generator.model.facts import ModelFacts
from generator.layout.parallelism import Offload
from generator.layout.candidate import Candidate
from generator.render.recipe_settings import build_recipe, recipe_overrides
from generator.render.release_form import composed_config_name
from generator.render.spec import RecipeSpec

DENSE = ModelFacts(name="Toy-7B", hidden_size=3584, num_layers=28, num_attention_heads=28, num_kv_heads=4,
                   head_dim=128, ffn_hidden_size=18944, vocab_size=152064, max_position_embeddings=32768,
                   hf_ids=("Toy/Toy-7B", "Toy/Toy-7B-Instruct"))
MOE = ModelFacts(name="ToyMoE-30B", hidden_size=2048, num_layers=48, num_attention_heads=32, num_kv_heads=4,
                 head_dim=128, ffn_hidden_size=6144, vocab_size=151936, max_position_embeddings=40960,
                 num_experts=128, experts_per_token=8, expert_ffn_hidden_size=768, hf_ids=("Toy/ToyMoE",))
STATIC = Candidate(tp=2, pp=2, rollout_tp=2, micro_batch_per_gpu=4, log_prob_micro_batch_per_gpu=8,
                   gpu_memory_utilization=0.6)
DYNAMIC_MOE = Candidate(tp=2, pp=2, cp=2, ep=4, etp=1, vpp=2, first_stage_layers=10, last_stage_layers=14,
                        rollout_tp=4, micro_batch_per_gpu=1, use_dynamic_bsz=True, token_budget=5120,
                        log_prob_token_budget=10240, offload=Offload(True, True, True, True, 1.0), recompute=True,
                        gpu_memory_utilization=0.7)


def spec(**kw) -> RecipeSpec:
    base = dict(model=DENSE, layout=STATIC, gpus=8, algo="grpo", n=5, train_batch_size=1024,
                ppo_mini_batch_size=256, model_slug="toy-7b")
    base.update(kw)
    return RecipeSpec(**base)


def values(s: RecipeSpec) -> dict[str, str]:
    out = {}
    for word in recipe_overrides(build_recipe(s)):
        key, _, value = word.partition("=")
        assert key not in out, f"{key} set twice"
        out[key] = value
    return out


def test_grpo_sets_kl_loss_and_no_critic() -> None:
    v = values(spec())
    assert v["algorithm.adv_estimator"] == "grpo"
    assert v["actor_rollout_ref.actor.use_kl_loss"] == "True"
    assert v["actor_rollout_ref.actor.kl_loss_type"] == "low_var_kl"
    assert v["actor_rollout_ref.actor.entropy_coeff"] == "0"
    assert v["algorithm.use_kl_in_reward"] == "False"
    assert not any(k.startswith("critic.") for k in v)


def test_ppo_critic_has_the_actors_layout_and_its_own_micro_and_offload() -> None:
    v = values(spec(algo="ppo", n=1, layout=DYNAMIC_MOE, model=MOE))
    assert v["algorithm.adv_estimator"] == "gae"
    for leaf in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                 "expert_model_parallel_size", "expert_tensor_parallel_size",
                 "virtual_pipeline_model_parallel_size", "param_offload", "optimizer_offload"):
        assert v[f"critic.megatron.{leaf}"] == v[f"actor_rollout_ref.actor.megatron.{leaf}"], leaf
    assert v["+critic.megatron.override_transformer_config.num_layers_in_first_pipeline_stage"] == "10"
    assert v["critic.ppo_micro_batch_size_per_gpu"] == "1"
    assert v["critic.model.path"] == v["actor_rollout_ref.model.path"] == "'Toy/ToyMoE'"
    assert v["critic.optim.lr"] == "1e-5"
    # dynamic bsz: every token cap x CP covers prompt + response (2048)
    for key in ("critic.ppo_max_token_len_per_gpu", "critic.forward_max_token_len_per_gpu",
                "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
                "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu",
                "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu"):
        assert int(v[key]) * 2 >= 2048, key


@pytest.mark.parametrize("algo, expected", [
    ("dapo", {"actor_rollout_ref.actor.clip_ratio_low": "0.2", "actor_rollout_ref.actor.clip_ratio_high": "0.28",
              "actor_rollout_ref.actor.loss_agg_mode": "token-mean", "actor_rollout_ref.actor.use_kl_loss": "False"}),
    ("gspo", {"actor_rollout_ref.actor.policy_loss.loss_mode": "gspo",
              "actor_rollout_ref.actor.clip_ratio_low": "3e-4", "actor_rollout_ref.actor.clip_ratio_high": "4e-4",
              "actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-mean"}),
    ("rloo", {"algorithm.adv_estimator": "rloo", "algorithm.use_kl_in_reward": "True"}),
    ("reinforce_plus_plus", {"algorithm.adv_estimator": "reinforce_plus_plus",
                             "actor_rollout_ref.actor.kl_loss_type": "mse"}),
])
def test_algorithm_keys(algo: str, expected: dict[str, str]) -> None:
    v = values(spec(algo=algo))
    for key, value in expected.items():
        assert v[key] == value, key


def test_required_micro_keys_are_always_set_even_with_dynamic_bsz() -> None:
    v = values(spec(layout=DYNAMIC_MOE, model=MOE))
    for key in ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
                "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"):
        assert key in v
    assert v["actor_rollout_ref.actor.use_dynamic_bsz"] == "True"


def test_release_differences() -> None:
    new = values(spec(version="0.7.0"))
    old = values(spec(version="0.6.1"))
    assert new["actor_rollout_ref.rollout.mode"] == "async"
    assert "actor_rollout_ref.rollout.mode" not in old  # sync was the only tested default before 0.7
    # ref sizes interpolate the actor's from 0.7.0; before that they were literal 1s
    assert "actor_rollout_ref.ref.megatron.tensor_model_parallel_size" not in new
    assert old["actor_rollout_ref.ref.megatron.tensor_model_parallel_size"] == "2"
    assert old["actor_rollout_ref.ref.megatron.pipeline_model_parallel_size"] == "2"


def test_cpu_optimizer_and_recompute_and_uneven_stages() -> None:
    v = values(spec(layout=DYNAMIC_MOE, model=MOE))
    o = "+actor_rollout_ref.actor.optim.override_optimizer_config."
    assert v[o + "optimizer_cpu_offload"] == "True"
    assert v[o + "optimizer_offload_fraction"] == "1.0"
    t = "actor_rollout_ref.actor.megatron.override_transformer_config."
    assert v[t + "recompute_granularity"] == "full"
    assert v["+" + t + "num_layers_in_last_pipeline_stage"] == "14"


def test_long_context_raises_vllm_batched_tokens() -> None:
    layout = Candidate(tp=4, pp=1, rollout_tp=4, micro_batch_per_gpu=1, use_dynamic_bsz=True,
                       token_budget=10240, log_prob_token_budget=10240)
    v = values(spec(layout=layout, prompt_len=2048, response_len=8192))
    assert v["actor_rollout_ref.rollout.max_num_batched_tokens"] == "10240"


@pytest.mark.parametrize("kw, message", [
    (dict(algo="rloo", n=1), "RLOO needs at least 2"),
    (dict(algo="a2c"), "unknown algorithm 'a2c'"),
    (dict(launcher="k8s"), "unknown launcher"),
    (dict(rollout="hf"), "unknown rollout engine"),
    (dict(gpus=8, nodes=3), "cannot be split evenly"),
    (dict(layout=Candidate(tp=1, pp=1, use_dynamic_bsz=True, token_budget=1024)), "token budget 1024"),
    (dict(model_path=""), "--model-path must be a non-empty"),
])
def test_bad_specs_are_one_line_input_errors(kw: dict, message: str) -> None:
    with pytest.raises(InputError) as err:
        build_recipe(spec(**kw))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_extra_overrides_replace_in_place_and_move_knob_defaults() -> None:
    s = spec(extra_overrides=(("actor_rollout_ref.actor.optim.lr", 2e-6), ("data.train_batch_size", 512),
                              ("+actor_rollout_ref.model.override_config.attention_dropout", 0.0)))
    recipe = build_recipe(s)
    assert recipe.knob("TRAIN_BATCH_SIZE").value == 512
    v = values(s)
    assert v["actor_rollout_ref.actor.optim.lr"] == "2e-6"
    assert v["data.train_batch_size"] == "512"
    assert v["+actor_rollout_ref.model.override_config.attention_dropout"] == "0.0"


def _releases() -> list[str]:
    from generator.schema import available

    return [v for v in available() if v >= "0.5.0"]


@pytest.mark.parametrize("version", _releases())
@pytest.mark.parametrize("algo", ["grpo", "ppo", "dapo", "gspo", "rloo", "reinforce_plus_plus"])
def test_every_key_exists_in_the_target_release(version: str, algo: str) -> None:
    """No unknown key, no `+` on an existing key, in any packaged release we render for."""
    from generator.config import config_from_overrides

    s = spec(algo=algo, version=version, n=1 if algo == "ppo" else 5, layout=DYNAMIC_MOE, model=MOE, gpus=32,
             nodes=4, train_batch_size=512, ppo_mini_batch_size=128)
    config = config_from_overrides(recipe_overrides(build_recipe(s)), version=version,
                                   config_name=composed_config_name(version))
    assert [(i.kind, i.override.key) for i in config.key_issues] == []
    assert config.schema == "ppo_megatron_trainer" and config.backend == "megatron"  # 0.8.0 on: ppo_trainer + model_engine=megatron


def test_dapo_extras_follow_the_schema() -> None:
    recipe = build_recipe(spec(algo="dapo", version="0.7.0"))
    keys = {s.key for s in recipe.settings}
    assert "algorithm.filter_groups.enable" not in keys  # not a main_ppo key in 0.7.0
    assert any("filter_groups" in note for note in recipe.notes)
    recipe = build_recipe(spec(algo="dapo"))  # the default release (0.9.1) has dynamic sampling on main_ppo
    assert "algorithm.filter_groups.enable" in {s.key for s in recipe.settings}
    assert recipe.notes == [] or not any("filter_groups" in note for note in recipe.notes)


@pytest.mark.parametrize("version, form", [("0.5.0", None), ("0.6.0", "reward_model"), ("0.7.0", "reward_model"),
                                           ("0.7.1", "reward"), ("0.8.0", "reward"), ("0.9.1", "reward")])
def test_dapo_overlong_buffer_goes_through_the_reward_managers_kwargs(version: str, form: str | None) -> None:
    """main_ppo reaches DAPO's overlong buffer as verl's own DAPO scripts do: up to 0.7.0
    reward_model.reward_manager=dapo and +reward_model.reward_kwargs.*; from the release with the
    `reward` group on, reward.reward_manager.name=dapo and +reward.reward_kwargs.* (which 0.9.1's
    reward-loop DAPO manager reads)."""
    recipe = build_recipe(spec(algo="dapo", version=version, response_len=2048))
    words = recipe_overrides(recipe)
    if form is not None:
        manager = "reward.reward_manager.name" if form == "reward" else "reward_model.reward_manager"
        assert f"{manager}=dapo" in words
        assert f"+{form}.reward_kwargs.overlong_buffer_cfg.len=512" in words
        assert f"+{form}.reward_kwargs.max_resp_len=2048" in words
        assert not any("overlong buffer" in note for note in recipe.notes)
        other = "reward_model." if form == "reward" else "reward."
        assert not any(word.lstrip("+").startswith(other) for word in words)
    else:
        assert not any("reward_kwargs" in word for word in words)
        assert any("overlong buffer" in note for note in recipe.notes)


def _scale_words(**kw) -> tuple[list[str], list[str]]:
    recipe = build_recipe(spec(**kw))
    return recipe_overrides(recipe), recipe.notes


def test_settings_of_verl_large_scripts_each_with_its_reason() -> None:
    from generator.model import find_model

    moonlight = find_model("moonlight")
    words, notes = _scale_words(model=moonlight, layout=Candidate(tp=1, pp=1, ep=8, etp=1), model_slug="moonlight")
    assert "actor_rollout_ref.model.trust_remote_code=True" in words and "data.trust_remote_code=True" in words
    assert any("run_moonlight16b_math_megatron.sh" in note for note in notes)
    qwen3_moe = find_model("qwen3-30b-a3b")
    long_moe = dict(model=qwen3_moe, layout=Candidate(tp=2, pp=1, ep=8, etp=1, use_dynamic_bsz=True,
                                                      token_budget=20480), gpus=32, nodes=4, prompt_len=2048,
                    response_len=16384, train_batch_size=64, ppo_mini_batch_size=16, model_slug="q3")
    words, notes = _scale_words(**long_moe)
    assert f"+{'actor_rollout_ref.actor.megatron.override_transformer_config.'}moe_router_dtype=fp32" in words
    assert "actor_rollout_ref.rollout.enforce_eager=True" in words
    assert "actor_rollout_ref.nccl_timeout=14400" in words
    assert sum("verl v0.7.0" in note for note in notes) >= 3
    words, _ = _scale_words()  # a dense 7B on one node needs none of them
    assert not any(k in w for w in words for k in ("trust_remote_code", "enforce_eager", "nccl_timeout", "moe_"))


def test_checkpoint_notes_come_from_the_model_registry() -> None:
    from generator.model import find_model

    dsv3 = find_model("deepseek-v3")
    recipe = build_recipe(spec(model=dsv3, layout=Candidate(tp=8, pp=16, ep=8, etp=1), gpus=256, nodes=32,
                               model_slug="dsv3"))
    assert any("FP8" in note for note in recipe.notes) and any("MTP" in note for note in recipe.notes)
