"""The work behind `gen check` and `gen explain`, one file at a time: read it with the project's
settings, resolve which verl judges it, then check it (FileReports for the report) or explain
it (the numbers and, when asked, the memory of each trainer call). The CLI parses options and
prints; nothing here prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from generator.errors import InputError
from generator.inputs import read_bytes as _read_bytes
from generator.inputs import refuse_non_script, with_project, without_path

if TYPE_CHECKING:
    from generator.config.types import Config
    from generator.fix.engine import CheckResults
    from generator.launch import Invocation, LaunchScript
    from generator.model.facts import ModelFacts
    from generator.plan.script_setup import CallMemory, MemoryOptions
    from generator.report import FileReport
    from generator.rules.core import MemoryVerdict
    from generator.schema.resolution import Resolution


@dataclass(frozen=True)
class CheckOptions:
    """What `gen check` was asked, the same for every file (a worker process gets it by fork)."""

    version: str | None
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    env: dict[str, str]
    args: list[str]
    model_config: str | None
    config_dir: str | None = None
    memory: MemoryOptions | None = None
    plan_fixes: bool = False


def check_paths(paths: list[str], *, version: str | None, select: tuple[str, ...], ignore: tuple[str, ...],
                env: dict[str, str], args: list[str], model_config: str | None, config_dir: str | None = None,
                memory: MemoryOptions | None = None, plan_fixes: bool = False) -> list[FileReport]:
    """FileReports for every path, in order (never raises for a single bad file). Which verl each
    file is judged against is resolved per file (generator.schema.resolution). With `memory` (a GPU
    was named), or a project setting `gpu`, each call's memory is predicted for the memory rules.
    With `plan_fixes` (the text report, whose [*] and fixable count promise what `gen fix` does)
    `gen fix` is run in memory. Many files are checked in worker processes (generator.pool)."""
    from generator.pool import map_files
    from generator.schema.resolution import check_explicit

    check_explicit(version, config_dir)  # fail early, once, with a one-line InputError
    if model_config:
        from generator.model import load_model_config

        load_model_config(model_config)  # fail early, once, with a one-line InputError
    from generator.folder_memo import one_run

    options = CheckOptions(version, select, ignore, env, args, model_config, config_dir, memory, plan_fixes)
    with one_run():  # the folders above the scripts are asked about once, not once per script
        return [report for report in map_files(check_file, paths, options) if not report.excluded]


def check_file(path: str, options: CheckOptions) -> FileReport:
    """The FileReport of one path (never raises)."""
    from generator.launch_shape import looks_like_launcher
    from generator.project import load_project
    from generator.report import FileReport, Located
    from generator.rules import check_script, script_findings
    from generator.schema.resolution import resolve_script
    from generator.shell import read_launch
    from generator.suppress import find_suppressions

    version, select, ignore, env, args = options.version, options.select, options.ignore, options.env, options.args
    model_config, config_dir, memory, plan_fixes = (options.model_config, options.config_dir, options.memory,
                                                    options.plan_fixes)
    report = FileReport(path=path)
    try:
        refuse_non_script(path)
        project = load_project(path)
        if project.excludes(path):
            report.excluded = True
            return report
        chosen_select, chosen_ignore, chosen_env, chosen_args = with_project(
            project, select=select, ignore=ignore, env=env, args=args, path=path)
        source = _read_bytes(path)
        script = read_launch(path, source=source, env=chosen_env, args=chosen_args)
        silenced = find_suppressions(source)
        if not script.invocations and not looks_like_launcher(source):
            # A helper script (data preparation, downloads): only VS730 says so; not judged.
            report.findings.extend(Located(f, None) for f in script_findings(
                script, select=chosen_select, ignore=chosen_ignore) if f.code == "VS730"
                and not silenced.silences(f.code, None, f.line))
            return report
        broken = [h.line for h in script.hazards if h.kind == "parse-error"]
        if broken:  # read around the broken region, but incompletely: bad input, like `gen show`
            report.incomplete = f"bash syntax error at line {broken[0]} (the rest was read)"
        resolution = resolve_script(script, path, version=version, config_dir=config_dir, project=project)
        # --gpu wins; else the project's `gpu` setting names the GPU the memory rules judge against.
        memory_for = None
        if memory is not None or project.gpu:  # the planner's memory model, loaded only when asked for
            from generator.plan.memory_check import memory_checker

            memory_for = memory_checker(memory, project.gpu)
        report.resolution = resolution
        report.verl_version = resolution.base_release
        visible: CheckResults = []  # what `gen fix`'s checker would see of this text
        for invocation, config, findings in check_script(script, select=chosen_select, ignore=chosen_ignore,
                                                         model_config=model_config, config_root=os.getcwd(),
                                                         resolution=resolution, memory_for=memory_for):
            line = invocation.line if invocation else None
            if config is not None and config.resolution not in (None, resolution) and line is not None:
                report.call_resolutions.append((line, config.resolution))
            shown = [f for f in findings if not silenced.silences(f.code, line, f.line)]
            visible.append((invocation, config, shown))
            report.findings.extend(Located(f, line) for f in shown)
        _place(report, source)
        if plan_fixes and not broken and any(l.finding.fix is not None or l.invocation_line is None
                                             for l in report.findings):
            # As gen fix runs: the project's settings, the same suppressions. The check above is
            # the fix loop's first round unless codes were chosen or a model config was named.
            same = not chosen_select and not chosen_ignore and not model_config
            _plan_fixes(report, source, script, path, env=chosen_env, args=chosen_args, resolution=resolution,
                        memory_for=memory_for, select=chosen_select, ignore=chosen_ignore,
                        checked=visible if same else None)
    except InputError as err:
        report.error = without_path(str(err), path)
    except UnicodeDecodeError:
        report.error = "not UTF-8 text"
    except RecursionError:  # the reader and each file loader name their own; this is the last guard
        report.error = "it, or a file it uses, nests too deeply to read"
    except Exception as err:  # one line, never a traceback; other files are still checked
        report.error = f"internal error ({type(err).__name__}: {' '.join(str(err).split())})"
    return report


def _place(report: FileReport, source: bytes) -> None:
    """Each finding's column and source line (for the excerpt), and the findings in line order."""
    from generator.report.excerpt import source_line, span_of

    lines = source.decode("utf-8", errors="replace").splitlines()
    for located in report.findings:
        text = source_line(lines, located.finding.line)
        if text is not None:
            span = span_of(text, located.finding.key)
            located.column, located.width, located.source = span.column, span.width, text
    report.findings.sort(key=lambda located: (located.finding.line or 0, located.column or 0))


