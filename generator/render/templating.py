"""Jinja environment and the filters templates may use (formatting only, no decisions)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from generator.reading.overrides import format_value
from generator.render.derived_numbers import HeaderNumbers
from generator.render.quoting import shell_word, shq
from generator.render.spec import Knob, ScriptSettings, Setting
from generator.base.resources import templates_dir
from generator.verl.constants import PPO_ENTRY


def comment(text: object) -> str:
    """Text safe inside a `# ...` comment: a newline or carriage return would end the comment."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in str(text))


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` characters (long words stay whole)."""
    import textwrap

    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def knob_default_text(knob: Knob) -> str:
    """The shell text after `:-` in `NAME=${NAME:-...}`."""
    if knob.kind == "shell":
        assert knob.shell_default is not None
        return knob.shell_default
    if knob.kind == "hydra":
        return str(knob.value.shell_default)
    if knob.kind == "text":
        from generator.render.quoting import hydra_body

        return shell_word(hydra_body(str(knob.value)))
    return shq(format_value(knob.value, short_floats=True))


def knob_assignment(knob: Knob) -> str:
    if knob.kind == "hydra" and knob.value.shell_default is None:
        message = f"set {knob.name}: {knob.comment or 'no default'}"
        return f"{knob.name}=${{{knob.name}:?{shq(comment(message))}}}"
    return f"{knob.name}=${{{knob.name}:-{knob_default_text(knob)}}}"


def knob_lines(knobs: list[Knob]) -> list[str]:
    """`NAME=${NAME:-default}  # comment`, comments aligned (long values push only their own)."""
    assignments = [knob_assignment(k) for k in knobs]
    short = [len(a) for a in assignments if len(a) <= 56]
    column = max(short, default=0)
    return [f"{a.ljust(column)}  # {comment(k.comment)}" if k.comment else a
            for a, k in zip(assignments, knobs)]


def override_word(setting: Setting, recipe: ScriptSettings) -> str:
    key = setting.prefix + setting.key
    if setting.knob is not None:
        knob = recipe.knob(setting.knob)
        if knob.kind in ("text", "shell"):
            return f"{key}=\"'${{{knob.name}}}'\""
        return f'{key}="${{{knob.name}}}"'  # numbers, flags and Hydra text (lists) pass as they are
    return f"{key}={shq(format_value(setting.value, short_floats=True))}"


@lru_cache(maxsize=1)
def environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["shq"] = shq
    env.filters["comment"] = comment
    env.filters["wrap"] = wrap
    env.filters["override_word"] = override_word
    return env


@dataclass(frozen=True, slots=True)
class View:
    """What a template sees: the recipe plus the few strings it prints verbatim."""

    recipe: ScriptSettings
    title: str
    blurb: str
    command: str
    filename: str
    job_name: str

    def __getattr__(self, name: str) -> Any:  # spec, knobs, settings, env, notes
        return getattr(self.recipe, name)

    @property
    def knob_lines(self) -> list[str]:
        return knob_lines(self.recipe.knobs)

    @property
    def entry(self) -> str:
        return PPO_ENTRY

    @property
    def config_name(self) -> str | None:
        from generator.render.release_form import written_config_name

        return written_config_name(self.recipe.spec.version)

    @property
    def runtime_env_json(self) -> str:
        return json.dumps({"env_vars": {name: value for name, value, _ in self.recipe.env}})


def render_text(view: View, derived: HeaderNumbers) -> str:
    template = environment().get_template(f"recipe/{view.recipe.spec.launcher}.sh.j2")
    text = str(template.render(r=view, d=derived))
    # The import line of each template leaves one empty line before the shebang.
    return text.lstrip("\n")
