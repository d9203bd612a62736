"""`gen fix` and `gen migrate`: repair launch scripts with minimal byte edits.

Both print a unified diff by default (`--diff`) and write only with `--write` (atomically: a
failure leaves the original). Exit codes: 0 nothing left to fix, 1 error findings remain
(`fix`) or keys were left for a human (`migrate`), 2 bad input (nothing written for that file).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, List, Optional

import typer

from generator.cli.common import config_dir_option
from generator.cli.common import parse_pairs as _parse_env
from generator.inputs import read_bytes, refuse_non_script, with_project
from generator.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, InputError
from generator.safe_text import one_line, printable

if TYPE_CHECKING:
    from generator.plan.script_setup import MemoryOptions


def _read_bytes(path: str) -> bytes:
    try:
        return read_bytes(path)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None








# The rule that reports a bash syntax error (rules/shell.py, hazard "parse-error").
PARSE_ERROR_CODE = "VS707"


def _out(diff_text: str) -> None:
    """A diff is for `patch` when piped (bytes as they are); on a terminal the script's control
    characters are shown as escapes instead of being obeyed."""
    sys.stdout.write(printable(diff_text) if sys.stdout.isatty() else diff_text)


def _err(message: str) -> None:
    print(one_line(message), file=sys.stderr)


def _file_error(path: str, err: Exception) -> None:
    """One line for a file that could not be fixed or migrated (it is left unchanged)."""
    if isinstance(err, InputError):
        _err(f"error: {err}" if str(err).startswith(path) else f"{path}: error: {err}")
    else:
        _err(f"{path}: error: internal error ({type(err).__name__}: {err}); file not changed")


def run_fix(paths: list[str], *, write: bool, select: tuple[str, ...], ignore: tuple[str, ...],
            unsafe: bool, verl_version: str | None, env: dict[str, str],
            args: list[str] | None = None, memory: MemoryOptions | None = None,
            config_dir: str | None = None) -> int:
    from generator.fix.engine import default_checker, default_reader, fix_source, unified_diff
    from generator.project import load_project
    from generator.schema.resolution import check_explicit, resolve_script

    check_explicit(verl_version, config_dir)  # fail early, once
    from generator.suppress import find_suppressions

    command_line_reader = read = default_reader(env or None, args or None)
    releases: list[str] = []  # the verl each file was judged against, as `gen check` chooses it
    status = EXIT_OK
    fixed_count = files_changed = refused_count = 0
    for path in paths:
        try:
            refuse_non_script(path)
            source = _read_bytes(path)
            project = load_project(path)
            file_select, file_ignore, file_env, file_args = with_project(
                project, select=select, ignore=ignore, env=env, args=list(args or []))
            # A file-level `# verl-gen: ignore[...]` is not fixed either (per-command ones are
            # honoured by gen check; the fix engine repairs what it is asked to, file-wide).
            file_ignore = (*file_ignore, *find_suppressions(source).file_codes)
            read = (default_reader(file_env or None, file_args or None) if project.path is not None
                    else command_line_reader)
            resolution = resolve_script(read(source, path), path, version=verl_version, config_dir=config_dir,
                                        project=project)
            if resolution.base_release not in releases:
                releases.append(resolution.base_release)
            memory_for = None
            if memory is not None or project.gpu:  # the planner's memory model, loaded only when asked for
                from generator.plan.memory_check import memory_checker

                memory_for = memory_checker(memory, project.gpu)
            check = default_checker(resolution.release, resolution=resolution, memory_for=memory_for)
            result = fix_source(source, path, read=read, check=check, select=file_select, ignore=file_ignore,
                                unsafe=unsafe)
            if write and result.changed:
                from generator.files import keep_final_newline, write_atomic

                write_atomic(path, keep_final_newline(source, result.fixed), expected=source)
        except Exception as err:  # never a traceback: one line, this file skipped, nothing written
            _file_error(path, err)
            status = EXIT_BAD_INPUT
            continue
        if not write and result.changed:
            _out(unified_diff(result, path))
        for applied in result.applied:
            where = f"{path}:{applied.line}" if applied.line else path
            verb = "fixed" if write else "would fix"
            _err(f"{where}: {verb} {applied.code}: {applied.description}")
        for refusal in result.not_applied:
            where = f"{path}:{refusal.line}" if refusal.line else path
            _err(f"{where}: {refusal.code} not fixed: {refusal.reason}")
        fixed_count += len(result.applied)
        files_changed += result.changed
        refused_count += len(result.not_applied)
        broken = [f.line for f in result.remaining if f.code == PARSE_ERROR_CODE]
        if broken:  # the same exit code for a syntax error as every other command: bad input
            _err(f"{path}: error: bash syntax error at line {broken[0]} (the rest was read)")
            status = EXIT_BAD_INPUT
        errors = result.errors_left
        if errors:
            _err(f"{path}: {errors} error finding(s) remain (see `gen check {path}`)")
            if status == EXIT_OK:
                status = EXIT_FINDINGS
    verb = "fixed" if write else "would fix"
    summary = f"{verb} {fixed_count} finding(s) in {files_changed} of {len(paths)} file(s) (verl {', '.join(releases) or '-'})"
    if refused_count:
        summary += f"; {refused_count} fix(es) not applied"
    _err(summary)
    return status


def run_migrate(paths: list[str], *, to_version: str, from_version: str | None, write: bool,
                unsafe: bool, env: dict[str, str], args: list[str] | None = None) -> int:
    from generator import schema
    from generator.fix.engine import default_reader
    from generator.fix.migrate import infer_from_version

    target, _ = schema.resolve_version(to_version, "--to")
    read = default_reader(env or None, args or None)
    status = EXIT_OK

    def has(release: str, key: str, name: str) -> bool:
        return schema.load(release).has(key, name)

    for path in paths:
        try:
            refuse_non_script(path)
            source = _read_bytes(path)
            script = read(source, path)
            if from_version is not None:
                start, _ = schema.resolve_version(from_version, "--from")
            else:
                start = infer_from_version(script, has=has, releases=schema.available())
                if start is None:
                    raise InputError(f"{path}: cannot tell which verl release the script targets; "
                                     "pass --from VERSION")
            target_schema = schema.load(target)
            result = _migrate_one(source, path, read, start, target, target_schema, unsafe)
            if write and result.changed:
                from generator.files import keep_final_newline, write_atomic

                write_atomic(path, keep_final_newline(source, result.fixed), expected=source)
        except Exception as err:  # never a traceback: one line, this file skipped, nothing written
            _file_error(path, err)
            status = EXIT_BAD_INPUT
            continue
        if not write and result.changed:
            from generator.fix.engine import FixResult, unified_diff

            _out(unified_diff(FixResult(path, result.original, result.fixed), path))
        _err(f"{path}: {start} → {target}: {len(result.applied)} change(s)")
        for step in result.applied:
            _err(f"{path}:{step.line}: {'migrated' if write else 'would migrate'} {step.description}")
        for refusal in result.refused:
            _err(f"{path}:{refusal.line}: not migrated: {refusal.reason}")
        if result.refused and status == EXIT_OK:
            status = EXIT_FINDINGS
    return status


def _migrate_one(source: bytes, path: str, read, start: str, target: str, target_schema, unsafe: bool):
    from generator import schema
    from generator.fix.migrate import migrate_source, migration_table

    return migrate_source(
        source, path, read=read, from_version=start, to_version=target,
        renames=migration_table(start, target), value_changes=schema.removed_values(),
        target_defaults=target_schema.defaults, target_nodes=target_schema.nodes,
        source_has=schema.load(start).has, unsafe=unsafe,
    )


def register(app: typer.Typer) -> None:
    """Add `gen fix` and `gen migrate`."""

    @app.command("fix")
    def fix_command(
        files: List[str] = typer.Argument(..., help="Launch scripts to repair, or folders of them."),
        diff: bool = typer.Option(False, "--diff", help="Print a unified diff (the default)."),
        write: bool = typer.Option(False, "--write", help="Write the fixes to the files (atomically)."),
        select: List[str] = typer.Option([], "--select", help="Only these rule codes or prefixes (VB,VS701)."),
        ignore: List[str] = typer.Option([], "--ignore", help="Skip these rule codes or prefixes."),
        unsafe: bool = typer.Option(False, "--unsafe", help="Also apply fixes that change behaviour."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", help="verl release to check against."),
        config_dir: Optional[str] = config_dir_option(),
        env: List[str] = typer.Option([], "--env", help="Assume NAME=VALUE in the environment."),
        arg: List[str] = typer.Option([], "--arg", help="Assume this positional argument ($1, $2, ...)."),
        gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU the scripts run on: also fix a predicted OOM "
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
            from generator.discover import expand_paths

            memory = None
            if gpu is not None or gpu_mem is not None:
                from generator.plan.script_setup import memory_options

                memory = memory_options(gpu, gpu_mem, None, headroom)
            code = run_fix(expand_paths(files), write=write, select=chosen_select, ignore=chosen_ignore,
                           unsafe=unsafe, verl_version=verl_version, env=_parse_env(env), args=arg, memory=memory,
                           config_dir=config_dir)
        except InputError as err:
            _err(f"error: {err}")
            raise typer.Exit(EXIT_BAD_INPUT) from None
        raise typer.Exit(code)

    @app.command("migrate")
    def migrate_command(
        files: List[str] = typer.Argument(..., help="Launch scripts to migrate."),
        to: str = typer.Option(..., "--to", help="verl release to migrate to, e.g. 0.7.0."),
        from_: Optional[str] = typer.Option(None, "--from",
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
            from generator.discover import expand_paths

            code = run_migrate(expand_paths(files), to_version=to, from_version=from_, write=write, unsafe=unsafe,
                               env=_parse_env(env), args=arg)
        except InputError as err:
            _err(f"error: {err}")
            raise typer.Exit(EXIT_BAD_INPUT) from None
        raise typer.Exit(code)
