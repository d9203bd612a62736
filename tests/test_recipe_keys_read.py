"""Issue 32: every key a recipe writes is read by the target release - it is in the release's
schema (or written with `+` as a key the trainer adds) and the release does not ignore it
(generator/schema/ignored_keys.py, docs/release-semantics.md#keys-a-release-ignores)."""

from __future__ import annotations

import pytest

from generator.base.errors import InputError
from generator.plan.recipe_plan import planned_spec
from generator.render import build_recipe, validate
from generator.render.spec import schema_has
from generator.schema.ignored_keys import IGNORED_KEYS, ignored_key
from generator.schema.releases import newest_release
from generator.verl.constants import ALGORITHMS

# A dense model, a MoE model and a multi-node one; each algorithm; the newest release and the two before.
MATRIX = [("qwen2-7b", 8), ("qwen3-30b-a3b", 8), ("qwen2.5-32b", 16)]
RELEASES = [newest_release(), "0.9.0", "0.8.0"]


def spec(model: str, gpus: int, algo: str, version: str):
    return planned_spec(model=model, gpus=gpus, nodes=None, gpu=None, gpu_mem=None, algo=algo, rollout="vllm",
                        launcher="auto", verl_version=version, model_path=None, train_files=None, val_files=None,
                        prompt_len=1024, response_len=1024, n=None, train_batch_size=None, project_name=None,
                        experiment_name=None)


@pytest.mark.parametrize("model,gpus", MATRIX)
@pytest.mark.parametrize("algo", ALGORITHMS)
def test_every_key_a_recipe_writes_is_read_by_the_release(model, gpus, algo):
    version = newest_release()
    recipe = build_recipe(spec(model, gpus, algo, version))
    for setting in recipe.settings:
        assert setting.add or setting.force or schema_has(version, setting.key), setting.key
        assert ignored_key(version, setting.key) is None, setting.key
    validate(recipe)  # the render's own gate agrees


@pytest.mark.parametrize("version", RELEASES)
def test_dapo_writes_the_generation_cap_only_where_the_release_reads_it(version):
    keys = {s.key for s in build_recipe(spec("qwen2-7b", 8, "dapo", version)).settings}
    cap = "algorithm.filter_groups.max_num_gen_batches"
    if ignored_key(version, cap) is not None:
        assert cap not in keys
    elif schema_has(version, "algorithm.filter_groups.enable"):
        assert cap in keys


def test_the_ignored_list_names_0_9_1s_dapo_cap():
    assert ignored_key("0.9.1", "algorithm.filter_groups.max_num_gen_batches") is not None
    assert ignored_key("0.9.1", "+algorithm.filter_groups.max_num_gen_batches") is not None
    assert ignored_key("0.9.0", "algorithm.filter_groups.max_num_gen_batches") is None
    assert ignored_key("not-a-version", "algorithm.filter_groups.max_num_gen_batches") is None
    assert all(entry.why and entry.since for entry in IGNORED_KEYS)


def test_the_render_refuses_a_key_the_release_ignores():

    from generator.render.spec import Setting, SettingGroup

    recipe = build_recipe(spec("qwen2-7b", 8, "dapo", "0.9.1"))
    recipe.groups.append(SettingGroup("probe", (Setting("algorithm.filter_groups.max_num_gen_batches", 10),)))
    with pytest.raises(InputError, match="ignored algorithm.filter_groups.max_num_gen_batches"):
        validate(recipe)
