"""The known outcomes the memory model is calibrated and judged against: the points of
data/memory_calibration.yaml (each a public report with its source), as plan/memory_fit outcomes.

A point names a row of data/verl_layouts.yaml (optionally with other lengths) or carries its own
row, what was reported (`expect`: fits / over, `phase` where an OOM happened, `measured_gib` a
reported peak), and, where the model is known to disagree, `known_miss` with the reason.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml

from generator.plan.memory import MemorySetup
from generator.plan.memory_fit import Outcome, outcome
from generator.plan.reference import VerlLayout, verl_layouts
from generator.base.resources import data_dir

GB_PER_GIB = 2**30 / 1e9


@lru_cache(maxsize=2)
def calibration_points(held_out: bool = False) -> tuple[dict[str, Any], ...]:
    """The calibration points (the fit's), or with `held_out` the points kept aside from the fit
    (data/memory_holdout.yaml: judged, never fitted on)."""
    name = "memory_holdout.yaml" if held_out else "memory_calibration.yaml"
    data = yaml.safe_load((data_dir() / name).read_text(encoding="utf-8"))
    return tuple(data["points"])


def recorded_point(recipe_name: str) -> dict[str, Any] | None:
    """The calibration point that is this packaged recipe's configuration (its `recipe`), if any."""
    return next((p for p in calibration_points() if p.get("recipe") == recipe_name), None)


def point_setup(point: dict[str, Any]) -> MemorySetup:
    """The memory setup of a point: its row (by id or its own), with the point's lengths."""
    row = VerlLayout(point["row"]) if isinstance(point["row"], dict) else \
        {r.id: r for r in verl_layouts()}[point["row"]]
    lengths: dict[str, Any] = {k: point[k] for k in ("prompt", "response") if k in point}
    if lengths:
        row = VerlLayout({**row.row, **lengths})
    return row.memory_setup()


def measured_gib(point: dict[str, Any]) -> float | None:
    """A reported peak in GiB (`measured_gb` in GB, or `measured_gib`)."""
    if "measured_gib" in point:
        return float(point["measured_gib"])
    if "measured_gb" in point:
        return float(point["measured_gb"]) / GB_PER_GIB
    return None


def point_outcome(point: dict[str, Any]) -> Outcome:
    return outcome(point["id"], point["expect"], point_setup(point), measured_gib(point),
                   point.get("known_miss", ""), point.get("phase", ""))


def known_outcomes(held_out: bool = False) -> tuple[Outcome, ...]:
    """Every point that judges GPU memory (host-RAM points are checked on their own); with
    `held_out`, the points kept aside from the fit."""
    return tuple(point_outcome(p) for p in calibration_points(held_out) if "host_gib" not in p)
