"""Model registry, name matching, config.json loading, GPU specs."""

from __future__ import annotations

import json

import pytest

from generator.base.errors import InputError
from generator.layout.hardware import gpu_spec
from generator.model import (find_model, kv_cache_bytes_per_token, list_models, load_model_config, model_slug,
                              resolve_model, total_params)


@pytest.mark.parametrize("typed, expected", [
    ("qwen2-7b", "Qwen2-7B"),
    ("Qwen/Qwen2-7B-Instruct", "Qwen2-7B"),
    ("qwen2.5-7b-instruct", "Qwen2.5-7B"),
    ("QWEN2_5-7B", "Qwen2.5-7B"),
    ("llama3.1-8b", "Llama-3.1-8B"),
    ("Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
    ("deepseek-v3", "DeepSeek-V3"),
    ("deepseek-ai/DeepSeek-V3-0324", "DeepSeek-V3"),
    ("/models/Qwen2.5-7B-Instruct", "Qwen2.5-7B"),
    ("/models/Qwen2.5-7B-Instruct/", "Qwen2.5-7B"),
    ("Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B"),
    ("Qwen1.5-MoE-A2.7B-Chat", "Qwen1.5-MoE-A2.7B"),
    ("qwen2-57b", "Qwen2-57B-A14B"),
])
def test_find_model_matches_names_users_type(typed, expected):
    facts = find_model(typed)
    assert facts is not None and facts.name == expected


def test_digit_separators_keep_models_apart():
    # Dropping every separator would make these two the same key.
    assert find_model("qwen2.5-7b").name == "Qwen2.5-7B"
    assert find_model("qwen2-57b").name == "Qwen2-57B-A14B"


def test_flavour_picks_the_matching_max_position():
    assert find_model("Qwen/Qwen2.5-7B").max_position_embeddings == 32768  # not stated: conservative
    assert find_model("Qwen2.5-7B-Base").max_position_embeddings == 131072
    assert find_model("Qwen2.5-7B-Instruct").max_position_embeddings == 32768


def test_unknown_model_suggests_its_own_family_and_kind_nearest_size_first():
    assert find_model("qwen9-1b") is None
    with pytest.raises(InputError, match=r"unknown model 'qwen2\.5-8b'; similar known models \(same family, dense\): "
                                         r"Qwen2\.5-7B, "):
        resolve_model("qwen2.5-8b")
    with pytest.raises(InputError) as moe:
        resolve_model("mistralai/Mixtral-8x22B-v0.1")
    assert "(same family, mixture-of-experts): Mixtral-8x7B;" in str(moe.value)


@pytest.mark.parametrize("name, misleading", [
    ("mistralai/Mistral-7B-v0.1", "Mixtral"),  # a mixture of experts for a dense model, by spelling
    ("google/gemma-2-9b", "MoE"),  # Qwen1.5-MoE-A2.7B for a 9B dense model
    ("google/gemma-2-9b", "Llama-3.2-1B"),  # a 1B model for a 9B one
    ("google/gemma-2-9b", "VL"),  # a vision-language model for a text one (Qwen2.5-VL-7B came first)
])
def test_suggestions_never_cross_kind_or_size(name, misleading):
    with pytest.raises(InputError) as error:
        resolve_model(name)
    assert misleading not in str(error.value)
    assert "dense, similar size" in str(error.value)


def test_a_vision_language_name_is_offered_vision_language_models():
    assert "similar known models (same family, dense): Qwen2.5-VL-7B;" in _refusal("Qwen/Qwen2-VL-7B-Instruct")


def test_a_name_sharing_nothing_gets_no_suggestion_but_how_to_point_at_a_config():
    with pytest.raises(InputError) as error:
        resolve_model("gpt-5")
    message = str(error.value)
    assert "similar" not in message and "Qwen" not in message
    assert "config.json" in message and "\n" not in message


def test_an_unknown_hub_id_says_how_to_point_at_a_config_json_or_fetch_one():
    message = _refusal("org/name")
    assert "\n" not in message and "none of the" in message
    assert "at its config.json" in message and "hf download org/name config.json" in message
    assert "hf download" not in _refusal("gpt-5")  # not an id: no hub to fetch from


def _refusal(value: str) -> str:
    with pytest.raises(InputError) as error:
        resolve_model(value)
    return str(error.value)


def test_a_model_path_says_what_is_wrong_with_it(tmp_path, monkeypatch):
    """A folder without config.json, a file that is not one and a missing path were all "unknown
    model ...: none of the 27 known models is of its family or size" (issue 36)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "weights").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    assert _refusal("weights").startswith("weights: a folder without config.json; point --model at")
    assert _refusal(str(tmp_path / "weights")).startswith(f"{tmp_path / 'weights'}: a folder without config.json")
    assert _refusal("notes.txt").startswith("notes.txt: not a model's config.json")
    assert _refusal("./models/gone/").startswith("./models/gone/: no such file or folder")
    assert _refusal("gone.json").startswith("gone.json: no such file or folder")
    # a path's last part still names a known model where the path is not here (as before)
    assert resolve_model("/models/Qwen2.5-7B-Instruct").name == "Qwen2.5-7B"


_DESCRIBABLE = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 4096,
                "vocab_size": 32000}


@pytest.mark.parametrize("cfg, why", [
    ({"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 2560, "num_hidden_layers": 64},
     "state-space or linear-attention layers"),
    ({"architectures": ["GPTBigCodeForCausalLM"], "model_type": "gpt_bigcode", "n_embd": 2048, "n_layer": 24},
     "no 'hidden_size'"),
    ({"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "is_encoder_decoder": True, **_DESCRIBABLE},
     "an encoder-decoder"),
    ({"architectures": ["JambaForCausalLM"], "model_type": "jamba_like", **_DESCRIBABLE,
      "layers_block_type": ["mamba", "attention"]}, "'mamba' layers (layers_block_type)"),
])
def test_an_architecture_the_memory_model_cannot_describe_is_refused_by_name(tmp_path, cfg, why):
    """Not "missing 'hidden_size'; is this a Hugging Face config.json?" for a file that plainly is one."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    message = _refusal(str(path))
    named = f"{cfg['architectures'][0]} ({cfg['model_type']})"
    assert message.startswith(f"{path}: {named} is not an architecture the memory model can describe ({why}); ")
    assert "\n" not in message and "is this a Hugging Face" not in message


def test_sliding_window_layers_are_attention_the_model_describes(tmp_path):
    cfg = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", **_DESCRIBABLE,
           "layer_types": ["sliding_attention", "full_attention"] * 2}
    (tmp_path / "gemma-2-tiny").mkdir()
    (tmp_path / "gemma-2-tiny" / "config.json").write_text(json.dumps(cfg))
    assert load_model_config(tmp_path / "gemma-2-tiny").name == "gemma-2-tiny"  # named by its folder


