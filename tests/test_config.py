"""build_config / config_from_overrides on the packaged verl schemas."""

from __future__ import annotations

from pathlib import Path


from generator.config import build_config, config_from_overrides, is_hydra_rejection, needed_op
from generator.reading.launch_script import Invocation, Override, Provenance, Span

MEG = "ppo_megatron_trainer"


def _override(text: str, line: int, unknowns: tuple[str, ...] = ()) -> Override:
    op = "++" if text.startswith("++") else "+" if text.startswith("+") else "~" if text.startswith("~") else "="
    body = text.lstrip("+~")
    key, _, value = body.partition("=")
    return Override(text=text, key=key, op=op, value=value if "=" in body else None, line=line,  # type: ignore[arg-type]
                    word=Span(0, 0, line), provenance=Provenance("literal", None), unknowns=unknowns)


def _invocation(texts: list[str], *, config_name: str | None = MEG, config_path: str | None = "config",
                entry: str = "verl.trainer.main_ppo", unknown_lines: dict[int, str] | None = None) -> Invocation:
    unknown_lines = unknown_lines or {}
    overrides = [_override(t, i + 1, (unknown_lines[i],) if i in unknown_lines else ()) for i, t in enumerate(texts)]
    return Invocation(line=1, span=Span(0, 0, 1), entry=entry, entry_kind="module", launcher="python3 -m",
                      config_path=config_path, config_name=config_name, branch="live", passes_args=False,
                      overrides=overrides)


def _kinds(config) -> list[tuple[str, str]]:
    return [(i.kind, i.override.key) for i in config.key_issues]


# --- interpolations -----------------------------------------------------------------------------

def test_ref_parallel_sizes_follow_the_actor_from_0_7_0() -> None:
    overrides = ["actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4",
                 "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2"]
    new = config_from_overrides(overrides, version="0.7.0")
    assert new.get("actor_rollout_ref.ref.megatron.tensor_model_parallel_size") == 4
    assert new.get("actor_rollout_ref.ref.megatron.pipeline_model_parallel_size") == 2
    old = config_from_overrides(overrides, version="0.6.1")
    assert old.get("actor_rollout_ref.ref.megatron.tensor_model_parallel_size") == 1


def test_critic_micro_batch_interpolation_trap_a14() -> None:
    # The deprecated global key feeds the per-GPU key through ${oc.select:.ppo_micro_batch_size,null}.
    config = config_from_overrides(["critic.ppo_micro_batch_size=8"], version="0.7.0")
    assert config.get("critic.ppo_micro_batch_size_per_gpu") == 8
    unset = config_from_overrides([], version="0.7.0")
    assert unset.get("critic.ppo_micro_batch_size_per_gpu") is None
    assert "critic.ppo_micro_batch_size_per_gpu" in unset.values


def test_critic_sizes_follow_actor_and_rollout_n() -> None:
    config = config_from_overrides(["actor_rollout_ref.actor.ppo_mini_batch_size=32",
                                    "actor_rollout_ref.rollout.n=5"], version="0.7.0")
    assert config.get("critic.ppo_mini_batch_size") == 32
    assert config.get("actor_rollout_ref.actor.rollout_n") == 5


