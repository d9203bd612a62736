"""`gen import SCRIPT --name NAME`: a legacy script becomes a recipe that re-renders to the
same training setup."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.library.store import read_recipe

runner = CliRunner()

# Written for these tests in the style of verl's Megatron examples: knobs, a string variable
# split into the call, a `:-` default, run-specific names and paths.
LEGACY = r"""#!/usr/bin/env bash
set -xeuo pipefail
export CUDA_DEVICE_MAX_CONNECTIONS=1
TP=${TP:-2}
PP=2
NODES=1
offload=True
train_files="['$HOME/data/gsm8k/train.parquet']"
EXTRA="actor_rollout_ref.actor.optim.lr_warmup_steps=10 actor_rollout_ref.actor.clip_ratio_c=5.0"

python3 -m verl.trainer.main_ppo --config-path=config --config-name=ppo_megatron_trainer \
    algorithm.adv_estimator=grpo \
    data.train_files="$train_files" \
    data.val_files="$train_files" \
    data.train_batch_size=256 \
    data.max_prompt_length=1024 \
    data.max_response_length=2048 \
    data.filter_overlong_prompts=True \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.optim.lr=2e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$PP \
    actor_rollout_ref.actor.megatron.param_offload=$offload \
    actor_rollout_ref.actor.megatron.optimizer_offload=$offload \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.55 \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.megatron.param_offload=$offload \
    algorithm.use_kl_in_reward=False \
    trainer.logger='["console","wandb"]' \
    trainer.project_name=my_project \
    trainer.experiment_name=qwen25_7b_try3 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=$NODES \
    trainer.save_freq=20 \
    trainer.total_epochs=3 $EXTRA "$@"
