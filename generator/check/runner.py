"""The work behind `gen check` and `gen explain`, one file at a time: its context (generator.inputs.file_context:
the project's settings, the text read with them, the verl that judges it, the memory options),
then check it (FileReports for the report) or explain it (the numbers and, when asked, the memory
of each trainer call). The CLI parses options and prints; nothing here prints.
"""

from __future__ import annotations

import os
from typing import NamedTuple, TYPE_CHECKING

from generator.base.errors import InputError
from generator.inputs.file_context import FileContext, FileRequest, Judging, file_context
from generator.inputs.policy import without_path
from generator.reading.launch_script import written_elsewhere
from generator.reading.shell.syntax_verdict import SYNTAX_KINDS

# The hazards of a script that runs another script or job (shell/callee.py's unread-call,
# ARGUMENT_SCRIPT and UNREAD_STRING) and the code of an exported placeholder (rules/shell.py's placeholder-value).
_RUNS_ANOTHER = ("unread-call", "argument-script", "unread-string")
_PLACEHOLDER_CODE = "VS714"

if TYPE_CHECKING:
    from generator.config.types import Config
    from generator.reading.launch_script import Invocation, LaunchScript
    from generator.plan.script_setup import CallMemory, MemoryOptions
    from generator.report import FileReport
    from generator.judging import CheckResults
    from generator.schema.resolution import Resolution


class CheckOptions(NamedTuple):
    """What `gen check` was asked, the same for every file (a worker process gets it by fork):
    the request every file's context is built from, and what only check uses."""

    request: FileRequest
    model_config: str | None = None
    plan_fixes: bool = False


def check_paths(paths: list[str], *, version: str | None, select: tuple[str, ...], ignore: tuple[str, ...],
                env: dict[str, str], args: list[str], model_config: str | None, config_dir: str | None = None,
                memory: MemoryOptions | None = None, plan_fixes: bool = False) -> list[FileReport]:
    """FileReports for every path, in order (never raises for a single bad file). Which verl each
    file is judged against is resolved per file (generator.schema.resolution). With `memory` (a GPU
    was named), or a project setting `gpu`, each call's memory is predicted for the memory rules.
    With `plan_fixes` (the text report, whose [*] and fixable count promise what `gen fix` does)
    `gen fix` is run in memory. Many files are checked in worker processes (generator.base.pool)."""
    from generator.base.pool import map_files
    from generator.schema.resolution import check_explicit

    check_explicit(version, config_dir)  # fail early, once, with a one-line InputError
    if model_config:
        from generator.model import load_model_config

        load_model_config(model_config)  # fail early, once, with a one-line InputError
    request = FileRequest(version, config_dir, select, ignore, env, args, memory, gpu_named=memory is not None)
    from generator.base.folder_memo import one_run

    options = CheckOptions(request, model_config, plan_fixes)
    with one_run():  # the folders above the scripts are asked about once, not once per script
        return [report for report in map_files(check_file, paths, options) if not report.excluded]


def _start_run() -> None:
    import sys

    compose = sys.modules.get("generator.schema.compose")  # not imported yet: its budget is whole
    if compose is not None:
        compose.start_run()


def check_file(path: str, options: CheckOptions) -> FileReport:
    """The FileReport of one path (never raises)."""
    from generator.report import FileReport

    report = FileReport(path=path)
    _start_run()  # each script has the whole calls x configs budget, whichever scripts came before
    try:
        context = file_context(path, options.request)
        if context is None:
            report.excluded = True  # the project's `exclude`
            return report
        _judge(report, context, options)
    except InputError as err:
        report.error = without_path(str(err), path)
    except UnicodeDecodeError:
        report.error = "not UTF-8 text"
    except RecursionError:  # the reader and each file loader name their own; this is the last guard
        report.error = "it, or a file it uses, nests too deeply to read"
    except Exception as err:  # one line, never a traceback; other files are still checked
        report.error = f"internal error ({type(err).__name__}: {' '.join(str(err).split())})"
    return report


