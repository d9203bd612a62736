"""`gen fix` and `gen migrate`: repair launch scripts with minimal byte edits.

Both print a unified diff by default (`--diff`) and write only with `--write` (atomically: a
failure leaves the original). `gen fix -` reads stdin and prints the fixed script on stdout.
Exit codes: 0 nothing left to fix, 1 error findings remain or (`fix` without --write) a fix is
pending, or keys were left for a human (`migrate`), 2 bad input (nothing written for that file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import typer

from generator.cli.completion import complete_gpu, complete_release
from generator.schema.releases import newest_release
from generator.cli.common import config_dir_option
from generator.cli.common import parse_pairs as _parse_env
from generator.base.errors import EXIT_BAD_INPUT, EXIT_OK, InputError, error_line
from generator.base.safe_text import say, write_payload

if TYPE_CHECKING:  # the fix machinery is imported by the command that runs, not at `gen` start
    from generator.report.fix_outcomes import Said
    from generator.plan.script_setup import MemoryOptions


def _out(diff_text: str) -> None:
    """A diff is for `patch`: bytes as they are. generator.report.fix_outcomes kept back any that
    holds what a terminal or a CI runner would obey (said on stderr instead)."""
    write_payload(diff_text)


def _err(message: str) -> None:
    say(message)


def _say(said: Said) -> None:
    for stream, text in said:
        if stream == "out":
            _out(text)
        else:
            _err(text)


def run_fix(paths: list[str], *, write: bool, select: tuple[str, ...], ignore: tuple[str, ...],
            unsafe: bool, verl_version: str | None, env: dict[str, str],
            args: list[str] | None = None, memory: MemoryOptions | None = None,
            config_dir: str | None = None, diff: bool = False) -> int:
    """Exit status: 2 bad input, 1 error findings remain or (a dry run) a fix is pending, else 0."""
    from generator.fix.per_file import fix_files
    from generator.report.fix_outcomes import fix_lines, fix_summary

    outcomes = []
    status = EXIT_OK
    for outcome in fix_files(paths, write=write, select=select, ignore=ignore, unsafe=unsafe,
                             verl_version=verl_version, env=env, args=args, memory=memory, config_dir=config_dir):
        # stdin (`gen fix -`): the fixed text on stdout, as `ruff check --fix -`; `--diff` keeps the diff.
        stdin_text = outcome.path == "-" and not diff
        said = fix_lines(outcome, write=write, fixed_text=stdin_text)
        _say(said)  # file by file, as each is done
        outcomes.append(outcome)
        status = max(status, outcome.status if write or stdin_text else outcome.dry_run_status())
        if stdin_text and outcome.result is not None and not any(stream == "out" for stream, _ in said):
            status = EXIT_BAD_INPUT  # the fixed script was kept back: nothing usable on stdout
    if any(outcome.result is not None for outcome in outcomes):  # not when no file could be read: the errors said it
        _err(fix_summary(outcomes, write=write or (paths == ["-"] and not diff)))
    return status


def run_migrate(paths: list[str], *, to_version: str, from_version: str | None, write: bool,
                unsafe: bool, env: dict[str, str], args: list[str] | None = None) -> int:
    from generator.fix.per_file import migrate_files
    from generator.report.fix_outcomes import migrate_lines

    status = EXIT_OK
    for outcome in migrate_files(paths, to_version=to_version, from_version=from_version, write=write,
                                 unsafe=unsafe, env=env, args=args):
        _say(migrate_lines(outcome, write=write))
        status = max(status, outcome.status)
    return status


def register(app: typer.Typer) -> None:
    """Add `gen fix` and `gen migrate`."""

    @app.command("fix")
    def fix_command(
        files: List[str] = typer.Argument(..., help="Launch scripts to repair, folders of them, or - (stdin: the fixed script is printed)."),
        diff: bool = typer.Option(False, "--diff", help="Print a unified diff (the default)."),
        write: bool = typer.Option(False, "--write", help="Write the fixes to the files (atomically)."),
        select: List[str] = typer.Option([], "--select", help="Only these rule codes or prefixes (VB,VS701)."),
        ignore: List[str] = typer.Option([], "--ignore", help="Skip these rule codes or prefixes."),
        unsafe: bool = typer.Option(False, "--unsafe", help="Also apply fixes that change behaviour."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", autocompletion=complete_release, help="verl release to check against."),
        config_dir: Optional[str] = config_dir_option(),
        env: List[str] = typer.Option([], "--env", help="Assume NAME=VALUE in the environment."),
        arg: List[str] = typer.Option([], "--arg", help="Assume this positional argument ($1, $2, ...)."),
        gpu: Optional[str] = typer.Option(None, "--gpu", autocompletion=complete_gpu, help="GPU the scripts run on: also fix a predicted OOM "
                                          "(VM811, with --unsafe) with the cheapest memory knob that fits."),
        gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        headroom: float = typer.Option(0.0, "--headroom", help="GiB to keep free below the usable limit.", min=0),
    ) -> None:
        """Repair findings with minimal edits where each value is defined; shows a diff unless --write."""
        try:
            if diff and write:
                raise InputError("--diff and --write exclude each other")
            from generator.cli.check import _rule_codes

            chosen_select, chosen_ignore = _rule_codes(select, ignore)
            from generator.inputs.discover import expand_paths

            memory = None
            if gpu is not None or gpu_mem is not None:
                from generator.plan.script_setup import memory_options

                memory = memory_options(gpu, gpu_mem, None, headroom)
            code = run_fix(expand_paths(files), write=write, select=chosen_select, ignore=chosen_ignore,
                           unsafe=unsafe, verl_version=verl_version, env=_parse_env(env), args=arg, memory=memory,
                           config_dir=config_dir, diff=diff)
        except InputError as err:
            _err(error_line(str(err)))
            raise typer.Exit(EXIT_BAD_INPUT) from None
        raise typer.Exit(code)

    @app.command("migrate")
    def migrate_command(
        files: List[str] = typer.Argument(..., help="Launch scripts to migrate."),
        to: str = typer.Option(..., "--to", autocompletion=complete_release, help=f"verl release to migrate to, e.g. {newest_release()}."),
        from_: Optional[str] = typer.Option(None, "--from", autocompletion=complete_release,
                                            help="Release the script targets (default: inferred from its keys)."),
        diff: bool = typer.Option(False, "--diff", help="Print a unified diff (the default)."),
        write: bool = typer.Option(False, "--write", help="Write the changes (atomically)."),
        unsafe: bool = typer.Option(False, "--unsafe", help="Also drop keys removed without replacement."),
        env: List[str] = typer.Option([], "--env", help="Assume NAME=VALUE in the environment."),
        arg: List[str] = typer.Option([], "--arg", help="Assume this positional argument ($1, $2, ...)."),
    ) -> None:
        """Rename moved keys, replace removed values, and report (or with --unsafe drop) removed keys."""
        try:
            if diff and write:
                raise InputError("--diff and --write exclude each other")
            from generator.inputs.discover import expand_paths

            code = run_migrate(expand_paths(files), to_version=to, from_version=from_, write=write, unsafe=unsafe,
                               env=_parse_env(env), args=arg)
        except InputError as err:
            _err(error_line(str(err)))
            raise typer.Exit(EXIT_BAD_INPUT) from None
        raise typer.Exit(code)
