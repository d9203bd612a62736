"""Practice benchmark (issue 32): do our recipes keep to what verl's users run?

    python bench/practice.py            # both parts; exit 1 when any rule is broken
    python bench/practice.py --layouts  # only verl's published layouts against ours
    python bench/practice.py --matrix   # only the recipe matrix's practice rules
    python bench/practice.py --matrix holdout  # the hold-out matrix (bench/practice_holdout.py)

1. For every row of generator/data/verl_layouts.yaml (verl's examples and docs/perf tables): the
   layout verl ran (with the script's own knobs) against the one `gen plan` chooses for the same
   model, GPUs and workload. Ours is "as good or better" when its model-parallel size (TP·PP·CP)
   and its offload steps are no larger and its EP no smaller.
2. The recipe matrix: every model the packaged library names, at each GPU count it names, on the
   default GPU (h100) and with each algorithm (grpo/ppo/dapo at tools/make_recipes.py's workloads,
   the others at grpo's), planned as `gen recipe` plans it. Each recipe is checked against the rules
   of generator/plan/practice.py (the planner's own predicates); the violations are printed per rule.
   "shallowest-pp" and "relief-when-needed" size the alternatives (a shallower PP; the same layout
   with one relief step off) as `gen plan` would.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generator.layout.candidate import Candidate
from generator.layout.hardware import gpu_spec
from generator.model import ModelFacts, find_model, total_params
from generator.layout.pins import Pins
from generator.plan import plan_layout
from generator.plan.batch_choice import default_n
from generator.plan.enumeration import describe_layout
from generator.plan.practice import (RULES, budget_holds_sequences, leaves_spare, pp_is_shallowest,
                                     relief_is_needed, rollout_weights_fit_in_node, tp_within_node,
                                     uses_expert_parallelism, within_step_band)
from generator.plan.published import practice_marks, published_budget_tokens
from generator.plan.reference import LAYOUT_KEYS, verl_layouts
from generator.plan.setting import Setting, nodes_for_gpus
from generator.schema.releases import newest_release
from generator.verl.constants import ALGORITHMS

GPU = "h100"  # gen recipe's default GPU
# algorithm -> (n, prompt, response): tools/make_recipes.py's workloads; the rest run grpo's lengths
WORKLOADS = {"grpo": (5, 1024, 1024), "ppo": (1, 1024, 512), "dapo": (16, 2048, 8192)}


def relief_steps(c: Candidate) -> int:
    off = c.offload
    return int(off.param) + int(off.optimizer) + int(off.cpu_optimizer) + int(c.recompute)


def relief_text(c: Candidate) -> str:
    return "+".join(c.relief(short=True)) or "none"


def layouts_part() -> int:
    """Each published row against our plan; returns how many rows ours is not as good as."""
    print("1. verl's published layouts against ours (as good or better: TP·PP·CP and offload no larger, EP no "
          "smaller)")
    print(f"{'row':8} {'model':18} {'GPUs':>8}  {'verl':38} {'ours':38} ok")
    worse = 0
    rows = verl_layouts()
    for row in rows:
        verl = row.evaluate_as_shipped().candidates[0]
        ours = row.search(top=1).best
        if ours is None:
            print(f"{row.id:8} {row.model.name:18} {row.row['gpus']:>5}x{row.row['gpu']:<3}  no layout fits")
            worse += 1
            continue
        good = (ours.model_parallel_size <= verl.model_parallel_size and relief_steps(ours) <= relief_steps(verl)
                and ours.ep >= verl.ep)
        worse += not good
        v = f"{describe_layout(verl)} rTP{verl.rollout_tp}"
        o = f"{describe_layout(ours)} rTP{ours.rollout_tp}"
        print(f"{row.id:8} {row.model.name[:18]:18} {row.row['gpus']:>5}x{row.row['gpu']:<3}  {v:38} "
              f"{o:38} {'yes' if good else 'NO'}")
        # A row our memory model predicts over cannot be matched knob for knob (docs/memory-model.md).
        over = "" if verl.fits else "  (our memory model predicts verl's run over the GPU)"
        print(f"{'':37} {'relief ' + relief_text(verl):38} {'relief ' + relief_text(ours):38}{over}")
    print(f"as good or better on {len(rows) - worse} of {len(rows)}")
    return worse


def matrix() -> list[tuple[ModelFacts, int]]:
    """(model, GPUs) for every model the packaged library names, at each GPU count it names."""
    from generator.library.store import load_library

    seen: dict[tuple[str, int], tuple[ModelFacts, int]] = {}
    for recipe in load_library(packaged=True).recipes.values():
        if recipe.origin != "packaged":
            continue
        facts = find_model(recipe.model)
        if facts is not None:
            seen.setdefault((facts.name, recipe.gpus), (facts, recipe.gpus))
    return [seen[key] for key in sorted(seen)]


def plan_for(model: ModelFacts, gpus: int, algo: str, pins: Pins = Pins(), evaluate: bool = False,
             top: int = 1, gpu: str = GPU, lengths: tuple[int, int, int] | None = None) -> Any:
    """The plan `gen recipe` makes; `lengths` (prompt, response, n), else the matrix's workload."""
    spec = gpu_spec(gpu)
    nodes = nodes_for_gpus(gpus, spec.name, spec.gpus_per_node)[0]
    if lengths is not None:
        prompt, response, n = lengths
    else:
        n, prompt, response = WORKLOADS.get(algo, (default_n(algo), 1024, 1024))
        response = min(response, model.max_position_embeddings - prompt)  # a model's context bounds DAPO's
    # at the release gen recipe writes for (its memory reads that release's defaults): the plan it writes
    return plan_layout(model, gpus, nodes=nodes, gpu=spec, prompt_len=prompt, response_len=response, n=n, algo=algo,
                       pins=pins, evaluate=evaluate, top=top, verl_version=newest_release())


