"""The project's own documentation of its rules: every rule has a section on its family's page,
every verl check a rule cites is listed in docs/verl-checks.md, and every document the code
cites exists in the repository."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.report.rule_doc import rule_doc
from generator.rules import load_rules
from generator.rules.core import CATALOG_DIR, FAMILY_PAGES, catalog_file, doc_page, rule_text

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load_rules()
# A path under docs/ written in the code (a comment, a docstring or a message); one followed by
# " @ <tag>" names a file of another repository at a release and is not ours.
CITED_DOC = re.compile(r"(docs/[\w./-]+\.md)(?:#[\w-]+)?(?! @)")


def _cited_docs() -> dict[str, list[str]]:
    cited: dict[str, list[str]] = {}
    sources = [*(ROOT / "generator").rglob("*.py"), *(ROOT / "generator" / "rules" / "catalog").glob("*.json")]
    for source in sorted(sources):
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            for match in CITED_DOC.finditer(line):
                cited.setdefault(match.group(1), []).append(f"{source.relative_to(ROOT)}:{number}")
    return cited


CITED = _cited_docs()


def test_the_scan_finds_the_citations() -> None:
    assert "docs/batch-chain.md" in CITED and "docs/verl-checks.md" in CITED


@pytest.mark.parametrize("doc", sorted(CITED))
def test_every_document_the_code_cites_exists(doc: str) -> None:
    assert (ROOT / doc).is_file(), f"{doc} is cited at {CITED[doc]} but not in the repository"


RESEARCH_NOTES = ("verl-rules", "corpus-report", "deps-and-oracle", "peers-and-pain-points")


def test_no_citation_of_the_research_notes() -> None:
    """The team's research notes are not part of the repository; the code cites our docs."""
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "generator").rglob("*.py")
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if any(note in line for note in RESEARCH_NOTES) or re.search(r"(?<![/\w])memory-model\.md", line)]
    assert not offenders


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_every_rule_has_a_section_on_its_family_page(code: str) -> None:
    page, _title = FAMILY_PAGES[code[:2]]
    text = (ROOT / page).read_text(encoding="utf-8")
    assert f'<a id="{code.lower()}"></a>' in text
    assert f"## {code} {REGISTRY[code].name}" in text


def test_every_cited_verl_check_is_listed() -> None:
    checks = (ROOT / "docs" / "verl-checks.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^### ([A-H]\d+b?)$", checks, flags=re.M))
    cited = {token for r in REGISTRY.values() for token in re.findall(r"\b[A-H]\d+b?\b", r.verl_ref)}
    assert cited and not cited - listed, sorted(cited - listed)


def test_family_pages_cite_sources_at_a_release_tag() -> None:
    """Each verl source line is given at a tag (`path:line @ v0.7.0`), never at a moving branch."""
    for page, _title in FAMILY_PAGES.values():
        text = (ROOT / page).read_text(encoding="utf-8")
        for cite in re.findall(r"`([\w/.-]+\.(?:py|yaml):[\d-]+)( @ [\w.]+)?`", text):
            assert re.fullmatch(r" @ (core_)?v\d+\.\d+(\.\d+)?(\.post\d+)?", cite[1]), f"{page}: {cite}"


def test_gen_rule_names_its_documentation_page() -> None:
    text = rule_doc(REGISTRY["VB106"])
    assert "Documentation: docs/rules/batch.md#vb106" in text
    assert doc_page("VB106") == "docs/rules/batch.md#vb106"
    assert doc_page("ZZ999") is None


def test_the_catalog_lists_exactly_the_registered_rules() -> None:
    """A rule without an entry would fail at `gen rule`; an entry without a rule is stale prose."""
    listed = {code for path in CATALOG_DIR.glob("*.json")
              for code in json.loads(path.read_text(encoding="utf-8"))}
    assert listed == set(REGISTRY)
    assert all(catalog_file(code[:2]).is_file() for code in REGISTRY)


def _section(code: str) -> str:
    page, _title = FAMILY_PAGES[code[:2]]
    text = (ROOT / page).read_text(encoding="utf-8")
    return text.split(f'<a id="{code.lower()}"></a>', 1)[1].split("<a id=", 1)[0]


def _paragraph(section: str, label: str) -> str | None:
    found = re.search(rf"^\*\*{label}\.\*\* (.*?)\n\n", section + "\n\n", flags=re.S | re.M)
    return found.group(1) if found else None


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_the_family_page_says_what_the_catalog_says(code: str) -> None:
    """The page repeats the catalog's title, reason and fix safety word for word (longer prose goes in
    its own paragraph), so `gen rule CODE` and docs/rules/*.md cannot drift apart."""
    text, section = rule_text(code), _section(code)
    assert f"\n**{text.title}.**\n" in section
    assert _paragraph(section, "Why") == text.why
    assert _paragraph(section, "Fix") == text.fix_safety


def test_a_drifted_page_is_caught() -> None:
    section = _section("VB101").replace("P·n must be", "P·n should be")
    assert _paragraph(section, "Why") != rule_text("VB101").why
