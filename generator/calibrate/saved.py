"""Stored calibrations: the corrections `gen calibrate --save` fitted, kept in the project's
configuration (`[tool.verl-gen.calibration]` in pyproject.toml, else `[calibration]` in
.verl-gen.toml) or the user's (`$XDG_CONFIG_HOME/verl-gen/config.toml` with `--user`), and found
again by `gen plan`, `gen recipe`, `gen check --gpu` and `gen explain --memory` (docs/calibrate.md).

One entry per cluster key (GPU type, and the verl / vLLM / Megatron versions the log or project
shows). It keeps every run it was fitted on (what each run measured against the prediction: the
factors, the memory offset, the response share, and a digest of the log), so a later run adds to
it and the fit is redone over all of them; the fitted values and their spread are written beside
the runs for a reader. Saving the same log again replaces its run, never counts it twice.

The file is edited with tomlkit, which keeps every byte outside the entry it rewrites (comments,
order, spacing of the rest of pyproject.toml), and written through generator.base.files.write_atomic:
all or nothing, no link followed at any level, refused when another program changed the file
since it was read (compare-and-swap on the bytes read).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.base import session
from generator.calibrate.fit import MEMORY_ROW, SHARE, TIME_ROWS, Correction, factor, mean_of
from generator.base.errors import InputError
from generator.base.files import read_input, write_atomic
from generator.project.settings import MAX_BYTES, PROJECT_FILE, PYPROJECT, find_project_file
from generator.project.root import project_root

# The TOML names of the corrections (a run's keys and an entry's fitted values).
TOML_NAMES = {"rollout": "rollout", "log-prob": "log-prob", "update": "update", "weight sync": "weight-sync",
              "step": "step", MEMORY_ROW: "memory-offset-gib", SHARE: "response-share"}
KEY_FIELDS = ("gpu", "verl", "vllm", "megatron")
USER_FILE = "config.toml"


@dataclass(frozen=True, slots=True)
class Key:
    """What a calibration is valid for: the GPU type, and each version the log or project shows
    (None: not shown, not compared)."""

    gpu: str
    verl: str | None = None
    vllm: str | None = None
    megatron: str | None = None

    @property
    def slug(self) -> str:
        """The entry's table name: `h100`, `h100-verl-0.5.0-vllm-0.8.5`."""
        return "-".join([self.gpu] + [f"{name}-{value}" for name in KEY_FIELDS[1:]
                                      if (value := getattr(self, name)) is not None])

    def describe(self) -> str:
        shown = [f"{name} {value}" for name in KEY_FIELDS[1:] if (value := getattr(self, name)) is not None]
        return self.gpu + (f" ({', '.join(shown)})" if shown else "")


@dataclass(frozen=True, slots=True)
class StoredRun:
    log: str  # "sha256:<16 hex>" of the log's bytes
    model: str
    values: dict[str, float] = field(default_factory=dict)  # correction name -> the run's value


@dataclass(frozen=True, slots=True)
class Entry:
    key: Key
    runs: tuple[StoredRun, ...]

    def corrections(self) -> list[Correction]:
        """The fit over every stored run (fit.py's arithmetic); the response share per model."""
        out: list[Correction] = []
        for name in TIME_ROWS:
            ratios = [r.values[name] for r in self.runs if r.values.get(name, 0) > 0]
            if ratios:
                out.append(factor(name, ratios))
        offsets = [r.values[MEMORY_ROW] for r in self.runs if MEMORY_ROW in r.values]
        if offsets:
            out.append(mean_of(MEMORY_ROW, "offset", offsets))
        return out

    def shares(self) -> dict[str, Correction]:
        by_model: dict[str, list[float]] = {}
        for r in self.runs:
            if r.values.get(SHARE, 0) > 0 and r.model:
                by_model.setdefault(r.model, []).append(r.values[SHARE])
        return {model: mean_of(SHARE, "share", values) for model, values in sorted(by_model.items())}


