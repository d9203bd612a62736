"""`gen recipe --from legacy.sh`: values kept, derived fields corrected, unknowns carried as knobs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app

# Written for this test, modelled on verl's example scripts: a mini batch that does not divide the
# step (250 prompts), a rollout mode 0.7.0 refuses, $HOME paths, a run name computed with $(date),
# and keys outside the recipe model (lr, epochs, a `+` transformer override).
LEGACY = r"""#!/bin/bash
set -x
MODEL=/models/Qwen2.5-7B-Instruct
train_files=$HOME/data/gsm8k/train.parquet
STAMP=$(date +%s)
python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer' \
    algorithm.adv_estimator=grpo \
    data.train_files=$train_files \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=1024 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=$MODEL \
    actor_rollout_ref.actor.optim.lr=3e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=250 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.mode=sync \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2 \
    trainer.experiment_name=run_$STAMP \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.total_epochs=3 \
    +actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion=True $@
"""


@pytest.fixture()
def rerendered(tmp_path: Path) -> Path:
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(LEGACY)
    out = tmp_path / "new.sh"
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture()
def rerendered_070(tmp_path: Path) -> Path:
    """The same script re-rendered for 0.7.0, the release it was written for (its rollout mode is
    what 0.7.0 refuses, its mini batch what 0.7.0's legacy workers floor)."""
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(LEGACY)
    out = tmp_path / "new070.sh"
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "--verl-version", "0.7.0", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def _argv(script: Path, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    stub = stubs / "python3"
    stub.write_text('#!/bin/bash\nprintf \'%s\\0\' "$@" > "$STUB_LOG"\n')
    stub.chmod(0o755)
    return subprocess.run(["bash", str(script)], capture_output=True, text=True,
                          env={"PATH": f"{stubs}:/usr/bin:/bin", "HOME": "/home/u",
                               "STUB_LOG": str(tmp_path / "argv"), **env})


def test_values_kept_and_derived_fields_corrected(rerendered_070: Path, tmp_path: Path) -> None:
    done = _argv(rerendered_070, tmp_path, {"EXPERIMENT_NAME": "run_7"})
    assert done.returncode == 0, done.stderr
    argv = (tmp_path / "argv").read_bytes().decode().split("\0")[:-1]
    # kept verbatim
    assert "actor_rollout_ref.actor.optim.lr=3e-6" in argv
    assert "trainer.total_epochs=3" in argv
    assert "+actor_rollout_ref.actor.megatron.override_transformer_config.apply_rope_fusion=True" in argv
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2" in argv
    # $HOME is a reference again, resolved at run time
    assert "data.train_files=/home/u/data/gsm8k/train.parquet" in argv
    # corrected: a mini batch whose per-rank size divides the local batch (B = 5120/2 = 2560)
    mini = int(next(a for a in argv if a.startswith("actor_rollout_ref.actor.ppo_mini_batch_size=")).split("=")[1])
    assert mini != 250 and 2560 % (mini * 5 // 2) == 0
    assert "actor_rollout_ref.rollout.mode=async" in argv
    assert "trainer.experiment_name=run_7" in argv
    # the ref follows the actor through the recipe's own layout, not a stale literal
    assert not any(a.startswith("actor_rollout_ref.ref.megatron.tensor_model_parallel_size") for a in argv)
    text = rerendered_070.read_text()
    assert "VB106" in text and "re-rendered from" in text


def test_a_value_computed_at_run_time_becomes_a_required_knob(rerendered: Path, tmp_path: Path) -> None:
    done = _argv(rerendered, tmp_path, {})
    assert done.returncode != 0
    assert "EXPERIMENT_NAME" in done.stderr
    assert not (tmp_path / "argv").exists()  # the trainer never started


def test_rerendered_script_is_clean(rerendered: Path, shellcheck: str) -> None:
    from generator.judging import check_script
    from generator.reading.shell import read_file

    assert subprocess.run(["bash", "-n", str(rerendered)]).returncode == 0
    done = subprocess.run([shellcheck, "-S", "warning", str(rerendered)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    from generator.render.spec import DEFAULT_VERSION

    text = rerendered.read_text()
    assert f"for verl {DEFAULT_VERSION} " in text  # no --verl-version: the newest release
    bad = [f"{f.code} {f.message}" for _inv, _cfg, found in check_script(read_file(str(rerendered)),
                                                                        version=DEFAULT_VERSION)
           for f in found if f.severity in ("error", "warning")]
    assert bad == []


@pytest.mark.parametrize("text, message", [
    ("#!/bin/bash\necho hello\n", "no verl.trainer.main_ppo call"),
    ("#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer "
     "actor_rollout_ref.model.path=/m/mystery-model trainer.n_gpus_per_node=8\n", "pass --model"),
])
def test_unusable_legacy_scripts_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(text)
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", str(tmp_path / "out.sh")])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.sh").exists()


def test_corpus_example_rerenders(corpus_dir: Path, tmp_path: Path) -> None:
    """verl's own 7B GRPO example: same layout and batch numbers, the file list kept as a list."""
    source = corpus_dir / "scripts/v0.7.0/examples/grpo_trainer/run_qwen2-7b_math_megatron.sh"
    out = tmp_path / "new.sh"
    result = CliRunner().invoke(app, ["recipe", "--from", str(source), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    done = _argv(out, tmp_path, {})
    argv = (tmp_path / "argv").read_bytes().decode().split("\0")[:-1]
    assert done.returncode == 0
    for word in ("data.train_batch_size=1024", "actor_rollout_ref.actor.ppo_mini_batch_size=256",
                 "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
                 "actor_rollout_ref.model.use_fused_kernels=True",
                 "data.train_files=['/home/u/data/gsm8k/train.parquet', '/home/u/data/math/train.parquet']"):
        assert word in argv, word


def test_a_variable_the_legacy_script_never_set_is_required_by_name(tmp_path: Path) -> None:
    """Under the generated script's `set -u`, `${DATA_DIR}` would stop with bash's bare
    "unbound variable"; the knob names the variable and where it came from instead."""
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(LEGACY.replace("train_files=$HOME/data/gsm8k/train.parquet",
                                     "train_files=$DATA_DIR/gsm8k/train.parquet"))
    out = tmp_path / "new.sh"
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    missing = _argv(out, tmp_path, {"EXPERIMENT_NAME": "run_7"})
    assert missing.returncode != 0 and "set DATA_DIR (the legacy script read it from the environment)" in missing.stderr
    assert not (tmp_path / "argv").exists()
    given = _argv(out, tmp_path, {"EXPERIMENT_NAME": "run_7", "DATA_DIR": "/data"})
    assert given.returncode == 0, given.stderr
    argv = (tmp_path / "argv").read_bytes().decode().split("\0")[:-1]
    assert "data.train_files=/data/gsm8k/train.parquet" in argv


def test_pre_steps_of_the_legacy_script_are_listed_not_lost(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(LEGACY.replace("STAMP=$(date +%s)\n", "STAMP=$(date +%s)\nexport VLLM_USE_V1=1\n"
                                     "pip install -e . \\\n    --no-deps\ncd /work/data\n"
                                     "if [ ! -f train.parquet ]; then\n    python prep.py\nfi\n"))
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", "-"])
    assert result.exit_code == 0, result.stderr
    header = " ".join(line.lstrip("# ").strip() for line in result.stdout.splitlines() if line.startswith("#"))
    assert "not copied, run them first" in header
    for step in ("line 6: export VLLM_USE_V1=1", "line 7: pip install -e . --no-deps", "line 9: cd /work/data",
                 "line 10: if [ ! -f train.parquet ]; then"):
        assert step in header
    assert "python prep.py" not in header and "STAMP" not in header  # inside the if; a variable


@pytest.mark.parametrize(("export", "listed"), [
    ("export CUDA_DEVICE_MAX_CONNECTIONS=1  # for megatron", False),  # the re-rendered script exports it too
    ("export CUDA_DEVICE_MAX_CONNECTIONS='1'", False),
    ("export CUDA_DEVICE_MAX_CONNECTIONS=8", True),  # another value: the user must decide
])
def test_an_export_the_rendered_script_also_makes_is_not_listed_as_not_copied(
        tmp_path: Path, export: str, listed: bool) -> None:
    """Issue 36: `recipe --from` said CUDA_DEVICE_MAX_CONNECTIONS "is not copied" and then exported it."""
    legacy = tmp_path / "legacy.sh"
    legacy.write_text(LEGACY.replace("STAMP=$(date +%s)\n", f"STAMP=$(date +%s)\n{export}\n"))
    result = CliRunner().invoke(app, ["recipe", "--from", str(legacy), "-o", "-"])
    assert result.exit_code == 0, result.stderr
    header = " ".join(line.lstrip("# ").strip() for line in result.stdout.splitlines() if line.startswith("#"))
    assert ("CUDA_DEVICE_MAX_CONNECTIONS" in header) is listed
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1 " in result.stdout
