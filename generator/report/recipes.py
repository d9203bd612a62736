"""What `gen list` and `gen show NAME` print about recipes: table rows and titled sections
(report/tables.py draws them)."""

from __future__ import annotations

from typing import Any, Sequence, TextIO

from generator.library.recipe_format import Recipe


def layout_text(recipe: Recipe) -> str:
    lay = recipe.config.layout
    parts = [f"TP{lay.tp}", f"PP{lay.pp}"]
    if lay.vpp:
        parts.append(f"VPP{lay.vpp}")
    if lay.cp > 1:
        parts.append(f"CP{lay.cp}")
    if lay.ep > 1:
        parts.append(f"EP{lay.ep}")
    if lay.etp is not None and lay.ep > 1:
        parts.append(f"ETP{lay.etp}")
    return " ".join(parts)


def gpus_text(recipe: Recipe) -> str:
    if recipe.nodes > 1:
        return f"{recipe.nodes}x{recipe.gpus_per_node} {recipe.gpu}"
    return f"{recipe.gpus} {recipe.gpu}"


def list_rows(recipes: Sequence[Recipe]) -> tuple[list[str], list[list[str]]]:
    headers = ["NAME", "MODEL", "ALGO", "GPUS", "LAYOUT", "VERL", "TAGS"]
    rows = []
    for r in recipes:
        # the name prefix already says verl-tested / planned
        tags = [t for t in r.tags if t not in ("verl-tested", "planned")]
        rows.append([
            r.name, r.model, r.runs, gpus_text(r), layout_text(r), versions_text(r.verl_versions),
            ",".join(tags),
        ])
    return headers, rows


def versions_text(versions: Sequence[str]) -> str:
    """'0.6.0..0.7.0' for a run of releases, one release as is."""
    from generator.verl.versions import parse

    ordered = sorted(versions, key=parse)
    return ordered[0] if len(ordered) == 1 else f"{ordered[0]}..{ordered[-1]}"


def _offload_text(offload: dict[str, Any]) -> str:
    flags = [name for name in ("param", "grad", "optimizer") if offload[name]]
    text = "+".join(flags) if flags else "none"
    if offload["cpu_optimizer"]:
        text += f"; Megatron CPU optimizer (fraction {offload['cpu_optimizer_fraction']:g})"
    return text


def recipe_sections(recipe: Recipe, report: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The text view of recipe_report: titled blocks of (label, value)."""
    s = report["settings"]
    b = s["batch"]
    head = [
        ("model", recipe.model + (f" ({recipe.model_path})" if recipe.model_path else "")),
        ("algorithm", recipe.algorithm),
        ("GPUs", f"{recipe.gpus} = {recipe.nodes} node(s) x {recipe.gpus_per_node} {recipe.gpu}"),
        ("layout", layout_text(recipe)),
        ("rollout", f"{s['rollout']['name']} TP{s['rollout']['tp']}, n {s['rollout']['n']}, "
                    f"gpu_memory_utilization {s['rollout']['gpu_memory_utilization']:g}"),
        ("verl", ", ".join(recipe.verl_versions)),
        ("tags", ", ".join(recipe.tags) or "-"),
    ]
    if recipe.description:
        head.append(("about", recipe.description))
    if recipe.provenance:
        head.append(("source", recipe.provenance))
    head.append(("file", f"{recipe.path} ({recipe.origin})" if recipe.path else recipe.origin))
    head.append(("render", f"gen recipe {recipe.name} -o run.sh   (--gpus N re-plans for another count)"))
    batch = [
        ("train_batch_size", f"{b['train_batch_size']} prompts"),
        ("ppo_mini_batch_size", f"{b['ppo_mini_batch_size']} prompts"),
        ("micro batch / GPU", f"{b['micro_batch_per_gpu']} (log-prob {b['log_prob_micro_batch_per_gpu'] or '-'})"),
        ("dynamic bsz", f"on, {b['token_budget']} tokens (log-prob {b['log_prob_token_budget'] or b['token_budget']})"
                        if b["use_dynamic_bsz"] else "off"),
        ("prompt / response", f"{s['lengths']['prompt']} / {s['lengths']['response']} tokens"),
        ("offload", _offload_text(s["offload"])),
        ("recompute", "full (uniform, 1 layer)" if s["recompute"] else "none"),
    ]
    for key, value in s["overrides"].items():
        batch.append((key, str(value)))
    sections = [(recipe.name, head), ("settings", batch)]
    if report["derived"]:
        sections.append(("derived numbers", [(name, str(value)) for name, value in report["derived"].items()]))
    if report["memory"]:
        limit = report["memory"]["limit_gib"]
        rows = []
        for phase in report["memory"]["phases"]:
            top = sorted(phase["terms"], key=lambda t: -t["gib"])[:3]
            detail = ", ".join(f"{t['name']} {t['gib']:g}" for t in top)
            verdict = "fits" if phase["fits"] else f"OVER by {phase['gib'] - limit:.1f} GiB"
            rows.append((phase["phase"], f"{phase['gib']:.1f} GiB of {limit:g} usable - {verdict} ({detail})"))
        if any(not p["fits"] for p in report["memory"]["phases"]):
            rows.append(("note", f"predicted over: `gen recipe {recipe.name}` renders it only with --force"))
        sections.append(("predicted memory per GPU (worst pipeline stage)", rows))
    if report["problems"]:
        sections.append(("problems", [("error", p) for p in report["problems"]]))
    return sections


def show_recipe(name: str, *, library: str | None = None, output_format: str = "text", stream: TextIO | None = None) -> None:
    """`gen show NAME`: print a recipe (text or json). Raises InputError for an unknown name."""
    import sys

    from generator.library.recipe_report import recipe_report
    from generator.library.store import load_library
    from generator.report.tables import print_sections

    recipe = load_library(library).get(name)
    report = recipe_report(recipe)
    stream = stream or sys.stdout
    if output_format == "json":
        from generator.report.documents import dumps

        stream.write(dumps(report))
        return
    print_sections(recipe_sections(recipe, report), stream=stream)