def layout_pins(c: Candidate) -> dict[str, Any]:
    out = {k: getattr(c, k) for k in LAYOUT_KEYS if getattr(c, k) is not None}
    out.update({k: getattr(c, k) for k in ("first_stage_layers", "last_stage_layers") if getattr(c, k)})
    return out


def check(model: ModelFacts, gpus: int, algo: str, gpu: str = GPU,
          lengths: tuple[int, int, int] | None = None) -> list[tuple[str, str]]:
    """(rule, what breaks it) for the recipe `gen recipe` plans for this model, GPUs and algorithm."""
    planner = partial(plan_for, gpu=gpu, lengths=lengths)  # every plan of this check: one GPU, one workload
    plan = planner(model, gpus, algo, top=5)  # gen recipe's search (its default top)
    best = plan.best
    if best is None:
        return [("memory-spare", "no layout fits")]
    spec = gpu_spec(gpu)
    per_node = min(gpus, spec.gpus_per_node)
    seq = plan.prompt_len + plan.response_len
    out: list[tuple[str, str]] = []
    if not uses_expert_parallelism(model, best, gpus):
        out.append(("moe-uses-ep", f"{describe_layout(best)}: a MoE model without EP"))
    if not tp_within_node(best, best.rollout_tp, per_node,
                          rollout_weights_fit_in_node(total_params(model), per_node, spec.memory_gib)):
        out.append(("tp-in-node", f"TP{best.tp}, rollout TP{best.rollout_tp} on {per_node}-GPU nodes"))
    if not budget_holds_sequences(best.use_dynamic_bsz, best.token_budget, best.cp, seq,
                                  published_budget_tokens(model)):
        out.append(("budget-two-sequences", f"token budget {best.token_budget}·CP{best.cp} for {seq}-token sequences"))
    if not leaves_spare([p.gib for p in best.memory], best.limit_gib):
        worst = max(best.memory, key=lambda p: p.gib)
        out.append(("memory-spare", f"{worst.phase} {worst.gib:.1f} of {best.limit_gib:.1f} GiB usable"))
    if best.pp > 1 and best.score is not None:
        shallower = []
        for pp in sorted({1, 2, 4, 8} & set(range(1, best.pp))):
            other = planner(model, gpus, algo, pins=Pins(pp=pp)).best
            if other is not None and other.fits and other.score is not None and other.pp == pp:
                shallower.append((pp, other.score.total_s))
        setting = Setting(gpus=gpus, gpus_per_node=per_node, gpu=spec, prompt_len=plan.prompt_len,
                          response_len=plan.response_len, n=plan.n, algo=algo, train_batch_size=0, mini=0)
        # the band's reference is the planner's: the fastest layout it sized, not only the 5 it shows
        fastest = plan.band_reference_s
        if not pp_is_shallowest(best.pp, fastest, shallower, practice_marks(model, best, setting)[1]):
            out.append(("shallowest-pp", f"PP{best.pp} where PP{min(shallower)[0]} fits within the step band"))
    off = best.offload
    for flag, on in (("param", off.param), ("optimizer", off.optimizer), ("cpu_optimizer", off.cpu_optimizer),
                     ("recompute", best.recompute)):
        if not on:
            continue
        lighter = {"param": off._replace(param=False, grad=False), "optimizer": off._replace(optimizer=False),
                   "cpu_optimizer": off._replace(cpu_optimizer=False, cpu_optimizer_fraction=0.0),
                   "recompute": off}[flag]
        other = planner(model, gpus, algo, evaluate=True,
                         pins=Pins(**layout_pins(best), offload=lighter,
                                   recompute=False if flag == "recompute" else best.recompute)).best
        fits_with_less = (other is not None and other.fits and other.score is not None and best.score is not None
                          and leaves_spare([p.gib for p in other.memory], other.limit_gib)
                          and other.gpu_memory_utilization >= min(0.5, best.gpu_memory_utilization)
                          and within_step_band(best.score.total_s, other.score.total_s))
        if not relief_is_needed(True, fits_with_less):
            out.append(("relief-when-needed", f"{flag} on {describe_layout(best)}, which fits without it"))
    return out


