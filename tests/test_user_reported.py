"""Launch failures verl users reported, rebuilt as scripts we write (each test names the public
issue or example it follows), caught by `gen check` against the release the user ran (issue 25)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app

runner = CliRunner()

HEAD = "python3 -m verl.trainer.main_ppo \\\n"
BASE = [
    "algorithm.adv_estimator=grpo",
    "data.train_batch_size=32", "data.max_prompt_length=512", "data.max_response_length=512",
    "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.n=4",
    "trainer.n_gpus_per_node=8", "trainer.nnodes=1",
]


def _script(tmp_path: Path, overrides: list[str], *, before: str = "", name: str = "run.sh") -> Path:
    path = tmp_path / name
    path.write_text("#!/usr/bin/env bash\nset -x\n" + before + HEAD
                    + " \\\n".join("    " + o for o in [*BASE, *overrides]) + "\n")
    return path


def _check(path: Path, version: str, *extra: str) -> str:
    result = runner.invoke(app, ["check", str(path), "--verl-version", version, *extra])
    assert result.exit_code in (0, 1), result.stdout
    return result.stdout


def test_a_field_the_model_dataclass_lacks(tmp_path: Path) -> None:
    """verl's own examples/sglang_multiturn/run_qwen2.5-0.5b_gsm8k_multiturn_w_interaction.sh @ v0.6.0
    sets +actor_rollout_ref.model.enable_activation_offloading=True; HFModelConfig at v0.6.0 has no
    such field, and the rollout worker builds the model section from its _target_."""
    path = _script(tmp_path, ["+actor_rollout_ref.model.enable_activation_offloading=True"])
    out = _check(path, "0.6.0", "--select", "VK610")
    assert "VK610 error" in out and "HFModelConfig" in out and "enable_activation_offloading" in out
    # a field the dataclass has but the YAML leaves out is accepted with '+'
    ok = _script(tmp_path, ["+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=bf16"], name="ok.sh")
    assert "VK610" not in _check(ok, "0.6.0", "--select", "VK610")
    # before 0.6.0 the model section is a plain mapping
    assert "VK610" not in _check(path, "0.5.0", "--select", "VK610")


def test_two_visible_gpus_and_the_default_eight(tmp_path: Path) -> None:
    """After verl#5954: `export CUDA_VISIBLE_DEVICES=0,1` and `ray start --head --num-gpus=2`, with
    trainer.n_gpus_per_node left at 8 — 'Total available GPUs ... is less than total desired GPUs 8'."""
    base = [o for o in BASE if not o.startswith("trainer.n_gpus_per_node")]
    path = _script(tmp_path, [], before="export CUDA_VISIBLE_DEVICES=0,1\nray stop\nray start --head --num-gpus=2\n")
    path.write_text(path.read_text().replace("    trainer.n_gpus_per_node=8 \\\n", ""))
    assert "n_gpus_per_node" not in path.read_text() and base
    out = _check(path, "0.5.0", "--select", "VP308")
    assert "VP308 error" in out and "trainer.n_gpus_per_node=8 (the default)" in out and "leaves 2 visible" in out
    fixed = runner.invoke(app, ["fix", str(path), "--unsafe", "--write", "--select", "VP308", "--verl-version", "0.5.0"])
    assert fixed.exit_code in (0, 1), fixed.stdout
    assert "trainer.n_gpus_per_node=2" in path.read_text()
    assert "VP308" not in _check(path, "0.5.0", "--select", "VP308")


def test_slurm_gres_per_node_against_the_trainer(tmp_path: Path) -> None:
    """After verl#2515 ('Total available GPUs 8.0 is less than total desired GPUs 16'): a Slurm job
    that books 4 GPUs per node for a trainer asking for 8 on each node."""
    path = _script(tmp_path, ["trainer.nnodes=2"], before="#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\n")
    out = _check(path, "0.5.0", "--select", "VP308")
    assert "VP308 error" in out and "--gres=gpu:4" in out and "on each of 2 node(s)" in out
    # a variable the reader cannot see is not judged; more visible GPUs than asked for are fine
    quiet = _script(tmp_path, [], before="export CUDA_VISIBLE_DEVICES=$MY_GPUS\n", name="q.sh")
    assert "VP308" not in _check(quiet, "0.5.0", "--select", "VP308")
    wide = _script(tmp_path, [], before="export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n", name="w.sh")
    assert "VP308" not in _check(wide, "0.5.0", "--select", "VP308")


def test_strictly_on_policy_with_a_larger_log_prob_micro_batch(tmp_path: Path) -> None:
    """verl#6280: ppo_epochs 1 and train_batch_size = ppo_mini_batch_size, with the log-prob micro
    batch twice the actor's (as docs/perf/perf_tuning.rst suggests): pg_clipfrac is non-zero."""
    on_policy = ["data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=16",
                 "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
                 "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4"]
    path = _script(tmp_path, on_policy)
    out = _check(path, "0.8.0", "--select", "VX917")
    assert "VX917 info" in out and "pg_clipfrac" in out and "log_prob_micro_batch_size_per_gpu=2" in out
    # verl 0.7.0's FSDP actor reuses the update's log-probs when on-policy
    assert "VX917" not in _check(path, "0.7.0", "--select", "VX917")
    # two mini batches per step are not on-policy anyway
    off = _script(tmp_path, [*on_policy, "actor_rollout_ref.actor.ppo_mini_batch_size=8"], name="off.sh")
    assert "VX917" not in _check(off, "0.8.0", "--select", "VX917")
    fixed = runner.invoke(app, ["fix", str(path), "--write", "--select", "VX917", "--verl-version", "0.8.0"])
    assert fixed.exit_code in (0, 1), fixed.stdout
    assert "VX917" not in _check(path, "0.8.0", "--select", "VX917")


