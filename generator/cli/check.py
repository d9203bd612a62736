"""`gen check` (its run and options: generator/cli/check_run.py), `gen rules`, `gen rule CODE`,
`gen explain`.

Exit codes: 0 no error-severity finding (or --exit-zero); 1 at least one; 2 bad input (a file
that cannot be read, an unknown --verl-version, --format or --severity, an unreadable
--model-config). Every file is checked even when an earlier one was bad.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, List, NoReturn, Optional

import typer

from generator.cli.completion import complete_doc, complete_gpu, complete_model, complete_release, complete_rule
from generator.cli.common import config_dir_option, say_error
from generator.cli.common import parse_pairs as _parse_env
from generator.base.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, InputError
from generator.base.safe_text import one_line, say, use_color, write

if TYPE_CHECKING:
    from generator.plan.memory import MemoryReport
    from generator.plan.script_setup import CallMemory
    from generator.report.charts import ChartSection



def _emit(text: str, color: bool) -> None:
    from generator.cli.check_run import emit

    emit(text, color)


def _fail(message: str, fmt: str = "text") -> NoReturn:
    """A failure of the whole run: one line on stderr, and for a machine-readable format a
    document that says so on stdout (a consumer must not read silence as "no findings")."""
    from generator.report import render_failure

    say_error(message)
    write(render_failure(message, fmt), annotations=fmt == "github")
    raise typer.Exit(EXIT_BAD_INPUT)


def _rule_codes(select: list[str], ignore: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--select/--ignore as code tuples; an unknown code or prefix is bad input (exit 2)."""
    from generator.cli.check_run import rule_codes

    return rule_codes(select, ignore)


def _print_memory_bars(predicted: CallMemory) -> None:
    """A stacked bar per phase (each phase on its worst pipeline stage) under the memory text."""
    from generator.report.charts import terminal_bars, worst_stage_phases

    if predicted.report is None:
        return
    color = use_color(sys.stdout)
    lines = terminal_bars(worst_stage_phases(predicted.report.stages), predicted.report.usable_gib, color=color)
    text = "\n".join(["", *lines]) + "\n"
    _emit(text, color)


def _memory_chart_section(predicted: CallMemory, report: MemoryReport, where: str) -> ChartSection:
    """One call's part of the --chart file: each phase on its worst stage, against the limit; the
    title says the model, the GPUs and the layout where the call's memory model knows them."""
    from generator.report.charts import ChartSection, worst_stage_phases

    gpus = f"{predicted.gpus} x {predicted.gpu.name}" if predicted.gpus else predicted.gpu.name
    layout = f", {predicted.layout}" if predicted.layout else ""
    return ChartSection(f"{where}: {predicted.model} on {gpus}{layout}: memory per GPU by phase (worst pipeline "
                        "stage)", worst_stage_phases(report.stages), report.usable_gib)


