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


@pytest.mark.parametrize("base", sorted(oracle.BASES))
def test_every_mutation_base_is_a_config_verl_accepts(worker, base):
    proc, model = worker
    config_name, overrides = oracle.BASES[base]
    answer = proc.judge({"id": base, "config_name": config_name, "config_dir": None, "overrides": overrides,
                         "typed_unknowns": [], "model_dir": str(model)})
    assert answer["verdict"] == "accept", answer


def test_relative_config_path_is_resolved_inside_verl_like_hydra_does(worker):
    proc, model = worker
    ok = proc.judge({"id": "r", "config_name": "ppo_megatron_trainer", "config_relative": "config",
                     "overrides": BASE, "typed_unknowns": [], "model_dir": str(model)})
    assert ok["verdict"] == "accept", ok
    missing = proc.judge({"id": "r", "config_name": "ppo_megatron_trainer", "config_relative": "base_dir/configs",
                          "overrides": BASE, "typed_unknowns": [], "model_dir": str(model)})
    assert (missing["verdict"], missing["stage"]) == ("reject", "compose")


def test_parse_caches_do_not_change_any_verdict(worker, venv, tmp_path):
    """The worker caches parsed YAML and interpolation parse trees; a worker with Hydra and
    OmegaConf untouched must give the same verdicts and messages."""
    proc, model = worker
    plain = oracle.Worker(venv, [model], tmp_path / "plain.log", env={"VERL_GEN_ORACLE_NO_CACHE": "1"})
    try:
        for case in oracle.mutation_cases(24, seed=5):
            request = oracle.worker_request(case, model.parent.parent)
            cached, untouched = proc.judge(request), plain.judge(request)
            assert [cached[k] for k in ("verdict", "stage", "message")] == \
                [untouched[k] for k in ("verdict", "stage", "message")], case.note
    finally:
        plain.stop()


def test_unknown_typed_value_is_undecided_not_a_verdict(worker):
    proc, model = worker
    answer = proc.judge({"id": "t", "config_name": "ppo_megatron_trainer", "config_dir": None,
                         "overrides": oracle._apply(BASE, ["data.train_batch_size=unknown"]),
                         "typed_unknowns": ["data.train_batch_size"], "model_dir": str(model)})
    assert answer["verdict"] == "undecided"


# Disagreement classes found by this oracle and reported for routing, each with who is right
# (decided by reading verl 0.7.0's source). Until the owning rule is fixed, a disagreement of
# one of these classes is listed but tolerated; any other disagreement fails the test. Empty
# this list as the fixes land: the goal is a plain N/N.


def _load_codes(case: dict) -> set[str]:
    return {reason.split(" ", 1)[0] for reason in case["ours"] if not reason.startswith("(not load)")}


def _over(case: dict, codes: set[str]) -> bool:
    """verl accepts at config load; gen check's only load errors are from `codes`."""
    return case["verl"]["verdict"] == "accept" and bool(case["ours_reject"]) and _load_codes(case) <= codes


def _under(case: dict, pattern: str) -> bool:
    """verl rejects at config load with a message matching `pattern`; gen check has no load error."""
    import re

    return (case["verl"]["verdict"] == "reject" and not case["ours_reject"]
            and re.search(pattern, case["verl"]["message"]) is not None)


AWAITING_RULE_FIXES = [
    # verl right: RolloutConfig.__post_init__ (mode=sync, EP != TP*DP, PP>1 with vllm/sglang) runs
    # in the workers' _build_rollout, and rollout.name '???' is first read after validate_config;
    # in 0.7.0 validate_config never builds the rollout dataclass. These rules' stage is "init".
    ("rollout-checks-run-at-worker-init", lambda c: _over(c, {"VR502", "VR503", "VR508", "VR510"})),
    # verl right: load_format=dummy_megatron reaches the rollout engine at init, not validate_config.
    ("load-format-checked-at-init", lambda c: _over(c, {"VK607"})),
    # verl right: validate_config checks n_gpus % (TP*PP*CP) only when actor.use_dynamic_bsz is
    # False (A1, gated since 0.6.0); with dynamic bsz Megatron fails at init instead (E1).
    ("world-divisibility-gated-by-dynamic-bsz",
     lambda c: _over(c, {"VP301"}) and "actor_rollout_ref.actor.use_dynamic_bsz=True" in c["overrides"]),
    # verl right (A15): critic.ppo_mini_batch_size % critic.ppo_micro_batch_size (the deprecated
    # global key) is checked in CriticConfig.__post_init__ at load.
    ("critic-mini-not-divisible-by-deprecated-micro",
     lambda c: _under(c, r"\[critic\] ppo_mini_batch_size \(\d+\) must be divisible by ppo_micro_batch_size")),
    # verl right: a key added with + under a section that verl instantiates as a dataclass
    # (actor, critic, their megatron/optim/... children) fails with TypeError at load.
    ("added-key-in-dataclass-section", lambda c: _under(c, r"unexpected keyword argument")),
    # verl right: Hydra resolves a relative --config-path against verl/trainer/ (the @hydra.main
    # file), so `base_dir/recipe/deepeyes/configs` (a placeholder) is not found.
    ("relative-config-path-not-in-verl",
     lambda c: _under(c, r"MissingConfigException: config folder .* not found")),
    # verl right (A2, FSDP): minimal batch = n_gpus whatever ulysses SP is; gen check stays silent
    # on the batch check when SP does not divide the GPU count (it reports VP307 at init instead).
    ("fsdp-minimal-batch-skipped-when-sp-does-not-divide-gpus",
     lambda c: _under(c, r"real_train_batch_size \(\d+\) must be divisible by minimal possible batch size")
     and any(r.startswith("(not load) VP307") for r in c["ours"])),
]


def known_class(case: dict) -> str | None:
    for name, matches in AWAITING_RULE_FIXES:
        if matches(case):
            return name
    return None


def test_gen_check_agrees_with_verl(venv, tmp_path):
    """The acceptance bar: corpus calls, rules' examples and mutations, each judged by verl and
    by gen check; every disagreement must be of a documented class awaiting its rule fix."""
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
    cases = json.loads((tmp_path / "cases.json").read_text())
    compared = [c for c in cases if c["verl"].get("verdict") not in ("needs-vllm", "undecided")]
    disagreeing = [c for c in compared if c["verl"]["verdict"] not in ("accept", "reject")
                   or (c["verl"]["verdict"] == "reject") != bool(c["ours_reject"])]
    assert lines[-1] == f"agreement {len(compared) - len(disagreeing)}/{len(compared)}"
    assert proc.returncode == (0 if not disagreeing else 1)
    unexplained = [c["case"] for c in disagreeing if known_class(c) is None]
    assert not unexplained, "new disagreements with verl:\n" + proc.stdout[-8000:]
    mutations = [c for c in cases if c["case"].startswith("mutation:")]
    assert len(mutations) == MUTATIONS
    verdicts = {c["verl"]["verdict"] for c in mutations}
    assert {"accept", "reject"} <= verdicts  # the mutations exercise both sides
    if corpus.is_dir():
        assert sum(c["case"].startswith("corpus:") for c in compared) >= 100