def test_a_version_word_is_part_of_the_name_when_nothing_else_is():
    """`-v0.1` after a size is a release suffix; `DeepSeek-V2` alone is another model than V3."""
    assert find_model("deepseek-v2") is None
    assert find_model("deepseek-ai/DeepSeek-V3").name == "DeepSeek-V3"
    assert find_model("mistralai/Mixtral-8x7B-Instruct-v0.1").name == "Mixtral-8x7B"


def test_registry_reproduces_published_parameter_counts():
    import yaml

    from generator.base.resources import data_dir

    raw = {m["name"]: m for m in yaml.safe_load((data_dir() / "models.yaml").read_text())["models"]}
    models = list_models()
    assert len(models) == 27  # Qwen2.5-Math-7B and Llama-3.2-1B (issue 25)
    for facts in models:
        check = raw[facts.name]["published_check"]
        assert total_params(facts) - facts.vision_params == check["total_params"], facts.name
        if "active_params_b" in check:
            active_b = round(total_params(facts, active=True) / 1e9, 3)
            assert active_b == pytest.approx(check["active_params_b"], abs=0.002)
        kv = raw[facts.name]["kv_cache_bytes_per_token_bf16"]
        assert kv_cache_bytes_per_token(facts) == kv, facts.name


def test_kv_cache_stops_shrinking_past_the_kv_heads():
    qwen = find_model("qwen2-7b")  # 4 KV heads
    assert kv_cache_bytes_per_token(qwen, 4) == kv_cache_bytes_per_token(qwen, 1) / 4
    assert kv_cache_bytes_per_token(qwen, 8) == kv_cache_bytes_per_token(qwen, 4)
    dsv3 = find_model("deepseek-v3")  # MLA latent cache is replicated
    assert kv_cache_bytes_per_token(dsv3, 8) == kv_cache_bytes_per_token(dsv3, 1) == 61 * (512 + 64) * 2


