"""What changed between two runs of tools/eval_projects.py (issue 34): findings new and gone, per project.

    python tools/eval_compare.py BEFORE.json AFTER.json [--verdicts VERDICTS.tsv]

BEFORE, AFTER  the files `tools/eval_projects.py ... --json OUT` writes, from the same checkouts and script list
               run with two versions of the generator.
--verdicts     the before run's verdict file: each gone finding is shown with its verdict, so a real finding
               that the after run lost stands out, and the summary counts them.

A finding is the same in both runs when its id (project, script, code, line, key; the n-th repeat of one code,
line and key is `LINE#n`) is the same; a finding whose severity changed between error and warning is listed as
changed, not as gone and new. Scripts whose run changed (an internal error, a different count of trainer calls,
another release) are listed too. Only what changed is printed, so the after run can be judged by reading this.

Exit status: 0 when the comparison was printed, 2 on bad input (a missing or malformed file).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_projects import FindingId, load_verdicts  # tools/ is a folder of scripts

# The fields of a script's run whose change is worth a line of its own.
RUN_FIELDS = ("error", "calls", "release", "config_source")


@dataclass(frozen=True)
class Finding:
    id: FindingId
    severity: str
    message: str


@dataclass
class Run:
    scripts: dict[tuple[str, str], dict[str, object]]
    findings: dict[FindingId, Finding]


def load_run(path: Path) -> Run:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        scripts: dict[tuple[str, str], dict[str, object]] = {}
        findings: dict[FindingId, Finding] = {}
        for script in document["scripts"]:
            scripts[(script["project"], script["script"])] = script
            for f in script["findings"]:
                cells = f["id"].split("\t")
                if len(cells) != 5:
                    raise ValueError(f"finding id {f['id']!r} has {len(cells)} fields, not 5")
                finding_id = FindingId(*cells)
                findings[finding_id] = Finding(finding_id, f["severity"], f["message"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not an eval_projects.py --json file ({exc.__class__.__name__}: {exc})") from exc
    return Run(scripts, findings)


@dataclass
class Comparison:
    gone: list[Finding]
    new: list[Finding]
    changed: list[tuple[Finding, Finding]]
    runs_changed: list[tuple[tuple[str, str], str, object, object]]
    only_before: list[tuple[str, str]]
    only_after: list[tuple[str, str]]


def compare(before: Run, after: Run) -> Comparison:
    both = before.scripts.keys() & after.scripts.keys()
    # Findings of a script that only one run checked are not "gone" or "new": the script list differs.
    gone = [f for i, f in before.findings.items() if i not in after.findings and (i.project, i.script) in both]
    new = [f for i, f in after.findings.items() if i not in before.findings and (i.project, i.script) in both]
    changed = [(f, after.findings[i]) for i, f in before.findings.items()
               if i in after.findings and after.findings[i].severity != f.severity]
    runs_changed = [(key, field, before.scripts[key].get(field), after.scripts[key].get(field))
                    for key in sorted(both) for field in RUN_FIELDS
                    if before.scripts[key].get(field) != after.scripts[key].get(field)]
    return Comparison(sorted(gone, key=_order), sorted(new, key=_order), sorted(changed, key=lambda p: _order(p[0])),
                      runs_changed, sorted(before.scripts.keys() - after.scripts.keys()),
                      sorted(after.scripts.keys() - before.scripts.keys()))


def _order(finding: Finding) -> tuple[str, str, str, str]:
    i = finding.id
    return (i.project, i.script, i.line.split("#")[0].zfill(6), i.code)


def report(result: Comparison, verdicts: dict[FindingId, tuple[str, str]]) -> list[str]:
    lines: list[str] = []
    by_project: dict[str, list[str]] = {}

    def verdict_of(finding: Finding) -> str:
        verdict = verdicts.get(finding.id)
        return verdict[0] + (f"/{verdict[1]}" if verdict[1] else "") if verdict else "unjudged"

    def where(i: FindingId) -> str:
        return f"{i.script}:{i.line} {i.code}" + (f" {i.key}" if i.key else "")

    for f in result.gone:
        by_project.setdefault(f.id.project, []).append(f"  - gone [{verdict_of(f)}] {where(f.id)}: {f.message}")
    for f in result.new:
        by_project.setdefault(f.id.project, []).append(f"  + new {where(f.id)}: {f.severity}: {f.message}")
    for old, now in result.changed:
        by_project.setdefault(old.id.project, []).append(
            f"  ~ {old.severity} -> {now.severity} [{verdict_of(old)}] {where(old.id)}: {now.message}")
    for (project, script), field, old_value, new_value in result.runs_changed:
        by_project.setdefault(project, []).append(f"  ~ run {script}: {field} {old_value!r} -> {new_value!r}")
    for project in sorted(by_project):
        lines.append(project)
        lines.extend(by_project[project])
    for label, keys in (("only in before", result.only_before), ("only in after", result.only_after)):
        lines.extend(f"{label}: {project}/{script}" for project, script in keys)
    real_gone = [f for f in result.gone if verdicts.get(f.id, ("",))[0] == "real"]
    noise_gone = [f for f in result.gone if verdicts.get(f.id, ("",))[0] == "noise"]
    lines.append(f"gone: {len(result.gone)} (real {len(real_gone)}, noise {len(noise_gone)}, "
                 f"unjudged {len(result.gone) - len(real_gone) - len(noise_gone)}); new: {len(result.new)}; "
                 f"severity changed: {len(result.changed)}; runs changed: {len(result.runs_changed)}")
    if real_gone:
        lines.append("real findings of before gone after:")
        lines.extend(f"  {f.id.row()}" for f in real_gone)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--verdicts", type=Path, help="the before run's verdicts (real/noise per finding)")
    args = parser.parse_args(argv)
    try:
        before, after = load_run(args.before), load_run(args.after)
        if args.verdicts is not None and not args.verdicts.is_file():
            raise ValueError(f"{args.verdicts} is not a file")
        verdicts = load_verdicts(args.verdicts) if args.verdicts is not None else {}
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report(compare(before, after), verdicts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
