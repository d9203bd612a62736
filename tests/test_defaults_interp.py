"""The defaults' interpolations resolved once and reused per call (generator.config.defaults_interp):
a call composes the same config, unknowns and messages as with nothing kept."""

from __future__ import annotations

from typing import Any

import pytest

from generator.config import apply_overrides
from generator.config import defaults_interp, interp
from generator.config.interp import InterpolationBudget
from generator.schema.release_schema import inner_nodes
from generator.reading.launch_script import Override, Provenance, Span

DEFAULTS: dict[str, Any] = {
    "a.size": 4,
    "a.micro": "${a.size}",
    "a.sub.x": 1,
    "a.sub.y": "${a.micro}",
    "b.copy": "${a.sub}",
    "b.pick": "${oc.select:a.extra,7}",
    "b.env": "${oc.env:HOME}",
    "b.text": "n=${a.micro}",
    "b.broken": "${a.nowhere}",
    "c.list": [1, 2],
    "c.ref": "${c.list}",
    "d.plain": "no interpolation",
}


def _override(text: str) -> Override:
    op = "++" if text.startswith("++") else "+" if text.startswith("+") else "~" if text.startswith("~") else "="
    body = text.lstrip("+~")
    key, _, value = body.partition("=")
    return Override(text=text, key=key, op=op, value=value if "=" in body else None, line=1,  # type: ignore[arg-type]
                    word=Span(0, 0, 1), provenance=Provenance("literal", None))


def _compose(defaults: dict[str, Any], texts: list[str]) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    config = apply_overrides(defaults, [_override(t) for t in texts], version="0.7.0", config_name="ppo_trainer")
    return config.values, config.unknown, [i.detail for i in config.key_issues]


def _kept(defaults: dict[str, Any]) -> defaults_interp.DefaultsResolution | None:
    return defaults_interp.DefaultsResolution.of(defaults, inner_nodes(defaults))


CALLS = [
    [],
    ["a.size=8"],  # everything that reads a.size follows it
    ["a.sub.x=5"],  # b.copy reads the subtree
    ["+a.extra=3"],  # oc.select finds the key added
    ["a.micro=2", "c.list=[3]"],
    ["~a.sub.y"],  # a deleted key below a copied subtree
    ["d.plain=${a.size}"],  # a new interpolation among kept ones
    ["a.nowhere=1"],  # the broken reference is mended
]


@pytest.mark.parametrize("texts", CALLS)
def test_a_call_composes_the_same_with_and_without_the_kept_resolution(texts: list[str]) -> None:
    defaults_interp._KEPT.clear()
    fresh = _compose(DEFAULTS, texts)  # first sighting: nothing kept
    _compose(DEFAULTS, [])  # second sighting builds the kept resolution
    assert _kept(DEFAULTS) is not None
    assert _compose(DEFAULTS, texts) == fresh


def test_kept_values_follow_the_changed_keys() -> None:
    defaults_interp._KEPT.clear()
    for _ in range(2):
        values, unknown, _ = _compose(DEFAULTS, [])
    assert values["a.sub.y"] == 4 and values["b.copy.y"] == 4 and values["b.pick"] == 7
    assert "b.env" in unknown and "b.broken" in unknown
    values, unknown, _ = _compose(DEFAULTS, ["a.size=8", "+a.extra=3", "+a.nowhere=2"])
    assert values["a.sub.y"] == 8 and values["b.text"] == "n=8" and values["b.copy.y"] == 8
    assert values["b.pick"] == 3 and values["b.broken"] == 2 and "b.broken" not in unknown


def test_a_kept_list_is_not_shared_with_the_call() -> None:
    defaults = dict(DEFAULTS, **{"c.list": [1, 2]})
    defaults_interp._KEPT.clear()
    for _ in range(2):
        _compose(defaults, [])
    for _ in range(2):
        values, _, _ = _compose(defaults, [])
        values["c.ref"].append(9)  # a caller changing its config does not change the next call's
    assert _compose(defaults, [])[0]["c.ref"] == [1, 2]


def test_defaults_with_a_cycle_are_never_kept() -> None:
    defaults_interp._KEPT.clear()
    cyclic = {"x.a": "${x.b}", "x.b": "${x.a}", "y": 1}
    first = _compose(cyclic, ["y=2"])
    assert _compose(cyclic, ["y=2"]) == first
    assert _kept(cyclic) is None
    assert "interpolation cycle" in first[1]["x.a"]


def test_the_budget_counts_kept_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reused key charges what it cost, so a call over the budget is refused as before."""
    heavy = {f"k{i}": "${base}" for i in range(10)} | {"base": 1}
    defaults_interp._KEPT.clear()
    for _ in range(2):
        _compose(heavy, [])
    kept = _kept(heavy)
    assert kept is not None and all(outcome[3] > 0 for outcome in kept.outcomes.values())
    base_cost = sum(outcome[3] for outcome in kept.outcomes.values())
    # The kept work alone fits; with the call's own interpolation it does not, reused or not.
    monkeypatch.setattr(interp, "INTERP_WORK_LIMIT", base_cost + 1)
    with pytest.raises(InterpolationBudget):
        _compose(heavy, ["++extra=${base}"])
    defaults_interp._KEPT.clear()
    with pytest.raises(InterpolationBudget):
        _compose(heavy, ["++extra=${base}"])
