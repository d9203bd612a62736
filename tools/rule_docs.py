"""Write docs/rules/*.md from the rule catalog (generator/rules/catalog/*.json), the registry and
docs/verl-checks.md (generator/report/rule_pages.py). Edit the catalog, then run

    python tools/rule_docs.py          # rewrite the pages that changed
    python tools/rule_docs.py --check  # exit 1, naming them, while a page is stale (what the test asks)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.report.rule_pages import pages  # noqa: E402
from generator.judging import load_rules  # noqa: E402


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in pages(load_rules()).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path.relative_to(ROOT).as_posix())
        if not check:
            path.write_text(text, encoding="utf-8")
    verb = "stale" if check else "written"
    for name in stale:
        print(f"{name}: {verb}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
