"""docs/rules/*.md, written from the rule catalog (generator/rules/catalog/*.json), the registry
and docs/verl-checks.md: one home for each fact a page shows. The catalog holds every rule's
title, reason, fix safety and the hand-written prose a page adds (`doc`: notes, a sentence on
when it shows, extra sources); the registry its severity, stage, releases and backends; and
docs/verl-checks.md where in verl's source each check it cites is made.

`python tools/rule_docs.py` rewrites the pages; tests/test_rule_docs.py fails while one is stale.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from generator.rules.core import FAMILY_PAGES, PAGE_KEY, Rule, catalog_file

ROOT = Path(__file__).resolve().parent.parent.parent
CHECKS_PAGE = ROOT / "docs" / "verl-checks.md"

# When each stage shows, in a page's words (a rule's `doc.shows` replaces the whole line).
STAGE_WORDS = {
    "load": "at config load",
    "init": "at trainer or worker init",
    "runtime": "at the first training step",
    "silent": "never: the run silently does something else",
    "shell": "in bash, before verl starts",
    "static": "not applicable (a note on what could not be checked)",
}
# A check id in a rule's verl_ref (docs/verl-checks.md lists each): "A2", "A2b", "E10".
CHECK_ID = re.compile(r"^[A-H]\d+b?$")


def verl_sources(text: str) -> dict[str, str]:
    """{check id: its sources in one line} from docs/verl-checks.md: the `Source` (and, where the
    oldest packaged release made it elsewhere, `In v0.4.1`) lines of each `### ID` entry."""
    sources: dict[str, str] = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        check, _, body = block.partition("\n")
        source = re.search(r"^- Source: (.*)$", body, flags=re.M)
        if source is None:
            continue
        line = source.group(1)
        older = re.search(r"^- In v0\.4\.1: (.*)$", body, flags=re.M)
        if older is not None:
            line += f"; in v0.4.1: {older.group(1)}"
        sources[check.strip()] = line
    return sources


def _facts(rule: Rule, doc: Mapping[str, Any]) -> str:
    shows = doc.get("shows") or f"Severity: {rule.severity}. When it shows: {STAGE_WORDS[rule.stage]}."
    applies = doc.get("applies") or f"verl releases: {rule.versions}; backends: {', '.join(rule.backends)}."
    return f"- {shows}\n- {applies}"


def _source_lines(rule: Rule, doc: Mapping[str, Any], sources: Mapping[str, str]) -> list[str]:
    """The page's `verl source` list: each entry of `doc.sources` (default: the check ids of the
    rule's verl_ref) is a check id, written with its sources from docs/verl-checks.md, or a line
    of its own."""
    entries = doc.get("sources")
    if entries is None:
        entries = [token for token in (t.strip() for t in rule.verl_ref.split(",")) if token in sources]
    lines = []
    for entry in entries:
        if entry in sources:
            lines.append(f"- [{entry}](../verl-checks.md#{entry.lower()}) — {sources[entry]}")
        else:
            lines.append(f"- {entry}")
    return lines


def rule_section(rule: Rule, entry: Mapping[str, Any], sources: Mapping[str, str]) -> str:
    """One rule's section of its family page."""
    doc: Mapping[str, Any] = entry.get("doc", {})
    blocks = [f'<a id="{rule.code.lower()}"></a>', f"## {rule.code} {rule.name}", f"**{entry['title']}.**",
              _facts(rule, doc), f"**Why.** {entry['why']}", *doc.get("notes", [])]
    source_lines = _source_lines(rule, doc, sources)
    if doc.get("source_text"):  # a sentence instead of a list (no check in verl makes it)
        blocks.append(f"**verl source.** {doc['source_text']}")
    elif source_lines:
        blocks.append("**verl source.**\n" + "\n".join(source_lines))
    blocks.append(f"**Fix.** {entry['fix_safety']}")
    blocks.extend(doc.get("after", []))
    return "\n\n".join(blocks) + "\n"


def family_page(family: str, registry: Mapping[str, Rule], checks_text: str | None = None) -> str:
    """The text of one family's page (docs/rules/<page>.md)."""
    _path, title = FAMILY_PAGES[family]
    raw: dict[str, Any] = json.loads(catalog_file(family).read_text(encoding="utf-8"))
    page = raw.get(PAGE_KEY, {})
    sources = verl_sources(checks_text if checks_text is not None else CHECKS_PAGE.read_text(encoding="utf-8"))
    codes = [code for code in raw if code in registry]
    parts = [f"# {family} — {title}", *page.get("intro", []),
             "Rules on this page: " + ", ".join(f"[{code}](#{code.lower()})" for code in codes) + "."]
    head = "\n\n".join(parts) + "\n\n"
    body = "\n".join(rule_section(registry[code], raw[code], sources) for code in codes)
    outro = "".join("\n" + block + "\n" for block in page.get("outro", []))
    return head + body + outro


def pages(registry: Mapping[str, Rule]) -> dict[Path, str]:
    """{page path: its text} for every family."""
    checks_text = CHECKS_PAGE.read_text(encoding="utf-8")
    return {ROOT / FAMILY_PAGES[family][0]: family_page(family, registry, checks_text) for family in FAMILY_PAGES}
