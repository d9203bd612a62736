"""What `gen fix` and `gen migrate` say about each file, and fix's closing summary.

Pure functions of the outcomes generator/fix/per_file.py yields. A diff goes to stdout (for `patch`);
everything else is a line for stderr. Each file's lines come back in the order they are printed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Sequence

from generator.base.errors import InputError, error_line
from generator.base.safe_text import payload_problem

if TYPE_CHECKING:
    from generator.fix.per_file import FileFix, FileMigration

Stream = Literal["out", "err"]
Said = list[tuple[Stream, str]]


def file_error(path: str, err: Exception) -> str:
    """One line for a file that could not be fixed or migrated (it is left unchanged)."""
    if isinstance(err, InputError):
        return error_line(str(err) if str(err).startswith(path) else f"{path}: {err}")
    return error_line(f"{path}: internal error ({type(err).__name__}: {err}); file not changed")


def payload(path: str, text: str, what: str, hint: str) -> tuple[Stream, str]:
    """A diff or a fixed script for stdout, byte for byte; or, when a line of it holds what a
    terminal or a CI runner would obey (docs/output-door.md), a line on stderr instead: an escaped
    diff would not apply, and a raw one could forge annotations or rewrite the screen."""
    problem = payload_problem(text)
    if problem is None:
        return ("out", text)
    return ("err", f"{path}: {what} not printed (its {problem}, which a terminal or a CI runner would read as a "
                   f"command or a line break); {hint}")


def fix_lines(outcome: FileFix, *, write: bool, fixed_text: bool = False) -> Said:
    """The diff (without --write), each fix applied or refused, a syntax error, errors left.
    With `fixed_text` (a script read from stdin, as ruff does) the whole fixed text goes to
    stdout instead of a diff, changed or not, so `gen fix - < a.sh > b.sh` always gives a script."""
    from generator.fix.engine import unified_diff

    path, result = outcome.path, outcome.result
    if result is None:
        return [("err", file_error(path, outcome.error or RuntimeError("no result")))]
    said: Said = []
    if fixed_text:
        said.append(payload(path, result.fixed.decode("utf-8", errors="replace"), "the fixed script",
                            "save it to a file and run `gen fix --write` on that"))
    elif not write and result.changed:
        said.append(payload(path, unified_diff(result, path), "the diff", "`gen fix --write` applies it"))
    verb = "fixed" if write or fixed_text else "would fix"
    for applied in result.applied:
        where = f"{path}:{applied.line}" if applied.line else path
        said.append(("err", f"{where}: {verb} {applied.code}: {applied.description}"))
    for refusal in result.not_applied:
        where = f"{path}:{refusal.line}" if refusal.line else path
        said.append(("err", f"{where}: {refusal.code} not fixed: {refusal.reason}"))
    if outcome.syntax_error_line is not None:  # the same exit code as every other command: bad input
        said.append(("err", error_line(f"{path}: bash syntax error at line {outcome.syntax_error_line} "
                            "(the rest was read)")))
    if result.errors_left:
        said.append(("err", f"{path}: {result.errors_left} error finding(s) remain (see `gen check {path}`)"))
    return said


def fix_summary(outcomes: Sequence[FileFix], *, write: bool) -> str:
    """`would fix N finding(s) in F of P file(s) (verl …)`, and how many fixes were not applied."""
    releases: list[str] = []  # the verl each file was judged against, in order of first use
    for outcome in outcomes:
        if outcome.release is not None and outcome.release not in releases:
            releases.append(outcome.release)
    results = [o.result for o in outcomes if o.result is not None]
    fixed = sum(len(r.applied) for r in results)
    changed = sum(r.changed for r in results)
    refused = sum(len(r.not_applied) for r in results)
    verb = "fixed" if write else "would fix"
    summary = (f"{verb} {fixed} finding(s) in {changed} of {len(outcomes)} file(s) "
               f"(verl {', '.join(releases) or '-'})")
    if refused:
        summary += f"; {refused} fix(es) not applied"
    return summary


def migrate_lines(outcome: FileMigration, *, write: bool) -> Said:
    """The diff (without --write), the release step, each key migrated or left for a human."""
    from generator.fix.engine import FixResult, unified_diff

    path, result = outcome.path, outcome.result
    if result is None:
        return [("err", file_error(path, outcome.error or RuntimeError("no result")))]
    said: Said = []
    if not write and result.changed:
        said.append(payload(path, unified_diff(FixResult(path, result.original, result.fixed), path), "the diff",
                            "`gen migrate --write` applies it"))
    said.append(("err", f"{path}: {result.from_version} → {result.to_version}: {len(result.applied)} change(s)"))
    for step in result.applied:
        said.append(("err", f"{path}:{step.line}: {'migrated' if write else 'would migrate'} {step.description}"))
    for refusal in result.refused:
        said.append(("err", f"{path}:{refusal.line}: not migrated: {refusal.reason}"))
    for line, change in result.changed_defaults:
        said.append(("err", f"{path}:{line}: default changed from {result.from_version} to {result.to_version}, "
                            f"not set by the call: {change}"))
    return said
