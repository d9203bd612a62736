"""Run an attack set against a checkout and print one row per attack: exit code, seconds, peak
MB, and what went wrong (empty: handled). `--set 21` is issue 21's set (tests/hostile_cases.py),
`--set 35` issue 35's red-team round (tests/hostile_cases_35.py: also nothing touched outside the
project, no runner command or raw escape in any output).

    python bench/attacks.py [--set 21|35] [--pythonpath DIR] [--only NAME,...] [--timeout 30]

--pythonpath picks the checkout whose `generator` runs (e.g. the main branch, for a "before"
column); the cases and limits are this checkout's. Exit 0 when every attack is handled.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def main(argv: list[str] | None = None) -> int:
    from hostile_cases import CASES, problems, run_case
    from hostile_cases_35 import CASES_35, all_problems

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("21", "35"), default="21")
    parser.add_argument("--pythonpath", default=str(REPO))
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=30.0)
    opts = parser.parse_args(argv)
    cases, judge = (CASES, problems) if opts.set == "21" else (CASES_35, all_problems)
    names = [n for n in opts.only.split(",") if n] or list(cases)
    failed = 0
    print(f"{'attack':36} {'rc':>4} {'s':>6} {'MB':>6}  problems")
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            case = cases[name](Path(tmp))
            got = run_case(case, timeout=opts.timeout, pythonpath=opts.pythonpath)
            found = judge(case, got)
        failed += bool(found)
        print(f"{name:36} {got.rc:>4} {got.seconds:>6.2f} {got.rss_mb:>6.0f}  {'; '.join(found)}", flush=True)
    print(f"{len(names) - failed} of {len(names)} handled")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
