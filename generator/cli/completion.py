"""Shell completion of option values (issue 36): `--model`, `--algo`, `--gpu`, `--to` and the other
release options, recipe names for `gen show/recipe NAME`, rule codes for `gen rule`, doc pages for
`gen doc`. Each reads the list its option is checked against, so a completion is never a value the
command would refuse. typer calls them (`autocompletion=`) for `gen` and `verl-gen` alike: the
shell sets `_GEN_COMPLETE` or `_VERL_GEN_COMPLETE` and the words typed so far.

A completer never raises: a value it cannot list (no user library, a broken recipe) completes to
nothing, and the shell falls back to file names (`complete -o default`).
"""

from __future__ import annotations

from typing import Callable, Iterable

Completer = Callable[[str], list[str]]


def _starting(values: Iterable[str], incomplete: str) -> list[str]:
    typed = incomplete.lower()
    seen: dict[str, None] = {}
    for value in values:
        if value.lower().startswith(typed):
            seen.setdefault(value, None)
    return list(seen)


def _safely(values: Callable[[], Iterable[str]]) -> Completer:
    def complete(incomplete: str) -> list[str]:
        try:
            return _starting(values(), incomplete)
        except Exception:  # noqa: BLE001 - completion must never print a traceback into the shell
            return []

    return complete


def model_names() -> list[str]:
    """The names `--model` accepts from the packaged registry, as `gen models` lists them in lower
    case (the README's `qwen2-7b`), then the Hugging Face ids of each."""
    from generator.model.registry import list_models

    models = list_models()
    return [facts.name.lower() for facts in models] + [hf for facts in models for hf in facts.hf_ids]


def algorithms() -> list[str]:
    from generator.verl.constants import ALGORITHMS

    return list(ALGORITHMS)


def gpu_names() -> list[str]:
    from generator.layout.hardware import gpu_names as names

    return names()


def releases() -> list[str]:
    """Every packaged verl release, newest first (the one a plain `pip install verl` gets leads)."""
    from generator.schema.releases import packaged_releases

    return list(reversed(packaged_releases()))


def recipe_names() -> list[str]:
    from generator.library.store import load_library

    return [recipe.name for recipe in load_library().sorted()]


def rule_codes() -> list[str]:
    from generator.judging import load_rules

    return sorted(load_rules())


def doc_pages() -> list[str]:
    from generator.report.doc_pages import pages

    return pages()


complete_model = _safely(model_names)
complete_algo = _safely(algorithms)
complete_gpu = _safely(gpu_names)
complete_release = _safely(releases)
complete_recipe = _safely(recipe_names)
complete_rule = _safely(rule_codes)
complete_doc = _safely(doc_pages)
