"""One file's context, built once and handed down to `gen check`, `gen fix` and `gen explain` alike
(generator.check.runner, generator.fix.per_file): the project's settings and the options they give the
file, its text read with them, the verl release that judges it and the memory options its calls
are predicted with (`Judging`). Below it nothing resolves again: the rules (`judging.check_resolved`),
the fix loop and explain are handed the resolution and the memory predictor made here.

The steps run in one order for every command: refuse a config or data file, load the project
(its `exclude` decides before the file is read), apply its settings, read the text; the release
is resolved when first asked for (a helper script that starts no trainer is never resolved).
"""

from __future__ import annotations

from typing import NamedTuple, TYPE_CHECKING

from generator.base.errors import InputError
from generator.inputs.policy import read_entered, refuse_non_script, with_project

if TYPE_CHECKING:
    from generator.reading.launch_script import LaunchScript
    from generator.plan.script_setup import MemoryOptions
    from generator.project.settings import ProjectSettings
    from generator.judging import MemoryFor
    from generator.schema.resolution import Resolution


class FileRequest(NamedTuple):
    """What the command line asked, the same for every file (a worker process gets it by fork)."""

    version: str | None = None  # --verl-version
    config_dir: str | None = None  # --config-dir
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    # Shared by every file of the run and never changed (with_project builds a file's own).
    env: dict[str, str] = {}
    args: list[str] = []
    memory: MemoryOptions | None = None  # the command line's memory options (--gpu, --model, --headroom)
    gpu_named: bool = False  # --gpu or --gpu-mem was given: the project's `gpu` setting does not replace it
    # The project's `gpu` setting turns the memory prediction on by itself (check and fix: the
    # memory rules judge against it); explain predicts memory only when asked to.
    project_gpu_predicts: bool = True
    # The project's `exclude` skips the file (check, fix: never judged); explain explains what it is named.
    honour_exclude: bool = True


class FileContext:
    """One file as every command sees it: what it was read with, its text, and (`judging`) what it
    is judged against; `read` reads another text of the file (a fix round) the way it was read."""

    # A plain class with __slots__, not a dataclass: a check's start imports no dataclasses.
    __slots__ = ("path", "request", "project", "select", "ignore", "env", "args", "source", "script", "_judging")
    path: str
    request: FileRequest
    project: ProjectSettings
    select: tuple[str, ...]  # the command line's codes, else the project's; plus its per-file-ignores
    ignore: tuple[str, ...]
    env: dict[str, str]
    args: list[str]
    source: bytes
    script: LaunchScript
    _judging: Judging | None

    def __init__(self, path: str, request: FileRequest, project: ProjectSettings, select: tuple[str, ...],
                 ignore: tuple[str, ...], env: dict[str, str], args: list[str], source: bytes,
                 script: LaunchScript) -> None:
        self.path = path
        self.request = request
        self.project = project
        self.select = select
        self.ignore = ignore
        self.env = env
        self.args = args
        self.source = source
        self.script = script
        self._judging = None

    def read(self, source: bytes, path: str | None) -> LaunchScript:
        """`source` read as this file is read (its project's env and args): a `fix.engine.Reader`."""
        return _read(source, path, self.env, self.args)

    @property
    def syntax_error_line(self) -> int | None:
        """The first bash syntax error (the rest of the file was read around it)."""
        broken = [hazard.line for hazard in self.script.hazards if hazard.kind == "parse-error"]
        return broken[0] if broken else None

    def judging(self) -> Judging:
        """Which verl judges the file and how its calls' memory is predicted: resolved on the
        first call, once per file (a helper script that starts no trainer never asks)."""
        if self._judging is None:
            from generator.schema.resolution import resolve_script

            resolution = resolve_script(self.script, self.path, version=self.request.version,
                                        config_dir=self.request.config_dir, project=self.project)
            memory = file_memory(self.request, self.project.gpu)
            memory_for = None
            if memory is not None:  # the planner's memory model, loaded only when a GPU is named
                from generator.plan.memory_check import memory_checker

                memory_for = memory_checker(memory)
            self._judging = Judging(resolution, memory, memory_for)
        return self._judging


    def resolution_of(self, script: LaunchScript) -> Resolution:
        """The release to judge `script` (this file's text, or a fixed version of it) against: the
        file's own resolution, unless that was read from the script's keys (inferred, or guessed for
        want of any): an edit that adds or exposes keys (a repaired line continuation) changes what
        they tell, so such a resolution is made again for the edited text, with the same options
        and project. Without this, `gen fix` judged its later rounds by the broken text's release
        and a second `gen fix --write` found what the first had not looked for."""
        resolution = self.judging().resolution
        if script is self.script or not (resolution.guessed or resolution.inferred):
            return resolution
        from generator.schema.resolution import resolve_script

        return resolve_script(script, self.path, version=self.request.version,
                              config_dir=self.request.config_dir, project=self.project)


class Judging(NamedTuple):
    """What one file is judged against, resolved once (`FileContext.judging`) and handed to every
    check of its texts (`judging.check_resolved`, `fix.engine.resolved_checker`): the release, the
    memory options and the memory rules' predictor."""

    resolution: Resolution
    memory: MemoryOptions | None  # what explain predicts each call's memory with
    memory_for: MemoryFor | None  # what the memory rules call (None: no GPU named, they stay silent)


def file_memory(request: FileRequest, project_gpu: str | None) -> MemoryOptions | None:
    """The memory options a file's calls are predicted with: the command line's; the project's
    `gpu` in place of a GPU the command line did not name (keeping its model and headroom);
    None when nothing asks for a prediction."""
    asked = request.memory
    if request.gpu_named or not project_gpu or (asked is None and not request.project_gpu_predicts):
        return asked
    from dataclasses import replace

    from generator.layout.hardware import gpu_spec
    from generator.plan.script_setup import MemoryOptions

    if asked is None:
        return MemoryOptions(gpu_spec(project_gpu, None), None, 0.0)
    return replace(asked, gpu=gpu_spec(project_gpu, None))


def file_context(path: str, request: FileRequest) -> FileContext | None:
    """The context of one file; None when its project's `exclude` matches it (never read; only
    when the request honours it). Raises
    InputError (naming the file where the message comes from reading it) as each step does."""
    from generator.project.settings import load_project

    refuse_non_script(path)
    project = load_project(path)  # enters the file's project: every read from here on is bounded to it
    if request.honour_exclude and project.excludes(path):
        return None
    select, ignore, env, args = with_project(project, select=request.select, ignore=request.ignore,
                                             env=request.env, args=list(request.args), path=path)
    try:
        source = read_entered(path)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    return FileContext(path, request, project, select, ignore, env, args, source, _read(source, path, env, args))


def _read(source: bytes, path: str | None, env: dict[str, str], args: list[str]) -> LaunchScript:
    from generator.reading.shell import read_launch

    return read_launch(path, source=source, env=env or None, args=args or None)
