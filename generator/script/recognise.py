"""Which packaged model a legacy script trains, for `gen recipe --from` (issue 22).

Evidence, strongest first: the model path the call sets (the whole path, then any run of its
words: `<path_to_dsv3_config>` names DeepSeek-V3 by its alias `dsv3`), a local config.json at
that path, then a hub id named anywhere in the script (`huggingface-cli download
deepseek-ai/DeepSeek-V3-0324`). verl's own placeholder default path is no evidence (a call
whose path override Hydra cannot parse falls back to it). Each candidate must also fit the
script's layout: expert parallelism > 1 needs a mixture of experts whose expert count it
divides, and an uneven pipeline split needs the layers it implies. The first candidate that
fits is the answer; none that fits is an answer too (the caller asks for --model).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from generator.config.types import Config
    from generator.reading.launch_script import Invocation
    from generator.model.facts import ModelFacts
    from generator.script.extract import Setup

_WORDS = re.compile(r"[A-Za-z0-9.]+")
_HUB_ID = re.compile(r"\b[\w.-]+/[\w.-]+\b")
MAX_RUN = 5  # words of a path tried together (`Qwen2.5-Math-7B-Instruct` is four)


@dataclass(frozen=True, slots=True)
class Recognised:
    model: ModelFacts | None
    why: str  # how it was recognised, or why nothing was


def _path_texts(config: Config, invocation: Invocation) -> list[str]:
    """The model path as the call sets it: the composed value when the script set it, and the
    override words as written (also one Hydra could not parse)."""
    from generator.verl.constants import DEFAULT_MODEL_PATH, MODEL_PATH_KEY

    texts: list[str] = []
    value = config.values.get(MODEL_PATH_KEY)
    if isinstance(value, str) and (MODEL_PATH_KEY in config.set_by or value != DEFAULT_MODEL_PATH):
        texts.append(value)
    for override in invocation.overrides:
        if override.key == MODEL_PATH_KEY:
            texts.append(str(override.value) if override.resolved else override.text.partition("=")[2])
    return [t for t in dict.fromkeys(texts) if t.strip()]


def _word_runs(text: str) -> Iterator[str]:
    """Runs of consecutive words of a path, longest first (`a/b_c-d` -> `b-c-d`, ..., `d`)."""
    pieces = _WORDS.findall(text)  # `_`, `-`, `/` and the rest separate words; `.` stays (Qwen2.5)
    for size in range(min(MAX_RUN, len(pieces)), 0, -1):
        for start in range(len(pieces) - size + 1):
            yield "-".join(pieces[start:start + size])


def _candidates(config: Config, invocation: Invocation, source: str) -> Iterator[tuple[ModelFacts, str]]:
    from generator.model import find_model
    from generator.model.registry import registry_model

    for text in _path_texts(config, invocation):
        whole = find_model(text)
        if whole is not None:
            yield whole, f"the model path {text!r}"
        for run in _word_runs(text):
            found = registry_model(run)
            if found is not None:
                yield found, f"'{run}' in the model path {text!r}"
    for hub_id in dict.fromkeys(_HUB_ID.findall(source)):
        found = registry_model(hub_id)
        if found is not None:
            yield found, f"the hub id {hub_id} in the script"


def layout_misfit(model: ModelFacts, setup: Setup) -> str | None:
    """Why `model` cannot be what the script's layout trains, or None when it can."""
    layout = setup.layout
    if layout.ep > 1:
        if not model.is_moe:
            return f"EP {layout.ep} needs a mixture of experts; {model.name} is dense"
        if model.num_experts and model.num_experts % layout.ep:
            return f"EP {layout.ep} does not divide {model.name}'s {model.num_experts} experts"
    first, last, pp = layout.first_stage_layers, layout.last_stage_layers, layout.pp
    if pp > 1 and (first is not None or last is not None):
        inner = model.num_layers - (first or 0) - (last or 0)
        middle = pp - (first is not None) - (last is not None)
        if inner < 0 or (middle > 0 and inner % middle) or (middle == 0 and inner):
            return f"{model.num_layers} layers cannot be split as first {first}, last {last} over PP {pp}"
    return None


def recognise_model(config: Config, invocation: Invocation, setup: Setup, source: str) -> Recognised:
    """The model of a legacy script's call (see the module docstring)."""
    refused: list[str] = []
    seen: set[str] = set()
    for model, why in _candidates(config, invocation, source):
        if model.name in seen:
            continue
        seen.add(model.name)
        misfit = layout_misfit(model, setup)
        if misfit is None:
            return Recognised(model, why)
        refused.append(f"{model.name} ({why}): {misfit}")
    if refused:
        return Recognised(None, "no named model fits the script's layout: " + "; ".join(refused))
    texts = _path_texts(config, invocation)
    return Recognised(None, f"actor_rollout_ref.model.path={texts[0]!r} names no packaged model" if texts
                      else "the script does not set actor_rollout_ref.model.path")


__all__ = ["Recognised", "layout_misfit", "recognise_model"]
