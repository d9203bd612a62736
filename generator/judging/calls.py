"""The config each live trainer call of a script composes, judged against one resolution: the one
place `gen check` (generator.judging.check_resolved) and `gen explain` (generator.check.runner) build
them, so both see the same config, the same release and the same fork code behind a call."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from generator.config.types import Config
    from generator.reading.launch_script import Invocation, LaunchScript
    from generator.schema.resolution import Resolution


def live_calls(script: LaunchScript) -> list[Invocation]:
    """The calls a run may make: live, conditional or loop (a dead branch never runs)."""
    return [invocation for invocation in script.invocations if invocation.branch != "dead"]


def call_configs(script: LaunchScript, resolution: Resolution,
                 config_root: str | None) -> Iterator[tuple[Invocation, Config]]:
    """(call, its composed config) for every call of `live_calls`, built one at a time (a call
    whose config cannot be built raises after the earlier ones were handed on). Each Config
    carries the resolution it is judged against (`Resolution.for_call`: a call composing a config
    directory of its own may be judged by another release). `config_root` is where
    `$PWD`-relative config paths start."""
    from generator.config import build_config

    script_dir = os.path.dirname(os.path.abspath(script.path)) if script.path else None
    for invocation in live_calls(script):
        config = build_config(invocation, version=resolution.release, script_dir=script_dir, config_root=config_root,
                              stand_in=resolution.stand_in, search_dirs=resolution.search_dirs,
                              ppo_entry=resolution.ppo_entry)
        config.resolution = resolution.for_call(config.schema, config.config_dir)
        yield invocation, config
