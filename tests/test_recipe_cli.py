"""`gen recipe` on the command line: golden files, safe writes, one-line errors with exit 2."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.base.errors import InputError

GOLDEN = Path(__file__).resolve().parent / "golden"
runner = CliRunner()


def gen(*args: str, cwd: Path | None = None):
    if cwd is None:
        return runner.invoke(app, ["recipe", *args])
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(app, ["recipe", *args])
    finally:
        os.chdir(old)


@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_golden_qwen2_7b_on_8_gpus(algo: str) -> None:
    """Byte-for-byte; regenerate with UPDATE_GOLDEN=1 after an intended change (and read the diff)."""
    result = gen("--model", "qwen2-7b", "--gpus", "8", "--algo", algo, "-o", "-")
    assert result.exit_code == 0, result.stderr
    golden = GOLDEN / f"run_qwen2-7b_{algo}_megatron.sh"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


def test_golden_for_an_older_release_is_written_its_way() -> None:
    """`--verl-version 0.7.0` writes what that release reads: `--config-name=ppo_megatron_trainer`
    (no model_engine group before 0.8.0) and its 512 MiB weight-sync bucket in the memory line;
    the default (newest) release writes `model_engine=megatron` and no config name."""
    result = gen("--model", "qwen2-7b", "--gpus", "8", "--verl-version", "0.7.0", "-o", "-")
    assert result.exit_code == 0, result.stderr
    golden = GOLDEN / "run_qwen2-7b_grpo_megatron_verl0.7.0.sh"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()
    assert "--config-name=ppo_megatron_trainer" in result.stdout and "model_engine=" not in result.stdout
    newest = (GOLDEN / "run_qwen2-7b_grpo_megatron.sh").read_text()
    assert "    model_engine=megatron \\\n" in newest and "--config-name" not in newest


def test_default_file_name_mode_and_summary(tmp_path: Path) -> None:
    result = gen("--model", "qwen2-7b", "--gpus", "8", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    path = tmp_path / "run_qwen2-7b_grpo_megatron.sh"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert "DP" in result.stderr and "fits" in result.stderr
    assert path.read_text() == (GOLDEN / "run_qwen2-7b_grpo_megatron.sh").read_text().replace(
        "bash run.sh", "bash run_qwen2-7b_grpo_megatron.sh")
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temp file left behind


def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("keep me\n")
    result = gen("--model", "qwen2-7b", "--gpus", "8", "-o", str(target))
    assert result.exit_code == 2
    assert "--force" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert target.read_text() == "keep me\n"
    result = gen("--model", "qwen2-7b", "--gpus", "8", "-o", str(target), "--force")
    assert result.exit_code == 0, result.stderr
    assert target.read_text().startswith("#!/usr/bin/env bash")


@pytest.mark.parametrize("args, message", [
    (["--model", "qwen9-7b", "--gpus", "8"], "unknown model 'qwen9-7b'"),
    (["--model", "qwen2-7b", "--gpus", "8", "--algo", "a3c"], "unknown algorithm 'a3c'"),
    (["--model", "qwen2-7b", "--gpus", "8", "--algo", "rloo", "--n", "1"], "got 1"),
    (["--model", "qwen2-7b", "--gpus", "8", "--nodes", "3"], "cannot be split evenly"),
    (["--model", "qwen2-7b", "--gpus", "12"], "--gpus 12 does not fill whole h100 nodes of 8 GPUs"),
    (["--model", "qwen2-7b", "--gpus", "20", "--gpu", "h20"], "--gpus 20 does not fill whole h20 nodes of 8 GPUs"),
    (["--model", "qwen2-7b", "--gpus", "8", "--gpu", "tpu-v5"], "unknown GPU"),
    (["--model", "qwen2-7b", "--gpus", "8", "--launcher", "k8s"], "unknown launcher"),
    (["--model", "qwen2-7b", "--gpus", "8", "--verl-version", "banana"], "not a verl version"),
    (["--model", "qwen2-7b"], "give --model and --gpus"),
    (["some-recipe", "--from", "x.sh"], "not both"),
    (["--model", "qwen2-7b", "--gpus", "8", "-o", "/nonexistent-dir/run.sh"], "does not exist"),
    # each reason names its layout (three bare "does not fit: ..." said nothing of which)
    (["--model", "deepseek-v3", "--gpus", "8"], "fits 8 x h100: TP8 PP1 EP8 ETP1: weights+grads alone need"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = gen(*args, cwd=tmp_path)
    assert result.exit_code == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_config_the_rules_reject_is_never_rendered() -> None:
    from generator.model import resolve_model
    from generator.layout.candidate import Candidate
    from generator.render import generate
    from generator.render.spec import RecipeSpec

    # 1000 prompts x 5 = 5000 responses over DP 4 = 1250 per rank; a mini of 256 prompts gives
    # 320 per rank, and 1250 % 320 != 0: verl's make_iterator would assert at the first update.
    spec = RecipeSpec(model=resolve_model("qwen2-7b"), layout=Candidate(tp=2, pp=1, rollout_tp=2,
                      micro_batch_per_gpu=4), gpus=8, train_batch_size=1000, ppo_mini_batch_size=256,
                      model_slug="qwen2-7b")
    with pytest.raises(InputError) as err:
        generate(spec)
    assert "does not pass the checks" in str(err.value)


def test_stdout_output_and_other_launchers() -> None:
    for launcher, marker in (("ray", "ray job submit"), ("slurm", "#SBATCH --nodes=2")):
        result = gen("--model", "qwen2_5-7b", "--gpus", "16", "--nodes", "2", "--launcher", launcher, "-o", "-")
        assert result.exit_code == 0, result.stderr
        assert marker in result.stdout
        assert "NNODES=${NNODES:-2}" in result.stdout


def test_several_data_files_become_a_hydra_list(tmp_path: Path) -> None:
    import subprocess

    from hydra.core.override_parser.overrides_parser import OverridesParser

    from omegaconf import OmegaConf

    files = ["/data/a.parquet", "/data/b c.parquet", "/data/${oc.env:HOME}.parquet"]
    result = gen("--model", "qwen2-7b", "--gpus", "8", "--train-files", files[0], "--train-files", files[1],
                 "--train-files", files[2], "-o", str(tmp_path / "run.sh"))
    assert result.exit_code == 0, result.stderr
    stub = tmp_path / "python3"
    stub.write_text('#!/bin/bash\nprintf \'%s\\0\' "$@" > "$STUB_LOG"\n')
    stub.chmod(0o755)
    subprocess.run(["bash", str(tmp_path / "run.sh")], check=True, capture_output=True,
                   env={"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": "/h", "STUB_LOG": str(tmp_path / "argv")})
    argv = (tmp_path / "argv").read_bytes().decode().split("\0")[:-1]
    word = next(a for a in argv if a.startswith("data.train_files="))
    parsed = OverridesParser.create().parse_overrides([word])[0].value()
    assert list(OmegaConf.create({"files": parsed}).files) == files  # resolved: no ${...} runs


def test_golden_scripts_are_shellcheck_clean_even_at_style_level(shellcheck: str) -> None:
    import subprocess

    paths = sorted(str(p) for p in GOLDEN.glob("*.sh"))
    done = subprocess.run([shellcheck, "-S", "style", *paths], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_more_than_one_node_gets_a_cluster_launcher_never_the_local_one() -> None:
    """The local launcher starts a one-node Ray: verl would stop with "Total available GPUs 8 is
    less than total desired GPUs 16". Several nodes default to ray job submit; local is refused."""
    result = gen("--model", "qwen2-7b", "--gpus", "16", "--nodes", "2", "-o", "-")
    assert result.exit_code == 0, result.stderr
    assert "ray job submit" in result.stdout and "Ray starts a local cluster" not in result.stdout
    refused = gen("--model", "qwen2-7b", "--gpus", "16", "--nodes", "2", "--launcher", "local", "-o", "-")
    assert refused.exit_code == 2 and "--launcher ray" in refused.stderr
    one_node = gen("--model", "qwen2-7b", "--gpus", "8", "-o", "-")
    assert "Ray starts a local cluster" in one_node.stdout