def test_sequence_longer_than_the_context_by_release(tmp_path: Path) -> None:
    """Qwen2.5-Math-7B (a 4k context) trained at 2k + 4k, as users of the DAPO/SimpleRL recipes
    write it: verl 0.4.x-0.6.x assert it at rollout start, 0.7+ go on. With the model's own
    config.json it is an error there; by its Hugging Face id (the published config, which such users
    often edit) a warning that says verl would assert."""
    import json

    folder = tmp_path / "models" / "Qwen2.5-Math-7B"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "num_hidden_layers": 28, "vocab_size": 152064, "intermediate_size": 18944, "max_position_embeddings": 4096}))
    lengths = ["data.max_prompt_length=2048", "data.max_response_length=4096"]
    local = _script(tmp_path, [f"actor_rollout_ref.model.path={folder}", *lengths], name="local.sh")
    old = _check(local, "0.4.1", "--select", "VM809")
    assert "VM809 error" in old and "max_position_embeddings 4096" in old and "asserts" in old
    assert "VM809 warning" in _check(local, "0.7.0", "--select", "VM809")
    by_id = _script(tmp_path, ["actor_rollout_ref.model.path=Qwen/Qwen2.5-Math-7B", *lengths], name="id.sh")
    published = _check(by_id, "0.4.1", "--select", "VM809")
    assert "VM809 warning" in published and "with the published config.json verl 0.4.1 asserts" in published


def _hub_snapshot(home: Path, hub_id: str, config: dict[str, object]) -> Path:
    import json

    folder = home / "hub" / ("models--" + hub_id.replace("/", "--"))
    (folder / "snapshots" / "0123abcd").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text("0123abcd")
    path = folder / "snapshots" / "0123abcd" / "config.json"
    path.write_text(json.dumps(config))
    return path


# A small MoE shape written for the test (not any real model's numbers).
TINY_MOE = {"model_type": "qwen3_moe", "hidden_size": 1024, "num_attention_heads": 12, "num_key_value_heads": 4,
            "num_hidden_layers": 8, "vocab_size": 32000, "intermediate_size": 2816, "moe_intermediate_size": 512,
            "num_experts": 16, "num_experts_per_tok": 4, "max_position_embeddings": 4096, "head_dim": 128}


def test_a_hub_id_is_read_from_the_local_hugging_face_cache(tmp_path: Path, monkeypatch) -> None:
    """Users write the hub id (`Qwen/Qwen3.5-35B-A3B`) and keep the download in ~/.cache/huggingface:
    its config.json is read there (HF_HOME respected, never the network) and the report says so."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    config = _hub_snapshot(tmp_path / "hf", "my-org/Tiny-MoE-A1B", TINY_MOE)
    megatron = ["actor_rollout_ref.model.path=my-org/Tiny-MoE-A1B",
                "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8"]
    path = tmp_path / "run.sh"
    path.write_text("python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\\n"
                    + " \\\n".join("    " + o for o in [*BASE, *megatron]) + "\n")
    out = _check(path, "0.7.0", "--select", "VM801")
    assert "VM801" in out and "12" in out  # 12 heads over TP 8: the cached config's numbers
    explained = runner.invoke(app, ["explain", str(path), "--memory", "--gpu", "h100", "--verl-version", "0.7.0"])
    assert "the Hugging Face cache's" in explained.stdout and str(config) in explained.stdout.replace("\n", "")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))  # HF_HUB_CACHE wins over HF_HOME
    assert "VM801" not in _check(path, "0.7.0", "--select", "VM801")


def test_a_model_folder_whose_prefix_is_unknown_is_matched_by_its_name(tmp_path: Path) -> None:
    """`actor_rollout_ref.model.path=$HOME/models/Qwen2.5-Math-7B`, as most verl example scripts
    write it: HOME is unknown to a static reader, the folder's name still names the model."""
    path = _script(tmp_path, ["actor_rollout_ref.model.path=$HOME/models/Qwen2.5-Math-7B",
                              "data.max_prompt_length=2048", "data.max_response_length=4096"])
    assert "Qwen2.5-Math-7B max_position_embeddings 4096" in _check(path, "0.5.0", "--select", "VM809")