def matrix_part() -> int:
    print("\n2. the recipe matrix against the practice rules (generator/plan/practice.py)")
    by_rule: dict[str, list[str]] = defaultdict(list)
    recipes = 0
    for model, gpus in matrix():
        for algo in ALGORITHMS:
            recipes += 1
            for rule, why in check(model, gpus, algo):
                by_rule[rule].append(f"{model.name}/{gpus} {algo}: {why}")
    total = 0
    for rule in RULES:
        found = by_rule.get(rule, [])
        total += len(found)
        print(f"{rule:22} {len(found):4} violations")
        for line in found:
            print(f"    {line}")
    print(f"{recipes} recipes ({len(matrix())} model x GPU pairs x {len(ALGORITHMS)} algorithms), "
          f"{total} violations")
    return total


def holdout_part() -> int:
    """The hold-out matrix (bench/practice_holdout.py): models, GPU counts, GPU types and workloads
    the recipe matrix does not have, by the same rules; and `gen plan` against `gen recipe`."""
    from generator.model import resolve_model
    from practice_holdout import CASES, plan_cli_layout, recipe_layout, signature

    print("\n3. the hold-out matrix (models the library does not package, bench/holdout_models/) against "
          "the same rules, and gen plan against gen recipe")
    by_rule: dict[str, list[str]] = defaultdict(list)
    for case in CASES:
        model = resolve_model(case.path)
        lengths = case.lengths(model.max_position_embeddings)
        recipe, refused = recipe_layout(case)
        if recipe is None:
            by_rule["refused"].append(f"{case.text()}: {refused}")
            continue
        try:
            found = check(model, case.gpus, case.algo, gpu=case.gpu, lengths=lengths)
        except Exception as err:  # a crash is a finding of the benchmark, not its end
            by_rule["crash"].append(f"{case.text()}: {type(err).__name__}: {err}")
            continue
        for rule, why in found:
            by_rule[rule].append(f"{case.text()}: {why}")
        planned = plan_for(model, case.gpus, case.algo, gpu=case.gpu, lengths=lengths, top=5).best
        if planned is not None and signature(layout_fields(planned)) != recipe:
            by_rule["bench-is-recipe"].append(f"{case.text()}: the benchmark's plan {signature(layout_fields(planned))}"
                                              f", gen recipe {recipe}")
        plan_cli, error = plan_cli_layout(case)
        if plan_cli != recipe:
            by_rule["plan-is-recipe"].append(f"{case.text()}: gen plan {plan_cli or error}, gen recipe {recipe}")
    total = 0
    for rule in (*RULES, "plan-is-recipe", "bench-is-recipe", "refused", "crash"):
        found = by_rule.get(rule, [])
        total += len(found)
        print(f"{rule:22} {len(found):4} violations")
        for line in found:
            print(f"    {line}")
    print(f"{len(CASES)} hold-out recipes ({len({c.model for c in CASES})} models), {total} violations")
    return total


def layout_fields(c: Candidate) -> dict[str, Any]:
    return {k: getattr(c, k) for k in ("tp", "pp", "vpp", "cp", "ep", "etp", "first_stage_layers",
                                       "last_stage_layers", "rollout_tp")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", action="store_true", help="only the published layouts")
    parser.add_argument("--matrix", nargs="?", const="library", choices=("library", "holdout"),
                        help="only a recipe matrix: the library's (default) or the hold-out one")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    both = not (args.layouts or args.matrix)
    bad = 0
    if both or args.layouts:
        bad += layouts_part()
    if both or args.matrix == "library":
        bad += matrix_part()
    if args.matrix == "holdout":
        bad += holdout_part()
    print(f"({time.perf_counter() - start:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
