"""`gen check`'s "N fixable with `gen fix` ([*])" is what `gen fix` then applies, file by file:
both run through the CLI on the corpus scripts, each against its own release. The default tier
checks every 15th script; `-m slow` checks all 585."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.schema import snapshot_version

pytestmark = pytest.mark.corpus
FIXABLE = re.compile(r"; (\d+) fixable with `gen fix`")
WOULD_FIX = re.compile(r"would fix (\d+) finding\(s\)")


def _scripts(corpus_dir: Path) -> list[tuple[Path, str]]:
    with open(corpus_dir / "INDEX.tsv", newline="") as handle:
        rows = [(row["tag"], row["path"]) for row in csv.DictReader(handle, delimiter="\t")]
    return [(corpus_dir / "scripts" / tag / path, snapshot_version(tag)) for tag, path in rows]


def _counts(script: Path, version: str) -> tuple[int, int]:
    runner = CliRunner()
    checked = runner.invoke(app, ["check", str(script), "--verl-version", version])
    fixed = runner.invoke(app, ["fix", str(script), "--verl-version", version])
    assert checked.exit_code in (0, 1) and fixed.exit_code in (0, 1), (checked.output, fixed.output)
    shown = FIXABLE.search(checked.output)
    applied = WOULD_FIX.search(fixed.output)
    assert applied is not None, fixed.output
    return (int(shown.group(1)) if shown else 0), int(applied.group(1))


def _compare(pairs: list[tuple[Path, str]]) -> None:
    differ = []
    total = 0
    for script, version in pairs:
        shown, applied = _counts(script, version)
        total += applied
        if shown != applied:
            differ.append(f"{script.relative_to(script.parents[2])}: check {shown}, fix {applied}")
    assert not differ, differ
    assert total > 0  # the sample has something to fix, so the comparison means something


def test_fixable_count_equals_what_fix_applies_on_a_sample(corpus_dir):
    _compare(_scripts(corpus_dir)[::15])


@pytest.mark.slow
def test_fixable_count_equals_what_fix_applies_on_the_whole_corpus(corpus_dir):
    _compare(_scripts(corpus_dir))
