"""A run's log in any format verl writes, read into steps of {metric key: number}.

  console  the console logger's `step:N - key:value - key:value` lines, among whatever else the
           run printed (Ray's `(TaskRunner pid=N)` prefixes and colour codes are skipped); values
           are numbers as 0.3-0.4 print them (`1.234`), or as 0.5+ do (`1.2345678`, `np.float64(1.2)`,
           `np.int64(3)`). The config verl pprints at start-up (main_ppo.py, a dict literal) is kept.
  jsonl    the file logger's lines (verl/utils/tracking.py FileLogger, 0.6.0 on): {"step": N,
           "data": {...}}; flat {"step": N, key: value} lines (and wandb's `_step`) are read too.
  csv      scalar exports: wide (a step column - Step, step, _step or global_step - and one column
           per key; wandb's `RUN - key` headers and its __MIN/__MAX columns handled) or long
           (step, tag, value: tbparse's form).

Every reader is bounded (LOG_LIMIT bytes, CONFIG_LIMIT for the config dump) and never raises on
content: an unreadable line is counted in `notes`, a half line at the end is dropped and said.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from generator.base.errors import InputError
from generator.base.files import MIB, read_text_input
from generator.calibrate.metric_keys import TIMING_PREFIX, TIMING_PREFIXES

LOG_LIMIT = 256 * MIB  # a long run's console log with samples printed: tens of MB
CONFIG_LIMIT = 2 * MIB  # the pprinted config: ~40 KB in practice
_MAX_NOTES = 5

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Ray's prefix on a worker's line: `(TaskRunner pid=123)`, `(main_task pid=9, ip=10.0.0.1)`.
_RAY_PREFIX = re.compile(r"^\s*\([A-Za-z_][\w.]* pid=\d+(?:, ip=[^)]*)?\)\s?")
_STEP_LINE = re.compile(r"(?:^|[\s)])step:(\d+) - (.*)$")
_NUMPY = re.compile(r"^(?:np|numpy)\.(?:float|int|uint)\d*\((.*)\)$")
# The rest of a step line a terminal or a paste wrapped: no `step:N`, starts inside an item (no
# space before its first ` - `, or starts with the `- ` of the next item) and holds at least one
# more `key:value` item. verl prints each step on one line, so such a line right after a step
# line is that line's tail.
_WRAPPED_TAIL = re.compile(r"^(?:- )?[^\s]*( - [\w/@.\-]+:\S+)+\s*$")
# A pasted list of metrics, one per line (`- timing_s/gen:1149.9`, `timing_s/step: 18837.0`): what
# users copy from a wandb run page; read as one step when the log has no step line at all.
_LISTED_METRIC = re.compile(r"^\s*(?:[-*\u2022]\s*)?([A-Za-z_][\w@.\-]*/[\w/@.\-]+)\s*:\s*(\S+)\s*$")
_LISTED_PREFIXES = (*TIMING_PREFIXES, "perf/", "actor/perf/", "response_length/", "prompt_length/")
_STEP_COLUMNS = ("step", "_step", "global_step")


@dataclass(slots=True)
class RunLog:
    """What one log holds: steps of numbers, the start-up config if it was printed, and notes."""

    path: str
    format: str  # console | jsonl | csv
    steps: dict[int, dict[str, float]] = field(default_factory=dict)
    config: dict[str, Any] | None = None  # the dumped config, flattened to dotted keys
    notes: list[str] = field(default_factory=list)  # one line each: what was skipped and why
    cut_off: bool = False  # the last line was a half line (the run was still writing, or killed)
    versions: dict[str, str] = field(default_factory=dict)  # "vllm" -> "0.8.5": what the log's own lines print

    @property
    def keys(self) -> set[str]:
        return {k for values in self.steps.values() for k in values}


def number(text: str) -> float | None:
    """A logged value as a float: `1.5`, `np.float64(1.5)`, `np.int64(3)`, `True`; None otherwise."""
    text = text.strip()
    found = _NUMPY.match(text)
    if found:
        text = found.group(1)
    if text in ("True", "False"):
        return 1.0 if text == "True" else 0.0
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _json_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return number(value)
    return None


def read_log(path: str) -> RunLog:
    """The log at `path` (`-` reads stdin). InputError for a file that cannot be read, is not
    text (binary: NUL bytes or not UTF-8), or holds no step of any known format."""
    try:
        text = read_text_input(path, limit=LOG_LIMIT, what="log", trusted=True)
    except InputError as err:
        if "UTF-8" in str(err):
            raise InputError(f"not a text log ({err}); a binary file such as a tensorboard event file is not read, "
                             "export its scalars as CSV") from None
        raise
    if "\x00" in text:
        raise InputError("not a text log (it holds NUL bytes); a binary file such as a tensorboard event file "
                         "is not read, export its scalars as CSV")
    run = parse_log(text, path)
    run.versions.update(stack_versions(text))
    keys = run.keys
    if keys and not any(key.startswith(TIMING_PREFIXES) for key in keys):
        other = sorted({key.rsplit("/", 1)[0] + "/" for key in keys if "time" in key.rsplit("/", 1)[0]})
        _note(run, f"no {TIMING_PREFIX} key: the phases' times are not compared"
              + (f" (its timers are {', '.join(o + '...' for o in other[:2])}: not verl's names)" if other else ""))
    if not run.steps:
        raise InputError(f"no step lines found (read as {run.format}: expected "
                         + {"console": "`step:N - key:value - ...` lines",
                            "jsonl": "{\"step\": N, \"data\": {...}} lines",
                            "csv": "a step column and one column per metric"}[run.format] + ")")
    return run


# vLLM's engine prints its release when it starts (`Initializing an LLM engine (v0.6.3) with
# config` up to 0.7, `Initializing a V1 LLM engine (v0.8.5.post1)` after): the one version of the
# stack a verl console log shows by itself.
_VLLM_VERSION = re.compile(r"Initializing an? (?:V1 )?LLM engine \(v(\d+\.\d+(?:\.\d+)?(?:\.?post\d+)?)\)")


def stack_versions(text: str) -> dict[str, str]:
    found = _VLLM_VERSION.search(text)
    return {"vllm": found.group(1)} if found else {}


def detect_format(text: str, path: str) -> str:
    lower = path.lower()
    if lower.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if lower.endswith(".csv"):
        return "csv"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith('{"'):
        return "jsonl"
    header = [cell.strip().strip('"').lower() for cell in first.split(",")]
    if len(header) > 1 and any(h in _STEP_COLUMNS for h in header):
        return "csv"
    return "console"


def parse_log(text: str, path: str = "<log>") -> RunLog:
    fmt = detect_format(text, path)
    run = RunLog(path, fmt)
    {"console": _console, "jsonl": _jsonl, "csv": _csv}[fmt](text, run)
    return run


def _note(run: RunLog, message: str) -> None:
    if len(run.notes) < _MAX_NOTES:
        run.notes.append(message)


def _put(run: RunLog, step: int, values: dict[str, float]) -> None:
    if values:
        run.steps.setdefault(step, {}).update(values)  # a resumed run logs a step again: the later wins


def _console(text: str, run: RunLog) -> None:
    lines = text.splitlines()
    ends_cut = bool(text) and not text.endswith("\n")
    config_at: int | None = None
    previous_items: int | None = None  # items on the step line before
    rows: list[tuple[int, str, str]] = []  # (line index, step number, items text), wrapped tails joined
    for index, raw in enumerate(lines):
        line = _RAY_PREFIX.sub("", _ANSI.sub("", raw))
        if config_at is None and run.config is None and line.startswith("{'") and "actor_rollout_ref" in line[:200]:
            config_at = index
            run.config = _config_dump(lines, index)
            if run.config is None:
                _note(run, f"line {index + 1}: the start-up config dump could not be read (ignored)")
            continue
        found = _STEP_LINE.search(line)
        if found:
            rows.append((index, found.group(1), found.group(2)))
        elif rows and rows[-1][0] == index - 1 and _WRAPPED_TAIL.match(line):
            _note(run, f"line {index + 1}: the rest of a wrapped step line (joined to the line above)")
            _, step, items_text = rows[-1]
            rows[-1] = (index, step, _joined(items_text, line.rstrip("\r")))
    for position, (index, step, items_text) in enumerate(rows):
        items = items_text.split(" - ")
        values: dict[str, float] = {}
        for item in items:
            key, colon, value = item.partition(":")
            parsed = number(value) if colon else None
            if parsed is not None and key.strip():
                values[key.strip()] = parsed
        # verl ends every line it prints: a last line without a newline was being written when the
        # log was cut, unless it is whole - as many items as the step before it (a pasted line).
        if ends_cut and position == len(rows) - 1 and index == len(lines) - 1 and (
                previous_items is None or len(items) < previous_items):
            if previous_items is not None:
                run.cut_off = True
                _note(run, f"line {index + 1}: the last line is cut off (step {step} ignored)")
                continue
            _note(run, f"line {index + 1}: the last line has no newline (read as whole)")
        previous_items = len(items)
        _put(run, int(step), values)
    if not rows:
        _metric_list(lines, run)


def _joined(head: str, tail: str) -> str:
    """A wrapped step line put back together. A wrap inside an item splits it with nothing lost;
    one at an item's ` - ` may have lost the space the paste trimmed at the end of the line."""
    if head.endswith(" -") or tail.startswith("- "):
        return head.rstrip() + (" " if head.rstrip().endswith("-") else " - ") + tail.removeprefix("- ")
    return head + tail


