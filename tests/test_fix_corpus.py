"""`gen fix` on a copy of all 585 corpus scripts, each against its own release, in-process.

Properties: no fixable finding is left; a second `--write` changes nothing; a script that
passed `bash -n` still does; only lines that had a finding (or define a value a finding's fix
changes) differ from the original, byte for byte.
"""

from __future__ import annotations

import csv
import difflib
import os
import shutil
import subprocess
from pathlib import Path

import pytest


def _index(corpus_dir: Path) -> list[tuple[str, str]]:
    with open(corpus_dir / "INDEX.tsv", newline="") as handle:
        return [(row["tag"], row["path"]) for row in csv.DictReader(handle, delimiter="\t")]


def _bash_n(path: Path) -> bool:
    # Parses only (-n): nothing in the script runs.
    return subprocess.run(["bash", "-n", str(path)], capture_output=True, timeout=20).returncode == 0


def _allowed_lines(script, results) -> set[int]:
    """Lines of the original a fix may touch: each finding's line, and for fixes the lines where
    the values its key edits change are defined and the lines of its text edits."""
    from generator.fix.place import setting_override
    from generator.reading.edit_kinds import KeyEdit

    allowed: set[int] = set()
    for invocation, config, findings in results:
        for finding in findings:
            if finding.line:
                allowed.add(finding.line)
            if finding.fix is None:
                continue
            for edit in finding.fix.edits:
                if isinstance(edit, KeyEdit):
                    override = setting_override(edit.key, invocation, config)
                    if override is not None and override.provenance.span is not None:
                        span = override.provenance.span
                        first = script.line_of(span.start)
                        allowed.update(range(first, script.line_of(span.end) + 1))
                        allowed.add(override.line)
                else:
                    allowed.update(range(script.line_of(edit.start), script.line_of(edit.end) + 1))
    return allowed


def _changed_original_lines(before: bytes, after: bytes) -> set[int]:
    old = before.split(b"\n")
    new = after.split(b"\n")
    changed: set[int] = set()
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            changed.update(range(i1 + 1, i2 + 1))
    return changed


def _memoised(read, check):
    """Reading and checking are deterministic in the text: remember them per text, so the
    original's findings and the second pass cost nothing extra."""
    scripts: dict[bytes, object] = {}
    results: dict[bytes, object] = {}

    def cached_read(source: bytes, path):
        if source not in scripts:
            scripts[source] = read(source, path)
        return scripts[source]

    def cached_check(script):
        if script.source not in results:
            results[script.source] = check(script)
        return results[script.source]

    return cached_read, cached_check


# every fourth script in the default tier; all of them under `slow`
@pytest.mark.parametrize("every", [pytest.param(4, id="sample"), pytest.param(1, id="all", marks=pytest.mark.slow)])
@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_fix_whole_corpus_in_place(corpus_dir, tmp_path, unsafe, every):
    from generator.base.files import keep_final_newline, write_atomic
    from generator.fix.engine import default_checker, default_reader, fix_source, remaining_fixable
    from generator.schema import snapshot_version

    copy = tmp_path / "scripts"
    shutil.copytree(corpus_dir / "scripts", copy)
    for folder, _dirs, files in os.walk(copy):  # the reference copy is read-only; ours is not
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    read = default_reader()
    checkers: dict[str, object] = {}
    problems: list[str] = []
    changed_files = 0
    applied = 0
    for tag, rel in _index(corpus_dir)[::every]:
        path = copy / tag / rel
        version = snapshot_version(tag)
        if version not in checkers:
            checkers[version] = _memoised(read, default_checker(version))
        read_cached, check = checkers[version]
        original = path.read_bytes()
        result = fix_source(original, str(path), read=read_cached, check=check, unsafe=unsafe)
        left = remaining_fixable(result, unsafe=unsafe)
        if left:
            problems.append(f"{tag}/{rel}: fixable findings left: {[(f.code, f.line) for f in left]}")
        if not result.changed:
            continue
        changed_files += 1
        applied += len(result.applied)
        script = read_cached(original, str(path))
        allowed = _allowed_lines(script, check(script))
        stray = _changed_original_lines(original, result.fixed) - allowed
        if stray:
            problems.append(f"{tag}/{rel}: lines without findings changed: {sorted(stray)}")
        passed_before = _bash_n(path)
        write_atomic(path, keep_final_newline(original, result.fixed), expected=original)
        if passed_before and not _bash_n(path):
            problems.append(f"{tag}/{rel}: bash -n passed before the fix and fails after")
        second = fix_source(path.read_bytes(), str(path), read=read_cached, check=check, unsafe=unsafe)
        if second.changed:
            problems.append(f"{tag}/{rel}: a second fix changed it again: {[a.code for a in second.applied]}")
    print(f"corpus fix ({'unsafe' if unsafe else 'safe'}): {changed_files} files changed, {applied} fixes applied")
    assert problems == []
