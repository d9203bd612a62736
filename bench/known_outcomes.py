"""Known outcomes of the memory model: every calibration point, predicted against what was reported.

    python bench/known_outcomes.py            # every point, the fit, the band, the library's verl examples
    python bench/known_outcomes.py --points   # the calibration points only
    python bench/known_outcomes.py --holdout  # the points kept aside from the fit (data/memory_holdout.yaml)

For each point of generator/data/memory_calibration.yaml (a run reported to work, or an OOM, with
its public source): the peak predicted with the two fitted constants refitted without that point
(leave-one-out, plan/memory_fit.py), the usable limit, the margin, the verdict against the
expected one, and the measured peak where one was reported. Then the constants fitted on every
point and their windows, the leave-one-out error band (plan/error_band.MEMORY_ERROR_BAND must
equal it, rounded up to the percent), and the verdict of every verl example recipe in the library
on its own GPUs (`gen recipe NAME` refuses a recipe predicted over without --force). Exit 1 when
a point that is not a known miss gets the wrong verdict, or the band in error_band.py is not the
measured one.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from generator.plan import memory
from generator.plan.error_band import MEMORY_ERROR_BAND
from generator.plan.known_outcomes import known_outcomes
from generator.plan.memory_fit import (error_band, fit_constants, leave_one_out, overhead_window,
                                       step_window)


def _points() -> tuple[int, float]:
    outcomes = known_outcomes()
    left_out = leave_one_out(outcomes)
    print(f"{'point':24} {'expect':6} {'peak':>7} {'limit':>6} {'margin':>7}  {'verdict':8} {'measured':>8}  loo constants")
    wrong = 0
    for x in left_out:
        o = x.outcome
        verdict = "fits" if x.peak_gib <= o.usable_gib else "over"
        margin = (o.usable_gib - x.peak_gib) / o.usable_gib
        if o.known_miss:
            mark = "known miss"
        elif x.agrees:
            mark = "ok"
        else:
            mark, wrong = "WRONG", wrong + 1
        measured = f"{o.measured_gib:8.1f}" if o.measured_gib is not None else " " * 8
        print(f"{o.id:24} {o.expect:6} {x.peak_gib:7.1f} {o.usable_gib:6.1f} {margin:+7.1%}  {verdict:4} {mark:10}"
              f"{measured}  overhead {x.constants.overhead_gib:g} GiB, step {x.constants.step_temp_bytes:g} B")
    used = [o for o in outcomes if not o.known_miss]
    fitted = fit_constants(outcomes)
    ow, sw = overhead_window(used), step_window(used, fitted.overhead_gib)
    band = error_band(left_out)
    print(f"\nfitted on all points: OVERHEAD_GIB {fitted.overhead_gib:g} (window {ow.low:.2f} .. {ow.high:.2f}), "
          f"STEP_TEMP_BYTES {fitted.step_temp_bytes:g} (window {sw.low:.2f} .. {sw.high:.2f}); "
          f"the model uses {memory.OVERHEAD_GIB:g} and {memory.STEP_TEMP_BYTES:g}")
    print(f"leave-one-out: {len(left_out) - wrong - sum(1 for o in outcomes if o.known_miss)} agree, {wrong} wrong, "
          f"{sum(1 for o in outcomes if o.known_miss)} known misses (reasons in data/memory_calibration.yaml)")
    print(f"error band (largest leave-one-out error on a measured peak): {band:.1%}; "
          f"plan/error_band.py MEMORY_ERROR_BAND = {MEMORY_ERROR_BAND:g}")
    return wrong, band


def _held_out() -> int:
    """The points kept aside (never fitted on) judged by the model as it stands: its constants, its
    band. A point predicted over by no more than the band is a tie, counted apart from a wrong one."""
    from generator.plan.memory_fit import CURRENT, agrees, peak_gib

    outcomes = known_outcomes(held_out=True)
    print(f"points kept aside from the fit (data/memory_holdout.yaml), judged with OVERHEAD_GIB "
          f"{memory.OVERHEAD_GIB:g} and STEP_TEMP_BYTES {memory.STEP_TEMP_BYTES:g}:")
    print(f"{'point':24} {'expect':6} {'peak':>7} {'limit':>6} {'margin':>7}  verdict")
    wrong = ties = 0
    for o in outcomes:
        peak = peak_gib(o, CURRENT)
        margin = (o.usable_gib - peak) / o.usable_gib
        if agrees(o, CURRENT):
            mark = "ok"
        elif o.expect == "fits" and -margin <= MEMORY_ERROR_BAND:
            mark, ties = "tie (inside the band)", ties + 1
        else:
            mark, wrong = "WRONG", wrong + 1
        print(f"{o.id:24} {o.expect:6} {peak:7.1f} {o.usable_gib:6.1f} {margin:+7.1%}  {mark}")
    print(f"held out: {len(outcomes) - wrong - ties} agree, {wrong} wrong, {ties} inside the band")
    return wrong


def _library() -> int:
    from generator.library.store import load_library
    from generator.library.verdict import KNOWN_OOM_TAG, recipe_verdict, unsettled_note

    library = load_library()
    examples = [r for r in library.recipes.values() if r.name.startswith(("verl-", "example-"))]
    print(f"\nverl example recipes in the library on their own GPUs ({len(examples)}):")
    refused = assumed = ties = misses = known_oom = 0
    for recipe in sorted(examples, key=lambda r: r.name):
        verdict = recipe_verdict(recipe)
        if verdict is None or verdict.fits:
            continue
        if KNOWN_OOM_TAG in recipe.tags:
            known_oom += 1
            print(f"  known OOM  {recipe.name:50} {verdict.text()} (refused: a reported OOM)")
        elif unsettled_note(recipe, verdict) is None:
            refused += 1
            print(f"  refused    {recipe.name:50} {verdict.text()}")
        elif recipe.gpu_assumed:
            assumed += 1
            print(f"  assumed    {recipe.name:50} {verdict.text()} on the assumed {recipe.gpu} (a note)")
        elif verdict.over_share <= MEMORY_ERROR_BAND:
            ties += 1
            print(f"  tie        {recipe.name:50} {verdict.text()} (inside the error band: a note)")
        else:
            misses += 1
            print(f"  known miss {recipe.name:50} {verdict.text()} (recorded as fitting: a note)")
    print(f"  {refused} of {len(examples) - known_oom} verl examples refused without --force; predicted over only "
          f"on an assumed GPU: {assumed}, a tie inside the error band: {ties}, a known miss of the model: {misses}; "
          f"reported OOMs refused: {known_oom}")
    return refused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", action="store_true", help="the calibration points only")
    parser.add_argument("--holdout", action="store_true", help="only the points kept aside from the fit")
    args = parser.parse_args()
    if args.holdout:
        return 1 if _held_out() else 0
    wrong, band = _points()
    refused = 0 if args.points else _library()
    return 1 if wrong or refused or MEMORY_ERROR_BAND != math.ceil(band * 100) / 100 else 0


if __name__ == "__main__":
    sys.exit(main())