def _metric_list(lines: list[str], run: RunLog) -> None:
    """A pasted list of metrics, one `key:value` a line, read as one step (1) when it names a
    timer, a memory peak or a length verl logs; the log gives no step number, so the note says so."""
    values: dict[str, float] = {}
    for raw in lines:
        found = _LISTED_METRIC.match(_RAY_PREFIX.sub("", _ANSI.sub("", raw)))
        if found and found.group(1).startswith(_LISTED_PREFIXES) and (parsed := number(found.group(2))) is not None:
            values.setdefault(found.group(1), parsed)  # a metric pasted twice: the first
    if values:
        _put(run, 1, values)
        _note(run, f"no step line: {len(values)} metrics listed one a line, read as one step")


def _config_dump(lines: list[str], start: int) -> dict[str, Any] | None:
    """The dict literal verl pprints at start-up, from `lines[start]` until its braces close."""
    parts: list[str] = []
    size = depth = 0
    for raw in lines[start:]:
        line = _RAY_PREFIX.sub("", _ANSI.sub("", raw))
        parts.append(line)
        size += len(line) + 1
        if size > CONFIG_LIMIT:
            return None
        depth += line.count("{") + line.count("[") - line.count("}") - line.count("]")
        if depth <= 0:
            break
    # pprint writes float('inf') / nan bare: not literals. Read them as unknown.
    text = re.sub(r"(?<=[\s:\[,(])-?(?:inf|nan)(?=[,\]}\s)])", "None", "\n".join(parts))
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    from generator.schema.compose import flatten  # one home for dotted keys (Hydra's own form)

    return flatten(value) if isinstance(value, dict) else None


