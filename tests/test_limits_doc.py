"""docs/limits.md states each input bound next to the constant that holds it: the numbers in
the doc are the numbers in the code."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "limits.md"
_CONSTANT = re.compile(r"`(generator(?:\.\w+)+)\.(_?[A-Z][A-Z_]+)`")
_AMOUNT = re.compile(r"(\d[\d,]*)(?:\^(\d+))?(?:\s*(KiB|MiB))?")
_UNIT = {None: 1, "KiB": 1024, "MiB": 1024 * 1024}


def _rows() -> list[tuple[str, list[tuple[str, str]]]]:
    rows = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and _CONSTANT.search(cells[2]):
            rows.append((cells[1], _CONSTANT.findall(cells[2])))
    return rows


def _amounts(text: str) -> list[int]:
    out = []
    for digits, power, unit in _AMOUNT.findall(text):
        value = int(digits.replace(",", ""))
        if power:
            value = value ** int(power)
        out.append(value * _UNIT[unit or None])
    return out


def test_every_bound_in_the_doc_is_the_constants_value():
    rows = _rows()
    assert len(rows) >= 18
    for bound, constants in rows:
        stated = _amounts(bound)
        for module, name in constants:
            value = getattr(importlib.import_module(module), name)
            assert value in stated, f"docs/limits.md says {bound!r} for {module}.{name}, the code has {value}"


def test_the_doc_lists_every_input_cap_of_the_readers():
    named = {f"{module}.{name}" for _, constants in _rows() for module, name in constants}
    for expected in ("generator.base.files.SCRIPT_LIMIT", "generator.base.files.DATA_LIMIT", "generator.base.files.MAX_TRAINER_CALLS",
                     "generator.reading.shell.model.WORK_LIMIT", "generator.reading.shell.model.MAX_VALUE_CHARS",
                     "generator.reading.shell.model.MAX_VALUE_PARTS", "generator.schema.compose.MAX_LOADS",
                     "generator.schema.yamlload.MAX_EXPANDED_NODES",
                     # issue 35: one budget per run
                     "generator.schema.yamlload.MAX_EXPANDED_BYTES", "generator.schema.compose.MAX_RUN_LOAD_BYTES",
                     "generator.base.glob_set.MAX_PATTERNS", "generator.cli.show.MAX_RESOLVED_CHARS"):
        assert expected in named
