"""`gen calibrate --chart`: measured against predicted per phase and the step's breakdown, in the
memory chart's colours, written through the project's writer; drawn by headless Chromium, every
label inside the picture (skipped when Chromium is absent)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chromium import find_browser
from conftest import FIXTURES
from generator.cli import app
from generator.report.palette import SERIES_COLOURS as PALETTE

POINT = FIXTURES / "logs" / "iseekyan-dapo32b-6"
CHROMIUM = find_browser()


def _chart(tmp_path: Path, name: str) -> str:
    target = tmp_path / name
    result = CliRunner().invoke(app, ["calibrate", str(POINT / "metrics.log"), "--script", str(POINT / "run.sh"),
                                      "--gpu", "h20", "--chart", str(target)])
    assert result.exit_code == 0, result.output
    return target.read_text()


def test_the_svg_holds_each_phase_measured_and_predicted_in_the_memory_charts_colours(tmp_path: Path) -> None:
    svg = _chart(tmp_path, "run.svg")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    for label in ("rollout (gen)", "log-prob (old_log_prob)", "update (update_actor)", "the step, phase by phase"):
        assert label in svg
    assert re.search(rf'class="measured" data-phase="rollout \(gen\)"[^>]*fill="{PALETTE[0]}"', svg)
    assert re.search(rf'class="predicted" data-phase="rollout \(gen\)"[^>]*fill="{PALETTE[1]}"', svg)
    assert 'data-part="update_actor"' in svg and "1360 s" in svg  # the measured rollout's value


def test_an_existing_chart_is_not_overwritten_without_force(tmp_path: Path) -> None:
    (tmp_path / "run.svg").write_text("mine")
    result = CliRunner().invoke(app, ["calibrate", str(POINT / "metrics.log"), "--script", str(POINT / "run.sh"),
                                      "--chart", str(tmp_path / "run.svg")])
    assert result.exit_code == 2 and "exists" in result.output
    assert (tmp_path / "run.svg").read_text() == "mine"


# Every <text>'s box, as the browser lays it out, must lie inside the SVG's own box.
PROBE = """<script>
const svg = document.querySelector('svg');
const box = svg.viewBox.baseVal;
const out = [];
for (const t of svg.querySelectorAll('text')) {
  const b = t.getBBox();
  out.push({text: t.textContent, inside: b.x >= box.x && b.y >= box.y && b.x + b.width <= box.x + box.width
            && b.y + b.height <= box.y + box.height, width: b.width});
}
document.getElementById('result').textContent = JSON.stringify(out);
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")
def test_chromium_draws_every_label_inside_the_picture(tmp_path: Path) -> None:
    page = _chart(tmp_path, "run.html")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", '<pre id="result"></pre>' + PROBE + "</body>"))
    assert CHROMIUM is not None
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                           probe.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    assert found is not None, done.stderr[-2000:]
    labels = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    texts = [label["text"] for label in labels]
    assert "rollout (gen)" in texts and "measured" in texts and "predicted" in texts
    assert all(label["width"] > 0 for label in labels)  # drawn, not empty
    outside = [label["text"] for label in labels if not label["inside"]]
    assert outside == []