def _jsonl(text: str, run: RunLog) -> None:
    lines = text.splitlines()
    ends_cut = bool(text) and not text.endswith("\n")
    bad = 0
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            if ends_cut and index == len(lines) - 1:
                run.cut_off = True
                _note(run, f"line {index + 1}: the last line is cut off (ignored)")
            else:
                bad += 1
            continue
        if not isinstance(record, dict):
            bad += 1
            continue
        step = record.get("step", record.get("_step"))
        nested = record.get("data")
        data: dict[str, Any] = nested if isinstance(nested, dict) else record
        if isinstance(step, bool) or not isinstance(step, int):
            bad += 1
            continue
        values = {str(k): v for k, v in ((k, _json_number(v)) for k, v in data.items())
                  if v is not None and k not in ("step", "_step")}
        _put(run, step, values)
    if bad:
        _note(run, f"{bad} line(s) that are not {{\"step\": N, \"data\": {{...}}}} records were skipped")


def _column_key(header: str) -> str:
    """wandb's panel export names a column `RUN - key`; the key is the part after the last ` - `."""
    return header.rsplit(" - ", 1)[-1].strip()


def _csv(text: str, run: RunLog) -> None:
    ends_cut = bool(text) and not text.endswith("\n")
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error:  # a NUL or an unclosed quote: read as far as the rows go
        rows = []
    if not rows:
        return
    header = [cell.strip() for cell in rows[0]]
    # An exporter ends its last row with a newline; a row without one that is short, or whose
    # last cell is not a number, was cut off while being written.
    if ends_cut and len(rows) > 1 and (len(rows[-1]) < len(header) or number(rows[-1][-1]) is None):
        rows.pop()
        run.cut_off = True
        _note(run, f"row {len(rows) + 1}: the last row is cut off (ignored)")
    lowered = [h.lower() for h in header]
    step_at = next((lowered.index(name) for name in _STEP_COLUMNS if name in lowered), None)
    if step_at is None:
        return
    long_form = "tag" in lowered and "value" in lowered
    skipped = 0
    for row in rows[1:]:
        if len(row) != len(header):
            skipped += 1
            continue
        step_value = number(row[step_at])
        if step_value is None or step_value != int(step_value):
            skipped += 1
            continue
        step = int(step_value)
        if long_form:
            value = number(row[lowered.index("value")])
            if value is not None:
                _put(run, step, {row[lowered.index("tag")].strip(): value})
            continue
        values: dict[str, float] = {}
        for at, name in enumerate(header):
            if at == step_at or name.endswith(("__MIN", "__MAX")) or not row[at].strip():
                continue
            parsed = number(row[at])
            if parsed is not None:
                values[_column_key(name)] = parsed
        _put(run, step, values)
    if skipped:
        _note(run, f"{skipped} row(s) without a step number were skipped")
