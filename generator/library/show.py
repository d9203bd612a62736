"""What `gen list` and `gen show NAME` print about recipes (data only; view.py draws it)."""

from __future__ import annotations

from typing import Sequence

from generator.library.recipe import Recipe


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
        tags = [t for t in r.tags if t != "verl-tested"]
        rows.append([
            r.name, r.model, r.algorithm, gpus_text(r), layout_text(r),
            ",".join(r.verl_versions), ",".join(tags[:4]) + ("…" if len(tags) > 4 else ""),
        ])
    return headers, rows