@pytest.mark.parametrize("gpus, nodes", [(16, 2), (64, 8), (256, 32)])
def test_gpus_above_one_node_without_nodes_become_nodes_of_the_gpu_type(gpus: int, nodes: int) -> None:
    """Ray places each node's GPUs as one group on one machine: --gpus 16 as "1 node x 16" could
    never be scheduled on 8-GPU machines. Without --nodes the GPUs are split into the GPU type's
    nodes, the cluster launcher is used, and the summary and header say so."""
    result = gen("--model", "qwen2-7b", "--gpus", str(gpus), "-o", "-")
    assert result.exit_code == 0, result.stderr
    assert f"({nodes} nodes x 8)" in result.stdout.splitlines()[1]
    assert f"NNODES=${{NNODES:-{nodes}}}" in result.stdout and "GPUS_PER_NODE=${GPUS_PER_NODE:-8}" in result.stdout
    assert "ray job submit" in result.stdout and "runs on this machine" not in result.stdout
    assert f"{nodes} nodes x 8, launcher ray" in result.stderr
    assert f"--gpus {gpus} is more than one h100 node holds" in result.stderr
    pinned = gen("--model", "qwen2-7b", "--gpus", "8", "-o", "-")  # fits one node: unchanged
    assert "(1 node x 8)" in pinned.stdout and "more than one" not in pinned.stderr


