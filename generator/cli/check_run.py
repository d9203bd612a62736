"""`gen check` itself, without typer: its options as data (generator.cli.options) and the run.

generator/cli/check.py registers it with typer (help, completion, error messages); the start
of `gen` (generator/cli/__init__.py) runs it directly when the argv is plainly valid, so the
most frequent call — `gen check FILE...` from an editor or a pre-commit hook — does not pay for
typer's import. Both end in `run_check`, which returns the exit status.

Exit codes: 0 no error-severity finding (or --exit-zero); 1 at least one; 2 bad input (a file
that cannot be read, an unknown --verl-version, --format or --severity, an unreadable
--model-config). Every file is checked even when an earlier one was bad.
"""

from __future__ import annotations

import sys
from typing import Any

from generator.cli.common import CONFIG_DIR_HELP, say_error
from generator.cli.completion import complete_gpu, complete_release
from generator.cli.options import Arg, Opt
from generator.base.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, InputError
from generator.base.safe_text import use_color, write

FORMATS = ("text", "concise", "json", "sarif", "github")
SEVERITY_CHOICES = ("error", "warning", "info")

CHECK_ARGUMENT = Arg("files", "Launch scripts (.sh), Python launchers (.py), folders (searched for both, "
                              "honouring .gitignore), or - for stdin.")
CHECK_OPTIONS: tuple[Opt, ...] = (
    Opt("fmt", ("--format", "--output-format", "-f"), "value", "text",
        "text (each finding with its source line) | concise (one line each) | json | sarif | github",
        optional=False),
    Opt("select", ("--select",), "list", (), "Only these codes or prefixes (VB, VP301, ...)."),
    Opt("ignore", ("--ignore",), "list", (), "Skip these codes or prefixes."),
    Opt("severity", ("--severity",), "value", "info",
        "Show findings of this severity or worse: error | warning | info (all, the default).", optional=False),
    Opt("exit_zero", ("--exit-zero",), "flag", False, "Exit 0 even with error findings (bad input still exits 2)."),
    Opt("statistics", ("--statistics",), "flag", False, "Print how many findings each rule has, instead of "
                                                        "the findings."),
    Opt("quiet", ("--quiet", "-q"), "flag", False, "Print the findings and nothing else (no summary)."),
    Opt("output_file", ("--output-file", "-o"), "value", None, "Write the report to this file instead of stdout."),
    Opt("verl_version", ("--verl-version",), "value", None, "Check against this verl release.",
        complete=complete_release),
    Opt("config_dir", ("--config-dir",), "value", None, CONFIG_DIR_HELP),
    Opt("env", ("--env",), "list", (), "Assume environment variable NAME=VALUE."),
    Opt("arg", ("--arg",), "list", (), "Assume a positional script argument ($1, $2, ...)."),
    Opt("model_config", ("--model-config",), "value", None, "HF config.json (or model dir) for model-shape rules."),
    Opt("gpu", ("--gpu",), "value", None, "GPU the scripts run on (h100, h20, ...): also predict memory per GPU "
                                          "and report a predicted OOM (VM811).", complete=complete_gpu),
    Opt("gpu_mem", ("--gpu-mem",), "value", None, "GPU memory in GiB (overrides --gpu's).", convert=float),
    Opt("headroom", ("--headroom",), "value", 0.0, "GiB to keep free below the usable limit.", convert=float,
        optional=False, minimum=0),
    Opt("no_calibration", ("--no-calibration",), "flag", False, "With --gpu: ignore a stored calibration "
                                                                 "(gen calibrate --save)."),
)
CHECK_HELP = "Check launch scripts against verl's batch, parallel and config rules."


class _Failed(Exception):
    """The whole run failed; already said on stderr (and as a document for a machine format)."""


def _fail(message: str, fmt: str = "text") -> None:
    from generator.report import render_failure

    say_error(message)
    write(render_failure(message, fmt), annotations=fmt == "github")
    raise _Failed(message)


