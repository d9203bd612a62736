"""Precision of `gen check` on launch scripts inside real project checkouts (issue 11's measurement).

Nothing from the projects lives in this repository: the checkouts, the list of scripts and the verdicts are
kept outside it, and this tool only reads them.

    python tools/eval_projects.py CHECKOUTS SCRIPTS.tsv VERDICTS.tsv [--root GENERATOR_ROOT] [--json OUT]

CHECKOUTS  a folder with one checkout per project (any folder name, e.g. `owner+name`).
SCRIPTS    TSV rows `project<TAB>path inside the project` naming the launch scripts to check.
VERDICTS   TSV rows `project<TAB>script<TAB>code<TAB>line<TAB>key<TAB>verdict<TAB>class<TAB>note`, one per
           error or warning judged by a person: verdict `real` (a problem the user should fix) or `noise`.
           A real verdict of class `placeholder` is an unfilled placeholder (`/path/to/model`, `YOUR_KEY`): the
           summary also gives the precision without them, as the easy kind of real finding.
--root     the checkout whose `generator` package is measured (default: this repository). The package is put
           first on PYTHONPATH, so a baseline worktree can be measured with the same interpreter.

Each script is checked as its user would: `python -m generator check --format json SCRIPT`, run from inside
its project's checkout with no version flag, so the project's own verl (vendored, submodule, config file) is
what the check has to find. Findings are matched to verdicts by (project, script, code, line, key) (the n-th repeat
of one code, line and key in a script has the line `LINE#n`); the ones
with no verdict are printed as TSV rows to judge and count as neither real nor noise.

Exit status: 0 when the run completed, 2 on bad input (a missing folder or file, a malformed row).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

JUDGED_SEVERITIES = ("error", "warning")
VERDICTS = ("real", "noise")
# The class of a real verdict on an unfilled placeholder, counted apart in the summary.
PLACEHOLDER_CLASS = "placeholder"
# The check's "no trainer call was read" warning: a script that carries it was not judged at all.
NO_CALL_CODE = "VS709"
# How many trainer calls the reader of the measured code reads in a script (dead branches left out):
# the evidence that a script with no error or warning was judged at all.
COUNT_CALLS = ("import sys; from pathlib import Path; from generator.reading.shell import read_script; "
               "s = read_script(Path(sys.argv[1]).read_bytes(), sys.argv[1]); "
               "print(sum(1 for i in s.invocations if getattr(i, 'branch', None) != 'dead'))")


@dataclass(frozen=True)
class FindingId:
    project: str
    script: str
    code: str
    line: str
    key: str

    def row(self) -> str:
        return "\t".join((self.project, self.script, self.code, self.line, self.key))


@dataclass
class ScriptResult:
    project: str
    script: str
    exit_code: int
    error: str | None
    release: str | None
    config_source: str | None
    calls: int
    judged: list[tuple[FindingId, str, str]]   # (id, severity, message) for errors and warnings
    infos: int


def read_rows(path: Path, columns: int) -> list[list[str]]:
    rows = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        cells = raw.split("\t")
        if len(cells) < columns:
            raise ValueError(f"{path}:{number}: expected {columns} tab-separated columns, got {len(cells)}")
        rows.append(cells)
    return rows


def load_verdicts(path: Path) -> dict[FindingId, tuple[str, str]]:
    verdicts: dict[FindingId, tuple[str, str]] = {}
    if not path.exists():
        return verdicts
    for cells in read_rows(path, 6):
        verdict = cells[5].strip()
        if verdict not in VERDICTS:
            raise ValueError(f"{path}: verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
        noise_class = cells[6].strip() if len(cells) > 6 else ""
        verdicts[FindingId(*cells[:5])] = (verdict, noise_class)
    return verdicts


def check_script(root: Path, checkout: Path, project: str, script: str) -> ScriptResult:
    # `-P`: the checkout's folder is not put first on sys.path, as an installed `gen` command does not put
    # it there either; a project with its own `generator/` package must not stand in for ours.
    env = dict(os.environ, PYTHONPATH=str(root), NO_COLOR="1")
    done = subprocess.run([sys.executable, "-P", "-m", "generator", "check", "--format", "json", script],
                          cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return ScriptResult(project, script, done.returncode, tail, None, None, 0, [], 0)
    file_doc = document["files"][0]
    resolution = file_doc.get("resolution") or {}
    findings = file_doc.get("findings", [])
    counted = subprocess.run([sys.executable, "-P", "-c", COUNT_CALLS, script], cwd=checkout, env=env,
                             capture_output=True, text=True, timeout=300)
    calls = int(counted.stdout.strip()) if counted.stdout.strip().isdigit() else 0
    judged = []
    seen: dict[tuple[str, str, str], int] = {}
    for f in findings:
        if f["severity"] not in JUDGED_SEVERITIES:
            continue
        line, key = str(f.get("line")), f.get("key") or ""
        # Several findings of one code on one line and key (one per word of a split placeholder)
        # are told apart by their order: `60`, `60#2`, `60#3`..., so each gets its own verdict.
        seen[(f["code"], line, key)] = count = seen.get((f["code"], line, key), 0) + 1
        judged.append((FindingId(project, script, f["code"], line if count == 1 else f"{line}#{count}", key),
                       f["severity"], f["message"]))
    infos = sum(1 for f in findings if f["severity"] not in JUDGED_SEVERITIES)
    return ScriptResult(project, script, done.returncode, file_doc.get("error"), resolution.get("release"),
                        resolution.get("config_source"), calls, judged, infos)


def summarise(results: list[ScriptResult], verdicts: dict[FindingId, tuple[str, str]]) -> dict[str, object]:
    real = noise = unjudged = placeholders = 0
    noise_classes: dict[str, int] = {}
    flagged: set[str] = set()   # projects with an error or warning
    misled: set[str] = set()    # projects with at least one false error or warning
    for result in results:
        for finding_id, _, _ in result.judged:
            flagged.add(result.project)
            verdict = verdicts.get(finding_id)
            if verdict is None:
                unjudged += 1
            elif verdict[0] == "real":
                real += 1
                placeholders += verdict[1] == PLACEHOLDER_CLASS
            else:
                noise += 1
                misled.add(result.project)
                noise_classes[verdict[1] or "unclassified"] = noise_classes.get(verdict[1] or "unclassified", 0) + 1
    judged_total = real + noise
    projects = {r.project for r in results}
    real_ids = {i for i, v in verdicts.items() if v[0] == "real"}
    found_ids = {finding_id for result in results for finding_id, _, _ in result.judged}
    return {
        "projects": len(projects),
        "scripts": len(results),
        "failed_scripts": sum(1 for r in results if r.error),
        "silent_passes": sum(1 for r in results if not r.error and not r.judged and r.calls == 0),
        "no_call_warnings": sum(1 for r in results if any(i.code == NO_CALL_CODE for i, _, _ in r.judged)),
        "errors": sum(1 for r in results for _, s, _ in r.judged if s == "error"),
        "warnings": sum(1 for r in results for _, s, _ in r.judged if s == "warning"),
        "real": real, "noise": noise, "unjudged": unjudged,
        "precision": round(real / judged_total, 3) if judged_total else None,
        "placeholders": placeholders,
        "precision_without_placeholders": (round((real - placeholders) / (judged_total - placeholders), 3)
                                           if judged_total > placeholders else None),
        "projects_with_findings": len(flagged),
        "projects_with_false_finding": len(misled),
        "projects_without_false_finding": (round(1 - len(misled) / len(projects), 3) if projects else None),
        "real_missed": sorted(i.row() for i in real_ids - found_ids
                              if any(r.project == i.project and r.script == i.script for r in results)),
        "noise_classes": dict(sorted(noise_classes.items(), key=lambda kv: -kv[1])),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", type=Path)
    parser.add_argument("scripts", type=Path)
    parser.add_argument("verdicts", type=Path)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--json", type=Path, help="write every script's result and the summary here")
    args = parser.parse_args(argv)
    try:
        if not args.checkouts.is_dir() or not (args.root / "generator").is_dir():
            raise ValueError(f"{args.checkouts} or {args.root}/generator is not a folder")
        rows = read_rows(args.scripts, 2)
        verdicts = load_verdicts(args.verdicts)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = []
    for project, script, *_ in rows:
        checkout = args.checkouts / project
        if not (checkout / script).is_file():
            print(f"error: {checkout / script} is not a file", file=sys.stderr)
            return 2
        results.append(check_script(args.root.resolve(), checkout, project, script))
    for result in results:
        marks = " ".join(f"{i.code}@{i.line}:{verdicts.get(i, ('?',))[0]}" for i, _, _ in result.judged)
        status = f"ERROR {result.error}" if result.error else f"{result.release or '-'} calls={result.calls}"
        print(f"{result.project}/{result.script}: {status} infos={result.infos} {marks}")
    pending = [(i, s, m) for r in results for i, s, m in r.judged if i not in verdicts]
    if pending:
        print(f"\n# {len(pending)} findings without a verdict (append to {args.verdicts} with real/noise):")
        for finding_id, severity, message in pending:
            print(f"{finding_id.row()}\t\t\t{severity}: {message}")
    summary = summarise(results, verdicts)
    print("\n" + json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "scripts": [
            {"project": r.project, "script": r.script, "exit": r.exit_code, "error": r.error,
             "release": r.release, "config_source": r.config_source, "calls": r.calls, "infos": r.infos,
             "findings": [{"id": i.row(), "severity": s, "message": m} for i, s, m in r.judged]}
            for r in results]}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
