"""The fix loop: read → check → place each applicable Fix → splice → read and check again.

Rounds repeat until no applicable fix is left (at most `MAX_ROUNDS`), so a repair that
uncovers the next one (a new mini batch that makes the micro batch indivisible) is finished in
one call, and a second call changes nothing. Fixes whose edits overlap an earlier fix wait for
the next round (ruff's strategy). A round that would make the script unparseable is dropped.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence, TYPE_CHECKING

from generator.config.types import Config
from generator.reading.edit_kinds import KeyEdit, TextEdit
from generator.fix.splice import apply_edits, select_compatible
from generator.fix.hazard_repairs import fallback_fixes
from generator.fix.place import Placement, place_fix
from generator.reading.launch_script import Invocation, LaunchScript
from generator.model.facts import ModelFacts
from generator.rules.core import Finding, MemoryVerdict, code_wanted

if TYPE_CHECKING:
    from generator.schema.resolution import Resolution

MAX_ROUNDS = 3

CheckResults = list[tuple[Invocation | None, Config | None, list[Finding]]]
Checker = Callable[[LaunchScript], CheckResults]
Reader = Callable[[bytes, str | None], LaunchScript]
MemoryFor = Callable[[Config, ModelFacts | None], MemoryVerdict | None]


class Applied(NamedTuple):
    code: str
    line: int | None
    description: str
    applicability: str
    notes: tuple[str, ...] = ()


class NotApplied(NamedTuple):
    """A finding with a fix that was not applied, and why (unknown value, needs --unsafe, ...)."""

    code: str
    line: int | None
    reason: str


class FixResult:
    """What `gen fix` did to one file: the fixed bytes, the fixes applied and those it left."""

    # A plain class with __slots__, not a dataclass: `gen check` plans its fixes here, and its
    # start imports no dataclasses.
    __slots__ = ("path", "original", "fixed", "applied", "not_applied", "remaining")
    path: str | None
    original: bytes
    fixed: bytes
    applied: list[Applied]
    not_applied: list[NotApplied]
    remaining: list[Finding]  # findings of the fixed script

    def __init__(self, path: str | None, original: bytes, fixed: bytes, applied: list[Applied] | None = None,
                 not_applied: list[NotApplied] | None = None, remaining: list[Finding] | None = None) -> None:
        self.path = path
        self.original = original
        self.fixed = fixed
        self.applied = [] if applied is None else applied
        self.not_applied = [] if not_applied is None else not_applied
        self.remaining = [] if remaining is None else remaining

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    @property
    def errors_left(self) -> int:
        return sum(1 for f in self.remaining if f.severity == "error")


def _parse_errors(script: LaunchScript) -> int:
    return sum(1 for h in script.hazards if h.kind == "parse-error")


def default_reader(env: dict[str, str] | None = None,
                   args: list[str] | None = None) -> Reader:
    def read(source: bytes, path: str | None) -> LaunchScript:
        from generator.reading.shell import read_launch

        return read_launch(path, source=source, env=env, args=args)

    return read


def default_checker(version: str | None, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> Checker:
    """check_script against `version` (`--verl-version`; None: resolved for each script read)."""
    from generator.judging import check_script

    def check(script: LaunchScript) -> CheckResults:
        return check_script(script, version=version, select=tuple(select), ignore=tuple(ignore))

    return check


def resolved_checker(resolution: Resolution | Callable[[LaunchScript], Resolution], *,
                     memory_for: MemoryFor | None = None, config_root: str | None = None,
                     select: Sequence[str] = (), ignore: Sequence[str] = (), model_config: str | None = None) -> Checker:
    """judging.check_resolved against `resolution` (which verl, resolved once per file by its
    context, generator.inputs.file_context), or against what `resolution(script)` gives for each text
    (`FileContext.resolution_of`: a release read from the script's keys follows its edits);
    `memory_for` predicts each call's memory for the memory rules (a GPU was named);
    `config_root` is where `$PWD`-relative config paths start. The fix loop checks every rule:
    a fix must not create an error of a rule that was not chosen."""
    from generator.judging import check_resolved

    def check(script: LaunchScript) -> CheckResults:
        judged_by = resolution(script) if callable(resolution) else resolution
        return check_resolved(script, judged_by, select=tuple(select), ignore=tuple(ignore), model_config=model_config,
                              config_root=config_root, memory_for=memory_for)

    return check


def without_silenced(check: Checker) -> Checker:
    """`check`, less the findings a `# verl-gen: ignore[CODE]` comment silences (in the file's
    header, or right above the finding's command), exactly as `gen check` hides them: `gen fix`
    never repairs, nor counts as left, a finding `gen check` does not show. The comments are read
    from each round's text again, so a command an earlier edit moved keeps its comment."""
    from generator.reading.suppression_comments import find_suppressions

    def check_visible(script: LaunchScript) -> CheckResults:
        silenced = find_suppressions(script.source)
        return [(invocation, config,
                 [f for f in findings if not silenced.silences(f.code, invocation.line if invocation else None,
                                                               f.line)])
                for invocation, config, findings in check(script)]

    return check_visible


class _Refusals:
    """Why each finding's fix was not applied, by (code, line); a later round may apply it after all."""

    def __init__(self) -> None:
        self.by_finding: dict[tuple[str, int | None], NotApplied] = {}

    def refuse(self, finding: Finding, reason: str) -> None:
        self.by_finding[(finding.code, finding.line)] = NotApplied(finding.code, finding.line, reason)

    def forget(self, finding: Finding) -> None:
        self.by_finding.pop((finding.code, finding.line), None)

    def still_there(self, remaining: list[Finding]) -> list[NotApplied]:
        """The refusals of findings the fixed script still has (a refusal of a finding another fix
        removed says nothing)."""
        still = {(f.code, f.line) for f in remaining}
        return [n for key, n in self.by_finding.items() if key in still]


Candidate = tuple[Finding, Placement]


def fix_source(source: bytes, path: str | None, *, read: Reader, check: Checker,
               select: Sequence[str] = (), ignore: Sequence[str] = (), unsafe: bool = False,
               max_rounds: int = MAX_ROUNDS, script: LaunchScript | None = None,
               checked: CheckResults | None = None) -> FixResult:
    """Repair `source` with every applicable fix; pure apart from what `read`/`check` do.
    `script` is `source` as `read` reads it, and `checked` what `check` gives for it, when the
    caller has them already (`gen check` marking what `gen fix` would repair).

    Each round places the fixes of the wanted findings (`_placed_fixes`), keeps those whose edits
    do not overlap, splices them and keeps only those the new text proves right
    (`_proven_edits`: the syntax still parses, each edited value reaches a call, no new error),
    then checks the new text for the next round."""
    result = FixResult(path=path, original=source, fixed=source)
    check = _checked_once(check)
    if script is None:
        script = read(source, path)
    results = checked if checked is not None else check(script)
    refusals = _Refusals()
    for _ in range(max_rounds):
        candidates = _placed_fixes(script, results, select=select, ignore=ignore, unsafe=unsafe, refusals=refusals)
        if not candidates:
            break
        taken, later = select_compatible([p.edits for _, p in candidates])
        for index in later:
            refusals.refuse(candidates[index][0],
                            "its edit overlaps another fix's edit of the same text (e.g. one variable that two "
                            "calls want set differently); fix by hand")
        proven = _proven_edits(script, results, [candidates[index] for index in taken], read=read, check=check,
                               path=path, refusals=refusals)
        if proven is None:
            break
        applied, script = proven
        for finding, placement in applied:
            refusals.forget(finding)
            result.applied.append(Applied(finding.code, finding.line, finding.fix.description if finding.fix else "",
                                          placement.applicability, tuple(placement.notes)))
        results = check(script)
    result.fixed = script.source
    result.remaining = [f for _, _, findings in results for f in findings]
    result.not_applied = refusals.still_there(result.remaining)
    return result


def _checked_once(check: Checker) -> Checker:
    """`check`, remembering its last script: a round's spliced text is checked to prove no fix
    creates an error and then again as the next round's findings; the second is the first's."""
    last: list[tuple[LaunchScript, CheckResults]] = []

    def check_once(script: LaunchScript) -> CheckResults:
        if last and last[0][0] is script:
            return last[0][1]
        results = check(script)
        last[:] = [(script, results)]
        return results

    return check_once


def _placed_fixes(script: LaunchScript, results: CheckResults, *, select: Sequence[str], ignore: Sequence[str],
                  unsafe: bool, refusals: _Refusals) -> list[Candidate]:
    """Each wanted finding's fix placed in the text (a shell hazard without a fix of its own gets
    the structural repair of its line, once per line); a fix that cannot be placed, or needs
    --unsafe, is refused with why."""
    candidates: list[Candidate] = []
    hazard_lines_claimed: set[int | None] = set()
    structural_fix_at = fallback_fixes(script)
    for invocation, config, findings in results:
        for finding in findings:
            if not code_wanted(finding.code, select, ignore):
                continue
            if finding.fix is None and invocation is None and finding.line not in hazard_lines_claimed:
                # A shell hazard reported without a repair: see if the text can be mended.
                structural = structural_fix_at(finding.line)
                if structural is not None:
                    hazard_lines_claimed.add(finding.line)
                    finding = finding._replace(fix=structural)
            if finding.fix is None:
                continue
            placement = place_fix(finding.fix, script, invocation, config)
            if placement.reason is not None:
                if placement.reason != "already applied":
                    refusals.refuse(finding, placement.reason)
                continue
            if placement.applicability == "unsafe" and not unsafe:
                why = "an unsafe fix (changes behaviour beyond the broken value); use --unsafe"
                if placement.notes:
                    why += f" ({'; '.join(placement.notes)})"
                refusals.refuse(finding, why)
                continue
            candidates.append((finding, placement))
    return candidates


def _spliced(script: LaunchScript, taken: list[Candidate], read: Reader, path: str | None) -> LaunchScript:
    return read(apply_edits(script.source, [e for _, placement in taken for e in placement.edits]), path)


def _proven_edits(script: LaunchScript, results: CheckResults, taken: list[Candidate], *, read: Reader,
                  check: Checker, path: str | None, refusals: _Refusals
                  ) -> tuple[list[Candidate], LaunchScript] | None:
    """The fixes of `taken` that survive splicing, with the new script; None when none is left
    (or the splice changes nothing). Refused with why: all of them when the splice breaks the
    syntax; each whose edited value reaches no trainer call; each that alone creates an error."""
    new_source = apply_edits(script.source, [e for _, placement in taken for e in placement.edits])
    if new_source == script.source:
        return None
    new_script = read(new_source, path)
    if _parse_errors(new_script) > _parse_errors(script):
        for finding, _placement in taken:
            refusals.refuse(finding, "the edit would break the script's syntax; not applied")
        return None
    unseen = [c for c in taken if not _key_edits_reach_a_call(c[0], new_script)]
    if unseen:
        # An edit the reader cannot see in any trainer call (say, a line appended inside an
        # unterminated quote) would be written again on every run: leave it out.
        for finding, _placement in unseen:
            refusals.refuse(finding, "the edited value would not reach the trainer call (e.g. it lands inside an "
                                     "unterminated quote); not applied")
        taken = [c for c in taken if all(c is not u for u in unseen)]
        if not taken:
            return None
        new_script = _spliced(script, taken, read, path)
    creators = _fixes_creating_errors(script, results, [placement.edits for _, placement in taken],
                                      new_script, read=read, check=check, path=path)
    if creators:
        # A fix that trades one error for another is not a fix: leave it out, say which error.
        for position, created in creators.items():
            refusals.refuse(taken[position][0], f"the fix would create a new error ({created}); not applied")
        taken = [c for position, c in enumerate(taken) if position not in creators]
        if not taken:
            return None
        new_script = _spliced(script, taken, read, path)
    return taken, new_script


def _errors(results: CheckResults) -> set[tuple[str, str | None]]:
    return {(f.code, f.key) for _, _, findings in results for f in findings if f.severity == "error"}


def _fixes_creating_errors(script: LaunchScript, results: CheckResults, edit_sets: list[Sequence[TextEdit]],
                           fixed: LaunchScript, *, read: Reader, check: Checker,
                           path: str | None) -> dict[int, str]:
    """{position in edit_sets: 'CODE on key'} for each fix that, applied alone, makes an error
    appear that the script did not have. Checked one by one only when the fixes together do."""
    before = _errors(results)
    if not _errors(check(fixed)) - before:
        return {}
    creators: dict[int, str] = {}
    for position, edits in enumerate(edit_sets):
        alone = read(apply_edits(script.source, list(edits)), path)
        created = sorted(_errors(check(alone)) - before, key=lambda e: (e[0], e[1] or ""))
        if created:
            code, key = created[0]
            creators[position] = f"{code} on {key}" if key else code
    return creators


def _key_edits_reach_a_call(finding: Finding, script: LaunchScript) -> bool:
    """After the edit, does some call of `script` set each edited key to its new value?"""
    from generator.reading.overrides import format_value, parse_override

    for edit in finding.fix.edits if finding.fix else ():
        if not isinstance(edit, KeyEdit):
            continue
        wanted = format_value(edit.new)
        seen = False
        for invocation in script.invocations:
            last = None
            for override in invocation.overrides:
                if override.key == edit.key:
                    last = override
            if last is not None and last.op != "~" and last.resolved:
                parsed = parse_override(last.text)
                if parsed.ok and format_value(parsed.value) == wanted:
                    seen = True
                    break
        if not seen:
            return False
    return True


def remaining_fixable(result: FixResult, *, unsafe: bool = False) -> list[Finding]:
    """Findings of the fixed script that still carry an applicable fix (should be none)."""
    refused = {(n.code, n.line) for n in result.not_applied}
    return [f for f in result.remaining
            if f.fix is not None and (unsafe or f.fix.applicability == "safe")
            and (f.code, f.line) not in refused]


def _lines(text: str) -> list[str]:
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def unified_diff(result: FixResult, path_label: str | None = None) -> str:
    import difflib

    label = path_label or result.path or "<stdin>"
    # Lines as bash and `patch` see them: split at "\n" only (str.splitlines would also split at
    # CR, FF, VT, NEL, U+2028..., giving a diff whose lines and line numbers no tool agrees with).
    before = _lines(result.original.decode("utf-8", "surrogateescape"))
    after = _lines(result.fixed.decode("utf-8", "surrogateescape"))
    # git style (a/, b/) for relative paths so `git apply`/`patch -p1` work; absolute as they are
    old_name, new_name = (label, label) if label.startswith("/") else (f"a/{label}", f"b/{label}")
    lines = difflib.unified_diff(before, after, fromfile=old_name, tofile=new_name)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
