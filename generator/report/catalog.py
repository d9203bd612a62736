"""`gen list --html DIR`: the recipe library as one static page, DIR/index.html.

A table of the recipes (name, model, algorithm, GPUs, layout, release, verdict), filtered in the
page by model, GPU count, algorithm, release and free text; under each row, folded, its layout
picture, its memory per phase, its verdict and description, and the script `gen recipe NAME`
writes. One file, everything inline (its CSS, its few lines of script, the SVGs): it works from
the disk, offline. Every string that comes from a recipe (a user's library is the user's text)
is HTML-escaped; the script reads the rows' data attributes only and writes numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from generator.base.safe_text import html_text as escape
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from generator.library.recipe_format import Recipe

PAGE_NAME = "index.html"

_STYLE = """
body{margin:12px;font-family:sans-serif;font-size:14px;color:#222}
h1{font-size:20px;margin:0 0 8px}
.filters{display:flex;gap:12px;flex-wrap:wrap;align-items:end;margin:8px 0 12px}
.filters label{display:flex;flex-direction:column;font-size:12px;color:#555}
table.recipes{border-collapse:collapse;width:100%}
table.recipes th,table.recipes td{padding:4px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
tr.recipe.over td.verdict{color:#D62728;font-weight:bold}
tr.detail td{background:#fafafa}
pre{background:#f4f4f4;padding:8px;overflow:auto;max-height:480px;font-size:12px}
.svgbox{overflow:auto}
"""

# The filter: a row shows when every filter agrees with its data attributes.
_SCRIPT = """
(function () {
  var ids = ['f-model', 'f-gpus', 'f-algo', 'f-release', 'f-text'];
  var f = {};
  ids.forEach(function (id) { f[id] = document.getElementById(id); });
  var rows = Array.prototype.slice.call(document.querySelectorAll('tr.recipe'));
  function apply() {
    var text = f['f-text'].value.trim().toLowerCase(), shown = 0;
    rows.forEach(function (row) {
      var d = row.dataset;
      var ok = (!f['f-model'].value || d.model === f['f-model'].value)
        && (!f['f-gpus'].value || d.gpus === f['f-gpus'].value)
        && (!f['f-algo'].value || d.algo === f['f-algo'].value)
        && (!f['f-release'].value || d.releases.split(' ').indexOf(f['f-release'].value) >= 0)
        && (!text || d.search.indexOf(text) >= 0);
      row.hidden = !ok;
      document.getElementById('detail-' + d.index).hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.getElementById('shown').textContent = shown + ' of ' + rows.length + ' recipes';
  }
  ids.forEach(function (id) { f[id].addEventListener('input', apply); f[id].addEventListener('change', apply); });
  apply();
})();
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """One recipe as the page shows it (gathered by `entry`, drawn by `catalog_page`)."""

    recipe: Recipe
    layout: str  # "TP2 PP1 ..."
    rollout: str  # "rollout TP2 x 4 replicas"
    verdict: str
    fits: bool | None
    layout_svg: str
    memory_svg: str
    script: str  # the script `gen recipe NAME` writes, or why it cannot be written


def _rollout_size(recipe: Recipe, key: str) -> int:
    """rollout.data_parallel_size / expert_parallel_size as the recipe's overrides set it (the
    recipe format has no field of its own for them); 1, verl's default, otherwise."""
    value = recipe.config.overrides.get(f"actor_rollout_ref.rollout.{key}")
    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= recipe.gpus else 1


def entry(recipe: Recipe) -> Entry:
    """The recipe's pictures, verdict and script (what cannot be computed is said, not skipped)."""
    from generator.base.errors import InputError
    from generator.library.convert import recipe_memory, to_spec
    from generator.library.verdict import recipe_verdict
    from generator.plan.enumeration import describe_layout
    from generator.render import default_filename, generate
    from generator.report.charts import ChartSection, stacked_svg
    from generator.report.layout_chart import Shape, layout_svg
    from generator.report.pictures import heading

    lay = recipe.config.layout
    shape = Shape(gpus=recipe.gpus, gpus_per_node=recipe.gpus_per_node, tp=lay.tp, pp=lay.pp, cp=lay.cp,
                  ep=lay.ep, etp=lay.etp, rollout_tp=recipe.config.rollout_tp,
                  rollout_dp=_rollout_size(recipe, "data_parallel_size"),
                  rollout_ep=_rollout_size(recipe, "expert_parallel_size"))
    head = heading(recipe.model, recipe.gpus, recipe.gpu, shape)
    try:
        phases, limit = recipe_memory(recipe)
        memory = stacked_svg([ChartSection(f"{head}: memory per GPU by phase", phases, limit)])
    except InputError as err:
        memory = f"<p>memory not evaluated: {escape(str(err))}</p>"
    found = recipe_verdict(recipe)
    try:
        spec = to_spec(recipe).spec
        script = generate(spec, filename=default_filename(spec)).text
    except InputError as err:
        script = f"# not rendered: {err}\n"
    return Entry(recipe, describe_layout(lay), shape.rollout_text(), found.text() if found else "memory not evaluated",
                 None if found is None else found.fits, layout_svg(shape, title=f"{head}: the layout"), memory,
                 script)


def _options(element_id: str, label: str, values: Sequence[str]) -> str:
    options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
    return (f'<label for="{element_id}">{escape(label)}<select id="{element_id}">'
            f'<option value="">all</option>{options}</select></label>')


def _row(index: int, e: Entry) -> str:
    r = e.recipe
    releases = " ".join(r.verl_versions)
    search = " ".join([r.name, r.model, r.runs, r.gpu, e.layout, releases, *r.tags, r.description]).lower()
    over = " over" if e.fits is False else ""
    attrs = (f'data-index="{index}" data-model="{escape(r.model)}" data-gpus="{r.gpus}" '
             f'data-algo="{escape(r.runs)}" data-releases="{escape(releases)}" data-search="{escape(search)}"')
    cells = [r.name, r.model, r.runs, f"{r.nodes} x {r.gpus_per_node} {r.gpu}", f"{e.layout} · {e.rollout}", ", ".join(r.verl_versions), e.verdict]
    classes = ["name", "model", "algo", "gpus", "layout", "releases", "verdict"]
    tds = "".join(f'<td class="{c}">{escape(v)}</td>' for c, v in zip(classes, cells))
    tags = f"<p>tags: {escape(', '.join(r.tags))}</p>" if r.tags else ""
    about = f"<p>{escape(r.description)}</p>" if r.description else ""
    source = f"<p>source: {escape(r.provenance)}</p>" if r.provenance else ""
    detail = (f'<tr class="detail" id="detail-{index}"><td colspan="{len(cells)}"><details>'
              f"<summary>{escape(r.name)}: layout, memory, verdict and script</summary>"
              f'<p class="verdict">{escape(e.verdict)}</p>{about}{tags}{source}'
              f'<div class="svgbox">{e.layout_svg}</div><div class="svgbox">{e.memory_svg}</div>'
              f"<p>gen recipe {escape(r.name)}:</p><pre><code>{escape(e.script)}</code></pre>"
              "</details></td></tr>")
    return f'<tr class="recipe{over}" {attrs}>{tds}</tr>\n{detail}\n'


def catalog_page(entries: Sequence[Entry], *, title: str = "verl-gen recipe library") -> str:
    """The whole page (see the module's doc)."""
    from generator.verl.versions import parse

    recipes = [e.recipe for e in entries]
    models = sorted({r.model for r in recipes})
    gpus = [str(n) for n in sorted({r.gpus for r in recipes})]
    algos = sorted({r.runs for r in recipes})
    releases = sorted({v for r in recipes for v in r.verl_versions}, key=parse, reverse=True)
    filters = (_options("f-model", "model", models) + _options("f-gpus", "GPUs", gpus)
               + _options("f-algo", "algorithm", algos) + _options("f-release", "verl release", releases)
               + '<label for="f-text">search<input id="f-text" type="search" placeholder="name, tag, layout">'
               "</label>")
    head = "".join(f"<th>{h}</th>" for h in ("recipe", "model", "algorithm", "GPUs", "layout", "verl", "verdict"))
    rows = "".join(_row(i, e) for i, e in enumerate(entries))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            f"<h1>{escape(title)}</h1>\n<div class=\"filters\">{filters}"
            f'<span id="shown">{len(entries)} recipes</span></div>\n'
            f'<table class="recipes"><thead><tr>{head}</tr></thead><tbody>\n{rows}</tbody></table>\n'
            f"<script>{_SCRIPT}</script>\n</body></html>\n")


def write_catalog(folder: str, recipes: Sequence[Recipe], *, force: bool = False) -> str:
    """Write DIR/index.html (DIR made when missing, not its parents); the page's path. All or
    nothing: the page is built whole before the one atomic write (generator.base.files.write_atomic)."""
    import os

    from generator.base.errors import InputError
    from generator.base.files import write_atomic

    if os.path.islink(folder):
        raise InputError(f"--html {folder}: is a symbolic link; nothing written (name the folder itself)")
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise InputError(f"--html {folder}: exists and is not a folder; nothing written")
    target = os.path.join(folder, PAGE_NAME)
    if not force and os.path.lexists(target):
        raise InputError(f"--html {folder}: {PAGE_NAME} exists; pass --force to overwrite it")
    text = catalog_page([entry(r) for r in recipes])  # whole before anything is made
    if not os.path.isdir(folder):
        try:
            os.mkdir(folder)
        except OSError as err:
            raise InputError(f"--html {folder}: cannot make the folder ({err.strerror}); nothing written") from None
    write_atomic(target, text, replace=force)
    return target


__all__ = ["Entry", "PAGE_NAME", "catalog_page", "entry", "write_catalog"]
