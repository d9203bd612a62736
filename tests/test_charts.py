"""The memory picture (issue 14): terminal bars, the SVG/HTML chart, and what headless Chromium
draws from it; `gen plan` readable at 80 columns, plain when piped, honest NO_COLOR."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import zlib
from dataclasses import dataclass
from xml.etree import ElementTree

import pytest
from typer.testing import CliRunner

from chromium import browser_or_skip
from generator.cli import app
from generator.plan.memory import TERM_ORDER
from generator.report.charts import ChartSection, html_chart, stacked_svg, svg_chart, terminal_bars
from generator.report.palette import LIMIT_COLOUR, TERM_GROUPS, term_colour
from generator.base.safe_text import use_color


@dataclass(frozen=True)
class Term:
    name: str
    gib: float


@dataclass(frozen=True)
class Phase:
    phase: str
    gib: float
    terms: tuple[Term, ...]


PHASES = (
    Phase("update", 60.0, (Term("weights", 10.0), Term("grads", 20.0), Term("activations", 30.0))),
    Phase("rollout", 90.0, (Term("weights", 10.0), Term("kv-cache", 80.0))),
)
LIMIT = 80.0


# --- terminal ----------------------------------------------------------------------------------


def test_terminal_bars_are_proportional_and_mark_the_limit():
    lines = terminal_bars(PHASES, LIMIT, width=40)
    update, rollout = lines[0], lines[1]
    bar = update[update.index("[") + 1:update.index("]")]
    scale = 40 / (90 * 1.05)  # the widest of limit and peaks, plus 5 %
    assert bar.count("a") == round(10 * scale) and bar.count("g") == round(30 * scale) - round(10 * scale)
    assert bar.index("|") == round(LIMIT * scale)
    assert "!" in rollout and "over by 10.0" in rollout and "fits" in update
    assert all(line.isascii() for line in lines)
    # one letter per term group: a=actor weights, g=gradients, c=activations, k=KV cache
    assert "a=actor weights" in "\n".join(lines) and "k=KV cache" in "\n".join(lines)


def test_a_term_keeps_its_letter_and_colour_in_every_phase():
    lines = terminal_bars(PHASES, LIMIT, width=40)
    assert lines[1][lines[1].index("[") + 1] == "a"  # the actor weights again, same letter
    coloured = terminal_bars(PHASES, LIMIT, width=40, color=True)
    blue = term_colour("weights")

    def bar(line: str) -> str:
        return line[line.index("[") + 1:line.rindex("]")]

    assert coloured[0].count(f"[{blue}]█[/]") == bar(lines[0]).count("a") > 0
    assert coloured[1].count(f"[{blue}]█[/]") == bar(lines[1]).count("a") > 0


# --- SVG -----------------------------------------------------------------------------------------


def _rects(svg: str) -> list[ElementTree.Element]:
    root = ElementTree.fromstring(svg)
    return [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.get("class") == "term"]


def test_svg_segments_are_proportional_to_gib_and_coloured_per_term():
    rects = _rects(svg_chart(PHASES, LIMIT))
    assert [(r.get("data-phase"), r.get("data-term")) for r in rects] == [
        ("update", "weights"), ("update", "grads"), ("update", "activations"), ("rollout", "weights"),
        ("rollout", "kv-cache")]
    per_gib = {round(float(r.get("width")) / float(r.get("data-gib")), 3) for r in rects}
    assert len(per_gib) == 1
    fills = {r.get("data-term"): r.get("fill") for r in rects}
    assert fills == {name: term_colour(name) for name in ("weights", "grads", "activations", "kv-cache")}
    assert len(set(fills.values())) == 4


def test_a_term_has_one_colour_in_every_chart():
    """Issue 22: colours were assigned in order of appearance, so `kv-cache` changed colour
    between a chart that has `grads` and one that does not."""
    other = (Phase("rollout", 50.0, (Term("kv-cache", 30.0), Term("novel-term", 20.0))),)
    first = {r.get("data-term"): r.get("fill") for r in _rects(svg_chart(PHASES, LIMIT))}
    second = {r.get("data-term"): r.get("fill") for r in _rects(svg_chart(other, LIMIT))}
    assert first["kv-cache"] == second["kv-cache"]
    assert second["novel-term"] not in first.values() and second["novel-term"] != second["kv-cache"]
    grouped = [term for _, _, terms in TERM_GROUPS for term in terms]
    assert sorted(grouped) == sorted(TERM_ORDER)  # every term the memory model names is in exactly one group
    assert len({colour for _, colour, _ in TERM_GROUPS}) == len(TERM_GROUPS)
    coloured = [line for line in terminal_bars(other, LIMIT, color=True)]
    assert f"[{term_colour('grads')}]" not in coloured[0]  # kv-cache is not the second colour merely by coming second


def test_the_axis_has_ticks_in_gib():
    svg = svg_chart(PHASES, LIMIT)
    root = ElementTree.fromstring(svg)
    ticks = [e for e in root.iter("{http://www.w3.org/2000/svg}text") if e.get("class") == "tick"]
    values = [float(t.get("data-gib")) for t in ticks]
    assert values[0] == 0 and 4 <= len(values) <= 11 and values[-1] <= 90 * 1.05
    steps = {round(b - a, 6) for a, b in zip(values, values[1:])}
    assert len(steps) == 1 and steps.pop() in (10, 20)
    per_gib = {round((float(t.get("x")) - float(ticks[0].get("x"))) / v, 3) for t, v in zip(ticks[1:], values[1:])}
    rect = _rects(svg)[0]
    assert per_gib == {round(float(rect.get("width")) / float(rect.get("data-gib")), 3)}  # the bars' scale
    assert any(e.text == "GiB per GPU" for e in root.iter("{http://www.w3.org/2000/svg}text"))


def test_html_holds_the_chart_and_the_numbers():
    page = html_chart(PHASES, LIMIT, title="<t>")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "&lt;t&gt;" in page
    assert "<td>kv-cache</td><td>80.0</td>" in page


# --- gen plan -------------------------------------------------------------------------------------


def test_plan_text_fits_80_columns_and_is_plain_when_piped():
    result = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not any(ch in result.stdout for ch in "│┃─━┏┓┗┛╭╮╰╯┡┩")
    assert "\x1b" not in result.stdout
    assert any(line.lstrip().startswith("update [") for line in lines)


def test_plan_wide_is_one_row_per_candidate():
    result = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--wide", "--top", "3"])
    rows = [line for line in result.stdout.splitlines() if line[:1] in ("*", "1", "2")]
    assert len(rows) == 3 and all("micro" in row or "dyn" in row for row in rows)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_color_is_honest(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(_Tty()) is False
    monkeypatch.setenv("NO_COLOR", "")
    assert use_color(_Tty()) is True  # no-color.org: an empty value does not count
    assert use_color(io.StringIO()) is False


def test_plan_writes_the_chart(tmp_path):
    target = tmp_path / "memory.svg"
    result = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--chart", str(target)])
    assert result.exit_code == 0, result.output
    rects = _rects(target.read_text())
    assert {r.get("data-phase") for r in rects} >= {"update", "rollout"}
    bad = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--chart", str(tmp_path / "m.png")])
    assert bad.exit_code == 2 and "must end in .svg or .html" in bad.output


# --- what Chromium draws -----------------------------------------------------------------------------


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    idat = b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IDAT":
            idat += body
        else:
            chunks[kind] = body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and interlace == 0 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def _screenshot(browser: str, page, svg: str, tmp_path):
    """Chromium's picture of `page` (big enough for `svg`), as a function (x, y) → RGB."""
    root = ElementTree.fromstring(svg)
    width, height = int(root.get("width")), int(root.get("height"))
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1", f"--window-size={width},{height + 200}",
                    f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=False, env=dict(os.environ, HOME=str(tmp_path)))
    assert shot.exists(), "chromium wrote no screenshot"
    _w, _h, rows = _png_pixels(shot.read_bytes())
    bpp = len(rows[0]) // _w

    def pixel(x: float, y: float) -> tuple[int, int, int]:
        row = rows[int(y)]
        return tuple(row[int(x) * bpp:int(x) * bpp + 3])  # type: ignore[return-value]

    return pixel


