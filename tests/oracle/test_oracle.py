"""verl 0.7.0 itself as the judge of `gen check` (marker `oracle`).

Builds (or reuses) the cached verl environment — about 1 to 2 minutes the first time — then runs
tools/oracle.py on the corpus's 0.7.0 trainer calls plus a few hundred seeded mutations, and
requires gen check to say "verl rejects this at config load" exactly when verl does.
Skipped only when the package registry cannot be reached to build the environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.oracle._load import REPO, load_oracle

pytestmark = pytest.mark.oracle

VERSION = "0.7.0"
MUTATIONS = int(os.environ.get("VERL_GEN_ORACLE_MUTATIONS", "300"))
SHARED = Path(os.environ.get("VERL_GEN_SHARED", REPO.parent / "shared"))

oracle = load_oracle()


@pytest.fixture(scope="module")
def venv() -> Path:
    path = oracle.default_venv(VERSION)
    if not oracle.venv_complete(path, VERSION):
        if not oracle.registry_reachable():
            pytest.skip("package registry unreachable: cannot build the verl oracle environment")
        oracle.ensure_venv(VERSION, path)
    return path


@pytest.fixture(scope="module")
def worker(venv: Path, tmp_path_factory):
    root = tmp_path_factory.mktemp("oracle")
    model = oracle.model_dir_for(root, "Qwen/Qwen2-7B-Instruct")
    proc = oracle.Worker(venv, [model], root / "worker.log")
    proc.start()
    yield proc, model
    proc.stop()


A = "actor_rollout_ref.actor."
# GRPO on 8 GPUs, TP=2 PP=2 (DP=2), 1024 prompts x 5, mini 256, micro 4: verl accepts it.
BASE = ["algorithm.adv_estimator=grpo", "data.train_batch_size=1024", "actor_rollout_ref.rollout.n=5",
        f"{A}ppo_mini_batch_size=256", f"{A}ppo_micro_batch_size_per_gpu=4", f"{A}use_kl_loss=True",
        f"{A}megatron.tensor_model_parallel_size=2", f"{A}megatron.pipeline_model_parallel_size=2",
        "trainer.n_gpus_per_node=8", "trainer.nnodes=1", "actor_rollout_ref.rollout.name=vllm",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"]


@pytest.mark.parametrize("changes, verdict, stage, needle", [
    ([], "accept", None, ""),
    ([f"{A}ppo_mini_batch_size=2048"], "reject", "validate", "must be >= actor.ppo_mini_batch_size (2048)"),
    (["data.train_batch_size=3", f"{A}ppo_mini_batch_size=3"], "reject", "validate",
     "real_train_batch_size (15) must be divisible by minimal possible batch size (8)"),
    # mini·n = 5 is not divisible by DP = 2, but verl only finds out during training
    (["data.train_batch_size=8", f"{A}ppo_mini_batch_size=1", f"{A}ppo_micro_batch_size_per_gpu=1"],
     "accept", None, ""),
    ([f"{A}megatron.tensor_model_parallel_size=3"], "reject", "validate", "model_parallel_size (6)"),
    ([f"{A}ppo_micro_batch_size=8"], "reject", "validate", "You have set both"),
    ([f"{A}ppo_mini_batchsize=8"], "reject", "compose", "ppo_mini_batchsize"),
    ([f"{A}use_dynamic_bsz=True", "data.train_batch_size=3", f"{A}ppo_mini_batch_size=3"], "accept", None, ""),
    # a critic (GAE) loads its model config: the stand-in folder must satisfy it
    (["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=4", "critic.ppo_mini_batch_size=256"],
     "accept", None, ""),
    # verl-rules A14: setting only the deprecated critic key makes both non-null via interpolation
    (["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size=32"], "reject", "validate", "[critic]"),
])
def test_worker_reports_verls_own_verdict(worker, changes, verdict, stage, needle):
    proc, model = worker
    answer = proc.judge({"id": "t", "config_name": "ppo_megatron_trainer", "config_dir": None,
                         "overrides": oracle._apply(BASE, changes), "typed_unknowns": [],
                         "model_dir": str(model)})
    assert (answer["verdict"], answer["stage"]) == (verdict, stage), answer
    assert needle in answer["message"]


def test_unknown_typed_value_is_undecided_not_a_verdict(worker):
    proc, model = worker
    answer = proc.judge({"id": "t", "config_name": "ppo_megatron_trainer", "config_dir": None,
                         "overrides": oracle._apply(BASE, ["data.train_batch_size=unknown"]),
                         "typed_unknowns": ["data.train_batch_size"], "model_dir": str(model)})
    assert answer["verdict"] == "undecided"


def test_gen_check_agrees_with_verl(venv, tmp_path):
    """The acceptance bar: agreement N/N on the corpus calls and the mutations."""
    pytest.importorskip("generator.config", reason="gen check's config API is not installed")
    cmd = [sys.executable, str(REPO / "tools" / "oracle.py"), "--verl-version", VERSION,
           "--mutations", str(MUTATIONS), "--seed", "20261129", "--jobs", "2", "--venv", str(venv),
           "--json", str(tmp_path / "cases.json")]
    corpus = SHARED / "corpus"
    if not corpus.is_dir():
        cmd.append("--no-corpus")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO)
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr[-2000:]
    agreement = lines[-1]
    cases = json.loads((tmp_path / "cases.json").read_text())
    compared = [c for c in cases if c["verl"].get("verdict") not in ("needs-vllm", "undecided")]
    assert agreement == f"agreement {len(compared)}/{len(compared)}", proc.stdout[-6000:]
    assert proc.returncode == 0
    mutations = [c for c in cases if c["case"].startswith("mutation:")]
    assert len(mutations) == MUTATIONS
    verdicts = {c["verl"]["verdict"] for c in mutations}
    assert {"accept", "reject"} <= verdicts  # the mutations exercise both sides
    if corpus.is_dir():
        assert sum(c["case"].startswith("corpus:") for c in compared) >= 100