@dataclass(frozen=True, slots=True)
class Place:
    """A configuration file that holds (or will hold) calibrations."""

    path: Path
    table: tuple[str, ...]  # where the entries live in the document
    scope: str  # "project" | "user"


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "verl-gen" / USER_FILE


def _table_for(path: Path) -> tuple[str, ...]:
    return ("tool", "verl-gen", "calibration") if path.name == PYPROJECT else ("calibration",)


def save_place(start: str | Path, user: bool) -> Place:
    """Where --save writes: the user's file; else the project file that applies to `start` (a
    folder or a script), else the pyproject.toml at the project's top, else a new .verl-gen.toml
    there."""
    if user:
        return Place(user_config_path(), ("calibration",), "user")
    found = find_project_file(start)
    if found is None:
        top = project_root(start)
        found = top / PYPROJECT if (top / PYPROJECT).is_file() else top / PROJECT_FILE
    return Place(found, _table_for(found), "project")


def read_places(start: str | Path) -> list[Place]:
    """The files a command reads calibrations from, the project's first."""
    out = []
    found = find_project_file(start)
    if found is not None:
        out.append(Place(found, _table_for(found), "project"))
    user = user_config_path()
    if user.is_file():
        out.append(Place(user, ("calibration",), "user"))
    return out


def _parse(text: str, path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text)
    except TOMLKitError as err:
        raise InputError(f"{path}: not valid TOML ({str(err).splitlines()[0] if str(err) else err}); "
                         "nothing written") from None
    except RecursionError:
        raise InputError(f"{path}: the TOML nests too deeply to read") from None


