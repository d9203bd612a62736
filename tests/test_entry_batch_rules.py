"""Batch rules of verl's entries other than main_ppo (VB140–VB144, generator/rules/entry_batch.py), on
self-written scripts run through `gen check` against the release each entry ships in."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from generator.cli import app


def _check(tmp_path: Path, text: str, version: str) -> list[str]:
    script = tmp_path / "run.sh"
    script.write_text(text)
    result = CliRunner().invoke(app, ["check", "--verl-version", version, str(script)])
    assert "Traceback" not in result.output
    return [line for line in result.output.splitlines() if re.search(r" VB14\d (error|warning|info):", line)]


SFT = """#!/bin/bash
set -x
nproc_per_node={nproc}
torchrun --standalone --nnodes=1 --nproc_per_node=$nproc_per_node \\
    -m verl.trainer.{entry} \\
    data.train_files=$HOME/data/gsm8k/train.parquet \\
    data.val_files=$HOME/data/gsm8k/test.parquet \\
    {extra} \\
    trainer.total_epochs=1
"""


def test_sft_with_sequence_parallel_divides_the_batch_by_dp_not_by_the_gpus(tmp_path: Path) -> None:
    """Modelled on verl-project/verl#125 ("normalize batch size should divide sp size"): with Ulysses
    SP the SFT trainer's DP is GPUs / SP. 6 GPUs, SP 2: DP 3, and a batch of 64 fails; 8 GPUs, SP 2
    (DP 4) accepts it."""
    extra = "data.train_batch_size=64 ulysses_sequence_parallel_size=2 model.partial_pretrain=Qwen/Qwen2.5-0.5B-Instruct"
    found = _check(tmp_path, SFT.format(nproc=6, entry="fsdp_sft_trainer", extra=extra), "0.7.0")
    assert len(found) == 1 and "VB142 error" in found[0], found
    assert "not divisible by DP 3 (= 6 GPUs (torchrun --nproc_per_node $nproc_per_node = 6 --nnodes 1) / ulysses_sequence_parallel_size = 2)" in found[0]
    assert _check(tmp_path, SFT.format(nproc=8, entry="fsdp_sft_trainer", extra=extra), "0.7.0") == []


def test_sft_default_batch_and_micro_batch_are_the_sft_configs_not_ppos(tmp_path: Path) -> None:
    """The defaults are sft_trainer.yaml's (256, micro 4), not the PPO stand-in's (1024): on 8 GPUs
    256 / 8 = 32 per rank, which micro 4 divides and micro 5 does not."""
    base = "model.partial_pretrain=Qwen/Qwen2.5-0.5B-Instruct"
    assert _check(tmp_path, SFT.format(nproc=8, entry="fsdp_sft_trainer", extra=base), "0.7.0") == []
    found = _check(tmp_path, SFT.format(nproc=8, entry="fsdp_sft_trainer",
                                        extra=base + " data.micro_batch_size_per_gpu=5"), "0.7.0")
    assert len(found) == 1 and "VB143 error" in found[0]
    assert "data.train_batch_size=256 (the entry's default) / DP 8 = 32 samples per rank" in found[0]


def test_a_world_size_the_script_cannot_know_says_nothing(tmp_path: Path) -> None:
    text = SFT.format(nproc=8, entry="fsdp_sft_trainer", extra="data.train_batch_size=100").replace(
        "nproc_per_node=8", "nproc_per_node=$1")
    assert _check(tmp_path, text, "0.7.0") == []


def test_engine_sft_floors_a_remainder_and_fails_below_dp(tmp_path: Path) -> None:
    """Modelled on NovaSky-AI/SkyRL#229 and verl-project/verl#606 (a global batch smaller than the
    data-parallel ranks): the engine sft_trainer gives each rank train_batch_size // DP samples, so
    4 on 8 GPUs is 0 per rank (the data loader refuses it) and 100 trains on 96."""
    below = _check(tmp_path, SFT.format(nproc=8, entry="sft_trainer", extra="data.train_batch_size=4"), "0.9.1")
    assert len(below) == 1 and "VB144 error" in below[0] and "0 samples" in below[0], below
    floor = _check(tmp_path, SFT.format(nproc=8, entry="sft_trainer", extra="data.train_batch_size=100"), "0.9.1")
    assert len(floor) == 1 and "VB144 warning" in floor[0] and "trains on 96, not 100" in floor[0]
    megatron = SFT.format(nproc=8, entry="sft_trainer",
                          extra="engine=megatron engine.tensor_model_parallel_size=4 data.train_batch_size=6")
    found = _check(tmp_path, megatron, "0.9.1")  # DP = 8 / TP 4 = 2 divides 6
    assert found == [], found


def test_greedy_generation_with_the_default_five_samples(tmp_path: Path) -> None:
    """No public report found; modelled on verl's own assert in main_generation.py (v0.4.1 … v0.7.0):
    a user who sets rollout.temperature=0 for a deterministic pass and leaves data.n_samples at
    generation.yaml's 5."""
    text = """#!/bin/bash
python3 -m verl.trainer.main_generation \\
    trainer.nnodes=1 trainer.n_gpus_per_node=8 \\
    data.path=$HOME/data/test.parquet data.output_path=$HOME/out.parquet \\
    model.path=Qwen/Qwen2-7B-Instruct \\
    rollout.temperature=0
"""
    found = _check(tmp_path, text, "0.7.0")
    assert len(found) == 1 and "VB140 error" in found[0] and "data.n_samples=5 (the entry's default)" in found[0]
    assert _check(tmp_path, text.replace("rollout.temperature=0", "rollout.temperature=0 data.n_samples=1"),
                  "0.7.0") == []
    assert _check(tmp_path, text, "0.9.1") == []  # no main_generation after 0.7.0: not this rule's release
