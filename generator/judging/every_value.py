"""Reason over every value of an unknown GPU count (issue 34, principle 3).

A script that leaves `trainer.nnodes` (or `trainer.n_gpus_per_node`) to an environment variable it
does not set (`trainer.nnodes=$NNODES`, filled by a cluster launcher) cannot have its batch chain
decided for one value: VB117 says so. But a batch that fails on every node count the launcher
could give is an error all the same (a mini batch smaller than the GPUs: the per-rank mini batch is
zero on one node and on sixteen). The chain rules run again with the unknown count set to each
value of a bounded range; a finding that every value gives is reported, in the numbers of the
smallest value, and says for which values it holds. Where every value fails but not the same way
(VB107 on one node, VB104 on more), the fewest failure modes covering every value are reported, each
for the values it holds for. A value that passes leaves the verdict undecided (VB117, info).

Not a rule module: it registers no rule.
"""

from __future__ import annotations

from itertools import product
from typing import Callable, Iterable

from generator.config.types import Config
from generator.rules.core import Finding

UNDECIDED_CODE = "VB117"
# The counts a launcher fills in, and the values weighed: node counts 1 to 64, and the GPU counts a
# node has. A finding is "for every value" of these ranges, and its message says so.
COUNTS: dict[str, tuple[int, ...]] = {
    "trainer.nnodes": tuple(range(1, 65)),
    "trainer.n_gpus_per_node": (1, 2, 4, 8),
}
# At most this many configs are judged for one call (both counts unknown: 4 x 64).
_MOST = 256


def with_values(config: Config, values: dict[str, int]) -> Config:
    """A copy of `config` with `values` known (the rest shared: rules only read a Config)."""
    copy = Config(config.version, config.schema, config.entry, {**config.values, **values}, config.set_by,
                  {key: why for key, why in config.unknown.items() if key not in values}, config.key_issues,
                  config.backend, config.passes_args, config.notes, config.approximate,
                  config.relative_config_path, config.resolution, config.config_dir, config.defaults, config.groups)
    return copy


def decided(config: Config, findings: list[Finding], chain_inputs: Iterable[str],
            judge: Callable[[Config], list[Finding]]) -> list[Finding]:
    """`findings`, where VB117 stood down for unknown GPU counts only: with each chain finding that
    holds for every value of those counts in place of VB117 (none: unchanged)."""
    if not any(f.code == UNDECIDED_CODE for f in findings):
        return findings
    unknown = [key for key in chain_inputs if key in config.unknown]
    if not unknown or any(key not in COUNTS for key in unknown):
        return findings  # another input is unknown too (the batch size itself): nothing to weigh
    combos = list(product(*(COUNTS[key] for key in unknown)))[:_MOST]
    first: list[Finding] = []
    common: set[tuple[str, str | None]] | None = None
    # Each failure mode (an error's code and key), the first finding of it and the values giving it:
    # a call that fails on every value, one way on some and another way on the rest, fails all the same.
    modes: dict[tuple[str, str | None], tuple[Finding, list[tuple[int, ...]]]] = {}
    every_value_fails = True
    for combo in combos:
        found = [f for f in judge(with_values(config, dict(zip(unknown, combo))))
                 if f.severity in ("error", "warning") and f.code != UNDECIDED_CODE]
        ids = {(f.code, f.key) for f in found}
        common = ids if common is None else common & ids
        if not first:
            first = found
        errors = [f for f in found if f.severity == "error"]
        every_value_fails = every_value_fails and bool(errors)
        for f in errors:
            modes.setdefault((f.code, f.key), (f, []))[1].append(combo)
        if not common and not every_value_fails:
            return findings  # one value passes (or fails otherwise): undecided
    assert common is not None
    span = "; ".join(f"{key} {COUNTS[key][0]}..{COUNTS[key][-1]} ({config.unknown[key]})" for key in unknown)
    smallest = ", ".join(f"{key.rsplit('.', 1)[-1]}={COUNTS[key][0]}" for key in unknown)
    known = {(f.code, f.key) for f in findings}  # a finding the unknown did not hide stays as it was
    # in the smallest value's numbers; its fix (worked out for that value) is not offered
    held = [f._replace(message=f"{f.message} [for every value of {span}; shown for {smallest}]", fix=None)
            for f in first if (f.code, f.key) in common and (f.code, f.key) not in known]
    if not held and every_value_fails:
        held = _union(unknown, modes, span, known)
    if not held:
        return findings
    return [f for f in findings if f.code != UNDECIDED_CODE] + held


def _union(unknown: list[str], modes: dict[tuple[str, str | None], tuple[Finding, list[tuple[int, ...]]]],
           span: str, known: set[tuple[str, str | None]]) -> list[Finding]:
    """The fewest failure modes that cover every value (greedily: the one covering most values not yet
    covered, the earlier on a tie), each in the numbers of the first value that gives it, saying for
    which values it holds and that every value of `span` fails one way or another."""
    left = {c for _f, combos in modes.values() for c in combos}
    chosen: list[tuple[Finding, list[tuple[int, ...]]]] = []
    while left:
        best = max(modes.values(), key=lambda mode: len(left.intersection(mode[1])))
        chosen.append(best)
        left -= set(best[1])
    chosen.sort(key=lambda mode: mode[1][0])
    ways = "; ".join(f"{_values(unknown, combos)}: {f.code}" for f, combos in chosen)
    return [f._replace(message=f"{f.message} [shown for {_values(unknown, combos[:1])}; every value of {span} "
                               f"fails: {ways}]", fix=None)
            for f, combos in chosen if (f.code, f.key) not in known]


def _values(unknown: list[str], combos: list[tuple[int, ...]]) -> str:
    """`nnodes=1`, `nnodes=2..64` (a run of consecutive values) or `nnodes=2, 4, 8`: the values of one
    unknown count; for two, each combination (the first few)."""
    names = [key.rsplit(".", 1)[-1] for key in unknown]
    if len(unknown) == 1:
        values = [c[0] for c in combos]
        if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
            return f"{names[0]}={values[0]}..{values[-1]}"
        shown = ", ".join(str(v) for v in values[:6])
        return f"{names[0]}={shown}{', ...' if len(values) > 6 else ''}"
    shown = "; ".join(", ".join(f"{n}={v}" for n, v in zip(names, c)) for c in combos[:3])
    return shown + ("; ..." if len(combos) > 3 else "")
