"""The project's own documentation of its rules: every rule has a section on its family's page,
every verl check a rule cites is listed in docs/verl-checks.md, and every document the code
cites exists in the repository."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.report.rule_doc import rule_doc
from generator.judging import load_rules
from generator.report.rule_pages import family_page, verl_sources
from generator.rules.core import CATALOG_DIR, FAMILY_PAGES, PAGE_KEY, catalog_file, doc_page

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
    assert "Documentation: gen doc rules/batch#vb106" in text  # resolves for a pip install (gen doc)
    assert doc_page("VB106") == "docs/rules/batch.md#vb106"
    assert doc_page("ZZ999") is None


def test_the_catalog_lists_exactly_the_registered_rules() -> None:
    """A rule without an entry would fail at `gen rule`; an entry without a rule is stale prose."""
    listed = {code for path in CATALOG_DIR.glob("*.json")
              for code in json.loads(path.read_text(encoding="utf-8")) if code != PAGE_KEY}
    assert listed == set(REGISTRY)
    assert all(catalog_file(code[:2]).is_file() for code in REGISTRY)


@pytest.mark.parametrize("family", sorted(FAMILY_PAGES))
def test_each_family_page_is_written_from_the_catalog(family: str) -> None:
    """docs/rules/*.md are generated (generator/report/rule_pages.py): the catalog holds each
    rule's title, reason, fix safety and prose, docs/verl-checks.md each check's source lines.
    A page edited by hand, or a catalog entry changed without regenerating, fails here."""
    page = ROOT / FAMILY_PAGES[family][0]
    assert page.read_text(encoding="utf-8") == family_page(family, REGISTRY), \
        f"{page.relative_to(ROOT)} is stale: run `python tools/rule_docs.py`"


def test_a_catalog_change_makes_its_page_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check is real: a reason changed in the catalog changes the page that must be written."""
    import generator.report.rule_pages as rule_pages

    raw = json.loads(catalog_file("VB").read_text(encoding="utf-8"))
    raw["VB101"]["why"] = raw["VB101"]["why"].replace("P·n must be", "P·n should be")
    changed = tmp_path / "batch.json"
    changed.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(rule_pages, "catalog_file", lambda family: changed)
    page = rule_pages.family_page("VB", REGISTRY)
    assert "P·n should be" in page and page != (ROOT / FAMILY_PAGES["VB"][0]).read_text(encoding="utf-8")


def test_a_checks_source_line_comes_from_verl_checks_md() -> None:
    """Where verl makes a check is written once, in docs/verl-checks.md; a page shows it from there."""
    sources = verl_sources((ROOT / "docs" / "verl-checks.md").read_text(encoding="utf-8"))
    assert sources["E1"] == "`megatron/core/parallel_state.py:695-698 @ core_v0.15.0`"
    assert f"- [E1](../verl-checks.md#e1) — {sources['E1']}" in family_page("VP", REGISTRY)


def test_the_defaults_page_lists_the_rules_that_read_defaults() -> None:
    """docs/rules/defaults.md's table names exactly the rules with the `reads_defaults` flag."""
    text = (ROOT / "docs" / "rules" / "defaults.md").read_text(encoding="utf-8")
    table = text.split("| code |", 1)[1].split("\n\n", 1)[0]
    listed = set(re.findall(r"\bV[A-Z]\d{3}\b", table))
    assert listed == {code for code, r in REGISTRY.items() if r.reads_defaults}