def test_model_slug():
    assert model_slug(find_model("qwen2-7b")) == "qwen2-7b"
    assert model_slug(find_model("qwen2.5-7b")) == "qwen2_5-7b"


def _write(tmp_path, cfg):
    path = tmp_path / "m"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def test_load_dense_config_and_directory_lookup(tmp_path):
    cfg = {"_name_or_path": "org/Tiny-1B", "model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 4,
           "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 4096, "vocab_size": 32000,
           "max_position_embeddings": 4096, "tie_word_embeddings": True}
    directory = _write(tmp_path, cfg)
    facts = find_model(str(directory))
    assert (facts.name, facts.head_dim, facts.qkv_bias, facts.is_moe) == ("Tiny-1B", 128, True, False)
    assert load_model_config(directory / "config.json") == facts
    # h=1024, kv width 2·128=256: attn q,o 2·1024·1024 + k,v 2·1024·256 (+bias 1024+512) ; mlp 3·1024·4096 ; norms 2048
    per_layer = 2 * 1024 * 1024 + 2 * 1024 * 256 + 1024 + 512 + 3 * 1024 * 4096 + 2048
    assert total_params(facts) == 32000 * 1024 + 1024 + 4 * per_layer


def test_load_moe_mla_and_vl_configs(tmp_path):
    dsv3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
            "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280,
            "max_position_embeddings": 163840, "n_routed_experts": 256, "num_experts_per_tok": 8,
            "moe_intermediate_size": 2048, "n_shared_experts": 1, "first_k_dense_replace": 3, "q_lora_rank": 1536,
            "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
    facts = load_model_config(_write(tmp_path, dsv3))
    assert total_params(facts) == total_params(find_model("deepseek-v3"))
    vl = {"model_type": "qwen3_vl_moe", "text_config": {
        "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": 128, "intermediate_size": 6144, "vocab_size": 151936, "max_position_embeddings": 262144,
        "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768}}
    sub = tmp_path / "vl"
    sub.mkdir()
    (sub / "config.json").write_text(json.dumps(vl))
    facts = load_model_config(sub)
    assert (facts.num_layers, facts.num_experts, facts.qk_norm, facts.head_dim) == (48, 128, True, 128)


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"hidden_size": 8}', "missing 'num_attention_heads'"),
    ('{"hidden_size": -8, "num_attention_heads": 2}', "'hidden_size' must be a positive integer"),
])
def test_bad_config_files_are_one_line_input_errors(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        load_model_config(path)
    with pytest.raises(InputError):
        resolve_model(str(path))
    assert find_model(str(path)) is None  # find_model falls back to the name, which matches nothing


def test_gpu_specs():
    assert gpu_spec("H100").memory_gib == pytest.approx(79.6, abs=0.1)
    assert gpu_spec("h20").memory_gib == pytest.approx(95.6, abs=0.1)
    assert gpu_spec("a100").name == "a100-80g"
    assert gpu_spec("h100", 94).memory_gib == 94
    assert gpu_spec(None, 48).memory_gib == 48
    with pytest.raises(InputError, match="unknown GPU 'h300'"):
        gpu_spec("h300")
    with pytest.raises(InputError):
        gpu_spec("h100", -1)
