"""Which known models an unknown name is really like: the same family, the same kind (dense or
mixture-of-experts), the nearest size. A name that shares none of that gets no suggestion at all:
a Gemma user told "Qwen1.5-MoE-A2.7B" by spelling distance is misled, not helped (issue 36).

Pure functions of the typed name and the registry's facts; `registry.resolve_model` words the error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from generator.model.facts import ModelFacts
from generator.model.names import base_name
from generator.model.params import total_params

# Size parts users and vendors write: 7B, 0.5B, 1.5b, 671B; 8x7B (experts x size) is a mixture.
_SIZE = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)b(?![a-z])")
_ACTIVE = re.compile(r"(?<![a-z0-9.])a\d+(?:\.\d+)?b(?![a-z])")  # Qwen3-30B-A3B: A3B is the active size
_MOE_WORDS = re.compile(r"(?<![a-z])moe(?![a-z])")
_VISION_WORDS = re.compile(r"(?<![a-z])(?:vl|vision|omni)(?![a-z])")  # Qwen2.5-VL-7B, Llama-3.2-11B-Vision
# A similar size: within this factor either way ("7B" finds 8B and 5.6B, not 1.5B or 14B).
SIMILAR_SIZE_FACTOR = 1.5
MAX_SUGGESTIONS = 3


@dataclass(frozen=True, slots=True)
class NameTraits:
    """What a model name says about the model; None where it says nothing."""

    family: str | None  # the vendor's series word: qwen, llama, mistral, gemma, deepseek ...
    series: str  # the name before its size: "qwen2.5", "llama-3.1" (a generation of the family)
    billions: float | None  # total parameters, in billions
    moe: bool | None  # True: a mixture of experts; False: dense (a size and no expert marker)


def name_traits(name: str) -> NameTraits:
    base = base_name(name).replace("_", "-")
    family_match = re.match(r"[a-z]+", base)
    family = family_match.group(0) if family_match else None
    if family in ("meta", "hf", "models"):  # meta-llama-3-8b: the series is the next word
        rest = re.match(r"[a-z]+[-.]([a-z]+)", base)
        family = rest.group(1) if rest else family
    without_active = _ACTIVE.sub("", base)
    billions: float | None = None
    moe: bool | None = None
    size = _SIZE.search(without_active)
    if size is not None:
        experts = int(size.group(1)) if size.group(1) else 1
        billions = experts * float(size.group(2))
        moe = experts > 1
    if _ACTIVE.search(base) or _MOE_WORDS.search(base):
        moe = True
    series = without_active[:size.start()] if size is not None else without_active
    return NameTraits(family, series.strip("-. "), billions, moe)


def _traits_of(facts: ModelFacts) -> NameTraits:
    named = name_traits(facts.name)
    return NameTraits(named.family, named.series, total_params(facts) / 1e9, facts.is_moe)


def _size_distance(a: float | None, b: float | None) -> float:
    if a is None or b is None or a <= 0 or b <= 0:
        return math.inf
    return abs(math.log(a / b))


def similar_models(name: str, known: list[ModelFacts]) -> tuple[list[str], str]:
    """(names, why) for an unknown `name`: models of its family and kind, nearest size first;
    else models of its kind within SIMILAR_SIZE_FACTOR of its size; else nothing. `why` says which
    similarity the names share ("" when there are none)."""
    wanted = name_traits(name)
    pool = [(m, _traits_of(m)) for m in known]

    wants_vision = bool(_VISION_WORDS.search(base_name(name)))
    vision = {m.name: m.vision_params > 0 for m in known}

    def same_kind(traits: NameTraits, model: ModelFacts) -> bool:
        # A text model is not like a vision-language one of its size (gemma-2-9b is not Qwen2.5-VL-7B).
        return (wanted.moe is None or traits.moe == wanted.moe) and vision[model.name] == wants_vision

    family = [(m, t) for m, t in pool if wanted.family is not None and t.family == wanted.family and same_kind(t, m)]
    if family:
        family.sort(key=lambda pair: (pair[1].series != wanted.series,
                                      _size_distance(wanted.billions, pair[1].billions), pair[0].name))
        kind = "" if wanted.moe is None else (", mixture-of-experts" if wanted.moe else ", dense")
        return [m.name for m, _ in family[:MAX_SUGGESTIONS]], f"same family{kind}"
    if wanted.billions is None:
        return [], ""
    limit = math.log(SIMILAR_SIZE_FACTOR)
    sized = [(m, t) for m, t in pool if same_kind(t, m) and _size_distance(wanted.billions, t.billions) <= limit]
    sized.sort(key=lambda pair: (_size_distance(wanted.billions, pair[1].billions), pair[0].name))
    if not sized:
        return [], ""
    kind = "mixture-of-experts" if wanted.moe else "dense"
    return [m.name for m, _ in sized[:MAX_SUGGESTIONS]], f"other families, {kind}, similar size"
