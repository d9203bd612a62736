"""Config-group selections (`model_engine=megatron`, `critic=...`, `+group=option`) composed as
Hydra composes them: the packaged record of a release (generator.schema.groups.select_groups)
and a config folder read at run time (compose.py's choices), each checked against real Hydra."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.config import config_from_overrides
from generator.config.apply import is_hydra_rejection
from generator.schema import load
from generator.schema.compose import ComposeError, compose, flatten
from generator.schema.groups import select_groups_in_dir
from generator.verl.constants import ACTOR

MEG = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"


def _tree(root: Path) -> Path:
    """A small verl-like config folder: a model_engine group that re-chooses the actor through
    `${model_engine}_actor`, an `@package _global_` option, a shim config with `override`."""
    files = {
        "ppo.yaml": "defaults:\n  - model_engine: dp\n  - actor@actor_rollout_ref.actor: ${model_engine}_actor\n"
                    "  - _self_\ntrainer:\n  nnodes: 1\n",
        "shim.yaml": "defaults:\n  - ppo\n  - override model_engine: megatron\n  - _self_\n",
        "model_engine/dp.yaml": "# @package _global_\nmodel_engine: dp\n",
        "model_engine/megatron.yaml": "# @package _global_\nmodel_engine: megatron\n",
        "actor/dp_actor.yaml": "strategy: fsdp\nfsdp_config:\n  param_offload: false\n",
        "actor/megatron_actor.yaml": "strategy: megatron\nmegatron:\n  tensor_model_parallel_size: 1\n",
        "profiler/profiler.yaml": "tool: null\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _hydra(config_dir: Path, name: str, overrides: list[str]) -> dict:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        tree = OmegaConf.to_container(hydra_compose(config_name=name, overrides=overrides), resolve=False)
    tree.pop("hydra", None)
    return flatten(tree)


@pytest.mark.parametrize("name, choices, overrides", [
    ("ppo", {}, []),
    ("ppo", {"model_engine": "megatron"}, ["model_engine=megatron"]),
    ("shim", {}, []),
    ("shim", {"model_engine": "dp"}, ["model_engine=dp"]),
    ("ppo", {"+profiler": "profiler"}, ["+profiler=profiler"]),
])
def test_compose_with_choices_is_what_hydra_composes(tmp_path: Path, name, choices, overrides) -> None:
    root = _tree(tmp_path)
    assert flatten(compose(root, name, choices=choices)) == _hydra(root, name, overrides)


@pytest.mark.parametrize("choices, words", [
    ({"model_engine": "torchtitan"}, "Could not find 'model_engine/torchtitan'"),
    ({"engine": "x"}, "Could not override 'engine'. No match in the defaults list."),
])
def test_a_selection_hydra_refuses_is_refused_with_its_words(tmp_path: Path, choices, words) -> None:
    with pytest.raises(ComposeError, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        compose(_tree(tmp_path), "ppo", choices=choices)


def test_a_run_time_folder_replays_selections_and_attributes_keys(tmp_path: Path) -> None:
    from generator.reading.launch_script import Override, Provenance, Span

    root = _tree(tmp_path)
    base = flatten(compose(root, "ppo"))

    def override(text: str, line: int) -> Override:
        key = text.lstrip("+").split("=")[0]
        op = "+" if text.startswith("+") else "="
        span = Span(0, len(text), line)
        return Override(text, key, op, text.split("=", 1)[1], line, span, Provenance("literal", span))

    picked = override("model_engine=megatron", 3)
    again = override("+model_engine=megatron", 4)
    result = select_groups_in_dir(root, "ppo", base, [picked, again])
    assert result.defaults["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == 1
    assert "actor_rollout_ref.actor.fsdp_config.param_offload" not in result.defaults
    assert "actor_rollout_ref.actor.strategy" in result.consumed[id(picked)]
    assert [r.detail for r in result.refusals] == ["Could not append to config. An item is already at 'model_engine'"]


def test_packaged_release_composes_model_engine_megatron() -> None:
    # 0.9.1: ppo_trainer has no actor.megatron section until model_engine=megatron selects it.
    schema = load("0.9.1")
    assert MEG not in schema.configs["ppo_trainer"]
    plain = config_from_overrides([f"{MEG}=2"], version="0.9.1", config_name="ppo_trainer")
    assert [i.kind for i in plain.key_issues if is_hydra_rejection(i)] == ["unknown-key"]
    chosen = config_from_overrides(["model_engine=megatron", f"{MEG}=2"], version="0.9.1", config_name="ppo_trainer")
    assert not [i for i in chosen.key_issues if is_hydra_rejection(i)]
    # config.engine_group reads model_engine=megatron as the 0.8.0 shim it equals (ppo_megatron_trainer),
    # so the selection is recorded either as a group or as that config name
    assert (chosen.groups == {"model_engine": "megatron"} or chosen.schema == "ppo_megatron_trainer")
    assert chosen.values[MEG] == 2
    assert chosen.values[ACTOR + "_target_"] == "verl.workers.config.McoreActorConfig"
    assert chosen.backend == "megatron"
    # the shim composes the same keys
    shim = config_from_overrides([f"{MEG}=2"], version="0.9.1", config_name="ppo_megatron_trainer")
    assert set(shim.values) == set(chosen.values)


def test_packaged_release_refuses_an_option_it_does_not_have() -> None:
    config = config_from_overrides(["model_engine=megatrom"], version="0.8.0", config_name="ppo_trainer")
    issues = [i for i in config.key_issues if is_hydra_rejection(i)]
    assert len(issues) == 1 and "Could not find 'model_engine/megatrom'" in issues[0].detail
    assert "megatron" in issues[0].detail  # the options it has are listed


def test_the_engine_selection_agrees_with_every_packaged_schemas_groups() -> None:
    # config.engine_group states since when model_engine=megatron exists and that it composes as
    # ppo_megatron_trainer; the packaged schemas record the option lists and what selecting one
    # sets. The two must not drift apart: the release boundary and the composition both agree.
    from generator.config.engine_group import MEGATRON_ENGINE, selects_megatron_engine
    from generator.config.synthetic import synthetic
    from generator.schema import available
    from generator.schema.groups import select_groups

    checked = 0
    for version in available():
        schema = load(version)
        options = schema.groups_of("ppo_trainer").get("choices", {}).get("model_engine", {}).get("options", {})
        assert selects_megatron_engine(version) == (MEGATRON_ENGINE in options), version
        if MEGATRON_ENGINE not in options:
            continue
        selection = synthetic("model_engine=megatron", "model_engine", "=", "megatron", 0)
        replayed = select_groups(schema.groups_of("ppo_trainer"), schema.defaults("ppo_trainer"), [selection])
        assert replayed.exact and not replayed.refusals
        assert replayed.defaults == schema.defaults("ppo_megatron_trainer"), version
        checked += 1
    assert checked >= 4  # 0.8.0, 0.9.0, 0.9.1 and the newest snapshot


@pytest.mark.parametrize("text", ["model_engine=megatron", "+critic=dp", "++actor@actor_rollout_ref.actor=x",
                                  "~rollout", "a.b@_global_=x", "a/b=c@d", "@a=1", "a@=1", "$x=1", "a-b=1",
                                  "a.1=2", "critic=[a,b]", "model_engine='megatron'", "a:b=c", "a b=1", " a=1",
                                  "a/=1", "+ +a=1", "a\t=1", "a=1=2", "1=2", "~a=3"])
def test_the_key_a_selection_is_passed_over_by_is_the_key_hydra_reads(text: str) -> None:
    # _pending skips an override unparsed when this key names no group: it must be the key Hydra
    # reads whenever Hydra accepts the override (an override it refuses is skipped either way).
    from generator.reading.overrides import parse_override
    from generator.schema.groups import _key_text

    parsed = parse_override(text)
    assert parsed.error is not None or parsed.key == _key_text(text)
