"""The interpolations of a config's defaults, resolved once and reused by every call that leaves
what they read alone (issue 22: the corpus resolved ~90 interpolations of the full schema again
for each of its ~800 calls, though a call's ~40 overrides touch few of them).

`DefaultsResolution.of(defaults, nodes)` resolves each interpolating key of `defaults` in its
order, with a Resolver that records every key and subtree each resolution read (transitively,
through the keys it resolved on the way). A call's composition (config/apply.py) then takes a
key's outcome from it only when the key is still the defaults' own value and nothing it read was
set, added, deleted or marked unknown by the call — compared by name and by every ancestor of a
changed key, so a key added below one that was read counts as a change. Anything else is
resolved by the call's own Resolver exactly as before, so the config, its unknowns and every
message are the same either way.

Two things are never reused: defaults whose resolution met an interpolation cycle (which key
of a cycle a message names depends on where resolving began), and defaults over the work budget
(the call's own resolution raises, as before). A reused key charges the call's budget what it
cost in the defaults, so the budget keeps counting the same work.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from generator.config.interp import InterpolationBudget, Resolver, Unresolvable, has_interpolation
from generator.schema.release_schema import inner_nodes

# A few defaults live at once (a release's PPO configs, a recipe's composed config, a group
# selection's copy); more are resolved again.
_MAX_KEPT = 48
_ABSENT = object()


class _TrackingResolver(Resolver):
    """A Resolver that records, for each key it resolves, every key and subtree read on the way."""

    def __init__(self, values: dict[str, Any], nodes: frozenset[str] | set[str] | None) -> None:
        node_set = set(nodes) if nodes is not None else None
        super().__init__(values, nodes=(lambda: node_set) if node_set is not None else None)
        self.reads: dict[str, set[str]] = {}
        self._open: list[set[str]] = []
        self.cycle = False

    def resolve(self, key: str) -> Any:
        if self._open:
            self._open[-1].add(key)
        known = self.reads.get(key)
        if known is not None and key not in self._active:
            if self._open:
                self._open[-1].update(known)
            return super().resolve(key)  # a cache hit: it reads nothing new
        if key in self._active:
            self.cycle = True
        self._open.append({key})
        try:
            return super().resolve(key)
        finally:
            read = self._open.pop()
            self.reads[key] = read
            if self._open:
                self._open[-1].update(read)

    def exists(self, key: str) -> bool:
        if self._open:
            self._open[-1].add(key)
        return super().exists(key)


class DefaultsResolution:
    """Each interpolating key of one defaults dict: (its outcome, what it read, what it cost)."""

    def __init__(self, defaults: dict[str, Any], node_count: int,
                 outcomes: dict[str, tuple[Any, Unresolvable | None, frozenset[str], int]]) -> None:
        self.defaults = defaults
        self.node_count = node_count
        self.outcomes = outcomes
        # Who read what, the other way round: a call changes a few dozen keys, and asking which
        # outcomes read them is cheaper than asking each of ~100 outcomes what it read.
        self.readers: dict[str, list[str]] = {}
        for key, (_, _, reads, _) in outcomes.items():
            for read in reads:
                self.readers.setdefault(read, []).append(key)

    @staticmethod
    def of(defaults: dict[str, Any], nodes: Iterable[str] | None) -> DefaultsResolution | None:
        """The kept resolution of `defaults` (the same dict, or one equal to it), built on the
        second sighting (a defaults dict met once is not worth resolving twice); None when there
        is none to use."""
        node_set = nodes if nodes is None or isinstance(nodes, (set, frozenset)) else frozenset(nodes)
        node_count = len(node_set) if node_set is not None else -1
        for index, entry in enumerate(_KEPT):
            if isinstance(entry, DefaultsResolution):
                if entry.node_count == node_count and (entry.defaults is defaults or (
                        len(entry.defaults) == len(defaults) and entry.defaults == defaults)):
                    return entry
            elif entry[1] == node_count and (entry[0] is defaults or (
                    len(entry[0]) == len(defaults) and entry[0] == defaults)):
                built = _build(entry[0], node_set, node_count)
                _KEPT[index] = built if built is not None else _NONE
                return built
            elif entry is _NONE:
                continue
        _KEPT.append((defaults, node_count))
        if len(_KEPT) > _MAX_KEPT:
            del _KEPT[0]
        return None

    def stale(self, changed: set[str]) -> set[str]:
        """The keys whose outcome read something in `changed` (changed keys and all their
        ancestors): those the call must resolve itself."""
        readers = self.readers
        return {key for read in changed if read in readers for key in readers[read]}

    def reusable(self, key: str, stale: set[str]) -> tuple[Any, Unresolvable | None, int] | None:
        """(value, error, cost) of `key` as the defaults resolve it, unless it is `stale`
        (see `stale`) or not an interpolation of the defaults; else None."""
        outcome = self.outcomes.get(key)
        if outcome is None or key in stale:
            return None
        value, error, _, cost = outcome
        if isinstance(value, (dict, list)):
            value = copy.deepcopy(value)  # the call may keep and change it; the kept one stays
        return value, error, cost


_NONE: Any = ("<none>", -2)  # a defaults entry that cannot be reused (a cycle, the budget)
_KEPT: list[Any] = []  # DefaultsResolution, or (defaults, node count) seen once


def _build(defaults: dict[str, Any], nodes: frozenset[str] | set[str] | None, node_count: int) -> DefaultsResolution | None:
    resolver = _TrackingResolver(dict(defaults), nodes)
    outcomes: dict[str, tuple[Any, Unresolvable | None, frozenset[str], int]] = {}
    try:
        for key, raw in defaults.items():
            if not has_interpolation(raw):
                continue
            before = resolver.work
            try:
                value, error = resolver.resolve(key), None
            except Unresolvable as err:
                value, error = None, err
            outcomes[key] = (value, error, frozenset(resolver.reads.get(key, {key})), resolver.work - before)
    except InterpolationBudget:
        return None
    if resolver.cycle:
        return None
    return DefaultsResolution(defaults, node_count, outcomes)


def changed_keys(defaults: dict[str, Any], values: dict[str, Any], touched: Iterable[str],
                 unknown: Iterable[str]) -> set[str]:
    """The keys a call set, added, deleted or marked unknown, with every ancestor of each.
    `values` began as a copy of `defaults`, and `touched` holds every key written or deleted
    since (FlatConfig.touched): only those can differ, so only those are compared (a key set
    to the very object it held is unchanged)."""
    changed = {k for k in touched if values.get(k, _ABSENT) is not defaults.get(k, _ABSENT)}
    changed.update(unknown)
    changed.update(inner_nodes(changed))
    return changed
