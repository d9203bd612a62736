"""The work behind `gen fix` and `gen migrate`, one file at a time: read it with the project's
settings, resolve which verl judges it (as `gen check` does), repair or migrate it in memory, and
write it back atomically when asked. Nothing here prints: each file's outcome is yielded as soon
as it is done (so the CLI reports file by file), and generator/report/fix_outcomes.py puts it into words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from generator.base.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, InputError
from generator.inputs.file_context import FileContext, FileRequest, Judging, file_context
from generator.inputs.policy import read_bytes, refuse_non_script

if TYPE_CHECKING:
    from generator.fix.engine import FixResult, Reader
    from generator.fix.migrate import MigrateResult
    from generator.reading.launch_script import LaunchScript
    from generator.plan.script_setup import MemoryOptions
    from generator.schema.release_schema import Schema

# The rule that reports a bash syntax error (rules/shell.py, hazard "parse-error").
PARSE_ERROR_CODE = "VS707"


@dataclass(frozen=True, slots=True)
class FileFix:
    """One file's repair: its result, or the error that left it unchanged."""

    path: str
    result: FixResult | None
    error: Exception | None = None
    release: str | None = None  # the verl it was judged against, once resolved (even if fixing failed later)

    @property
    def syntax_error_line(self) -> int | None:
        """The first bash syntax error still in the file (the rest was read around it)."""
        if self.result is None:
            return None
        broken = [f.line for f in self.result.remaining if f.code == PARSE_ERROR_CODE]
        return broken[0] if broken else None

    @property
    def status(self) -> int:
        """2 for a file that could not be read or has a syntax error, 1 when errors remain."""
        if self.result is None or self.syntax_error_line is not None:
            return EXIT_BAD_INPUT
        return EXIT_FINDINGS if self.result.errors_left else EXIT_OK

    def dry_run_status(self) -> int:
        """`status`, and 1 when a fix is pending (not written): as `ruff --diff`, a dry run that
        would change the file fails, so CI can run `gen fix` to ask "is anything left to fix?"."""
        pending = self.result is not None and self.result.changed
        return max(self.status, EXIT_FINDINGS if pending else EXIT_OK)


@dataclass(frozen=True, slots=True)
class FileMigration:
    """One file's migration from release `start`: its result, or the error that left it unchanged."""

    path: str
    start: str | None
    result: MigrateResult | None
    error: Exception | None = None

    @property
    def status(self) -> int:
        """2 for a file that could not be migrated, 1 when keys were left for a human."""
        if self.result is None:
            return EXIT_BAD_INPUT
        return EXIT_FINDINGS if self.result.refused else EXIT_OK


def _read_bytes(path: str) -> bytes:
    try:
        return read_bytes(path)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None


def _write(path: str, source: bytes, fixed: bytes) -> None:
    from generator.base.files import keep_final_newline, write_atomic

    write_atomic(path, keep_final_newline(source, fixed), expected=source)


def fix_files(paths: list[str], *, write: bool, select: tuple[str, ...],
              ignore: tuple[str, ...], unsafe: bool, verl_version: str | None, env: dict[str, str],
              args: list[str] | None = None, memory: MemoryOptions | None = None,
              config_dir: str | None = None) -> Iterator[FileFix]:
    """Repair each file (written only with `write`); never raises for a single bad file."""
    from generator.schema.resolution import check_explicit

    check_explicit(verl_version, config_dir)  # fail early, once
    request = FileRequest(verl_version, config_dir, select, ignore, env, list(args or []), memory,
                          gpu_named=memory is not None)
    for path in paths:
        release = None
        try:
            context = file_context(path, request)
            if context is None:
                continue  # the project's `exclude`: never read nor fixed, as never checked
            judging = context.judging()
            release = judging.resolution.base_release
            result = _fix_one(context, judging, unsafe)
            if write and result.changed and path != "-":  # stdin's fixed text goes to stdout (the CLI)
                _write(path, context.source, result.fixed)
        except Exception as err:  # never a traceback: one line, this file skipped, nothing written
            yield FileFix(path, None, err, release)
            continue
        yield FileFix(path, result, release=release)


def _fix_one(context: FileContext, judging: Judging, unsafe: bool) -> FixResult:
    """The fix loop over one file's text, checked as `gen check` checks it (its release, its memory
    predictor, its suppression comments), repairing the findings of its codes."""
    from generator.fix.engine import fix_source, resolved_checker, without_silenced

    check = without_silenced(resolved_checker(context.resolution_of, memory_for=judging.memory_for))
    return fix_source(context.source, context.path, read=context.read, check=check, select=context.select,
                      ignore=context.ignore, unsafe=unsafe, script=context.script)


def migrate_files(paths: list[str], *, to_version: str, from_version: str | None, write: bool,
                  unsafe: bool, env: dict[str, str], args: list[str] | None = None) -> Iterator[FileMigration]:
    """Migrate each file to `to_version` (written only with `write`); never raises for a single bad
    file. Without `from_version` the release a script targets is inferred from its keys."""
    from generator import schema
    from generator.fix.engine import default_reader
    from generator.fix.migrate import infer_from_version

    target, _ = schema.resolve_version(to_version, "--to")
    read = default_reader(env or None, args or None)

    def has(release: str, key: str, name: str) -> bool:
        return schema.load(release).has(key, name)

    for path in paths:
        start = None
        try:
            refuse_non_script(path)
            source = _read_bytes(path)
            script = read(source, path)
            if from_version is not None:
                start, _ = schema.resolve_version(from_version, "--from")
            else:
                start = _script_release(script, path) or infer_from_version(script, has=has,
                                                                           releases=schema.available())
                if start is None:
                    raise InputError(f"{path}: cannot tell which verl release the script targets; "
                                     "pass --from VERSION")
            result = _migrate_one(source, path, read, start, target, schema.load(target), unsafe)
            if write and result.changed:
                _write(path, source, result.fixed)
        except Exception as err:  # never a traceback: one line, this file skipped, nothing written
            yield FileMigration(path, start, None, err)
            continue
        yield FileMigration(path, start, result)


def _script_release(script: LaunchScript, path: str) -> str | None:
    """The packaged release the script is judged against, as `gen check` resolves it (its
    project's or the installed verl, the release a `gen recipe` header names): one answer for
    check and migrate. None when check would only infer it from the keys."""
    from generator.schema.resolution import recipe_release, resolve_script

    try:
        found = resolve_script(script, path)
    except InputError:
        return None
    if found.inferred:
        return None  # a guess from the keys: migrate's own inference (or --from) decides
    return recipe_release(found)[0]


def _migrate_one(source: bytes, path: str, read: Reader, start: str, target: str, target_schema: Schema,
                 unsafe: bool) -> MigrateResult:
    from generator import schema
    from generator.fix.migrate import migrate_source, migration_table

    return migrate_source(
        source, path, read=read, from_version=start, to_version=target,
        renames=migration_table(start, target), value_changes=schema.removed_values(),
        target_defaults=target_schema.defaults, target_nodes=target_schema.nodes,
        source_has=schema.load(start).has, unsafe=unsafe, source_defaults=schema.load(start).defaults,
    )
