"""Evidence or silence: a verdict that rests on a guessed release is information, not an error.

When nothing in the user's setup names the verl release (no option, project file, vendored
version file, pin, installed verl), the release is inferred from the script's keys and several
releases stay possible: every one whose config has each key the script sets
(`Resolution.allowed`). A finding holds for the user only when it holds on each of them; one
that appears on the inferred release but not on another allowed one (a rule gated to newer
releases, a key that release lacks, a worker path that release does not run) rests on the
guess. It is kept, as info, and says which release it does not hold on and what would settle it
(issue 34: VR508 "rollout.mode=sync is removed" on a vendored verl without a version file,
judged as 0.9.1 from its keys, where the vendored release still had the sync mode).

A second case rests on the guess whatever the packaged releases say: a script that runs verl
from a folder outside the project (`cd ~/TinyZero`, `cd /opt/verl`, a `cd` to a folder it does not
name, a PYTHONPATH entry outside the project) imports the verl found there, which we never read:
the project's files are then no evidence of the release that runs, and it may be an older one or
a fork that no packaged release describes. Its key findings (a key the release lacks or has, a
dataclass field) are info that say so (issue 34: VK602 on `+trainer.val_before_train` from a
script that ran TinyZero's trainer, judged against 0.9.1 guessed from its keys).

Not a rule module: it registers no rule, and runs the rules again (generator.judging.check_config)
on the call's config as each other allowed release builds it.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from generator.config.types import Config
from generator.base.errors import InputError
from generator.reading.launch_script import Invocation, LaunchScript
from generator.rules.core import Finding, Fix

if TYPE_CHECKING:
    from generator.schema.resolution import Resolution

# A finding's identity across releases: the same rule on the same key.
Identity = tuple[str, str | None]
# The findings of one call as another release judges it: None when that release cannot build it.
Rejudge = Callable[[int], "set[Identity] | None"]

SETTLES = ("a `verl==X.Y.Z` pin in requirements.txt or pyproject.toml, the vendored verl's "
           "verl/version/version file, or --verl-version")


# The key findings that rest on which release builds the config (not the grammar of an override).
_RELEASE_KEY_FINDINGS = frozenset({"VK601", "VK602", "VK603", "VK604", "VK605", "VK607", "VK610", "VK612"})


def verl_from_elsewhere(invocation: Invocation, root: Path | None) -> str | None:
    """How the call imports verl from a folder outside the project `root` (which we never read),
    for a note; None when it runs from the project (or `root` is unknown)."""
    if root is None:
        return None
    cwd = invocation.cwd
    if cwd is None:
        return "from a folder its `cd` leads to, which this check cannot place (it may be outside the project)"
    if cwd.startswith("/") and not _inside(Path(cwd), root):
        return f"from {cwd} (the script's `cd`), outside the project"
    for entry in (invocation.pythonpath or "").split(":"):
        if entry.startswith(("/", "~")) and "$" not in entry and not _inside(Path(entry), root):
            return f"from {entry} (its PYTHONPATH), outside the project"
    return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def from_elsewhere(findings: list[Finding], resolution: Resolution, where: str) -> list[Finding]:
    """`findings` with each release-dependent key error or warning turned into info: the release
    was inferred from the keys while the script runs verl `where` (verl_from_elsewhere)."""
    if not resolution.inferred:
        return findings
    note = (f" [info: it rests on verl {resolution.base_release}, inferred from the script's keys, while the "
            f"script runs verl {where}, whose release nothing here names; that verl's "
            f"version (--verl-version) would settle it]")
    return [f._replace(severity="info", message=f.message + note)
            if f.code in _RELEASE_KEY_FINDINGS and f.severity in ("error", "warning") else f for f in findings]


def other_releases(resolution: Resolution) -> tuple[str, ...]:
    """The allowed releases other than the inferred one: empty when the release was named by the
    user's setup (nothing to weigh)."""
    if not resolution.inferred:
        return ()
    return tuple(r for r in resolution.allowed if r != resolution.base_release)