def register(app: typer.Typer) -> None:
    from generator.cli import check_run
    from generator.cli.check_run import CHECK_ARGUMENT, CHECK_HELP, CHECK_OPTIONS
    from generator.cli.options import typer_signature

    def check(**options: object) -> None:
        raise typer.Exit(check_run.run_check(**options))

    # The options are data (generator/cli/check_run.py), shared with the typer-free start.
    check.__signature__, check.__annotations__ = typer_signature(CHECK_ARGUMENT, CHECK_OPTIONS)  # type: ignore[attr-defined]
    check.__doc__ = CHECK_HELP
    app.command("check")(check)

    @app.command("rules")
    def rules(fmt: str = typer.Option("text", "--format", "-f", help="text | json")) -> None:
        """List every rule: code, severity, stage, verl releases, title."""
        from generator.judging import load_rules

        from generator.report.rule_doc import rules_json, rules_text

        if fmt not in ("text", "json"):
            _fail(f"--format must be text or json, got '{fmt}'")
        registry = load_rules()
        write(rules_json(registry) if fmt == "json" else rules_text(registry))

    @app.command("rule")
    def rule_cmd(code: str = typer.Argument(..., autocompletion=complete_rule, help="A rule code, e.g. VB106.")) -> None:
        """Explain one rule: what it checks, why, an example finding, the fix."""
        from generator.report.rule_doc import rule_doc
        from generator.judging import load_rules

        registry = load_rules()
        rule = registry.get(code.strip().upper())
        if rule is None:
            close = [c for c in registry if c.startswith(code.strip().upper()[:3])]
            hint = f" (codes starting {code.strip().upper()[:3]}: {', '.join(sorted(close))})" if close else ""
            _fail(f"unknown rule '{code}'{hint}; `gen rules` lists them")
        write(rule_doc(rule))

    @app.command("doc")
    def doc_cmd(name: Optional[str] = typer.Argument(None, autocompletion=complete_doc, help="A page, e.g. step-time-model or rules/batch#vb106.")
                ) -> None:
        """Print one of the project's doc pages (or the section under NAME's #anchor); no NAME: list them."""
        from generator.report.doc_pages import doc_index, doc_text

        try:
            write(doc_index() if name is None else doc_text(name))
        except InputError as err:
            _fail(str(err))

    @app.command("explain")
    def explain(
        files: List[str] = typer.Argument(..., help="Launch scripts, folders of them, or - for stdin."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", autocompletion=complete_release, help="Explain against this verl release."),
        config_dir: Optional[str] = config_dir_option(),
        env: List[str] = typer.Option([], "--env", help="Assume environment variable NAME=VALUE."),
        arg: List[str] = typer.Option([], "--arg", help="Assume a positional script argument."),
        fmt: str = typer.Option("text", "--format", "-f", help="text | json"),
        memory: bool = typer.Option(False, "--memory", help="Also predict memory per GPU: every phase on every "
                                    "pipeline stage, each term named, against the usable limit."),
        gpu: Optional[str] = typer.Option(None, "--gpu", autocompletion=complete_gpu, help="GPU type for --memory: h100 (default), h20, h200, ..."),
        gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        model: Optional[str] = typer.Option(None, "--model", autocompletion=complete_model, help="Model name, hub id, model dir or config.json "
                                            "(default: the script's actor_rollout_ref.model.path)."),
        headroom: float = typer.Option(0.0, "--headroom", help="GiB to keep free below the usable limit.", min=0),
        chart: Optional[str] = typer.Option(None, "--chart", help="Write the memory chart of every call, one "
                                            "below the other: FILE.svg or FILE.html (implies --memory)."),
        force: bool = typer.Option(False, "--force", help="Replace an existing --chart file."),
        no_calibration: bool = typer.Option(False, "--no-calibration", help="With --memory: ignore a stored "
                                            "calibration (gen calibrate --save)."),
    ) -> None:
        """Print the numbers verl derives (DP, per-rank mini batch, updates per step, ...) for each call."""
        from generator.check.runner import explain_file
        from generator.plan.script_setup import memory_options
        from generator.report.documents import explain_call_json, explain_json
        from generator.report.explain import render_explain
        from generator.report.memory_report import call_memory_dict, call_memory_text
        from generator.schema.resolution import check_explicit

        status = EXIT_OK
        documents: list[dict[str, object]] = []  # --format json: one per file
        over = False
        try:
            if fmt not in ("text", "json"):
                raise InputError(f"--format must be text or json, got '{fmt}'")
            check_explicit(verl_version, config_dir)
            env_map = _parse_env(env)
            wanted = memory or gpu is not None or gpu_mem is not None or model is not None
            memory_args = memory_options(gpu, gpu_mem, model, headroom) if wanted or chart else None
            if chart:
                from generator.report.charts import check_chart_path

                check_chart_path(chart, force=force)
            from generator.inputs.discover import expand_paths

            if memory_args is not None:
                from generator.cli.calibration import apply_stored

                # The project of the first path named (one calibration for the command).
                apply_stored(files[0] if files and files[0] != "-" else ".", memory_args.gpu.name, verl_version,
                             no_calibration)
            files = expand_paths(files)
        except InputError as err:
            _fail(str(err), "json" if fmt == "json" else "text")
        charted: list[ChartSection] = []  # --chart: one section per call with a memory prediction
        for path in files:
            done = explain_file(path, verl_version=verl_version, config_dir=config_dir, env=env_map, args=list(arg),
                                memory=memory_args, gpu_named=gpu is not None or gpu_mem is not None)
            explained: list[dict[str, object]] = []
            documents.append({"path": path, "error": done.error, "incomplete": done.incomplete, "calls": explained})
            if done.incomplete:  # the rest is explained, but the input is bad: exit 2 as in every command
                say_error(f"{path}: {done.incomplete}")
                status = EXIT_BAD_INPUT
            if done.no_calls and fmt == "text":
                write(one_line(f"{path}: no trainer call found") + "\n")
            for call in done.calls:
                predicted = call.predicted
                over = over or (predicted is not None and predicted.over)
                if fmt == "json":
                    entry = explain_call_json(call.invocation, call.config, call.judged.base_release, call.rows)
                    entry["resolution"] = call.judged.as_dict()
                    if predicted is not None:
                        entry["memory"] = call_memory_dict(predicted)
                        entry["memory_problems"] = list(predicted.problems)
                    explained.append(entry)
                else:
                    write(render_explain(call.header, call.rows))
                    if predicted is not None:
                        write(call_memory_text(predicted))
                        _print_memory_bars(predicted)
                if chart and predicted is not None and predicted.report is not None:
                    charted.append(_memory_chart_section(predicted, predicted.report,
                                                         f"{path}:{call.invocation.line}"))
            if done.error:
                say_error(f"{path}: {done.error}")
                status = EXIT_BAD_INPUT
        if fmt == "json":
            write(explain_json(documents))
        if chart and charted:
            from generator.base.files import write_atomic
            from generator.report.charts import charts_for

            try:
                write_atomic(chart, charts_for(chart, charted), replace=force)
                say(f"wrote {chart}")
            except (InputError, OSError) as err:  # one line; the report above is already out
                say_error(f"--chart {chart}: {err}")
                status = EXIT_BAD_INPUT
        if chart and not charted:
            say_error(f"--chart {chart}: no trainer call with a memory prediction; nothing written")
            status = EXIT_BAD_INPUT
        if status == EXIT_OK and over:
            status = EXIT_FINDINGS  # a predicted OOM is a finding
        raise typer.Exit(status)
