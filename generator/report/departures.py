"""How `gen plan` words its departures from verl's shipped layouts (generator.plan.verl_departures):
one sentence per example script in text, and the same facts in JSON."""

from __future__ import annotations

from typing import Any

from generator.plan.enumeration import describe_layout
from generator.plan.error_band import STEP_TIME_ERROR_BAND
from generator.plan.practice import spare_share
from generator.plan.verl_departures import Departure, knob_differences, knob_text

VERL_RELEASE = "v0.7.0"  # the release whose example scripts data/verl_layouts.yaml transcribes


def _verl_head(d: Departure) -> str:
    return (f"verl {VERL_RELEASE}'s example {d.script} runs {describe_layout(d.verl)}, rollout TP{d.verl.rollout_tp}, "
            f"{knob_text(d.verl)}")


def _over(d: Departure) -> str:
    worst = max(d.verl.memory, key=lambda p: p.gib)
    return f"{worst.phase} {worst.gib:.1f} GiB of {d.verl.limit_gib:.1f} usable"


def _because(d: Departure) -> str:
    saved = d.savings()
    if not saved:
        return ""
    items = [f"{part} {seconds:.0f} s less" for part, seconds in saved[:3]]
    listed = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
    return f" because it spends {listed}"


def departure_text(d: Departure) -> str:
    """One sentence: verl's layout, its estimate on this workload, and why the plan differs."""
    head = _verl_head(d)
    ours_s = d.ours.score.total_s if d.ours.score else 0.0
    verl_s = d.verl.score.total_s if d.verl.score else 0.0
    changes = "; ".join(knob_differences(d.ours, d.verl))
    if d.same_knobs:
        return f"{head}: this plan is that layout with those knobs (estimated {ours_s:.0f} s per step)."
    if not d.verl.fits:
        return (f"{head}; with those knobs it does not fit this workload ({_over(d)}), so this plan departs "
                f"from it ({changes}; estimated {ours_s:.0f} s per step).")
    if d.thin:
        return (f"{head}; with those knobs it fits this workload with less than {spare_share():.0%} of usable "
                f"memory spare ({_over(d)}), inside the memory model's error band, so this plan departs from "
                f"it ({changes}; estimated {ours_s:.0f} s per step, verl's {verl_s:.0f} s).")
    gain = d.gain or 0.0
    if d.tie:
        decided = f"; decided by: {d.criterion}" if d.criterion else ""
        return (f"{head}: estimated {verl_s:.0f} s per step here, within {STEP_TIME_ERROR_BAND:.0%} of this plan's "
                f"{ours_s:.0f} s, a tie ({changes}{decided}).")
    if gain > 0:
        return (f"{head}: estimated {verl_s:.0f} s per step here; this plan ({changes}) is estimated "
                f"{gain:.0%} faster ({ours_s:.0f} s){_because(d)}.")
    # The plan is the slower one (a layout the user pinned, or a practice rule verl's breaks): the
    # share of the plan's time verl's saves, and what decided.
    decided = f"; decided by: {d.criterion}" if d.criterion else ""
    return (f"{head}: estimated {verl_s:.0f} s per step here, {1 - verl_s / ours_s:.0%} less than this layout's "
            f"{ours_s:.0f} s "
            f"({changes}{decided}).")


def departure_dict(d: Departure) -> dict[str, Any]:
    """The comparison as JSON: verl's layout and knobs, both estimates, the gain and its reasons."""
    worst = max(d.verl.memory, key=lambda p: p.gib) if d.verl.memory else None
    return {
        "example": d.script, "row": d.row_id, "verl_release": VERL_RELEASE,
        "layout": describe_layout(d.verl), "rollout_tp": d.verl.rollout_tp, "knobs": knob_text(d.verl),
        "fits": d.verl.fits,
        "over": None if d.verl.fits or worst is None else {"phase": worst.phase, "gib": round(worst.gib, 2),
                                                            "limit_gib": round(d.verl.limit_gib, 2)},
        "step_s": round(d.verl.score.total_s, 2) if d.verl.score else None,
        "plan_step_s": round(d.ours.score.total_s, 2) if d.ours.score else None,
        "faster_by": None if d.gain is None else round(d.gain, 4),
        "tie": d.tie, "thin": d.thin, "same_layout": d.same_layout,
        "differences": knob_differences(d.ours, d.verl),
        "decided_by": d.criterion,
        "seconds_saved": [{"part": part, "seconds": round(s, 2)} for part, s in d.savings()],
        "text": departure_text(d),
    }