def _judge(report: FileReport, context: FileContext, options: CheckOptions) -> None:
    """The findings of one read file, in its report: the shell's, then each call's against the
    file's release, less what its comments silence; with `plan_fixes`, what `gen fix` repairs."""
    from generator.reading.recognize import looks_like_launcher
    from generator.report import Located
    from generator.judging import check_resolved, script_findings
    from generator.reading.suppression_comments import find_suppressions

    script, source = context.script, context.source
    silenced = find_suppressions(source)
    if not script.invocations and not looks_like_launcher(source):
        # A helper script (data preparation, downloads): only VS730 says so; not judged. One that
        # runs another script or submits a job is a launch script all the same: a placeholder it
        # exports reaches that job (issue 34: `export WANDB_API_KEY=YOUR_WANDB_API_KEY` missed).
        launches = any(h.kind in _RUNS_ANOTHER for h in script.hazards)
        report.findings.extend(Located(f, None) for f in script_findings(
            script, select=context.select, ignore=context.ignore)
            if (f.code == "VS730" or (launches and f.code == _PLACEHOLDER_CODE))
            and not silenced.silences(f.code, None, f.line))
        return
    broken = context.syntax_error_line
    if broken is not None:  # read around the broken region, but incompletely: bad input, like `gen show`
        report.incomplete = f"bash syntax error at line {broken} (the rest was read)"
    judging = context.judging()
    resolution = judging.resolution
    report.resolution = resolution
    report.verl_version = resolution.base_release
    cut = _calls_cut_by_syntax(script, source, report.path)
    visible: CheckResults = []  # what `gen fix`'s checker would see of this text
    for invocation, config, findings in check_resolved(script, resolution, select=context.select,
                                                       ignore=context.ignore, model_config=options.model_config,
                                                       config_root=os.getcwd(), memory_for=judging.memory_for):
        line = invocation.line if invocation else None
        if config is not None and config.resolution not in (None, resolution) and line is not None:
            report.call_resolutions.append((line, config.resolution))
        shown = [f for f in findings if not silenced.silences(f.code, line, f.line)]
        if line is not None and line in cut:  # its overrides are what a broken parse left: only the shell's say
            shown = [f for f in shown if f.code.startswith(SHELL_FAMILY)]
        visible.append((invocation, config, shown))
        report.findings.extend(Located(f, line) for f in shown)
    _place(report, source)
    if options.plan_fixes and broken is None and any(
            located.finding.fix is not None or located.invocation_line is None for located in report.findings):
        # As gen fix runs: the project's settings, the same suppressions. The check above is
        # the fix loop's first round unless codes were chosen or a model config was named.
        same = not context.select and not context.ignore and not options.model_config
        _plan_fixes(report, context, judging, checked=visible if same else None)


SHELL_FAMILY = "VS"


def _calls_cut_by_syntax(script: LaunchScript, source: bytes, path: str) -> set[int]:
    """The lines of the trainer calls whose command holds a syntax error. What the reader made of
    such a call's overrides is a guess around the broken region (an unclosed `$(` swallows the
    lines after it), so the batch and key findings that follow from it are left out: the syntax
    error is the finding (issue 36: six follow-on batch errors came before it)."""
    broken = [hazard.line for hazard in script.hazards if hazard.kind in SYNTAX_KINDS]
    if not broken:
        return set()
    cut = set()
    for invocation in script.invocations:
        if written_elsewhere(path, invocation):
            continue
        last = invocation.line + source[invocation.span.start:invocation.span.end].count(b"\n")
        if any(invocation.line <= line <= last for line in broken):
            cut.add(invocation.line)
    return cut


def _place(report: FileReport, source: bytes) -> None:
    """Each finding's column and source line (for the excerpt), and the findings in line order."""
    from generator.report.excerpt import source_line, span_of

    # Lines as bash counts them, at "\n" only (splitlines would also break at CR, FF, VT, NEL and
    # U+2028, and every code frame after one would show the wrong line); a CRLF's CR is dropped.
    lines = [line.removesuffix("\r") for line in source.decode("utf-8", errors="replace").split("\n")]
    for located in report.findings:
        text = source_line(lines, located.finding.line)
        if text is not None:
            span = span_of(text, located.finding.key)
            located.column, located.width, located.source = span.column, span.width, text
    report.findings.sort(key=lambda located: (located.finding.line or 0, located.column or 0))