def _load(text: str, path: Path) -> Any:
    """The document, for reading only: tomllib (about ten times faster than tomlkit, which a
    1 MB project file of stored runs kept busy for 5 s on every plan and check)."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: not valid TOML ({str(err).splitlines()[0] if str(err) else err})") from None
    except RecursionError:
        raise InputError(f"{path}: the TOML nests too deeply to read") from None


def _read(place: Place) -> bytes | None:
    """The file's bytes (None when it does not exist), through the project's reader."""
    if not place.path.exists() and not place.path.is_symlink():
        return None
    try:
        return read_input(place.path, limit=MAX_BYTES, what="configuration file", trusted=True)
    except InputError as err:
        raise InputError(f"{place.path}: {err}") from None


def _node(document: Any, table: Sequence[str]) -> Any:
    node = document
    for part in table:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


# What a stored value may be, by its TOML name: a time factor is measured / predicted, a memory
# offset measured - predicted GiB, a response share mean / max length. Far wider than any run
# gives, narrow enough that the fit's arithmetic (a mean of 3,000 values, a log) stays finite.
_RANGES = {"memory-offset-gib": (-1e4, 1e4), "response-share": (0.0, 1.0)}
_FACTOR_RANGE = (0.0, 1e4)


def _number(value: object, where: str, toml: str = "") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise InputError(f"{where} must be a number")
    low, high = _RANGES.get(toml, _FACTOR_RANGE)
    if not low <= float(value) <= high:
        raise InputError(f"{where} must be between {low:g} and {high:g}")
    return float(value)


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where} must be a string")
    return value


def entries(place: Place) -> list[Entry]:
    """The entries stored in one file; InputError (one line, naming the file and the key) for a
    file that is not TOML or an entry of the wrong shape."""
    data = _read(place)
    if data is None:
        return []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{place.path}: not UTF-8 text") from None
    return _entries_in(_load(text, place.path), place)


def _entries_in(document: Any, place: Place) -> list[Entry]:
    table = _node(document, place.table)
    if table is None:
        return []
    where = f"{place.path}: [{'.'.join(place.table)}]"
    if not isinstance(table, Mapping):
        raise InputError(f"{where} must be a table")
    return [_entry(value, f"{where[:-1]}.{name}]") for name, value in table.items()]


def _entry(value: object, where: str) -> Entry:
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be a table")
    gpu = _string(value.get("gpu"), f"{where} gpu")
    versions = {name: _string(value[name], f"{where} {name}") for name in KEY_FIELDS[1:] if name in value}
    raw_runs = value.get("run", [])
    if not isinstance(raw_runs, list):
        raise InputError(f"{where} run must be a list of tables")
    runs = []
    for index, raw in enumerate(raw_runs):
        at = f"{where} run[{index}]"
        if not isinstance(raw, Mapping):
            raise InputError(f"{at} must be a table")
        values = {name: _number(raw[toml], f"{at} {toml}", toml) for name, toml in TOML_NAMES.items() if toml in raw}
        runs.append(StoredRun(_string(raw.get("log", ""), f"{at} log"), _string(raw.get("model", ""), f"{at} model"),
                              values))
    return Entry(Key(gpu.lower(), versions.get("verl"), versions.get("vllm"), versions.get("megatron")), tuple(runs))


def add_runs(entry: Entry | None, key: Key, runs: Sequence[StoredRun]) -> Entry:
    """The entry with `runs` added; a run whose log is already stored replaces it."""
    kept = [r for r in (entry.runs if entry is not None else ()) if r.log not in {n.log for n in runs}]
    return Entry(key, tuple(kept) + tuple(runs))


def _entry_toml(entry: Entry) -> Any:
    import tomlkit

    table = tomlkit.table()
    table["gpu"] = entry.key.gpu
    for name in KEY_FIELDS[1:]:
        if (value := getattr(entry.key, name)) is not None:
            table[name] = value
    table["runs"] = len(entry.runs)
    for c in entry.corrections():
        toml = TOML_NAMES[c.name]
        table[toml] = round(c.value, 4)
        if c.spread is not None:
            table[f"{toml}-spread"] = round(c.spread, 4)
    shares = entry.shares()
    if shares:
        inline = tomlkit.inline_table()
        for model, c in shares.items():
            inline[model] = round(c.value, 4)
        table[TOML_NAMES[SHARE]] = inline
    runs = tomlkit.array()
    runs.multiline(True)
    for run in entry.runs:
        item = tomlkit.inline_table()
        item["log"] = run.log
        item["model"] = run.model
        for name, toml in TOML_NAMES.items():
            if name in run.values:
                item[toml] = round(run.values[name], 4)
        runs.append(item)
    table["run"] = runs
    return table


def save(place: Place, key: Key, runs: Sequence[StoredRun]) -> Entry:
    """Add `runs` to the entry for `key` in `place` and write the file (all or nothing); the entry
    as written. Every other byte of the file is kept."""
    import tomlkit

    before = _read(place)
    if before is None:
        document: Any = tomlkit.document()
    else:
        try:
            document = _parse(before.decode("utf-8"), place.path)
        except UnicodeDecodeError:
            raise InputError(f"{place.path}: not UTF-8 text; nothing written") from None
    stored = {e.key.slug: e for e in _entries_in(document, place)}  # from the bytes the write compares with
    entry = add_runs(stored.get(key.slug), key, runs)
    node = document
    for index, part in enumerate(place.table):
        found = node.get(part)
        if found is None:
            found = tomlkit.table(is_super_table=index < len(place.table) - 1 or None)
            node[part] = found
            found = node[part]
        elif not isinstance(found, Mapping):
            raise InputError(f"{place.path}: [{'.'.join(place.table[:index + 1])}] must be a table; nothing written")
        node = found
    node[key.slug] = _entry_toml(entry)
    text = tomlkit.dumps(document)
    if place.scope == "user":
        place.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(place.path, text, expected=before)
    return entry


@dataclass(frozen=True, slots=True)
class Found:
    calibration: session.Calibration | None
    line: str  # what the command says: applied, or why not (empty when nothing is stored)


def _matches(stored: Key, wanted: Key) -> str:
    """'' when `stored` applies to `wanted`, else why not."""
    if stored.gpu != wanted.gpu:
        return f"it is for {stored.gpu}, this is {wanted.gpu}"
    for name in KEY_FIELDS[1:]:
        have, want = getattr(stored, name), getattr(wanted, name)
        if have is not None and want is not None and have != want:
            return f"it is for {name} {have}, this is {name} {want}"
    return ""


def _corrections(fitted: Sequence[Correction], agreed_only: bool) -> session.Corrections:
    """The numbers of `fitted`; `agreed_only` (runs of other models): only those the runs agree
    on, i.e. fitted on two runs or more and further from nothing (1.0, 0 GiB) than their spread."""
    def agreed(c: Correction) -> bool:
        if not agreed_only:
            return True
        if c.spread is None:
            return False
        return abs(math.log(c.value)) > math.log1p(c.spread) if c.kind == "factor" else abs(c.value) > c.spread

    found = {c.name: c for c in fitted if agreed(c)}

    def value(name: str) -> float:
        return found[name].value if name in found else 1.0

    memory = found.get(MEMORY_ROW)
    return session.Corrections(rollout=value("rollout"), log_prob=value("log-prob"), update=value("update"),
                               weight_sync=value("weight sync"),
                               memory_offset_gib=memory.value if memory is not None else 0.0,
                               memory_runs=memory.runs if memory is not None else 0)


def applied(entry: Entry, scope: str) -> session.Calibration:
    """The numbers a command applies, and the line it says them with. A model with runs of its
    own takes the corrections fitted on them; another model only what the runs agree on, and
    only runs of two models or more: a cluster's correction is a fact of the cluster only where
    runs of several models share it. Runs of one model agree with each other on that model's
    workload (its response lengths and their tail): on the H20 tables, the four Qwen3-14B runs
    applied to the 32B runs and the other way made the step 2.1x further off than no correction
    (bench/calibrate_loo.py)."""
    models = sorted({r.model for r in entry.runs if r.model})
    by_model = tuple((m, _corrections(Entry(entry.key, tuple(r for r in entry.runs if r.model == m)).corrections(),
                                      False)) for m in models)
    runs = len(entry.runs)
    where = "of this project" if scope == "project" else "in your user configuration"
    step = next((c for c in entry.corrections() if c.name == "step"), None)
    spread = f", +-{step.spread:.0%}" if step is not None and step.spread is not None else " (no spread from one run)"
    line = (f"calibrated on {runs} run{'s' if runs != 1 else ''} {where}{spread} ({entry.key.describe()}; "
            f"runs of {', '.join(models) or 'unnamed models'})")
    others = _corrections(entry.corrections(), True) if len(models) >= 2 else session.Corrections()
    return session.Calibration(by_model=by_model, others=others,
                               response_shares=tuple((model, c.value) for model, c in entry.shares().items()),
                               line=line)


def find(start: str | Path, wanted: Key) -> Found:
    """The stored calibration that applies to `wanted` (the project's before the user's; among
    several, the one whose key names the most versions, then the most runs), or the line that
    says why none does. InputError (one line) for a configuration file that cannot be read."""
    seen: list[tuple[Place, Entry]] = [(place, e) for place in read_places(start) for e in entries(place)]
    if not seen:
        return Found(None, "")
    fitting = [(place, e) for place, e in seen if not _matches(e.key, wanted) and e.runs]
    if not fitting:
        place, first = seen[0]
        why = _matches(first.key, wanted) or "it holds no run"
        more = f" (and {len(seen) - 1} more)" if len(seen) > 1 else ""
        return Found(None, f"calibration not applied: the one stored in {place.path}{more} does not match: {why}")
    order = {"project": 0, "user": 1}
    place, best = min(fitting, key=lambda pe: (order[pe[0].scope],
                                                -sum(getattr(pe[1].key, n) is not None for n in KEY_FIELDS),
                                                -len(pe[1].runs)))
    found = applied(best, place.scope)
    return Found(found, found.line)


def log_digest(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]
