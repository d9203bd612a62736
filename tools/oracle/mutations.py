"""Seeded random variations of four valid configs, written like the corpus's scripts."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from .cases import Case, _model_path, _override_key

A = "actor_rollout_ref.actor."


R = "actor_rollout_ref.rollout."


REF = "actor_rollout_ref.ref."


MODEL = "actor_rollout_ref.model.path=Qwen/Qwen2-7B-Instruct"


# Valid starting points, written like the corpus's scripts (each accepted by verl 0.7.0).
BASES: dict[str, tuple[str, list[str]]] = {
    "megatron-grpo": ("ppo_megatron_trainer", [
        "algorithm.adv_estimator=grpo", "data.train_batch_size=256", "data.max_prompt_length=1024",
        "data.max_response_length=2048", MODEL, f"{A}ppo_mini_batch_size=64",
        f"{A}ppo_micro_batch_size_per_gpu=4", f"{A}use_kl_loss=True", f"{A}use_dynamic_bsz=False",
        f"{A}megatron.tensor_model_parallel_size=2", f"{A}megatron.pipeline_model_parallel_size=2",
        f"{A}megatron.context_parallel_size=1", f"{R}name=vllm", f"{R}n=5",
        f"{R}tensor_model_parallel_size=2", f"{R}log_prob_micro_batch_size_per_gpu=8",
        f"{REF}log_prob_micro_batch_size_per_gpu=8", "trainer.n_gpus_per_node=8", "trainer.nnodes=1"]),
    "megatron-ppo-critic": ("ppo_megatron_trainer", [
        "algorithm.adv_estimator=gae", "data.train_batch_size=128", MODEL,
        f"{A}ppo_mini_batch_size=32", f"{A}ppo_micro_batch_size_per_gpu=2", f"{A}use_kl_loss=False",
        f"{A}megatron.tensor_model_parallel_size=4", f"{A}megatron.pipeline_model_parallel_size=1",
        f"{R}name=vllm", f"{R}n=1", f"{R}log_prob_micro_batch_size_per_gpu=4",
        "critic.ppo_mini_batch_size=32", "critic.ppo_micro_batch_size_per_gpu=2",
        "critic.megatron.tensor_model_parallel_size=4", "trainer.n_gpus_per_node=8", "trainer.nnodes=2"]),
    "fsdp-grpo": ("ppo_trainer", [
        "algorithm.adv_estimator=grpo", "data.train_batch_size=512", MODEL,
        f"{A}ppo_mini_batch_size=128", f"{A}ppo_micro_batch_size_per_gpu=8", f"{A}use_kl_loss=True",
        f"{A}use_dynamic_bsz=False", "actor_rollout_ref.model.use_remove_padding=True",
        f"{R}name=vllm", f"{R}n=8", f"{R}log_prob_micro_batch_size_per_gpu=16",
        f"{REF}log_prob_micro_batch_size_per_gpu=16", "trainer.n_gpus_per_node=8", "trainer.nnodes=1"]),
    "fsdp-ppo-critic": ("ppo_trainer", [
        "algorithm.adv_estimator=gae", "data.train_batch_size=256", "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B",
        f"{A}ppo_mini_batch_size=64", f"{A}ppo_micro_batch_size_per_gpu=4", f"{A}use_kl_loss=False",
        "actor_rollout_ref.model.use_remove_padding=True", f"{R}name=vllm", f"{R}n=1",
        f"{R}log_prob_micro_batch_size_per_gpu=8", "critic.ppo_mini_batch_size=64",
        "critic.ppo_micro_batch_size_per_gpu=4", "critic.model.use_remove_padding=True",
        "trainer.n_gpus_per_node=4", "trainer.nnodes=1"]),
}


_BATCHES = [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 30, 32, 48, 60, 64, 96, 100, 120, 128, 192, 256, 320,
            384, 500, 512, 1000, 1024, 2048]


_MICROS = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64]


def _batch(rng: random.Random) -> int:
    return rng.choice(_BATCHES) if rng.random() < 0.8 else rng.randint(1, 1100)


def _micro(rng: random.Random) -> int:
    return rng.choice(_MICROS)


def _mutations_for(base: str) -> list[tuple[str, Any]]:
    """(name, weight, function rng -> list of override strings) for one base. Changes that
    verl always rejects (both micro keys set) weigh less, so accepted configs stay common."""
    megatron = base.startswith("megatron")
    critic = base.endswith("critic")
    out: list[tuple[str, Any]] = [
        ("train batch", 3, lambda r: [f"data.train_batch_size={_batch(r)}"]),
        ("mini batch", 3, lambda r: [f"{A}ppo_mini_batch_size={_batch(r)}"]),
        ("micro batch", 3, lambda r: [f"{A}ppo_micro_batch_size_per_gpu={_micro(r)}"]),
        ("rollout.n", 2, lambda r: [f"{R}n={r.choice([1, 2, 3, 4, 5, 6, 8, 16])}"]),
        ("gpus per node", 2, lambda r: [f"trainer.n_gpus_per_node={r.choice([1, 2, 3, 4, 6, 8, 16])}"]),
        ("nodes", 1, lambda r: [f"trainer.nnodes={r.choice([1, 2, 3, 4, 8])}"]),
        ("dynamic bsz", 1, lambda r: [f"{A}use_dynamic_bsz={r.choice(['True', 'False'])}"]),
        ("deprecated micro, both set", 0.5, lambda r: [f"{A}ppo_micro_batch_size={_micro(r) * r.choice([1, 8])}"]),
        ("deprecated micro only", 1, lambda r: [f"{A}ppo_micro_batch_size_per_gpu=null",
                                             f"{A}ppo_micro_batch_size={_micro(r) * r.choice([1, 4, 8, 16])}"]),
        ("neither micro set", 0.5, lambda r: [f"{A}ppo_micro_batch_size_per_gpu=null"]),
        ("rollout log-prob micro", 1, lambda r: r.choice([
            [f"{R}log_prob_micro_batch_size_per_gpu=null"],
            [f"{R}log_prob_micro_batch_size={_micro(r) * 8}"],
            [f"{R}log_prob_micro_batch_size_per_gpu=null", f"{R}log_prob_micro_batch_size={_micro(r) * 8}"],
            [f"{R}log_prob_micro_batch_size_per_gpu={_micro(r)}"]])),
        ("ref log-prob micro", 1, lambda r: r.choice([
            [f"{REF}log_prob_micro_batch_size_per_gpu=null"],
            [f"{REF}log_prob_micro_batch_size={_micro(r) * 8}"],
            [f"{REF}log_prob_micro_batch_size_per_gpu=null", f"{REF}log_prob_micro_batch_size={_micro(r) * 8}"]])),
        ("kl loss", 1, lambda r: [f"{A}use_kl_loss={r.choice(['True', 'False'])}"]),
        # config-load checks beyond batch sizes, less often
        ("loss agg mode", 0.3, lambda r: [f"{A}loss_agg_mode=" + r.choice(
            ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm", "seq-mean"])]),
        ("validation sampling", 0.3, lambda r: [f"{R}val_kwargs.do_sample={r.choice(['True', 'False'])}",
                                                f"{R}temperature={r.choice([0, 0.0, 0.6, 1.0])}"]),
        ("lora rank", 0.3, lambda r: [f"actor_rollout_ref.model.lora_rank={r.choice([0, 8, 512, 513, 1024])}"]),
        ("rollout mode", 0.2, lambda r: [f"{R}mode={r.choice(['async', 'sync'])}"]),
        ("rollout pp/ep", 0.2, lambda r: r.choice([[f"{R}pipeline_model_parallel_size={r.choice([1, 2])}"],
                                                   [f"{R}expert_parallel_size={r.choice([1, 2, 4])}"]])),
    ]
    if megatron:
        out += [
            ("megatron dtype", 0.3, lambda r: [f"{A}megatron.dtype={r.choice(['bfloat16', 'float16', 'float32'])}"]),
            ("tp", 2, lambda r: [f"{A}megatron.tensor_model_parallel_size={r.choice([1, 2, 3, 4, 8])}"]),
            ("pp", 2, lambda r: [f"{A}megatron.pipeline_model_parallel_size={r.choice([1, 2, 3, 4])}"]),
            ("cp", 1, lambda r: [f"{A}megatron.context_parallel_size={r.choice([1, 2, 4])}"]),
        ]
    else:
        out += [
            ("ulysses sp", 1, lambda r: [f"{A}ulysses_sequence_parallel_size={r.choice([1, 2, 4])}"]),
            ("remove padding", 1, lambda r: [f"actor_rollout_ref.model.use_remove_padding={r.choice(['True', 'False'])}"]),
        ]
    if critic:
        out += [
            ("critic mini", 2, lambda r: [f"critic.ppo_mini_batch_size={_batch(r)}"]),
            ("critic micro", 2, lambda r: [f"critic.ppo_micro_batch_size_per_gpu={_micro(r)}"]),
            ("critic deprecated micro", 1, lambda r: r.choice([
                [f"critic.ppo_micro_batch_size={_micro(r) * 8}"],
                ["critic.ppo_micro_batch_size_per_gpu=null"],
                ["critic.ppo_micro_batch_size_per_gpu=null", f"critic.ppo_micro_batch_size={_micro(r) * 8}"]])),
            ("critic dynamic bsz", 1, lambda r: [f"critic.use_dynamic_bsz={r.choice(['True', 'False'])}"]),
        ]
    if critic and not megatron:
        out += [
            ("critic ulysses sp", 1, lambda r: [f"critic.ulysses_sequence_parallel_size={r.choice([1, 2, 4])}"]),
            ("critic remove padding", 0.5,
             lambda r: [f"critic.model.use_remove_padding={r.choice(['True', 'False'])}"]),
        ]
    return out


def _kind(name: str, base: tuple[str, list[str]]) -> str:
    """The menu a base mutates with: megatron-/fsdp- and -critic (GAE), as the BASES names say."""
    if name in BASES:
        return name
    config_name, words = base
    megatron = "megatron" in config_name or "model_engine=megatron" in words
    critic = "algorithm.adv_estimator=gae" in words
    return ("megatron" if megatron else "fsdp") + ("-ppo-critic" if critic else "-grpo")


def _apply(base: list[str], changes: list[str]) -> list[str]:
    """Later wins, as in Hydra; keep one override per key so the case reads like a script."""
    keyed = {_override_key(o): o for o in base}
    for change in changes:
        keyed[_override_key(change)] = change
    return list(keyed.values())


def example_bases(corpus: Path, tags: tuple[str, ...], version: str | None = None
                  ) -> dict[str, tuple[str, list[str]]]:
    """verl's own Megatron examples of the corpus snapshots `tags` as mutation bases, one per
    main_ppo call: its overrides as verl-gen's reader sees them, leaving out any override whose
    value the reader could not see (the config's default stands instead) or is read from the
    environment, and, with `version`, any key that release's config does not have (0.9.1 dropped
    megatron.grad_offload, which the 0.9.0 examples set): the bases compose, so the mutations
    probe validation rather than one missing key."""
    import csv

    from generator.config import config_from_overrides
    from generator.config.apply import is_hydra_rejection
    from generator.reading.shell import read_file

    with open(corpus / "INDEX.tsv", encoding="utf-8") as handle:
        backend = {row["sha1"]: row["backend"] for row in csv.DictReader(handle, delimiter="\t")}
    seen: set[tuple[str, ...]] = set()
    out: dict[str, tuple[str, list[str]]] = {}
    with open(corpus / "OCCURRENCES.tsv", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle, delimiter="\t") if r["tag"] in tags]
    for row in rows:
        if backend.get(row["sha1"]) != "megatron":
            continue
        script = read_file(str(corpus / "scripts" / row["first_tag"] / row["first_path"]))
        for inv in script.invocations:
            if inv.entry != "verl.trainer.main_ppo" or inv.branch == "dead" or inv.config_path:
                continue
            words = [o.text for o in inv.overrides
                     if not o.unknowns and "<?" not in o.text and "${oc.env:" not in o.text]
            if "model_engine=megatron" not in words and "megatron" not in (inv.config_name or ""):
                continue
            if version is not None:
                config = config_from_overrides(words, version=version, config_name=inv.config_name or "ppo_trainer")
                refused = {issue.override.text for issue in config.key_issues if is_hydra_rejection(issue)}
                words = [w for w in words if w not in refused]
            if tuple(words) in seen:
                continue
            seen.add(tuple(words))
            name = f"{row['tag']}:{row['path']}:{inv.line}"
            out[name] = (inv.config_name or "ppo_trainer", words)
    return out


def mutation_cases(count: int, seed: int, bases: dict[str, tuple[str, list[str]]] | None = None) -> list[Case]:
    """`count` seeded variations of `bases` (default: the four BASES written for verl 0.7.0)."""
    rng = random.Random(seed)
    bases = bases if bases is not None else BASES
    names = sorted(bases)
    menus = {name: _mutations_for(_kind(name, bases[name])) for name in names}
    cases = []
    for index in range(count):
        base = names[index % len(names)]
        config_name, overrides = bases[base]
        changes: list[str] = []
        for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
            _label, _weight, make = rng.choices(menus[base], weights=[m[1] for m in menus[base]])[0]
            changes += make(rng)
        effective = _apply([], changes)  # a key changed twice: the later change is the one
        case = Case(ident=f"mutation:{seed}:{index}", config_name=config_name,
                    overrides=_apply(overrides, effective), note=f"{base} + {', '.join(effective)}")
        case.model_path = _model_path(case.overrides)
        cases.append(case)
    return cases
