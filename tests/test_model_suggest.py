"""What a model name says about the model (family, size, dense or mixture), and the suggestions
built only from those traits (generator/model/suggest.py)."""

from __future__ import annotations

import pytest

from generator.model import list_models
from generator.model.suggest import SIMILAR_SIZE_FACTOR, name_traits, similar_models


@pytest.mark.parametrize("name, family, billions, moe", [
    ("Qwen/Qwen2.5-7B-Instruct", "qwen", 7.0, False),
    ("mistralai/Mixtral-8x22B-v0.1", "mixtral", 176.0, True),
    ("Qwen/Qwen3-30B-A3B", "qwen", 30.0, True),  # A3B is the active size, not the total
    ("Qwen/Qwen1.5-MoE-A2.7B", "qwen", None, True),
    ("meta-llama/Meta-Llama-3-8B", "llama", 8.0, False),
    ("google/gemma-2-9b-it", "gemma", 9.0, False),
    ("gpt-5", "gpt", None, None),
])
def test_name_traits(name, family, billions, moe):
    traits = name_traits(name)
    assert (traits.family, traits.billions, traits.moe) == (family, billions, moe)


def test_a_family_match_keeps_the_kind_and_puts_the_same_generation_first():
    names, why = similar_models("Qwen/Qwen2.5-9B", list_models())
    assert why == "same family, dense" and names[0] == "Qwen2.5-7B"
    assert all("A3B" not in n and "MoE" not in n and "A22B" not in n for n in names)


def test_without_a_family_only_models_of_similar_size_and_the_same_kind():
    known = {m.name: m for m in list_models()}
    names, why = similar_models("acme/Falcon-like-7B", list(known.values()))
    assert why == "other families, dense, similar size" and names
    from generator.model.params import total_params

    for name in names:
        billions = total_params(known[name]) / 1e9
        assert not known[name].is_moe
        assert 7 / SIMILAR_SIZE_FACTOR <= billions <= 7 * SIMILAR_SIZE_FACTOR


def test_nothing_in_common_gives_nothing():
    assert similar_models("gpt-5", list_models()) == ([], "")
    assert similar_models("acme/thing-900B", list_models())[0] == []  # no dense model near 900B
