"""Turn a rule's documented Example into a Config (for `gen rule CODE` and the rule tests).

Examples are overrides applied on top of BASE, a small valid Megatron GRPO setup on 8 GPUs:
DP = 8/(TP 2) = 4, G = 64·4 = 256, per-rank mini = 16·4/4 = 16, micro 2 → 8 micro-batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from generator.config.types import Config
from generator.rules.core import Example, Finding, Rule

if TYPE_CHECKING:
    from generator.reading.launch_script import LaunchScript
    from generator.model.facts import ModelFacts

BASE: tuple[str, ...] = (
    "trainer.n_gpus_per_node=8",
    "trainer.nnodes=1",
    "data.train_batch_size=64",
    "data.max_prompt_length=1024",
    "data.max_response_length=2048",
    "data.filter_overlong_prompts=True",
    "algorithm.adv_estimator=grpo",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
)

DEFAULT_VERSION = "0.7.0"


def example_version(rule: Rule, example: Example) -> str:
    if example.version:
        return example.version
    first = rule.versions.first
    from generator.verl.versions import parse

    if first and parse(first) > parse(DEFAULT_VERSION):
        return first
    last = rule.versions.last
    if last and parse(last) < parse(DEFAULT_VERSION):
        return last
    return DEFAULT_VERSION


def config_for(overrides: tuple[str, ...] | list[str], *, version: str = DEFAULT_VERSION,
               config_name: str = "ppo_megatron_trainer", base: tuple[str, ...] = BASE) -> Config:
    """BASE + overrides as a Config of `version` (real schema defaults, Hydra semantics)."""
    texts = list(base) + list(overrides)
    from generator import schema

    if config_name not in schema.load(version).configs:
        # As generator.config.build_config does for a config it cannot find: PPO defaults + a note.
        config = config_for(overrides, version=version, config_name="ppo_trainer",
                            base=tuple(o for o in base if ".megatron." not in o))
        config.notes.append(f"config {config_name} was not found next to the script; checked against the PPO defaults")
        config.approximate = True
        return config
    from generator.config import config_from_overrides

    return config_from_overrides(texts, version=version, config_name=config_name)


def example_config(rule: Rule, example: Example) -> Config:
    if example.script is not None and rule.scope != "script":
        return _script_example_config(rule, example)
    config_name = example.config_name or ("ppo_trainer" if rule.backends == ("fsdp",) else "ppo_megatron_trainer")
    base = BASE if "megatron" in config_name else tuple(o for o in BASE if ".megatron." not in o)
    config = config_for(example.overrides, version=example_version(rule, example), config_name=config_name, base=base)
    if example.config_dir:
        from generator.base.resources import data_dir

        config.config_dir = str(data_dir() / "examples" / example.config_dir)
    return config


def _script_example_config(rule: Rule, example: Example) -> Config:
    """The config of the first trainer call of an example script (rules about how the call is
    written, e.g. its --config-path). Nothing on disk is consulted beyond verl's own install."""
    from generator.config import build_config

    script = example_script(example)
    calls = [inv for inv in script.invocations if inv.branch != "dead"] if script is not None else []
    if not calls:
        raise ValueError(f"{rule.code}: the example script has no trainer call")
    return build_config(calls[0], version=example_version(rule, example))


def example_findings(rule: Rule, example: Example) -> list[Finding]:
    """What this rule reports on one of its documented examples (what `gen rule` prints and the
    tests assert): script rules read the example script; the others check its config."""
    if example.script is not None and rule.scope == "script":
        from generator.judging import script_findings

        script = example_script(example)
        assert script is not None  # the example has a script
        return [f for f in script_findings(script, select=[rule.code]) if f.code == rule.code]
    from generator.judging import check_config

    config = example_config(rule, example)
    script = example_script(example) if example.script is not None else None
    calls = [inv for inv in script.invocations if inv.branch != "dead"] if script is not None else []
    return [f for f in check_config(config, model=example_model(example), select=[rule.code], memory=example.memory,
                                    script=script, invocation=calls[0] if calls else None)
            if f.code == rule.code]


def example_model(example: Example) -> ModelFacts | None:
    """The model an example names in its note ("model Qwen2.5-7B"), from the packaged registry."""
    note = example.note or ""
    if not note.startswith("model "):
        return None
    from generator.model import find_model

    return find_model(note.split(" ", 1)[1].strip())


def example_script(example: Example) -> LaunchScript | None:
    """Read an example's script text with generator.reading.shell (None when it has no script)."""
    if example.script is None:
        return None
    from generator.reading.shell import read_script

    return read_script(example.script, "example.sh")