def emit(text: str, color: bool, *, annotations: bool = False) -> None:
    """The report on stdout: rich markup (user text made literal and escaped piece by piece by
    generator.report) on a colour terminal, else through the door as it is."""
    if color:
        from rich.console import Console

        Console(highlight=False, soft_wrap=True).print(text, end="")
    else:
        write(text, annotations=annotations)


def rule_codes(select: list[str], ignore: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--select/--ignore as code tuples; an unknown code or prefix is bad input (exit 2)."""
    from generator.cli.common import parse_codes
    from generator.inputs.policy import check_codes

    if not select and not ignore:
        return (), ()
    from generator.judging import load_rules

    known = load_rules().keys()
    return (check_codes(parse_codes(select), known, "--select"), check_codes(parse_codes(ignore), known, "--ignore"))


def run_check(**options: Any) -> int:
    """Run `gen check` with the options of CHECK_OPTIONS (and `files`); the exit status."""
    try:
        return _run(**options)
    except _Failed:
        return EXIT_BAD_INPUT


def _run(*, files: list[str], fmt: str, select: list[str], ignore: list[str], severity: str, exit_zero: bool,
         statistics: bool, quiet: bool, output_file: str | None, verl_version: str | None, config_dir: str | None,
         env: list[str], arg: list[str], model_config: str | None, gpu: str | None, gpu_mem: float | None,
         headroom: float, no_calibration: bool = False) -> int:
    from generator.cli.common import parse_pairs
    from generator.report import render

    if fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, got '{fmt}'")
    machine = fmt if fmt in ("json", "sarif", "github") else "text"  # the failure document's format
    if severity.strip().lower() not in SEVERITY_CHOICES:
        _fail(f"--severity must be one of {', '.join(SEVERITY_CHOICES)}, got '{severity}'", machine)
    try:
        from generator.inputs.discover import expand_paths

        chosen_select, chosen_ignore = rule_codes(select, ignore)
        memory = None
        if gpu is not None or gpu_mem is not None:
            from generator.plan.script_setup import memory_options

            memory = memory_options(gpu, gpu_mem, None, headroom)
            from generator.cli.calibration import apply_stored

            # The project of the first path named (one calibration for the command).
            apply_stored(files[0] if files and files[0] != "-" else ".", memory.gpu.name, verl_version,
                         no_calibration)
        from generator.check.runner import check_paths

        reports = check_paths(expand_paths(files), version=verl_version, select=chosen_select, ignore=chosen_ignore,
                              env=parse_pairs(env), args=list(arg), model_config=model_config,
                              config_dir=config_dir, memory=memory, plan_fixes=machine == "text")
    except InputError as err:
        _fail(str(err), machine)
    from generator.report.selection import at_least, statistics_text

    reports = at_least(reports, severity.strip().lower())
    color = machine == "text" and output_file is None and use_color(sys.stdout)
    text = statistics_text(reports) if statistics else render(reports, fmt, color=color, quiet=quiet)
    if output_file is not None:
        from generator.base.files import write_atomic

        try:
            write_atomic(output_file, text)
        except (InputError, OSError) as err:
            _fail(f"--output-file {output_file}: {err}", "text")
    else:
        emit(text, color and not statistics, annotations=fmt == "github" and not statistics)
    bad_file = any(r.bad_input for r in reports)
    for report in reports:  # the report leaves them out: said once, on stderr, in every format
        for problem in (report.error, report.incomplete):
            if problem:
                say_error(f"{report.path}: {problem}")
    if bad_file:
        return EXIT_BAD_INPUT
    failed = any(r.failed for r in reports)
    return EXIT_FINDINGS if failed and not exit_zero else EXIT_OK


def fast_check(argv: list[str]) -> int | None:
    """`gen check ARGV` without typer, or None when typer should parse ARGV (help, an error...)."""
    from generator.cli.options import fast_parse

    parsed = fast_parse(argv, CHECK_ARGUMENT, CHECK_OPTIONS)
    return None if parsed is None else run_check(**parsed)


__all__ = ["CHECK_ARGUMENT", "CHECK_HELP", "CHECK_OPTIONS", "FORMATS", "emit", "fast_check", "rule_codes", "run_check"]