"""

RUN_SPECIFIC = ("trainer.project_name", "trainer.experiment_name", "data.train_files", "data.val_files",
                "trainer.total_epochs", "trainer.save_freq", "trainer.logger")


@pytest.fixture
def legacy(tmp_path) -> Path:
    path = tmp_path / "run_legacy.sh"
    path.write_text(LEGACY)
    return path


def import_cli(script: Path, library: Path, *extra: str):
    return runner.invoke(app, ["import", str(script), "--name", "my-7b", "--library", str(library),
                               "--verl-version", "0.7.0", *extra])


def test_import_writes_a_valid_recipe_with_the_scripts_numbers(legacy, tmp_path):
    library = tmp_path / "lib"
    result = import_cli(legacy, library)
    assert result.exit_code == 0, result.output
    recipe = read_recipe(library / "my-7b.yaml")
    cfg = recipe.config
    assert (recipe.model, recipe.algorithm, recipe.gpus, recipe.nodes) == ("Qwen2.5-7B", "grpo", 8, 1)
    assert recipe.model_path == "Qwen/Qwen2.5-7B-Instruct"
    assert (cfg.layout.tp, cfg.layout.pp, cfg.rollout_tp, cfg.n) == (2, 2, 2, 8)
    assert (cfg.train_batch_size, cfg.ppo_mini_batch_size, cfg.micro_batch_per_gpu) == (256, 64, 2)
    assert cfg.log_prob_micro_batch_per_gpu == 4 and cfg.gpu_memory_utilization == 0.55
    assert (cfg.prompt_len, cfg.response_len) == (1024, 2048)
    assert (cfg.offload.param, cfg.offload.optimizer, cfg.offload.grad) == (True, True, False)
    # keys outside the structure survive verbatim; run-specific ones do not
    assert cfg.overrides["actor_rollout_ref.actor.optim.lr"] == 2e-6
    assert cfg.overrides["actor_rollout_ref.actor.optim.lr_warmup_steps"] == 10
    assert cfg.overrides["actor_rollout_ref.actor.clip_ratio_c"] == 5.0
    assert not set(RUN_SPECIFIC) & set(cfg.overrides)
    assert "imported by gen import from run_legacy.sh" in recipe.provenance
    assert (library / "my-7b.yaml").read_text().startswith("# Imported from ")


def test_imported_recipe_re_renders_the_same_training_setup(legacy, tmp_path):
    from generator.config import build_config
    from generator.library.convert import to_config
    from generator.reading.shell import read_file

    library = tmp_path / "lib"
    assert import_cli(legacy, library).exit_code == 0
    recipe = read_recipe(library / "my-7b.yaml")
    original = build_config(read_file(str(legacy)).invocations[0], version="0.7.0")
    again = to_config(recipe, "0.7.0")
    differ = [key for key in original.set_by
              if key not in RUN_SPECIFIC and key not in original.unknown
              and original.values.get(key) != again.values.get(key)]
    assert differ == []


def test_import_refuses_to_overwrite_without_force(legacy, tmp_path):
    library = tmp_path / "lib"
    assert import_cli(legacy, library).exit_code == 0
    before = (library / "my-7b.yaml").read_text()
    again = import_cli(legacy, library)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert (library / "my-7b.yaml").read_text() == before
    assert import_cli(legacy, library, "--force").exit_code == 0


@pytest.mark.parametrize("edit, words", [
    (lambda t: t.replace("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP",
                         "actor_rollout_ref.actor.strategy=fsdp"), "only Megatron launches"),
    (lambda t: t.replace("--config-name=ppo_megatron_trainer", "--config-name=ppo_trainer"), "only Megatron"),
    (lambda t: t.replace("Qwen/Qwen2.5-7B-Instruct", "acme/secret-model-13b"), "not in the registry"),
    (lambda t: t.replace("data.train_batch_size=256", "data.train_batch_size=$1"), "not known statically"),
    (lambda t: t.replace("algorithm.adv_estimator=grpo", "algorithm.adv_estimator=remax"), "no recipe algorithm"),
    (lambda t: t.replace("python3 -m verl.trainer.main_ppo", "echo"), "no trainer call"),
])
def test_import_errors_are_one_line_and_write_nothing(tmp_path, edit, words):
    script = tmp_path / "run.sh"
    script.write_text(edit(LEGACY))
    library = tmp_path / "lib"
    result = import_cli(script, library)
    assert result.exit_code == 2, result.output
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (library / "my-7b.yaml").exists()


def test_import_with_a_gpu_type(legacy, tmp_path):
    library = tmp_path / "lib"
    result = import_cli(legacy, library, "--gpu", "H20")
    assert result.exit_code == 0, result.output
    recipe = read_recipe(library / "my-7b.yaml")
    assert recipe.gpu == "h20" and not recipe.gpu_assumed and "h100' assumed" not in result.stderr
    # without --gpu the GPU is an assumption the recipe carries (its memory verdict is then a note)
    plain = import_cli(legacy, tmp_path / "plain")
    assert plain.exit_code == 0 and "h100' assumed" in plain.stderr
    assumed = read_recipe(tmp_path / "plain" / "my-7b.yaml")
    assert assumed.gpu == "h100" and assumed.gpu_assumed
    bad = import_cli(legacy, tmp_path / "other", "--gpu", "tpu-v9")
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_import_of_a_missing_file(tmp_path):
    result = import_cli(tmp_path / "nope.sh", tmp_path / "lib")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1


def test_import_bad_name(legacy, tmp_path):
    result = runner.invoke(app, ["import", str(legacy), "--name", "Bad Name", "--library", str(tmp_path)])
    assert result.exit_code == 2 and "lower-case" in result.stderr


def test_model_folder_under_an_unknown_home_still_names_the_model(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(LEGACY.replace("actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct",
                                     "actor_rollout_ref.model.path=$HOME/models/Qwen2.5-7B-Instruct"))
    result = import_cli(script, tmp_path / "lib")
    assert result.exit_code == 0, result.output
    recipe = read_recipe(tmp_path / "lib" / "my-7b.yaml")
    assert recipe.model == "Qwen2.5-7B" and recipe.model_path is None
    assert "depends on the environment" in result.stderr


def test_keys_verl_refuses_are_left_out_with_a_note(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(LEGACY.replace("algorithm.use_kl_in_reward=False \\",
                                     "algorithm.use_kl_in_reward=False \\\n"
                                     "    algorithm.filter_groups.enable=True \\\n"
                                     "    actor_rollout_ref.rollout.mode=sync \\"))
    result = import_cli(script, tmp_path / "lib")
    assert result.exit_code == 0, result.output
    overrides = read_recipe(tmp_path / "lib" / "my-7b.yaml").config.overrides
    assert "algorithm.filter_groups.enable" not in overrides  # a key of DAPO's own trainer config
    assert "actor_rollout_ref.rollout.mode" not in overrides  # sync is gone in 0.7.0
    assert "left out algorithm.filter_groups.enable" in result.stderr
    assert "left out actor_rollout_ref.rollout.mode" in result.stderr
    assert overrides["actor_rollout_ref.actor.clip_ratio_c"] == 5.0  # the rest stays


def test_a_layout_megatron_cannot_build_is_refused(tmp_path):
    script = tmp_path / "run.sh"
    # 8 GPUs with TP 2 x PP 2 leave DP 2, but EP 8 with ETP 1 x PP 2 needs 16 GPUs
    script.write_text(LEGACY.replace("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen3-30B-A3B")
                      .replace("algorithm.use_kl_in_reward=False \\",
                               "algorithm.use_kl_in_reward=False \\\n"
                               "    actor_rollout_ref.actor.megatron.expert_model_parallel_size=8 \\\n"
                               "    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1 \\"))
    result = import_cli(script, tmp_path / "lib")
    assert result.exit_code == 2
    assert "does not pass the checks for verl 0.7.0" in result.stderr and "VP303" in result.stderr
    assert not (tmp_path / "lib" / "my-7b.yaml").exists()


# Every fourth Megatron script in the default tier; all of them under `slow`.
@pytest.mark.parametrize("every", [pytest.param(4, id="sample"),
                                   pytest.param(1, id="all", marks=pytest.mark.slow)])
def test_corpus_scripts_import_or_refuse_in_one_line_and_imports_render(corpus_dir, tmp_path, every):
    from generator.base.errors import InputError
    from generator.library.convert import to_spec
    from generator.library.importer import import_script
    from generator.library.store import load_library
    from generator.render import generate

    scripts = sorted(p for p in (corpus_dir / "scripts").rglob("*.sh")
                     if b"megatron" in p.read_bytes())[::every]
    imported = 0
    for index, path in enumerate(scripts):
        try:
            import_script(str(path), name=f"c{index}", library=str(tmp_path), version="0.7.0")
            imported += 1
        except InputError as err:
            assert "\n" not in str(err)
    # 55 of 138 when written, 67 of 138 (16 of the 35 sampled) now: FSDP calls and models outside
    # the registry are refused
    assert imported >= 50 // every
    user = [r for r in load_library(tmp_path).recipes.values() if r.origin == "user"]
    assert len(user) == imported
    for recipe in user:
        generate(to_spec(recipe).spec, filename="run.sh")  # raises if the rules are not clean


@pytest.mark.parametrize("extra, algo", [
    ("actor_rollout_ref.actor.policy_loss.loss_mode=gspo", "gspo"),
    ("actor_rollout_ref.actor.clip_ratio_low=0.2 actor_rollout_ref.actor.clip_ratio_high=0.28 "
     "actor_rollout_ref.actor.use_kl_loss=False", "dapo"),
    # verl's DeepSeek-V3 GRPO example: clip-higher, but the KL loss stays: GRPO, not DAPO
    ("actor_rollout_ref.actor.clip_ratio_low=0.2 actor_rollout_ref.actor.clip_ratio_high=0.28", "grpo"),
    ("actor_rollout_ref.actor.clip_ratio_low=0.1 actor_rollout_ref.actor.clip_ratio_high=0.1 "
     "actor_rollout_ref.actor.use_kl_loss=False", "grpo"),
])
def test_import_and_recipe_from_name_the_same_algorithm(tmp_path, extra, algo):
    """`gen import` and `gen recipe --from` read the algorithm by one rule (GSPO is GRPO's
    estimator with the gspo loss; DAPO decouples the clip range without a KL loss)."""
    script = tmp_path / "run.sh"
    text = LEGACY.replace("$EXTRA", extra)
    if "use_kl_loss" in extra:  # the case sets it itself: one value per key
        text = text.replace("    actor_rollout_ref.actor.use_kl_loss=True \\\n", "", 1)
    script.write_text(text)
    assert import_cli(script, tmp_path / "lib").exit_code == 0
    assert read_recipe(tmp_path / "lib" / "my-7b.yaml").algorithm == algo
    result = runner.invoke(app, ["recipe", "--from", str(script), "-o", "-", "--verl-version", "0.7.0"])
    assert result.exit_code == 0, result.output
    assert "algorithm.adv_estimator=grpo" in result.stdout
    assert f"# Qwen2.5-7B {algo.upper()} on 8 GPUs" in result.stdout


@pytest.mark.parametrize("name, words", [
    ("..", "must start with a letter or a digit"),
    (".hidden", "must start with a letter or a digit"),
    ("-rf", "must start with a letter or a digit"),
    ("a..b", "may not contain '..'"),
    ("a" * 251, "at most 250 characters"),
    ("Upper", "only lower-case letters"),
])
def test_import_refuses_names_that_make_bad_file_names(legacy, tmp_path, name, words):
    library = tmp_path / "lib"
    result = runner.invoke(app, ["import", str(legacy), "--name", name, "--library", str(library),
                                 "--verl-version", "0.7.0"])
    assert result.exit_code == 2
    assert words in result.output and len(result.output.strip().splitlines()) == 1
    assert not library.exists() or list(library.iterdir()) == []


def test_import_accepts_the_longest_name(legacy, tmp_path):
    library = tmp_path / "lib"
    result = runner.invoke(app, ["import", str(legacy), "--name", "a" * 250, "--library", str(library),
                                 "--verl-version", "0.7.0"])
    assert result.exit_code == 0, result.output
    assert (library / ("a" * 250 + ".yaml")).is_file()


@pytest.fixture
def no_installed_verl(monkeypatch):
    monkeypatch.setattr("generator.schema.resolution.installed_verl", lambda: None)


def test_import_targets_the_verl_the_script_runs_as_gen_check_resolves_it(tmp_path, no_installed_verl):
    """No --verl-version: the project file wins; a vendored fork's recipe targets the fork's
    packaged base release and says so (recipes render for packaged releases only)."""
    pinned = tmp_path / "pinned"
    pinned.mkdir()
    (pinned / ".verl-gen.toml").write_text('verl-version = "0.6.1"\n')
    (pinned / "run_legacy.sh").write_text(LEGACY)
    result = runner.invoke(app, ["import", str(pinned / "run_legacy.sh"), "--name", "pinned",
                                 "--library", str(tmp_path / "lib")])
    assert result.exit_code == 0, result.output
    assert read_recipe(tmp_path / "lib" / "pinned.yaml").verl_versions == ("0.6.1",)

    fork = Path(__file__).resolve().parent / "fixtures" / "projects" / "vendored_fork" / "verl"
    shutil.copytree(fork, tmp_path / "proj" / "verl")
    (tmp_path / "proj" / ".git").mkdir()  # a checkout: the vendored verl is its project's (issue 34)
    (tmp_path / "proj" / "scripts").mkdir()
    script = tmp_path / "proj" / "scripts" / "run_legacy.sh"
    script.write_text(LEGACY)
    result = runner.invoke(app, ["import", str(script), "--name", "forked", "--library", str(tmp_path / "lib")])
    assert result.exit_code == 0, result.output
    assert read_recipe(tmp_path / "lib" / "forked.yaml").verl_versions == ("0.4.1",)
    assert f"the project's verl at {tmp_path / 'proj' / 'verl'}" in result.output
    assert "the recipe targets packaged verl 0.4.1" in result.output


def test_import_refuses_an_unknown_release_before_reading(legacy, tmp_path):
    result = runner.invoke(app, ["import", str(legacy), "--name", "x", "--library", str(tmp_path / "lib"),
                                 "--verl-version", "0.7"])
    assert result.exit_code == 2 and "unknown verl release '0.7'" in result.output
    assert not (tmp_path / "lib").exists()
