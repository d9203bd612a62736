"""tools/eval_compare.py: what changed between a before and an after run of tools/eval_projects.py (issue 34),
so the after code is judged by reading only the differences. The runs here are small documents written by the
test in the format `eval_projects.py --json` writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import eval_compare  # noqa: E402  (tools/ is a folder of scripts)


def _finding(code: str, line: str, key: str, severity: str = "error", script: str = "run.sh") -> dict[str, str]:
    return {"id": "\t".join(("owner+a", script, code, line, key)), "severity": severity, "message": f"{code} text"}


def _run(path: Path, findings: list[dict[str, str]], *, release: str = "0.9.1",
         extra_script: str | None = None) -> Path:
    scripts = [{"project": "owner+a", "script": "run.sh", "exit": 1, "error": None, "release": release,
                "config_source": "packaged schema", "calls": 1, "infos": 0, "findings": findings}]
    if extra_script:
        scripts.append({"project": "owner+a", "script": extra_script, "exit": 0, "error": None, "release": release,
                        "config_source": "packaged schema", "calls": 1, "infos": 0,
                        "findings": [_finding("VS703", "3", "", "warning", extra_script)]})
    path.write_text(json.dumps({"summary": {}, "scripts": scripts}), encoding="utf-8")
    return path


def test_lists_gone_new_and_changed_findings_with_the_verdict_of_what_is_gone(tmp_path: Path, capsys) -> None:
    before = _run(tmp_path / "before.json", [_finding("VK601", "4", "a.b"), _finding("VB102", "9", "x.y"),
                                             _finding("VS714", "2", "", "warning"), _finding("VK608", "7", "d.v")],
                  extra_script="old.sh")
    after = _run(tmp_path / "after.json", [_finding("VK601", "4", "a.b"), _finding("VK608", "7", "d.v", "warning"),
                                           _finding("VS703", "5", "")], release="0.4.0")
    verdicts = tmp_path / "verdicts.tsv"
    verdicts.write_text("owner+a\trun.sh\tVB102\t9\tx.y\treal\t\tmini > train\n"
                        "owner+a\trun.sh\tVS714\t2\t\tnoise\tlogger-label\tnot a placeholder\n", encoding="utf-8")
    assert eval_compare.main([str(before), str(after), "--verdicts", str(verdicts)]) == 0
    out = capsys.readouterr().out
    assert "- gone [real] run.sh:9 VB102 x.y" in out
    assert "- gone [noise/logger-label] run.sh:2 VS714" in out
    assert "+ new run.sh:5 VS703: error: VS703 text" in out
    assert "~ error -> warning [unjudged] run.sh:7 VK608 d.v" in out
    assert "~ run run.sh: release '0.9.1' -> '0.4.0'" in out
    assert "only in before: owner+a/old.sh" in out
    # The unchanged finding is not printed, and a script only one run checked adds no gone/new findings.
    assert "VK601" not in out and "old.sh:3" not in out
    assert "gone: 2 (real 1, noise 1, unjudged 0); new: 1; severity changed: 1; runs changed: 1" in out
    assert "real findings of before gone after:\n  owner+a\trun.sh\tVB102\t9\tx.y" in out


def test_identical_runs_print_only_an_empty_summary(tmp_path: Path, capsys) -> None:
    run = _run(tmp_path / "run.json", [_finding("VK601", "4", "a.b")])
    assert eval_compare.main([str(run), str(run)]) == 0
    assert capsys.readouterr().out.strip() == \
        "gone: 0 (real 0, noise 0, unjudged 0); new: 0; severity changed: 0; runs changed: 0"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    good = _run(tmp_path / "good.json", [])
    bad = tmp_path / "bad.json"
    bad.write_text('{"scripts": [{"project": "p"}]}', encoding="utf-8")
    assert eval_compare.main([str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "bad.json" in err and len(err.strip().splitlines()) == 1
    assert eval_compare.main([str(good), str(tmp_path / "missing.json")]) == 2
    assert eval_compare.main([str(good), str(good), "--verdicts", str(tmp_path / "none.tsv")]) == 2
