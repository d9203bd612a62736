"""`gen check`, `gen rules`, `gen rule CODE`, `gen explain`.

Exit codes: 0 no error-severity finding; 1 at least one; 2 bad input (a file that cannot be
read, an unknown --verl-version or --format, an unreadable --model-config). Every file is
checked even when an earlier one was bad.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, List, NoReturn, Optional

import typer

from generator.cli.common import parse_codes as _codes
from generator.cli.common import parse_pairs as _parse_env
from generator.cli.common import read_bytes as _read_bytes
from generator.cli.common import check_codes, refuse_non_script, refuse_too_many_calls, with_project, without_path
from generator.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, InputError
from generator.safe_text import one_line, printable, use_color

if TYPE_CHECKING:
    from generator.plan.script_setup import MemoryOptions

FORMATS = ("text", "json", "sarif", "github")


def check_paths(paths: list[str], *, version: str | None, select: tuple[str, ...], ignore: tuple[str, ...],
                env: dict[str, str], args: list[str], model_config: str | None, config_dir: str | None = None,
                memory: MemoryOptions | None = None, plan_fixes: bool = False):
    """FileReports for every path (never raises for a single bad file). Which verl each file is
    judged against is resolved per file (generator.schema.resolution). With `memory` (a GPU was
    named), or a project setting `gpu`, each call's memory is predicted for the memory rules. With
    `plan_fixes` (the text report, whose [*] and fixable count promise what `gen fix` does)
    `gen fix` is run in memory."""
    from generator.project import load_project
    from generator.report import FileReport, Located
    from generator.rules import check_script
    from generator.schema.resolution import known_release, resolve_script
    from generator.shell import read_launch
    from generator.suppress import find_suppressions

    if version is not None and version.strip():
        known_release(version, "--verl-version")  # fail early, once, with a one-line InputError
    if model_config:
        from generator.model import load_model_config

        load_model_config(model_config)  # fail early, once, with a one-line InputError
    reports = []
    for path in paths:
        report = FileReport(path=path)
        try:
            refuse_non_script(path)
            project = load_project(path)
            chosen_select, chosen_ignore, chosen_env, chosen_args = with_project(
                project, select=select, ignore=ignore, env=env, args=args)
            source = _read_bytes(path)
            script = read_launch(path, source=source, env=chosen_env, args=chosen_args)
            refuse_too_many_calls(len(script.invocations))
            silenced = find_suppressions(source)
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
            for invocation, config, findings in check_script(script, select=chosen_select, ignore=chosen_ignore,
                                                             model_config=model_config, config_root=os.getcwd(),
                                                             resolution=resolution, memory_for=memory_for):
                line = invocation.line if invocation else None
                if config is not None and config.resolution not in (None, resolution) and line is not None:
                    report.call_resolutions.append((line, config.resolution))
                report.findings.extend(Located(f, line) for f in findings
                                       if not silenced.silences(f.code, line, f.line))
            if plan_fixes and not broken and any(l.finding.fix is not None or l.invocation_line is None
                                                 for l in report.findings):
                # As gen fix runs: the project's settings, file-level suppressions only.
                _plan_fixes(report, source, path, env=chosen_env, args=chosen_args, resolution=resolution,
                            memory_for=memory_for, select=chosen_select,
                            ignore=(*chosen_ignore, *silenced.file_codes))
        except InputError as err:
            report.error = without_path(str(err), path)
        except UnicodeDecodeError:
            report.error = "not UTF-8 text"
        except RecursionError:
            report.error = "the script nests too deeply to read"
        except Exception as err:  # one line, never a traceback; other files are still checked
            report.error = f"internal error ({type(err).__name__}: {' '.join(str(err).split())})"
        reports.append(report)
    return reports


def _plan_fixes(report, source: bytes, path: str, *, env, args, resolution, memory_for,
                select: tuple[str, ...], ignore: tuple[str, ...]) -> None:
    """Mark what `gen fix` would repair by running it in memory the way `gen fix` runs (same
    reader, checker, release and codes, no --unsafe): [*] and the fixable count are then exactly
    what `gen fix` applies, never a fix it would refuse (unsafe, unplaceable, or one that creates
    a new error)."""
    from generator.fix.engine import default_checker, default_reader, fix_source

    result = fix_source(source, path, read=default_reader(env or None, args or None),
                        check=default_checker(resolution.release, resolution=resolution, memory_for=memory_for),
                        select=select, ignore=ignore)
    applied = {(a.code, a.line) for a in result.applied}
    needs_unsafe = {(n.code, n.line) for n in result.not_applied if n.reason.startswith("an unsafe fix")}
    for located in report.findings:
        key = (located.finding.code, located.finding.line)
        located.fixed_by_gen_fix = True if key in applied else "unsafe" if key in needs_unsafe else False
    report.fixable = len(result.applied)


def _emit(text: str, color: bool) -> None:
    if color:
        from rich.console import Console

        Console(highlight=False, soft_wrap=True).print(text, end="")
    else:
        sys.stdout.write(text)


def _fail(message: str, fmt: str = "text") -> NoReturn:
    """A failure of the whole run: one line on stderr, and for a machine-readable format a
    document that says so on stdout (a consumer must not read silence as "no findings")."""
    from generator.report import render_failure

    print(one_line(f"error: {message}"), file=sys.stderr)
    sys.stdout.write(render_failure(message, fmt))
    raise typer.Exit(EXIT_BAD_INPUT)


def _rule_codes(select: list[str], ignore: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--select/--ignore as code tuples; an unknown code or prefix is bad input (exit 2)."""
    if not select and not ignore:
        return (), ()
    from generator.rules import load_rules

    known = load_rules().keys()
    return (check_codes(_codes(select), known, "--select"), check_codes(_codes(ignore), known, "--ignore"))


