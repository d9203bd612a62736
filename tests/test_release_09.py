"""verl 0.8 / 0.9.x as users run it, on self-written fixtures: a 0.7-style DAPO script judged
against 0.9.x loses its reward manager and overlong penalty (VK612) and `gen migrate` moves it to
`reward.*`; the other config moves v0.7.0 -> v0.9.0 (skip twice, legacy workers, grad_offload,
the weight-sync bucket); migrate starts from the release the script is resolved to; the memory
model reads each release's defaults from its packaged schema. Real Hydra composes the migrated
script against verl 0.9.0's config tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

FIX = Path(__file__).resolve().parent / "fixtures" / "release09"


def _gen(*args: str):
    return CliRunner().invoke(app, list(args))


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(FIX / name, target)
    return target


def _codes(output: str, code: str) -> list[str]:
    return [line for line in output.splitlines() if f" {code} " in line]


def _overrides(path: Path) -> list[str]:
    from generator.fix.engine import default_reader

    script = default_reader()(path.read_bytes(), str(path))
    return [o.text for inv in script.invocations for o in inv.overrides]


def test_a_0_7_style_dapo_script_on_0_9_loses_reward_manager_and_overlong_penalty(tmp_path: Path) -> None:
    script = _copy("dapo_0_7_style.sh", tmp_path)
    result = _gen("check", "--verl-version", "0.9.1", str(script))
    lost = _codes(result.output, "VK612")
    assert result.exit_code == 1
    manager = next(line for line in lost if "reward_model.reward_manager=dapo" in line)
    assert "the reward manager is lost" in manager and "reward.reward_manager.name=naive" in manager
    assert "gen migrate --to 0.9.1" in manager
    overlong = next(line for line in lost if "overlong_buffer_cfg.enable=True" in line)
    assert "the overlong penalty is lost" in overlong and "reward.reward_kwargs.*" in overlong
    assert any("custom_reward_function.path" in line for line in lost)
    assert "checked against verl 0.9.1" in result.output


@pytest.mark.parametrize("release", ["0.7.0", "0.7.1", "0.8.0"])
def test_releases_whose_main_ppo_migrates_the_legacy_keys_report_nothing(tmp_path: Path, release: str) -> None:
    """0.7.1 and 0.8.0 call migrate_legacy_reward_impl in main_ppo; 0.7.0 has no reward group."""
    script = _copy("dapo_0_7_style.sh", tmp_path)
    result = _gen("check", "--verl-version", release, str(script))
    assert _codes(result.output, "VK612") == []


def test_the_fully_async_entry_still_migrates(tmp_path: Path) -> None:
    text = (FIX / "dapo_0_7_style.sh").read_text().replace(
        "verl.trainer.main_ppo", "verl.experimental.fully_async_policy.fully_async_main")
    script = tmp_path / "async.sh"
    script.write_text(text)
    assert _codes(_gen("check", "--verl-version", "0.9.1", str(script)).output, "VK612") == []


def test_migrate_to_0_9_1_moves_the_reward_keys_and_the_result_is_read(tmp_path: Path, verl_config_dir: Path) -> None:
    script = _copy("dapo_0_7_style.sh", tmp_path)
    result = _gen("migrate", "--to", "0.9.1", "--write", str(script))
    assert "0.7.0 → 0.9.1" in result.output, result.output
    words = _overrides(script)
    for word in ("reward.reward_manager.name=dapo", "+reward.reward_kwargs.overlong_buffer_cfg.enable=True",
                 "+reward.reward_kwargs.overlong_buffer_cfg.len=512", "+reward.reward_kwargs.max_resp_len=2048",
                 "reward.custom_reward_function.path=/my/reward.py",
                 "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=1024"):
        assert word in words, (word, words)
    assert not any(w.lstrip("+").startswith(("reward_model.", "custom_reward_function.")) for w in words)
    assert not any("use_legacy_worker_impl" in w for w in words)  # 'disable' = the only workers from 0.8.0
    after = _gen("check", "--verl-version", "0.9.1", str(script))
    assert _codes(after.output, "VK612") == [] and _codes(after.output, "VK604") == []
    # verl 0.9.0's own config tree composes the migrated call, and holds what the DAPO manager reads
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(verl_config_dir / "v0.9.0" / "verl" / "trainer" / "config"),
                               version_base=None):
        cfg = compose("ppo_megatron_trainer", overrides=[w.replace("<?unset:HOME>", "/home/u") for w in words])
    GlobalHydra.instance().clear()
    assert cfg.reward.reward_manager.name == "dapo"
    assert cfg.reward.reward_kwargs.overlong_buffer_cfg.len == 512
    assert cfg.reward.reward_kwargs.max_resp_len == 2048
    assert cfg.actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes == 1024


def test_migrate_to_0_8_0_uses_the_reward_group_too(tmp_path: Path) -> None:
    script = _copy("dapo_0_7_style.sh", tmp_path)
    result = _gen("migrate", "--to", "0.8.0", str(script))
    assert "reward_model.reward_manager → reward.reward_manager.name (since 0.7.1)" in result.output
    assert "deprecated since 0.7.1" in result.output


def test_moves_of_0_8_and_0_9_chain_and_never_read_keys_are_dropped(tmp_path: Path) -> None:
    """rollout.skip_rollout moved twice (rollout.skip.enable in 0.8.0, skip.rollout.enable in 0.9.0);
    grad_offload was never read (removed in 0.9.1); use_legacy_worker_impl=disable is what 0.8.0 always does."""
    script = _copy("moves_0_7_1.sh", tmp_path)
    to_080 = _gen("migrate", "--from", "0.7.1", "--to", "0.8.0", str(script))
    assert "actor_rollout_ref.rollout.skip_rollout → actor_rollout_ref.rollout.skip.enable" in to_080.output
    _gen("migrate", "--from", "0.7.1", "--to", "0.9.1", "--write", str(script))
    words = _overrides(script)
    assert "skip.rollout.enable=True" in words and "skip.rollout.dump_dir=/tmp/dump" in words
    assert not any("grad_offload" in w or "use_legacy_worker_impl" in w or "skip_rollout" in w for w in words)
    again = _gen("migrate", "--from", "0.9.1", "--to", "0.9.1", str(script))
    assert "0 change(s)" in again.output  # idempotent


def test_legacy_worker_auto_is_not_dropped_silently(tmp_path: Path) -> None:
    script = tmp_path / "auto.sh"
    script.write_text((FIX / "moves_0_7_1.sh").read_text().replace("use_legacy_worker_impl=disable",
                                                                    "use_legacy_worker_impl=auto"))
    result = _gen("migrate", "--from", "0.7.1", "--to", "0.8.0", str(script))
    assert "not migrated: trainer.use_legacy_worker_impl" in result.output and "--unsafe" in result.output


def test_migrate_of_a_gen_recipe_script_starts_at_the_release_it_was_written_for(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    written = _gen("recipe", "--model", "qwen2-7b", "--gpus", "8", "--verl-version", "0.7.0", "-o", str(script))
    assert written.exit_code == 0, written.output
    result = _gen("migrate", "--to", "0.9.1", str(script))
    assert "0.7.0 → 0.9.1" in result.output and "0.4.1" not in result.output


def test_the_memory_model_reads_each_releases_defaults_from_its_schema() -> None:
    from generator.plan.release_defaults import BASELINE, rollout_defaults
    from generator.schema import load

    for release in ("0.7.0", "0.8.0", "0.9.1"):
        values = load(release).defaults("ppo_megatron_trainer")
        got = rollout_defaults(release)
        assert got.sync_bucket_mib == (values.get("actor_rollout_ref.rollout.checkpoint_engine."
                                                  "update_weights_bucket_megabytes")
                                       or values["actor_rollout_ref.rollout.update_weights_bucket_megabytes"])
        assert got.max_num_seqs == values["actor_rollout_ref.rollout.max_num_seqs"]
    assert rollout_defaults("0.7.0") == BASELINE
    assert rollout_defaults("0.9.1").sync_bucket_mib == 2048 and rollout_defaults("0.9.1").max_num_seqs == 256


def test_the_weight_sync_phase_grows_by_the_bucket_difference() -> None:
    """The same plan for 0.7.0 and 0.9.1: weight sync holds a 2048 MiB bucket instead of 512."""
    from generator.plan.recipe_plan import planned_spec

    def sync_gib(version: str) -> float:
        spec = planned_spec(model="qwen2-7b", gpus=8, nodes=None, gpu=None, gpu_mem=None, algo="grpo",
                            rollout="vllm", launcher="auto", verl_version=version, model_path=None, train_files=None,
                            val_files=None, prompt_len=1024, response_len=1024, n=None, train_batch_size=None,
                            project_name=None, experiment_name=None)
        return next(p.gib for p in spec.layout.memory if p.phase == "weight_sync")

    assert sync_gib("0.9.1") - sync_gib("0.7.0") == pytest.approx(1.5, abs=0.02)


def test_the_0_9_1_dapo_recipe_writes_the_overlong_buffer_and_no_false_note() -> None:
    result = _gen("recipe", "--model", "qwen2-7b", "--gpus", "8", "--algo", "dapo", "-o", "-")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "reward.reward_manager.name=dapo" in text
    assert '+reward.reward_kwargs.max_resp_len="${MAX_RESPONSE_LENGTH}"' in text
    assert "overlong buffer" not in text  # the old note said 0.9.1 could not express it
    assert "reward_model." not in text


def test_the_oracle_can_ask_verl_about_the_default_recipes() -> None:
    """tools/oracle/recipe_cases.py: the calls `gen recipe` writes with no version flag, as cases."""
    from generator.render.spec import DEFAULT_VERSION
    from tools.oracle.recipe_cases import recipe_cases

    cases = recipe_cases(DEFAULT_VERSION, every=12)
    assert cases and all(c.ident.startswith("recipe:") for c in cases)
    for case in cases:
        assert case.config_name == "ppo_trainer" and case.overrides[0] == "model_engine=megatron"
        assert case.model_path and not any(o.startswith("--config-name") for o in case.overrides)
    assert recipe_cases("0.7.0", every=12) == []  # no-flag scripts are written for the newest release only
