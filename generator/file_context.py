"""One file's context, built once and handed down to `gen check`, `gen fix` and `gen explain` alike
(generator.checking, generator.fix.files): the project's settings and the options they give the
file, its text read with them, the verl release that judges it and the memory options its calls
are predicted with. Below it nothing resolves again: the rules (`rules.check_resolved`), the fix
loop and explain are handed the resolution and the memory predictor made here.

The steps run in one order for every command: refuse a config or data file, load the project
(its `exclude` decides before the file is read), apply its settings, read the text; the release
is resolved when first asked for (a helper script that starts no trainer is never resolved).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable

from generator.errors import InputError
from generator.inputs import read_bytes, refuse_non_script, with_project

if TYPE_CHECKING:
    from generator.launch import LaunchScript
    from generator.plan.script_setup import MemoryOptions
    from generator.project import ProjectSettings
    from generator.rules import CheckResults, MemoryFor
    from generator.schema.resolution import Resolution


@dataclass(frozen=True)
class FileRequest:
    """What the command line asked, the same for every file (a worker process gets it by fork)."""

    version: str | None = None  # --verl-version
    config_dir: str | None = None  # --config-dir
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    memory: MemoryOptions | None = None  # the command line's memory options (--gpu, --model, --headroom)
    gpu_named: bool = False  # --gpu or --gpu-mem was given: the project's `gpu` setting does not replace it
    # The project's `gpu` setting turns the memory prediction on by itself (check and fix: the
    # memory rules judge against it); explain predicts memory only when asked to.
    project_gpu_predicts: bool = True
    # The project's `exclude` skips the file (check, fix: never judged); explain explains what it is named.
    honour_exclude: bool = True


@dataclass
class FileContext:
    """One file as every command sees it. `resolution` and `memory` are computed once, when first
    asked for; `read` reads another text of the file (a fix round) the way the file was read."""

    path: str
    request: FileRequest
    project: ProjectSettings
    select: tuple[str, ...]  # the command line's codes, else the project's; plus its per-file-ignores
    ignore: tuple[str, ...]
    env: dict[str, str]
    args: list[str]
    source: bytes
    script: LaunchScript

    def read(self, source: bytes, path: str | None) -> LaunchScript:
        """`source` read as this file is read (its project's env and args): a `fix.engine.Reader`."""
        return _read(source, path, self.env, self.args)

    @property
    def syntax_error_line(self) -> int | None:
        """The first bash syntax error (the rest of the file was read around it)."""
        broken = [hazard.line for hazard in self.script.hazards if hazard.kind == "parse-error"]
        return broken[0] if broken else None

    @cached_property
    def resolution(self) -> Resolution:
        """Which verl judges the file (generator.schema.resolution): once per file."""
        from generator.schema.resolution import resolve_script

        return resolve_script(self.script, self.path, version=self.request.version,
                              config_dir=self.request.config_dir, project=self.project)

    @cached_property
    def memory(self) -> MemoryOptions | None:
        """The memory options the file's calls are predicted with: the command line's; the
        project's `gpu` in place of a GPU the command line did not name (with its model and
        headroom); None when nothing asks for a prediction."""
        asked, gpu = self.request.memory, self.project.gpu
        if self.request.gpu_named or not gpu or (asked is None and not self.request.project_gpu_predicts):
            return asked
        from generator.hardware import gpu_spec
        from generator.plan.script_setup import MemoryOptions

        if asked is None:
            return MemoryOptions(gpu_spec(gpu, None), None, 0.0)
        return dataclasses.replace(asked, gpu=gpu_spec(gpu, None))

    @cached_property
    def memory_for(self) -> MemoryFor | None:
        """What the memory rules call to predict a call's memory (the planner's memory model,
        loaded only when a GPU is named); None when none is."""
        if self.memory is None:
            return None
        from generator.plan.memory_check import memory_checker

        return memory_checker(self.memory)

    def checker(self, *, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (), model_config: str | None = None,
                config_root: str | None = None) -> Callable[[LaunchScript], CheckResults]:
        """`rules.check_resolved` for a text of this file (the file's, or a fix round's), against
        its release with its memory predictor. The codes are the caller's: the fix loop checks
        every rule (a fix must not create an error of a rule that was not chosen)."""
        from generator.rules import check_resolved

        resolution, memory_for = self.resolution, self.memory_for

        def check(script: LaunchScript) -> CheckResults:
            return check_resolved(script, resolution, select=select, ignore=ignore, model_config=model_config,
                                  config_root=config_root, memory_for=memory_for)

        return check


def file_context(path: str, request: FileRequest) -> FileContext | None:
    """The context of one file; None when its project's `exclude` matches it (never read; only
    when the request honours it). Raises
    InputError (naming the file where the message comes from reading it) as each step does."""
    from generator.project import load_project

    refuse_non_script(path)
    project = load_project(path)
    if request.honour_exclude and project.excludes(path):
        return None
    select, ignore, env, args = with_project(project, select=request.select, ignore=request.ignore,
                                             env=request.env, args=list(request.args), path=path)
    try:
        source = read_bytes(path)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    return FileContext(path, request, project, select, ignore, env, args, source, _read(source, path, env, args))


def _read(source: bytes, path: str | None, env: dict[str, str], args: list[str]) -> LaunchScript:
    from generator.shell import read_launch

    return read_launch(path, source=source, env=env or None, args=args or None)
