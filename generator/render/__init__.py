"""Render Megatron launch scripts (run_*.sh) from a recipe.

    spec -> build_recipe -> ScriptSettings (keys + knobs) -> rules must be clean -> Jinja -> text

`render_recipe(spec)` (text) and `generate(spec)` (text + summary) are the whole path; `gen recipe`
and the recipe library call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.base.errors import InputError
from generator.render.recipe_settings import build_recipe, recipe_overrides
from generator.render.spec import LAUNCHERS, RecipeSpec, ScriptSettings

__all__ = ["LAUNCHERS", "Rendered", "RecipeSpec", "ScriptSettings", "build_recipe",
           "recipe_overrides", "render_recipe", "generate", "render", "validate", "default_filename"]


@dataclass(slots=True)
class Rendered:
    text: str
    recipe: ScriptSettings
    summary: str
    findings: list[Any] = field(default_factory=list)  # info-level findings the rules still had


def default_filename(spec: RecipeSpec) -> str:
    return f"run_{spec.model_slug}_{spec.algo}_megatron.sh"


def validate(recipe: ScriptSettings) -> list[Any]:
    """Judge the recipe's config with the project's rules; raise InputError on an error or warning.

    Returns the remaining (info) findings.
    """
    from generator.config import config_from_overrides
    from generator.judging import check_config

    from generator.render.release_form import composed_config_name
    from generator.schema.ignored_keys import ignored_key

    version = recipe.spec.version
    config = config_from_overrides(recipe_overrides(recipe), version=version, config_name=composed_config_name(version))
    problems = [f"{issue.kind} {issue.override.key}" for issue in config.key_issues]
    problems += [f"ignored {s.key} (verl {version}: {entry.why})" for s in recipe.settings
                 if (entry := ignored_key(version, s.prefix + s.key)) is not None]
    findings = check_config(config, model=recipe.spec.model)
    problems += [f"{f.code} {f.message}" for f in findings if f.severity in ("error", "warning")]
    if problems:
        raise InputError("the generated config does not pass the checks, nothing written: " + "; ".join(problems))
    return [f for f in findings if f.severity not in ("error", "warning")]


def _model_spelling(spec: RecipeSpec) -> str:
    """A `--model` value that names this model wherever the Reproduce line is run: the slug when
    the packaged registry knows it by that name, else the model folder the recipe was made from
    (a config.json's folder name means nothing elsewhere)."""
    import shlex

    from generator.model.registry import registry_model

    known = registry_model(spec.model_slug)
    if known is not None and known.name == spec.model.name:
        return spec.model_slug
    if isinstance(spec.model_path, str) and spec.model_path:
        return shlex.quote(spec.model_path)
    return spec.model_slug


def _command(spec: RecipeSpec, filename: str) -> str:
    parts = ["gen recipe", f"--model {_model_spelling(spec)}", f"--gpus {spec.gpus}"]
    if spec.nodes != 1:
        parts.append(f"--nodes {spec.nodes}")
    parts += [f"--gpu {spec.gpu_name}", f"--algo {spec.algo}"]
    if spec.rollout != "vllm":
        parts.append(f"--rollout {spec.rollout}")
    if spec.launcher != "local":
        parts.append(f"--launcher {spec.launcher}")
    parts += [f"--prompt-len {spec.prompt_len}", f"--response-len {spec.response_len}"]
    if spec.mean_response_len:
        parts.append(f"--mean-response-len {spec.mean_response_len}")
    parts += [f"--n {spec.n}", f"--verl-version {spec.version}"]
    return " ".join(parts)


def render(recipe: ScriptSettings, *, filename: str | None = None, command: str | None = None) -> Rendered:
    """Format a built recipe with its launcher's template (no checks)."""
    from generator.render.derived_numbers import derive_numbers
    from generator.render.algorithm_settings import algorithm_keys
    from generator.render.templating import View, render_text

    spec = recipe.spec
    filename = filename or default_filename(spec)
    derived = derive_numbers(recipe)
    view = View(
        recipe=recipe,
        title=f"{spec.model.name} {spec.algo.upper()} on {spec.gpus} GPUs ({spec.nodes} "
              f"{'node' if spec.nodes == 1 else 'nodes'} x {spec.gpus_per_node}), Megatron actor",
        blurb=algorithm_keys(spec.algo, spec.version).blurb + ".",
        command=command or _command(spec, filename),
        filename=filename,
        job_name=f"verl-{spec.model_slug}-{spec.algo}",
    )
    return Rendered(render_text(view, derived), recipe, derived.summary)


def generate(spec: RecipeSpec, *, filename: str | None = None, command: str | None = None,
             check: bool = True) -> Rendered:
    """Build, check (the rules must be clean) and render one script. InputError on bad input."""
    recipe = build_recipe(spec)
    findings = validate(recipe) if check else []
    rendered = render(recipe, filename=filename, command=command)
    rendered.findings = findings
    return rendered


def render_recipe(spec: RecipeSpec, *, filename: str | None = None, command: str | None = None,
                  check: bool = True) -> str:
    """The script text for `spec` (see `generate` for the summary and remaining findings)."""
    return generate(spec, filename=filename, command=command, check=check).text