def weigh(findings: list[Finding], resolution: Resolution, index: int,
          rejudged: dict[str, Rejudge]) -> list[Finding]:
    """`findings` of the call at `index`, with each error or warning that does not hold on every
    other allowed release turned into info that says so. `rejudged[release](index)` gives the
    (code, key) of the errors and warnings that release finds on the same call."""
    serious = [f for f in findings if f.severity in ("error", "warning")]
    if not serious or not rejudged:
        return findings
    unsure: dict[Identity, str] = {}  # finding -> the oldest allowed release it does not hold on
    for release, judge in rejudged.items():
        if len(unsure) == len({(f.code, f.key) for f in serious}):
            break  # each already rests on the guess: the other releases' configs need not be built
        found = judge(index)
        for f in serious:
            if (f.code, f.key) not in unsure and (found is None or (f.code, f.key) not in found):
                unsure[(f.code, f.key)] = release
    if not unsure:
        return findings
    return [_as_info(f, resolution, unsure[(f.code, f.key)]) if (f.code, f.key) in unsure and f in serious else f
            for f in findings]


def _as_info(finding: Finding, resolution: Resolution, release: str) -> Finding:
    note = (f" [info, not {'an' if finding.severity == 'error' else 'a'} {finding.severity}: it rests on verl "
            f"{resolution.base_release}, inferred from the script's keys, and does not hold on verl {release}, "
            f"which those keys also allow; {SETTLES} would settle it]")
    fix = finding.fix
    if fix is not None and fix.applicability == "safe":
        fix = Fix(fix.description, fix.edits, "unsafe")  # an edit for a release the user may not run
    return finding._replace(severity="info", message=finding.message + note, fix=fix)


def rejudges(script: LaunchScript, resolution: Resolution, config_root: str | None,
             check: Callable[[Invocation, Config], Iterable[Finding]]) -> dict[str, Rejudge]:
    """For each other allowed release: a function giving the errors and warnings `check` finds on
    the call at an index when that release judges the script (its configs built once, on first
    ask, for all the calls)."""
    out: dict[str, Rejudge] = {}
    for release in other_releases(resolution):
        out[release] = _judge_as(script, _as_release(resolution, release), config_root, check)
    return out


def _judge_as(script: LaunchScript, resolution: Resolution | None, config_root: str | None,
              check: Callable[[Invocation, Config], Iterable[Finding]]) -> Rejudge:
    built: list[set[Identity] | None] = []

    def judge(index: int) -> set[Identity] | None:
        if resolution is None:
            return None
        if not built:
            built.extend(_judged_calls(script, resolution, config_root, check))
        return built[index] if index < len(built) else None

    return judge


def _judged_calls(script: LaunchScript, resolution: Resolution, config_root: str | None,
                  check: Callable[[Invocation, Config], Iterable[Finding]]) -> Iterator[set[Identity] | None]:
    from generator.judging.calls import call_configs

    try:
        for invocation, config in call_configs(script, resolution, config_root):
            yield {(f.code, f.key) for f in check(invocation, config) if f.severity in ("error", "warning")}
    except InputError:
        return  # that release cannot build the call: none of its findings is confirmed


def _as_release(resolution: Resolution, release: str) -> Resolution | None:
    """`resolution` with `release` in place of the inferred one: its packaged schema, or the
    project's own config tree registered under that release (the keys stay the project's)."""
    from generator.schema.release_schema import register_dir

    if resolution.config_dir is None or resolution.stand_in is not None:
        return resolution._replace(release=release, inferred=False, allowed=())
    schema_id = f"{release}+project~{zlib.crc32(str(resolution.config_dir).encode()):08x}"
    try:
        register_dir(schema_id, resolution.config_dir, source=resolution.config_source, listed=False)
    except InputError:
        return None
    return resolution._replace(release=schema_id, inferred=False, allowed=())
