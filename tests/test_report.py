"""Report formats as pure functions of FileReports."""

from __future__ import annotations

import json

from generator.reading.edit_kinds import KeyEdit
from generator.report import FileReport, Located, render_github, render_json, render_sarif, render_text, summary
from generator.rules.core import Finding, Fix
from text_report import finding_lines

F1 = Finding("VB106", "error", "local batch 60 % 24 = 12", 10, "k", Fix("d", (KeyEdit("k", 24, 20),), "unsafe"))
F2 = Finding("VX901", "info", "filter off", None)
REPORTS = [FileReport("a.sh", verl_version="0.7.0", findings=[Located(F1, 3), Located(F2, 3)]),
           FileReport("b.sh", error="no such file")]


def test_summary_counts_and_failed_files():
    assert summary(REPORTS) == {"files": 2, "errors": 1, "warnings": 0, "infos": 1, "failed_files": 2}
    assert summary([FileReport("c.sh", findings=[Located(F2)])])["failed_files"] == 0


def test_text_plain_and_coloured():
    plain = render_text(REPORTS)
    assert finding_lines(plain)[0] == "a.sh:10:1: VB106 error: local batch 60 % 24 = 12 [*]"
    assert finding_lines(plain)[1] == "a.sh: VX901 info: filter off"
    concise = render_text(REPORTS, concise=True)
    assert concise.splitlines()[:2] == finding_lines(plain)  # one line per finding
    assert "b.sh" not in plain.replace("1 file not read", "")  # said on stderr, once (cli/check_run)
    coloured = render_text(REPORTS, color=True)
    assert "[bold red]VB106[/bold red]" in coloured


def test_json_shape():
    data = json.loads(render_json(REPORTS))
    assert data["files"][0]["findings"][0]["invocation_line"] == 3
    assert data["files"][1] == {"path": "b.sh", "error": "no such file", "verl_version": None, "incomplete": None,
                                "resolution": None, "call_resolutions": [], "findings": []}


def test_sarif_notes_unreadable_files():
    run = json.loads(render_sarif(REPORTS))["runs"][0]
    assert {r["level"] for r in run["results"]} == {"error", "note"}
    assert "region" not in run["results"][1]["locations"][0]["physicalLocation"]
    assert run["invocations"][0]["executionSuccessful"] is False


def test_github_escapes_properties_and_newlines():
    report = FileReport("dir,x:y.sh", findings=[Located(Finding("VB101", "warning", "50% off\nnext", 2))])
    assert render_github([report]) == "::warning file=dir%2Cx%3Ay.sh,line=2,title=VB101::50%25 off%0Anext\n"


def test_text_summary_counts_a_file_it_could_not_read() -> None:
    # An unreadable file has no findings; "0 error(s)" alone would read like a pass.
    text = render_text(REPORTS)
    assert text.splitlines()[-1].endswith("; 1 file not read (error on stderr)")
    only_read = render_text(REPORTS[:1])
    assert "not read" not in only_read
    assert render_text(REPORTS[1:]) == ""  # nothing was read: no summary that reads like a pass