def _plan_fixes(report: FileReport, context: FileContext, judging: Judging,
                checked: CheckResults | None = None) -> None:
    """Mark what `gen fix` would repair by running it in memory the way `gen fix` runs (same
    reader, checker, release and codes, no --unsafe): [*] and the fixable count are then exactly
    what `gen fix` applies, never a fix it would refuse (unsafe, unplaceable, or one that creates
    a new error)."""
    from generator.fix.engine import fix_source, resolved_checker, without_silenced

    check = without_silenced(resolved_checker(judging.resolution, memory_for=judging.memory_for,
                                              config_root=os.getcwd()))
    result = fix_source(context.source, context.path, read=context.read, check=check, select=context.select,
                        ignore=context.ignore, script=context.script, checked=checked)
    applied = {(a.code, a.line) for a in result.applied}
    needs_unsafe = {(n.code, n.line) for n in result.not_applied if n.reason.startswith("an unsafe fix")}
    for located in report.findings:
        key = (located.finding.code, located.finding.line)
        located.fixed_by_gen_fix = True if key in applied else "unsafe" if key in needs_unsafe else False
        fix = located.finding.fix
        if key in needs_unsafe and fix is not None and fix.applicability == "safe":
            # `gen fix` found it unsafe where it lands (a variable other lines use too): the report
            # says what `gen fix` does, one word for both (issue 34)
            located.finding = located.finding._replace(fix=fix._replace(applicability="unsafe"))
    report.fixable = len(result.applied)


class ExplainedCall(NamedTuple):
    """One live trainer call of `gen explain`: its composed config, the release it is judged
    against, the derived numbers (label, arithmetic) and, when asked, its memory."""

    invocation: Invocation
    config: Config
    judged: Resolution  # the release this call is judged against
    header: str
    rows: list[tuple[str, str]]  # (label, equation), explain_config's rows
    predicted: CallMemory | None = None


class ExplainedFile:
    """What `gen explain` says of one file: each call and the release and config it is judged against."""

    # A plain class with __slots__, not a dataclass: the check path imports no dataclasses.
    __slots__ = ("path", "error", "incomplete", "no_calls", "calls")
    path: str
    error: str | None  # one line: why the file (or the rest of it) could not be explained
    incomplete: str | None  # read in part (a bash syntax error)
    no_calls: bool  # read, but no live trainer call in it
    calls: list[ExplainedCall]

    def __init__(self, path: str, error: str | None = None, incomplete: str | None = None, no_calls: bool = False,
                 calls: list[ExplainedCall] | None = None) -> None:
        self.path = path
        self.error = error
        self.incomplete = incomplete
        self.no_calls = no_calls
        self.calls = [] if calls is None else calls


def explain_file(path: str, *, verl_version: str | None, config_dir: str | None = None, env: dict[str, str],
                 args: list[str], memory: MemoryOptions | None, gpu_named: bool) -> ExplainedFile:
    """The numbers verl derives for each live call of one file (never raises: a failure is the
    file's `error`, after the calls explained before it). `memory` is the command line's memory
    options when a prediction was asked for (with its --model and --headroom); the project's `gpu`
    stands in for a GPU it did not name."""
    from generator.plan.script_setup import call_memory
    from generator.report.explain import explain_config
    from generator.judging.calls import call_configs, live_calls

    done = ExplainedFile(path)
    request = FileRequest(verl_version, config_dir, env=env, args=args, memory=memory, gpu_named=gpu_named,
                          project_gpu_predicts=False, honour_exclude=False)
    try:
        context = file_context(path, request)
        assert context is not None  # explain does not honour `exclude`: it explains what it is named
        judging = context.judging()
        script, resolution = context.script, judging.resolution
        broken = context.syntax_error_line
        if broken is not None:
            done.incomplete = f"bash syntax error at line {broken} (the rest was read)"
        done.no_calls = not live_calls(script)
        file_memory = judging.memory
        for invocation, config in call_configs(script, resolution, os.getcwd()):  # as `gen check` builds them
            branch = "" if invocation.branch == "live" else f", {invocation.branch}"
            judged = config.resolution or resolution
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