def test_run_options_reach_the_trainer(tmp_path: Path) -> None:
    from generator.config import config_from_overrides
    from generator.reading.shell import read_launch

    result = gen("--model", "qwen2-7b", "--gpus", "8", "--logger", "console", "--logger", "wandb",
                 "--checkpoint-dir", "/ckpt/my run", "--save-freq", "50", "--resume-mode", "resume_path",
                 "--resume-from", "/ckpt/my run/global_step_40", "--lr", "2e-6", "--epochs", "3",
                 "--ppo-mini-batch-size", "128", "-o", str(tmp_path / "run.sh"))
    assert result.exit_code == 0, result.stderr
    call = read_launch(str(tmp_path / "run.sh")).invocations[0]
    config = config_from_overrides([o.text for o in call.overrides], version="0.7.0",
                                   config_name="ppo_megatron_trainer")
    values = config.values
    assert values["trainer.logger"] == ["console", "wandb"]
    assert values["trainer.default_local_dir"] == "/ckpt/my run"
    assert (values["trainer.save_freq"], values["trainer.total_epochs"]) == (50, 3)
    assert values["trainer.resume_mode"] == "resume_path"
    assert values["trainer.resume_from_path"] == "/ckpt/my run/global_step_40"
    assert values["actor_rollout_ref.actor.optim.lr"] == 2e-6
    assert values["actor_rollout_ref.actor.ppo_mini_batch_size"] == 128


@pytest.mark.parametrize("args, words", [
    (("--resume-mode", "sometimes"), "unknown --resume-mode"),
    (("--resume-mode", "resume_path"), "--resume-from PATH"),
    (("--save-freq", "0"), "--save-freq"),
    (("--epochs", "0"), "--epochs"),
    (("--lr", "5"), "--lr"),
    (("--logger", "a,b"), "--logger"),
])
def test_bad_run_options_are_one_line_exit_2(args: tuple[str, ...], words: str) -> None:
    result = gen("--model", "qwen2-7b", "--gpus", "8", *args, "-o", "-")
    assert result.exit_code == 2 and words in result.stderr and result.stdout == ""


def test_a_model_folder_becomes_its_absolute_path_not_a_hub_id(tmp_path: Path) -> None:
    """`--model ./my-model/` once wrote MODEL_PATH=my-model, which verl would fetch from the hub."""
    import json

    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "intermediate_size": 4096, "vocab_size": 32000,
        "max_position_embeddings": 4096, "tie_word_embeddings": True}))
    result = gen("--model", "./my-model/", "--gpus", "8", "-o", "-", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert f"MODEL_PATH=${{MODEL_PATH:-{folder.resolve()}}}" in result.stdout
    # The Reproduce line names the folder too: the folder's name means nothing to --model elsewhere.
    reproduce = next(line for line in result.stdout.splitlines() if line.startswith("# Reproduce: "))
    assert f"--model {folder.resolve()} " in reproduce
    again = gen(*reproduce.removeprefix("# Reproduce: gen recipe ").split(), "-o", "-", cwd=tmp_path.parent)
    assert again.exit_code == 0, again.stderr


def test_the_reproduce_line_of_a_packaged_model_replays_anywhere(tmp_path: Path) -> None:
    result = gen("--model", "Qwen/Qwen2.5-7B-Instruct", "--gpus", "8", "-o", "-")
    reproduce = next(line for line in result.stdout.splitlines() if line.startswith("# Reproduce: "))
    assert "--model qwen2_5-7b " in reproduce
    again = gen(*reproduce.removeprefix("# Reproduce: gen recipe ").split(), "-o", "-", cwd=tmp_path)
    assert again.exit_code == 0 and again.stdout == result.stdout


def test_recipe_pins_reach_the_script() -> None:
    result = gen("--model", "qwen2-7b", "--gpus", "8", "--tp", "4", "--param-offload", "--no-optimizer-offload",
                 "--rollout-tp", "2", "--micro-batch-per-gpu", "1", "-o", "-")
    assert result.exit_code == 0, result.stderr
    for knob in ("TP=${TP:-4}", "ROLLOUT_TP=${ROLLOUT_TP:-2}", "PARAM_OFFLOAD=${PARAM_OFFLOAD:-True}",
                 "OPTIMIZER_OFFLOAD=${OPTIMIZER_OFFLOAD:-False}", "MICRO_BATCH_PER_GPU=${MICRO_BATCH_PER_GPU:-1}"):
        assert knob in result.stdout
    refused = gen("planned-qwen2.5-7b-grpo-8gpu", "--tp", "4", "-o", "-")
    assert refused.exit_code == 2 and "pins" in refused.stderr
    impossible = gen("--model", "qwen2-7b", "--gpus", "8", "--tp", "3", "-o", "-")
    assert impossible.exit_code == 2 and "with tp=3" in impossible.stderr


def test_fused_kernels_pin_is_planned_with_and_written() -> None:
    result = gen("--model", "qwen2-7b", "--gpus", "8", "--fused-kernels", "-o", "-")
    assert result.exit_code == 0, result.stderr
    assert "    actor_rollout_ref.model.use_fused_kernels=True \\" in result.stdout
    plain = gen("--model", "qwen2-7b", "--gpus", "8", "-o", "-")
    assert "use_fused_kernels" not in plain.stdout