def test_unknown_values_propagate_through_interpolations() -> None:
    invocation = _invocation(["actor_rollout_ref.actor.megatron.tensor_model_parallel_size=<?unset:TP>"],
                             unknown_lines={0: "TP is not set"})
    config = build_config(invocation, version="0.7.0")
    assert config.key_issues == []
    assert config.unknown["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == "TP is not set"
    assert "actor_rollout_ref.ref.megatron.tensor_model_parallel_size" in config.unknown
    assert not config.known("actor_rollout_ref.ref.megatron.tensor_model_parallel_size")
    assert config.known("trainer.nnodes")


# --- Hydra semantics on the real schema -----------------------------------------------------------

def test_plus_on_null_default_is_allowed() -> None:
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity"
    config = config_from_overrides([f"+{key}=full"], version="0.7.0")
    assert config.key_issues == [] and config.get(key) == "full"
    # ...and required under an empty mapping in 0.4.1, where the key does not exist yet
    old = config_from_overrides([f"{key}=full"], version="0.4.1")
    assert _kinds(old) == [("unknown-key", key)]
    assert config_from_overrides([f"+{key}=full"], version="0.4.1").key_issues == []


def test_plus_on_existing_value_is_refused() -> None:
    config = config_from_overrides(["+trainer.nnodes=2"], version="0.7.0")
    assert _kinds(config) == [("plus-on-existing", "trainer.nnodes")]
    assert config.get("trainer.nnodes") == 1  # the refused override changed nothing
    assert config_from_overrides(["++trainer.nnodes=2"], version="0.7.0").get("trainer.nnodes") == 2


def test_unknown_key_suggests_the_close_key() -> None:
    config = config_from_overrides(["actor_rollout_ref.actor.ppo_mini_batchsize=64"], version="0.7.0")
    (issue,) = config.key_issues
    assert issue.kind == "unknown-key"
    assert issue.suggestion == "actor_rollout_ref.actor.ppo_mini_batch_size"
    assert is_hydra_rejection(issue)


def test_delete_semantics() -> None:
    config = config_from_overrides(["~trainer.logger", "~trainer.no_such_key",
                                    "~actor_rollout_ref.actor.ppo_micro_batch_size"], version="0.7.0")
    assert "trainer.logger" not in config.values
    # missing keys and null values cannot be deleted
    assert _kinds(config) == [("delete-missing", "trainer.no_such_key"),
                              ("delete-missing", "actor_rollout_ref.actor.ppo_micro_batch_size")]


def test_later_override_wins_and_set_by_points_at_it() -> None:
    invocation = _invocation(["trainer.nnodes=2", "data.train_batch_size=64", "trainer.nnodes=4"])
    config = build_config(invocation, version="0.7.0")
    assert config.get("trainer.nnodes") == 4
    assert config.set_by["trainer.nnodes"].line == 3
    assert config.line_of("data.train_batch_size") == 2
    assert config.line_of("trainer.n_gpus_per_node") is None


def test_grammar_errors_are_reported_and_skipped() -> None:
    config = config_from_overrides(["trainer.project_name=qwen3}", "trainer.nnodes=1,2",
                                    "trainer.n_gpus_per_node=4"], version="0.7.0")
    assert [k for k, _ in _kinds(config)] == ["grammar", "grammar"]
    assert config.get("trainer.n_gpus_per_node") == 4


def test_values_are_typed_as_hydra_types_them() -> None:
    config = config_from_overrides(["actor_rollout_ref.actor.optim.lr=1e-6", "trainer.logger=['console','wandb']",
                                    "trainer.val_before_train=False", "trainer.total_epochs=null"], version="0.7.0")
    assert config.get("actor_rollout_ref.actor.optim.lr") == 1e-6
    assert config.get("trainer.logger") == ["console", "wandb"]
    assert config.get("trainer.val_before_train") is False
    assert config.get("trainer.total_epochs") is None


def test_mapping_value_merges_into_the_subtree() -> None:
    config = config_from_overrides(
        ["actor_rollout_ref.actor.megatron={tensor_model_parallel_size:2,pipeline_model_parallel_size:2}"],
        version="0.7.0")
    assert config.key_issues == []
    assert config.get("actor_rollout_ref.actor.megatron.tensor_model_parallel_size") == 2
    assert config.get("actor_rollout_ref.actor.megatron.param_offload") is False  # sibling kept


# --- migrations in the config ----------------------------------------------------------------------

def test_renamed_key_names_its_replacement() -> None:
    config = config_from_overrides(["ray_init.num_cpus=8"], version="0.7.0")
    (issue,) = config.key_issues
    assert issue.kind == "renamed" and issue.suggestion == "ray_kwargs.ray_init.num_cpus"
    assert is_hydra_rejection(issue)  # without '+', Hydra refuses the old key


def test_removed_key_added_with_plus_is_reported_but_not_a_hydra_error() -> None:
    config = config_from_overrides(["+actor_rollout_ref.rollout.use_fire_sampling=True"], version="0.7.0")
    (issue,) = config.key_issues
    assert issue.kind == "removed"
    assert not is_hydra_rejection(issue)


def test_key_from_a_newer_release_says_when_it_arrives() -> None:
    config = config_from_overrides(["actor_rollout_ref.actor.use_prefix_grouper=True"], version="0.6.1")
    (issue,) = config.key_issues
    assert issue.kind == "unknown-key" and "added in" in issue.detail


def test_sync_rollout_is_a_bad_value_from_0_7_0() -> None:
    config = config_from_overrides(["actor_rollout_ref.rollout.mode=sync"], version="0.7.0")
    (issue,) = config.key_issues
    assert issue.kind == "bad-value" and issue.suggestion == "async"
    assert not is_hydra_rejection(issue)
    assert config_from_overrides(["actor_rollout_ref.rollout.mode=sync"], version="0.6.1").key_issues == []


# --- config choice, backend, recipes ----------------------------------------------------------------

def test_backend_from_config_name_and_strategy() -> None:
    assert config_from_overrides([], version="0.7.0").backend == "megatron"
    assert config_from_overrides([], version="0.7.0", config_name="ppo_trainer").backend == "fsdp"
    fsdp = build_config(_invocation([], config_name=None, config_path=None), version="0.7.0")
    assert fsdp.schema == "ppo_trainer" and fsdp.backend == "fsdp"
    assert build_config(_invocation([], config_name="ppo_megatron_trainer.yaml"), version="0.7.0").backend == "megatron"


def test_recipe_config_next_to_the_script(tmp_path: Path) -> None:
    config_dir = tmp_path / "recipe" / "demo" / "config"
    config_dir.mkdir(parents=True)
    (config_dir / "demo_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - file://verl/trainer/config\n"
        "defaults:\n  - ppo_megatron_trainer\n  - _self_\n"
        "data:\n  gen_batch_size: ${data.train_batch_size}\n"
        "algorithm:\n  filter_groups:\n    enable: False\n    metric: null\n"
        "trainer:\n  project_name: demo\n", encoding="utf-8")
    script_dir = tmp_path / "recipe" / "demo"
    invocation = _invocation(["algorithm.filter_groups.enable=True", "data.train_batch_size=32",
                              "algorithm.filter_groups.metric=acc", "algorithm.filter_groups.nope=1"],
                             config_name="demo_trainer", config_path="config",
                             entry="recipe.demo.main_demo")
    config = build_config(invocation, version="0.7.0", script_dir=str(script_dir))
    assert config.notes == []
    assert config.get("data.gen_batch_size") == 32
    assert config.get("trainer.project_name") == "demo"
    assert config.get("actor_rollout_ref.actor.strategy") == "megatron"  # from the PPO schema
    assert _kinds(config) == [("unknown-key", "algorithm.filter_groups.nope")]
    # <?PWD>/recipe/demo/config resolves against the script's ancestors
    invocation.config_path = "<?PWD>/recipe/demo/config"
    assert build_config(invocation, version="0.7.0", script_dir=str(script_dir)).get("data.gen_batch_size") == 32


def test_missing_recipe_config_falls_back_with_a_note(tmp_path: Path) -> None:
    invocation = _invocation(["trainer.nnodes=2"], config_name="nowhere_megatron", config_path="config")
    config = build_config(invocation, version="0.7.0", script_dir=str(tmp_path))
    assert config.notes and "not found" in config.notes[0]
    assert config.get("trainer.nnodes") == 2 and config.backend == "megatron"


# --- generated configs -------------------------------------------------------------------------------

def test_config_from_dict_adds_free_form_keys_and_flags_typos() -> None:
    config = config_from_overrides({
        "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules": ["core_attn"],
        "actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space": 4,
        "trainer.nnodes": 2,
        "trainer.nnode": 2,
    }, version="0.7.0")
    assert config.get("actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space") == 4
    assert config.set_by["actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space"].text.startswith("+")
    assert config.get("trainer.nnodes") == 2
    assert _kinds(config) == [("unknown-key", "trainer.nnode")]


def test_needed_op() -> None:
    assert needed_op("trainer.nnodes", version="0.7.0") == ""
    assert needed_op("actor_rollout_ref.rollout.engine_kwargs.vllm.foo", version="0.7.0") == "+"


def test_unfound_config_does_not_invent_unknown_keys(tmp_path: Path) -> None:
    invocation = _invocation(["algorithm.filter_groups.enable=True", "~algorithm.filter_groups.metric",
                              "+trainer.nnodes=2", "trainer.project_name=x}"],
                             config_name="dapo_trainer", config_path="config", entry="recipe.dapo.main_dapo")
    config = build_config(invocation, version="0.7.0", script_dir=str(tmp_path))
    # the recipe's own keys may exist in its config: not flagged; Hydra-certain problems still are
    assert _kinds(config) == [("plus-on-existing", "trainer.nnodes"), ("grammar", "trainer.project_name")]
    assert config.get("algorithm.filter_groups.enable") is True
    assert any("not checked" in note for note in config.notes)


def test_entry_config_from_hydra_main(tmp_path: Path) -> None:
    config_dir = tmp_path / "recipe" / "demo" / "config"
    config_dir.mkdir(parents=True)
    (config_dir / "demo_trainer.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\ndemo:\n  knob: 1\n", encoding="utf-8")
    invocation = _invocation(["demo.knob=2", "demo.nope=1"], config_name=None, config_path=None,
                             entry="recipe.demo.main_demo")
    config = build_config(invocation, version="0.7.0", entry_config=(str(config_dir), "demo_trainer"))
    assert config.notes == []
    assert config.get("demo.knob") == 2 and config.backend == "fsdp"
    assert _kinds(config) == [("unknown-key", "demo.nope")]


def test_suggestion_across_parents() -> None:
    config = config_from_overrides(["actor_rollout_ref.actor.megatron.tensor_model_paralel_size=2",
                                    "trainer.n_gpu_per_node=8"], version="0.7.0")
    assert [i.suggestion for i in config.key_issues] == [
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "trainer.n_gpus_per_node"]


def test_missing_mandatory() -> None:
    from generator.config import missing_mandatory

    assert "actor_rollout_ref.rollout.name" in missing_mandatory(config_from_overrides([], version="0.7.0"))
    named = config_from_overrides(["actor_rollout_ref.rollout.name=vllm"], version="0.7.0")
    assert "actor_rollout_ref.rollout.name" not in missing_mandatory(named)
    assert missing_mandatory(config_from_overrides([], version="0.4.1")) == []


def test_recipe_entry_uses_its_own_hydra_main_config_found_next_to_the_script(tmp_path: Path) -> None:
    # A checkout laid out as verl's: the script runs recipe.demo.main_demo with no --config-name,
    # so the entry's @hydra.main names the config. Nothing here is imported or executed.
    entry_dir = tmp_path / "repo" / "recipe" / "demo"
    (entry_dir / "config").mkdir(parents=True)
    (entry_dir / "main_demo.py").write_text(
        "import hydra\n\n@hydra.main(config_path='config', config_name='demo_trainer', version_base=None)\n"
        "def main(config):\n    raise SystemExit('never run')\n", encoding="utf-8")
    (entry_dir / "config" / "demo_trainer.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\ndemo:\n  knob: 1\n", encoding="utf-8")
    scripts = entry_dir / "scripts"
    scripts.mkdir()
    invocation = _invocation(["demo.knob=2", "demo.nope=1"], config_name=None, config_path=None,
                             entry="recipe.demo.main_demo")
    config = build_config(invocation, version="0.7.0", script_dir=str(scripts))
    assert not config.approximate and config.notes == []
    assert config.get("demo.knob") == 2
    assert _kinds(config) == [("unknown-key", "demo.nope")]

    # Without the entry module beside the script, the PPO defaults stand in and say so.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    approximate = build_config(invocation, version="0.7.0", script_dir=str(elsewhere))
    assert approximate.approximate and any("not checked" in note for note in approximate.notes)