def near(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return all(abs(p - q) <= 12 for p, q in zip(a, b))


@pytest.mark.parametrize("kind", ["svg", "html"])
def test_chromium_draws_the_bars(tmp_path, kind):
    browser = browser_or_skip()
    svg = svg_chart(PHASES, LIMIT)
    page = tmp_path / f"chart.{kind}"
    page.write_text(svg if kind == "svg" else html_chart(PHASES, LIMIT))
    root = ElementTree.fromstring(svg)
    pixel = _screenshot(browser, page, svg, tmp_path)
    ends = {}
    for rect in _rects(svg):
        x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
        # Each segment is drawn in its term's colour, as wide as its GiB (checked at its middle).
        assert near(pixel(x + w / 2, y + h / 2), _rgb(rect.get("fill"))), (rect.get("data-term"), pixel(x + w / 2, y + h / 2))
        ends[rect.get("data-phase")] = (x + w, y + h / 2)
    # Past the end of the shorter bar the page is blank (the bar is as long as its total).
    x_end, y_mid = ends["update"]
    assert near(pixel(x_end + 3, y_mid - 8), (255, 255, 255))
    # The usable limit is a red line at its GiB.
    line = next(e for e in root.iter("{http://www.w3.org/2000/svg}line") if e.get("class") == "limit")
    lx = float(line.get("x1"))
    assert near(pixel(lx, float(line.get("y2")) - 4), _rgb(LIMIT_COLOUR))
    update_y = ends["update"][1]
    assert not near(pixel(lx + 6, update_y - 8), _rgb(LIMIT_COLOUR))


def test_explain_memory_draws_bars_and_writes_the_chart(tmp_path):
    script = tmp_path / "run.sh"
    made = CliRunner().invoke(app, ["recipe", "--model", "qwen2-7b", "--gpus", "8", "--tp", "2", "--pp", "1",
                                    "-o", str(script)])  # one stage: the bars are named by phase alone
    assert made.exit_code == 0, made.output
    chart = tmp_path / "memory.html"
    result = CliRunner().invoke(app, ["explain", str(script), "--memory", "--chart", str(chart)])
    assert result.exit_code == 0, result.output
    bars = [line for line in result.stdout.splitlines() if "GiB fits" in line and "[" in line]
    assert bars and all(line.isascii() for line in bars)
    assert any(line.lstrip().startswith("rollout [") for line in bars)
    page = chart.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'data-phase="rollout"' in page


def test_explain_charts_every_call_one_below_the_other(tmp_path):
    script = tmp_path / "run.sh"
    made = CliRunner().invoke(app, ["recipe", "--model", "qwen2-7b", "--gpus", "8", "--tp", "2", "--pp", "1",
                                    "-o", str(script)])  # one stage: the bars are named by phase alone
    assert made.exit_code == 0, made.output
    text = script.read_text()
    script.write_text(text + text.replace('gpu_memory_utilization="${GPU_MEMORY_UTILIZATION}"',
                                             "gpu_memory_utilization=0.3"))
    lines = [n for n, line in enumerate(script.read_text().splitlines(), 1) if "-m verl.trainer.main_ppo" in line]
    assert len(lines) == 2
    chart = tmp_path / "memory.svg"
    result = CliRunner().invoke(app, ["explain", str(script), "--memory", "--chart", str(chart)])
    assert result.exit_code == 0, result.output
    svg = chart.read_text()
    root = ElementTree.fromstring(svg)
    titles = [e.text for e in root.iter("{http://www.w3.org/2000/svg}text") if e.get("font-weight") == "bold"]
    # issue 36: the title says the model, the GPUs and the layout
    assert titles == [f"{script}:{line}: Qwen2-7B on 8 x h100, TP2 PP1 · rollout TP1: memory per GPU by phase "
                      "(worst pipeline stage)" for line in lines]
    rollout = [r for r in _rects(svg) if r.get("data-phase") == "rollout"]
    first, second = {r.get("y") for r in rollout[:len(rollout) // 2]}, {r.get("y") for r in rollout[len(rollout) // 2:]}
    assert len(first) == len(second) == 1 and float(second.pop()) > float(root.get("height")) / 2  # stacked
    limits = [float(e.get("data-gib")) for e in root.iter("{http://www.w3.org/2000/svg}line") if e.get("class") == "limit"]
    assert len(limits) == 2
    kv = [float(r.get("data-gib")) for r in rollout if "kv" in r.get("data-term", "").lower()]
    assert len(kv) == 2 and kv[0] != kv[1]  # each call drawn with its own numbers (0.3 of the GPU for the second)
    bad = CliRunner().invoke(app, ["explain", str(script), "--memory", "--chart", str(tmp_path / "m.png")])
    assert bad.exit_code == 2 and "must end in .svg or .html" in bad.output and isinstance(bad.exception, SystemExit)
    browser = browser_or_skip()
    pixel = _screenshot(browser, chart, svg, tmp_path)
    for rect in _rects(svg)[-3:]:  # the second chart's last bar, drawn in its colours where it says
        x, y, w, h = (float(rect.get(k)) for k in ("x", "y", "width", "height"))
        if w > 4:
            assert near(pixel(x + w / 2, y + h / 2), _rgb(rect.get("fill"))), rect.get("data-term")


# A page that draws the SVG and writes, for every text of it, whether Chromium's own layout of
# it (getBBox) lies inside the picture and clear of the other texts.
_MEASURE = """<!DOCTYPE html><html><body style="margin:0">%s<script>
const svg = document.querySelector('svg');
const W = +svg.getAttribute('width'), H = +svg.getAttribute('height');
const boxes = [...svg.querySelectorAll('text')].map(t => [t, t.getBBox()]);
const out = [];
for (const [t, b] of boxes) {
  if (b.x < 0 || b.y < 0 || b.x + b.width > W || b.y + b.height > H) out.push('outside: ' + t.textContent);
}
for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
  const [s, a] = boxes[i], [t, b] = boxes[j];
  const overlap = a.x < b.x + b.width - 1 && b.x < a.x + a.width - 1 && a.y < b.y + b.height - 1 && b.y < a.y + a.height - 1;
  if (overlap) out.push('overlap: ' + s.textContent + ' | ' + t.textContent);
}
document.body.setAttribute('data-problems', JSON.stringify(out));
document.body.setAttribute('data-measured', String(boxes.length));
</script></body></html>"""


def _layout_problems(browser: str, svg: str, tmp_path) -> tuple[int, list[str]]:
    import json
    import re

    page = tmp_path / "measure.html"
    page.write_text(_MEASURE % svg)
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False,
                          env=dict(os.environ, HOME=str(tmp_path)))
    measured = re.search(r'data-measured="(\d+)"', done.stdout)
    problems = re.search(r"data-problems=\"([^\"]*)\"", done.stdout)
    assert measured and problems, done.stdout[-2000:] + done.stderr[-2000:]
    import html

    return int(measured.group(1)), json.loads(html.unescape(problems.group(1)))


def test_chromium_finds_every_label_inside_the_picture_and_none_overlapping(tmp_path):
    """Issue 22: the title overlapped "usable", a long phase name was clipped at the left edge
    ("ptimizer_step (stage 0)") and value labels were cut at the right one."""
    browser = browser_or_skip()
    long_phases = (
        Phase("optimizer_step (stage 0)", 130.0, (Term("weights", 30.0), Term("optimizer", 100.0))),
        Phase("rollout", 75.0, (Term("weights", 10.0), Term("kv-cache", 65.0))),
    )
    title = "/a/rather/long/path/to/a/launch/script/run_deepseek_v3_671b_megatron.sh:42: memory per GPU by phase"
    svg = stacked_svg([ChartSection(title, long_phases, 80.0), ChartSection("second call", PHASES, LIMIT)])
    count, problems = _layout_problems(browser, svg, tmp_path)
    assert count > 10 and problems == []


def test_writing_a_chart_says_so_on_stderr(tmp_path):
    target = tmp_path / "memory.svg"
    result = CliRunner().invoke(app, ["plan", "--model", "qwen2-7b", "--gpus", "8", "--chart", str(target)])
    assert result.exit_code == 0 and f"wrote {target}" in result.stderr and f"wrote {target}" not in result.stdout