def _print_memory_bars(predicted: Any) -> None:
    """A stacked bar per phase (each phase on its worst pipeline stage) under the memory text."""
    from generator.report.charts import terminal_bars, worst_stage_phases

    if predicted.report is None:
        return
    color = use_color(sys.stdout)
    lines = terminal_bars(worst_stage_phases(predicted.report.stages), predicted.report.usable_gib, color=color)
    text = "\n".join(["", *lines]) + "\n"
    _emit(text, color)


def _write_memory_chart(path: str, report: Any, where: str) -> None:
    from generator.files import write_atomic
    from generator.report.charts import chart_for, worst_stage_phases

    title = f"{where}: memory per GPU by phase (worst pipeline stage)"
    write_atomic(path, chart_for(path, worst_stage_phases(report.stages), report.usable_gib, title=title))


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        files: List[str] = typer.Argument(..., help="Launch scripts (.sh), Python launchers (.py), folders "
                                          "(searched for both, honouring .gitignore), or - for stdin."),
        fmt: str = typer.Option("text", "--format", "-f", help="text | json | sarif | github"),
        select: List[str] = typer.Option([], "--select", help="Only these codes or prefixes (VB, VP301, ...)."),
        ignore: List[str] = typer.Option([], "--ignore", help="Skip these codes or prefixes."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", help="Check against this verl release."),
        config_dir: Optional[str] = typer.Option(None, "--config-dir",
                                                 help="Folder of the verl config YAML the scripts run with."),
        env: List[str] = typer.Option([], "--env", help="Assume environment variable NAME=VALUE."),
        arg: List[str] = typer.Option([], "--arg", help="Assume a positional script argument ($1, $2, ...)."),
        model_config: Optional[str] = typer.Option(None, "--model-config",
                                                   help="HF config.json (or model dir) for model-shape rules."),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU the scripts run on (h100, h20, ...): also "
                                          "predict memory per GPU and report a predicted OOM (VM811)."),
        gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        headroom: float = typer.Option(0.0, "--headroom", help="GiB to keep free below the usable limit.", min=0),
    ) -> None:
        """Check launch scripts against verl's batch, parallel and config rules."""
        from generator.report import render

        if fmt not in FORMATS:
            _fail(f"--format must be one of {', '.join(FORMATS)}, got '{fmt}'")
        try:
            from generator.discover import expand_paths

            chosen_select, chosen_ignore = _rule_codes(select, ignore)
            memory = None
            if gpu is not None or gpu_mem is not None:
                from generator.plan.script_setup import memory_options

                memory = memory_options(gpu, gpu_mem, None, headroom)
            reports = check_paths(expand_paths(files), version=verl_version, select=chosen_select, ignore=chosen_ignore,
                                  env=_parse_env(env), args=list(arg), model_config=model_config,
                                  config_dir=config_dir, memory=memory, plan_fixes=fmt == "text")
        except InputError as err:
            _fail(str(err), fmt)
        color = fmt == "text" and use_color(sys.stdout)
        _emit(render(reports, fmt, color=color), color)
        bad_file = any(r.bad_input for r in reports)
        if fmt == "text" and not sys.stdout.isatty():
            # The report already has the line; repeat it on stderr only when stdout is redirected.
            for report in reports:
                for problem in (report.error, report.incomplete):
                    if problem:
                        print(one_line(f"{report.path}: error: {problem}"), file=sys.stderr)
        if bad_file:
            raise typer.Exit(EXIT_BAD_INPUT)
        raise typer.Exit(EXIT_FINDINGS if any(r.failed for r in reports) else EXIT_OK)

    @app.command("rules")
    def rules(fmt: str = typer.Option("text", "--format", "-f", help="text | json")) -> None:
        """List every rule: code, severity, stage, verl releases, title."""
        from generator.rules import load_rules

        from generator.report.rule_doc import rules_json, rules_text

        if fmt not in ("text", "json"):
            _fail(f"--format must be text or json, got '{fmt}'")
        registry = load_rules()
        sys.stdout.write(rules_json(registry) if fmt == "json" else rules_text(registry))

    @app.command("rule")
    def rule_cmd(code: str = typer.Argument(..., help="A rule code, e.g. VB106.")) -> None:
        """Explain one rule: what it checks, why, an example finding, the fix."""
        from generator.report.rule_doc import rule_doc
        from generator.rules import load_rules

        registry = load_rules()
        rule = registry.get(code.strip().upper())
        if rule is None:
            close = [c for c in registry if c.startswith(code.strip().upper()[:3])]
            hint = f" (codes starting {code.strip().upper()[:3]}: {', '.join(sorted(close))})" if close else ""
            _fail(f"unknown rule '{code}'{hint}; `gen rules` lists them")
        sys.stdout.write(rule_doc(rule))

    @app.command("explain")
    def explain(
        files: List[str] = typer.Argument(..., help="Launch scripts, folders of them, or - for stdin."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version"),
        env: List[str] = typer.Option([], "--env", help="Assume environment variable NAME=VALUE."),
        arg: List[str] = typer.Option([], "--arg", help="Assume a positional script argument."),
        fmt: str = typer.Option("text", "--format", "-f", help="text | json"),
        memory: bool = typer.Option(False, "--memory", help="Also predict memory per GPU: every phase on every "
                                    "pipeline stage, each term named, against the usable limit."),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type for --memory: h100 (default), h20, h200, ..."),
        gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        model: Optional[str] = typer.Option(None, "--model", help="Model name, hub id, model dir or config.json "
                                            "(default: the script's actor_rollout_ref.model.path)."),
        headroom: float = typer.Option(0.0, "--headroom", help="GiB to keep free below the usable limit.", min=0),
        chart: Optional[str] = typer.Option(None, "--chart", help="Write the memory chart of the first call: "
                                            "FILE.svg or FILE.html (implies --memory)."),
    ) -> None:
        """Print the numbers verl derives (DP, per-rank mini batch, updates per step, ...) for each call."""
        from generator.config import build_config
        from generator.project import load_project
        from generator.report.explain import explain_config, render_explain
        from generator.report.documents import explain_call_json, explain_json
        from generator.schema.resolution import known_release, resolve_script
        from generator.plan.script_setup import call_memory, memory_options
        from generator.report.memory import call_memory_dict, call_memory_text
        from generator.shell import read_launch

        status = EXIT_OK
        documents: list[dict[str, object]] = []  # --format json: one per file
        over = False
        try:
            if fmt not in ("text", "json"):
                raise InputError(f"--format must be text or json, got '{fmt}'")
            if verl_version is not None and verl_version.strip():
                known_release(verl_version, "--verl-version")
            env_map = _parse_env(env)
            wanted = memory or gpu is not None or gpu_mem is not None or model is not None
            memory_args = memory_options(gpu, gpu_mem, model, headroom) if wanted or chart else None
            from generator.discover import expand_paths

            files = expand_paths(files)
        except InputError as err:
            _fail(str(err), "json" if fmt == "json" else "text")
        charted = False
        for path in files:
            explained: list[dict[str, object]] = []
            document: dict[str, object] = {"path": path, "error": None, "incomplete": None, "calls": explained}
            documents.append(document)
            try:
                refuse_non_script(path)
                project = load_project(path)
                _, _, file_env, file_args = with_project(project, select=(), ignore=(), env=env_map, args=list(arg))
                script = read_launch(path, source=_read_bytes(path), env=file_env, args=file_args)
                refuse_too_many_calls(len(script.invocations))
                broken = [h.line for h in script.hazards if h.kind == "parse-error"]
                if broken:  # the rest is explained, but the input is bad: exit 2 as in every command
                    document["incomplete"] = f"bash syntax error at line {broken[0]} (the rest was read)"
                    print(one_line(f"{path}: error: {document['incomplete']}"), file=sys.stderr)
                    status = EXIT_BAD_INPUT
                resolution = resolve_script(script, path, version=verl_version, project=project)
                chosen = resolution.release
                calls = [inv for inv in script.invocations if inv.branch != "dead"]
                if not calls and fmt == "text":
                    sys.stdout.write(one_line(f"{path}: no trainer call found") + "\n")
                script_dir = os.path.dirname(os.path.abspath(path))
                for invocation in calls:
                    config = build_config(invocation, version=chosen, script_dir=script_dir, config_root=os.getcwd(),
                                          stand_in=resolution.stand_in, search_dirs=resolution.search_dirs)
                    branch = "" if invocation.branch == "live" else f", {invocation.branch}"
                    judged = resolution.for_call(config.schema, config.config_dir)
                    header = (f"{path}:{invocation.line}: {invocation.entry} ({config.schema}, "
                              f"verl {judged.base_release}, {config.backend}{branch})\n"
                              f"  judged against {judged.summary()}")
                    rows = explain_config(config)
                    file_memory = memory_args
                    if memory_args is not None and gpu is None and gpu_mem is None and project.gpu:
                        file_memory = memory_options(project.gpu, None, model, headroom)  # the project's GPU
                    predicted = call_memory(config, file_memory) if file_memory else None
                    over = over or (predicted is not None and predicted.over)
                    if fmt == "json":
                        call = explain_call_json(invocation, config, judged.base_release, rows)
                        call["resolution"] = judged.as_dict()
                        if predicted is not None:
                            call["memory"] = call_memory_dict(predicted)
                            call["memory_problems"] = list(predicted.problems)
                        explained.append(call)
                    else:
                        sys.stdout.write(printable(render_explain(header, rows)))
                        if predicted is not None:
                            sys.stdout.write(printable(call_memory_text(predicted)))
                            _print_memory_bars(predicted)
                    if chart and not charted and predicted is not None and predicted.report is not None:
                        _write_memory_chart(chart, predicted.report, f"{path}:{invocation.line}")
                        charted = True
            except InputError as err:
                document["error"] = without_path(str(err), path)
            except RecursionError:
                document["error"] = "the script nests too deeply to read"
            except Exception as err:
                document["error"] = f"internal error ({type(err).__name__}: {' '.join(str(err).split())})"
            if document["error"]:
                print(one_line(f"{path}: error: {document['error']}"), file=sys.stderr)
                status = EXIT_BAD_INPUT
        if fmt == "json":
            sys.stdout.write(explain_json(documents))
        if chart and not charted:
            print(one_line(f"error: --chart {chart}: no trainer call with a memory prediction; nothing written"),
                  file=sys.stderr)
            status = EXIT_BAD_INPUT
        if status == EXIT_OK and over:
            status = EXIT_FINDINGS  # a predicted OOM is a finding
        raise typer.Exit(status)