def _plan_fixes(report: FileReport, source: bytes, script: LaunchScript, path: str, *, env: dict[str, str],
                args: list[str], resolution: Resolution,
                memory_for: Callable[[Config, ModelFacts | None], MemoryVerdict | None] | None,
                select: tuple[str, ...], ignore: tuple[str, ...], checked: CheckResults | None = None) -> None:
    """Mark what `gen fix` would repair by running it in memory the way `gen fix` runs (same
    reader, checker, release and codes, no --unsafe): [*] and the fixable count are then exactly
    what `gen fix` applies, never a fix it would refuse (unsafe, unplaceable, or one that creates
    a new error)."""
    from generator.fix.engine import default_checker, default_reader, fix_source, without_silenced

    check = without_silenced(default_checker(resolution.release, resolution=resolution, memory_for=memory_for,
                                             config_root=os.getcwd()))
    result = fix_source(source, path, read=default_reader(env or None, args or None), check=check,
                        select=select, ignore=ignore, script=script, checked=checked)
    applied = {(a.code, a.line) for a in result.applied}
    needs_unsafe = {(n.code, n.line) for n in result.not_applied if n.reason.startswith("an unsafe fix")}
    for located in report.findings:
        key = (located.finding.code, located.finding.line)
        located.fixed_by_gen_fix = True if key in applied else "unsafe" if key in needs_unsafe else False
    report.fixable = len(result.applied)


@dataclass
class ExplainedCall:
    """One live trainer call of `gen explain`: its composed config, the release it is judged
    against, the derived numbers (label, arithmetic) and, when asked, its memory."""

    invocation: Invocation
    config: Config
    judged: Resolution  # the release this call is judged against
    header: str
    rows: list[tuple[str, str]]  # (label, equation), explain_config's rows
    predicted: CallMemory | None = None


@dataclass
class ExplainedFile:
    path: str
    error: str | None = None  # one line: why the file (or the rest of it) could not be explained
    incomplete: str | None = None  # read in part (a bash syntax error)
    no_calls: bool = False  # read, but no live trainer call in it
    calls: list[ExplainedCall] = field(default_factory=list)


def explain_file(path: str, *, verl_version: str | None, config_dir: str | None = None, env: dict[str, str],
                 args: list[str], memory: MemoryOptions | None, gpu_named: bool, model: str | None, headroom: float) -> ExplainedFile:
    """The numbers verl derives for each live call of one file (never raises: a failure is the
    file's `error`, after the calls explained before it)."""
    from generator.config import build_config
    from generator.plan.script_setup import call_memory, memory_options
    from generator.project import load_project
    from generator.report.explain import explain_config
    from generator.schema.resolution import resolve_script
    from generator.shell import read_launch

    done = ExplainedFile(path)
    try:
        refuse_non_script(path)
        project = load_project(path)
        _, _, file_env, file_args = with_project(project, select=(), ignore=(), env=env, args=args)
        script = read_launch(path, source=_read_bytes(path), env=file_env, args=file_args)
        broken = [h.line for h in script.hazards if h.kind == "parse-error"]
        if broken:
            done.incomplete = f"bash syntax error at line {broken[0]} (the rest was read)"
        resolution = resolve_script(script, path, version=verl_version, config_dir=config_dir, project=project)
        calls = [inv for inv in script.invocations if inv.branch != "dead"]
        done.no_calls = not calls
        script_dir = os.path.dirname(os.path.abspath(path))
        file_memory = memory
        if memory is not None and not gpu_named and project.gpu:
            file_memory = memory_options(project.gpu, None, model, headroom)  # the project's GPU
        for invocation in calls:
            config = build_config(invocation, version=resolution.release, script_dir=script_dir,
                                  config_root=os.getcwd(), stand_in=resolution.stand_in,
                                  search_dirs=resolution.search_dirs, ppo_entry=resolution.ppo_entry)
            branch = "" if invocation.branch == "live" else f", {invocation.branch}"
            judged = resolution.for_call(config.schema, config.config_dir)
            header = (f"{path}:{invocation.line}: {invocation.entry} ({config.schema}, "
                      f"verl {judged.base_release}, {config.backend}{branch})\n"
                      f"  judged against {judged.summary()}")
            predicted = call_memory(config, file_memory) if file_memory else None
            done.calls.append(ExplainedCall(invocation, config, judged, header, explain_config(config), predicted))
    except InputError as err:
        done.error = without_path(str(err), path)
    except RecursionError:  # the reader and each file loader name their own; this is the last guard
        done.error = "it, or a file it uses, nests too deeply to read"
    except Exception as err:  # one line, never a traceback; other files are still explained
        done.error = f"internal error ({type(err).__name__}: {' '.join(str(err).split())})"
    return done
