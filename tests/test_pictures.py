"""Issue 36, item 6: pictures a person reads - the layout on the GPUs (Megatron's rank order, the
rollout replicas), the candidates side by side with verl's layout, the recipe catalog page and
one colour per term group - each checked in headless Chromium: labels inside the picture, the
catalog's filter driven by typing and key presses."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chromium import Page, browser_or_skip, label_problems

from generator.cli import app
from generator.library.store import load_library
from generator.plan.memory import TERM_ORDER
from generator.report.catalog import catalog_page, entry
from generator.report.charts import svg_chart, terminal_bars
from generator.report.layout_chart import Shape, layout_svg, placements
from generator.report.palette import LIMIT_COLOUR, OVER_FILL, group_of, term_colour
from generator.base.resources import recipes_dir

SVG = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Term:
    name: str
    gib: float


@dataclass(frozen=True)
class Phase:
    phase: str
    gib: float
    terms: tuple[Term, ...]


# --- the rank order ---------------------------------------------------------------------------------


def _groups(cells, same) -> list[list[int]]:
    """Ranks grouped by the key `same` gives each placement (ranks in a group sorted)."""
    out: dict[object, list[int]] = {}
    for p in cells:
        out.setdefault(same(p), []).append(p.rank)
    return sorted(out.values())


def test_rank_order_is_megatrons():
    """Megatron-core's own example (parallel_state.initialize_model_parallel's docstring, 16 GPUs,
    TP 2, PP 4): TP groups [0,1],[2,3]..; DP groups [0,2],[1,3],[4,6]..; PP groups [0,4,8,12].."""
    cells = placements(Shape(gpus=16, gpus_per_node=8, tp=2, pp=4))
    assert _groups(cells, lambda p: (p.pp, p.dp)) == [[2 * i, 2 * i + 1] for i in range(8)]
    assert _groups(cells, lambda p: (p.pp, p.tp)) == sorted([[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11],
                                                            [12, 14], [13, 15]])
    assert _groups(cells, lambda p: (p.tp, p.dp)) == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14],
                                                      [3, 7, 11, 15]]


def test_cp_sits_between_tp_and_dp_and_ep_is_carved_from_dp():
    cells = placements(Shape(gpus=16, gpus_per_node=8, tp=2, cp=2, pp=2, ep=4, etp=1))
    assert len(cells) == 16  # EP adds no GPUs
    assert _groups(cells, lambda p: (p.pp, p.dp, p.tp)) == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11],
                                                            [12, 14], [13, 15]]  # CP groups: stride TP
    # Expert groups (ETP 1): EP is the fastest expert digit, inside one pipeline stage.
    ep_groups = _groups(cells, lambda p: (p.pp, p.edp))
    assert ep_groups == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert all(len({cells[r].pp for r in group}) == 1 for group in ep_groups)


def test_rollout_replicas_are_consecutive_ranks():
    cells = placements(Shape(gpus=16, gpus_per_node=8, tp=4, pp=2, rollout_tp=4))
    assert _groups(cells, lambda p: p.replica) == [list(range(i, i + 4)) for i in range(0, 16, 4)]


# --- the layout picture ------------------------------------------------------------------------------


def test_layout_picture_labels_every_gpu_inside_it(tmp_path):
    shape = Shape(gpus=16, gpus_per_node=8, tp=2, pp=2, ep=4, rollout_tp=4)
    svg = layout_svg(shape, title="Qwen3-30B-A3B on 16 x h100, " + shape.text())
    root = ElementTree.fromstring(svg)
    gpus = [g for g in root.iter(f"{SVG}g") if g.get("class") == "gpu"]
    assert [int(g.get("data-rank")) for g in gpus] == list(range(16))
    assert [g.get("data-replica") for g in gpus][:8] == ["0"] * 4 + ["1"] * 4
    browser = browser_or_skip()
    count, problems, texts = label_problems(browser, svg, tmp_path)
    assert count > 16 * 4 and problems == []
    for label in ("node 0", "node 1", "GPU 7 · rank 15", "PP stage 1", "TP 1 · DP 3", "EP 3 · EDP 0", "rollout 3",
                  "16 GPUs = 2 nodes x 8 · TP2 PP2 DP4 EP4 · rollout TP4 x 4 replicas", "rollout TP 3"):
        assert label in texts, label


def test_rollout_replicas_are_tp_times_dp_with_experts_over_the_whole_replica(tmp_path):
    """verl v0.9.0 (verl/workers/rollout/replica.py): a replica is one server on TP·DP·PP
    consecutive ranks; vLLM's DP engine d holds TP ranks [d·TP, (d+1)·TP); rollout EP must equal
    TP·DP (verl/workers/config/rollout.py). 16 GPUs, rollout TP 2 x DP 2, EP 4: 4 replicas of 4."""
    shape = Shape(gpus=16, gpus_per_node=8, tp=4, pp=2, ep=2, rollout_tp=2, rollout_dp=2, rollout_ep=4)
    cells = placements(shape)
    assert _groups(cells, lambda p: p.replica) == [list(range(i, i + 4)) for i in range(0, 16, 4)]
    assert _groups(cells, lambda p: (p.replica, p.rollout_dp)) == [[i, i + 1] for i in range(0, 16, 2)]
    assert [p.rollout_ep for p in cells[:8]] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert shape.text().endswith("· rollout TP2 DP2 EP4 x 4 replicas")
    svg = layout_svg(shape, title="Qwen3-30B-A3B on 16 x h100, " + shape.text())
    root = ElementTree.fromstring(svg)
    bands = [(r.get("data-replica"), r.get("data-rollout-dp")) for r in root.iter(f"{SVG}rect")
             if r.get("class") == "replica"]
    assert bands == [(str(k), str(d)) for k in range(4) for d in range(2)]  # a segment per engine
    browser = browser_or_skip()
    count, problems, texts = label_problems(browser, svg, tmp_path)
    assert problems == [], problems
    for label in ("rollout 0 · DP 0", "rollout 0 · DP 1", "rollout 3 · DP 1", "rollout TP 1 · DP 1",
                  "rollout EP 3", "16 GPUs = 2 nodes x 8 · TP4 PP2 DP2 EP2 · rollout TP2 DP2 EP4 x 4 replicas",
                  "rollout replica: one server on 4 GPUs, rollout TP 2 x DP 2; its experts over all 4 (EP 4)"):
        assert label in texts, (label, sorted(t for t in texts if "rollout" in t))
    assert "rollout EP 0" in texts and not any("· DP 2" in t for t in texts)  # 2 engines a replica, not more


def test_a_library_recipe_that_sets_rollout_dp_and_ep_is_drawn_with_them():
    from dataclasses import replace

    base = load_library(None).get("verl-qwen3-30b-a3b-grpo-tp2ep8-8gpu")
    overrides = {**base.config.overrides, "actor_rollout_ref.rollout.data_parallel_size": 4,
                 "actor_rollout_ref.rollout.expert_parallel_size": 8}
    recipe = replace(base, config=replace(base.config, rollout_tp=2, overrides=overrides))
    shown = entry(recipe)
    assert shown.rollout == "rollout TP2 DP4 EP8 x 1 replica"
    assert "rollout 0 · DP 3" in shown.layout_svg and "rollout EP 7" in shown.layout_svg


def test_a_large_cluster_is_drawn_in_part_and_says_so(tmp_path):
    svg = layout_svg(Shape(gpus=256, gpus_per_node=8, tp=8, pp=16, ep=16, etp=1, rollout_tp=32), title="DeepSeek-V3")
    root = ElementTree.fromstring(svg)
    assert len([g for g in root.iter(f"{SVG}g") if g.get("class") == "gpu"]) == 16 * 8
    assert any("16 more nodes, ranks 128-255" in (t.text or "") for t in root.iter(f"{SVG}text"))


# --- one colour per term group ------------------------------------------------------------------------


def test_the_actor_weights_are_one_colour_in_every_phase():
    """Issue 36: `weights` (update) was blue and `actor-weights` (rollout) grey."""
    phases = (Phase("update", 30.0, (Term("weights", 10.0), Term("grads", 20.0))),
              Phase("rollout", 40.0, (Term("kv-cache", 30.0), Term("actor-weights", 10.0))))
    root = ElementTree.fromstring(svg_chart(phases, 80.0))
    fills = {r.get("data-term"): r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("class") == "term"}
    assert fills["weights"] == fills["actor-weights"] == term_colour("weights")
    # drawn first in both bars, so the colour is in one place in each
    first = [r.get("data-term") for r in root.iter(f"{SVG}rect") if r.get("class") == "term"]
    assert first[0] == "weights" and first[2] == "actor-weights"
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert legend == ["actor weights", "gradients", "KV cache"]
    coloured = terminal_bars(phases, 80.0, color=True)
    assert f"[{term_colour('weights')}]█[/]" in coloured[0] and f"[{term_colour('weights')}]█[/]" in coloured[1]
    assert len({group_of(t)[1] for t in TERM_ORDER}) <= 9  # the legend stays short


def test_a_groups_letter_is_fixed_whatever_else_the_chart_holds():
    """Piped bars name a group by one letter; `c` is the activations even in a chart without the
    actor weights (whose `a` would otherwise be free for them)."""
    lines = terminal_bars((Phase("log_prob", 20.0, (Term("logits", 5.0), Term("activations", 15.0))),), 80.0)
    assert "c=activations" in lines[-1] and "[ccccccccc" in lines[0]


def test_a_bar_over_the_limit_is_highlighted(tmp_path):
    phases = (Phase("update", 30.0, (Term("weights", 30.0),)), Phase("rollout", 95.0, (Term("kv-cache", 95.0),)))
    svg = svg_chart(phases, 80.0)
    root = ElementTree.fromstring(svg)
    washed = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "over"]
    assert [r.get("data-phase") for r in washed] == ["rollout"] and washed[0].get("fill") == OVER_FILL
    values = {t.text: t.get("fill") for t in root.iter(f"{SVG}text") if t.get("class") == "value"}
    assert values == {"30.0 GiB fits": None, "95.0 GiB over by 15.0": LIMIT_COLOUR}
    assert "[bold #D62728]over by 15.0[/]" in terminal_bars(phases, 80.0, color=True)[1]
    from test_charts import _rgb, _screenshot, near

    browser = browser_or_skip()
    page = tmp_path / "over.svg"
    page.write_text(svg)
    pixel = _screenshot(browser, page, svg, tmp_path)
    rect = washed[0]
    assert near(pixel(float(rect.get("x")) + 2, float(rect.get("y")) + 2), _rgb(OVER_FILL))


# --- gen plan --chart, gen recipe --chart ---------------------------------------------------------------


def test_plan_chart_shows_the_layout_the_candidates_and_verls(tmp_path):
    target = tmp_path / "plan.html"
    result = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--chart", str(target)])
    assert result.exit_code == 0, result.output
    page = target.read_text()
    assert page.count("<svg") == 3 and "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    rows = re.findall(r'class="candidate" data-row="\d+" data-chosen="(\w+)" data-verl="([^"]*)"', page)
    assert len(rows) >= 3 and [c for c, _ in rows].count("true") == 1
    assert any(verl.startswith("run_qwen2-7b") for _, verl in rows)  # verl's layout among them
    titles = re.findall(r'<text class="title"[^>]*>([^<]*)</text>', page)
    assert all(t.startswith("Qwen2-7B on 8 x h100") for t in titles) and len(titles) == 3
    assert re.search(r"TP\d PP\d DP\d · rollout TP\d x \d replicas?: the chosen layout", titles[0])
    browser = browser_or_skip()
    count, problems, texts = label_problems(browser, page, tmp_path)
    assert count > 50 and problems == []
    assert "step time (s, estimated)" in texts and "peak memory per GPU by phase (GiB)" in texts
    assert any(t.endswith("(chosen)") or "(chosen," in t for t in texts)


def test_recipe_chart_and_its_refusal_before_any_write(tmp_path):
    script, chart = tmp_path / "run.sh", tmp_path / "pictures.svg"
    args = ["recipe", "--model", "qwen2-7b", "--gpus", "8", "-o", str(script), "--chart", str(chart)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    root = ElementTree.fromstring(chart.read_text())
    classes = {e.get("class") for e in root.iter(f"{SVG}svg")}
    assert "layout" in classes and any(r.get("class") == "term" for r in root.iter(f"{SVG}rect"))
    script.unlink()
    again = CliRunner().invoke(app, args)  # the chart exists: refused before the script is written
    assert again.exit_code == 2 and "exists; pass --force" in again.output and not script.exists()
    browser = browser_or_skip()
    count, problems, _ = label_problems(browser, chart.read_text(), tmp_path)
    assert count > 20 and problems == []


# --- the catalog page ------------------------------------------------------------------------------------


HOSTILE = """name: hostile
model: qwen2-7b
algorithm: grpo
gpus: 8
gpu: h100
description: 'a <script>alert(1)</script> "quoted" & <b>bold</b> recipe'
tags: ['<img src=x onerror=alert(2)>']
"""


def _user_recipe(folder: Path) -> Path:
    minimal = (recipes_dir() / "verl-qwen2-7b-grpo-8gpu.yaml").read_text()
    lines = [line for line in minimal.splitlines() if not line.startswith(("name:", "description:", "tags:"))]
    folder.mkdir()
    head = "\n".join(line for line in HOSTILE.splitlines() if line.startswith(("name:", "description:", "tags:")))
    (folder / "hostile.yaml").write_text(head + "\n" + "\n".join(lines) + "\n")
    return folder


def test_catalog_escapes_every_recipe_string(tmp_path):
    library = _user_recipe(tmp_path / "lib")
    out = tmp_path / "site"
    result = CliRunner().invoke(app, ["list", "--library", str(library), "--model", "qwen2-7b", "--html", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "index.html").read_text()
    assert page.count("<script") == 1  # the page's own filter; the recipe's text is escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<img" not in page and "<b>bold" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<link" not in page  # offline: nothing fetched
    again = CliRunner().invoke(app, ["list", "--library", str(library), "--model", "qwen2-7b", "--html", str(out)])
    assert again.exit_code == 2 and "pass --force" in again.output
    assert (out / "index.html").read_text() == page  # untouched
    blocker = tmp_path / "file"
    blocker.write_text("x")
    refused = CliRunner().invoke(app, ["list", "--html", str(blocker)])
    assert refused.exit_code == 2 and "not a folder" in refused.output and blocker.read_text() == "x"


PART = "qwen2.5"  # a third of the library, four GPU counts: quick to build, enough to filter


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("catalog")
    result = CliRunner().invoke(app, ["list", "--model", PART, "--html", str(folder)])
    assert result.exit_code == 0, result.output
    return folder / "index.html"


VISIBLE = "[...document.querySelectorAll('tr.recipe')].filter(r => !r.hidden)"


def test_catalog_filter_typed_and_selected_in_the_browser(catalog, tmp_path):
    browser = browser_or_skip()
    recipes = load_library(None).search(model=PART)
    with Page(browser, catalog.as_uri(), tmp_path / "profile") as page:
        assert page.evaluate(f"{VISIBLE}.length") == len(recipes)
        page.evaluate("document.getElementById('f-text').focus()")
        page.type_text("72b")
        names = page.evaluate(f"{VISIBLE}.map(r => r.querySelector('td.name').textContent)")
        assert 0 < len(names) < len(recipes)
        assert {r.name for r in recipes if r.model == "Qwen2.5-72B"} <= set(names)
        hidden = page.evaluate("[...document.querySelectorAll('tr.recipe')].filter(r => r.hidden)"
                               ".map(r => r.dataset.search)")
        assert hidden and not any("72b" in text for text in hidden)
        assert page.evaluate("document.getElementById('shown').textContent") == f"{len(names)} of {len(recipes)} recipes"
        page.evaluate("document.getElementById('f-text').select()")
        page.press("Backspace", 8)  # the text filter cleared, as a user would
        assert page.evaluate(f"{VISIBLE}.length") == len(recipes)
        page.evaluate("document.getElementById('f-gpus').focus()")
        page.press("ArrowDown", 40)  # the first GPU count in the list
        chosen = page.evaluate("document.getElementById('f-gpus').value")
        expected = sorted(r.name for r in recipes if str(r.gpus) == chosen)
        shown = sorted(page.evaluate(f"{VISIBLE}.map(r => r.querySelector('td.name').textContent)"))
        assert chosen and shown == expected and 0 < len(shown) < len(recipes)
        hidden_details = page.evaluate("[...document.querySelectorAll('tr.detail')].filter(r => r.hidden).length")
        assert hidden_details == len(recipes) - len(shown)


def test_catalog_entry_pictures_keep_their_labels_inside(tmp_path):
    browser = browser_or_skip()
    lib = load_library(None)
    picked = [lib.get("verl-deepseek-v3-grpo-128xh20"), lib.get("verl-qwen2-7b-grpo-8gpu")]
    page = catalog_page([entry(r) for r in picked])
    count, problems, texts = label_problems(browser, page, tmp_path)
    assert count > 200 and problems == []
    assert "DeepSeek-V3 on 128 x h20, TP8 PP16 DP1 EP8 ETP1 · rollout TP32 x 4 replicas: the layout" in texts


@pytest.mark.slow
def test_the_whole_library_has_a_row_a_picture_and_a_script_per_recipe(tmp_path):
    result = CliRunner().invoke(app, ["list", "--html", str(tmp_path)])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "index.html").read_text()
    recipes = load_library(None).search()
    assert page.count('<tr class="recipe') == len(recipes) == page.count('<svg xmlns="http://www.w3.org/2000/svg" '
                                                                          'class="layout"')
    assert page.count("# not rendered:") == 0 and page.count("<pre><code>#!") == len(recipes)
