"""`gen doc NAME` and the doc links the tool prints (issue 36): every link is a `gen doc` command
that resolves from the package's own docs (a `docs/...` path was dead for a pip install; the
slow tests/test_release.py runs the same from an installed wheel)."""

from __future__ import annotations

import re

import pytest

from generator.base.errors import InputError
from generator.report.doc_pages import doc_link, doc_text, pages, section
from generator.report.rule_doc import rule_doc
from generator.judging import load_rules

LINK = re.compile(r"gen doc ([\w/#.-]*\w)")


def test_every_doc_link_in_every_rule_page_resolves() -> None:
    registry = load_rules()
    links = {link for rule in registry.values() for link in LINK.findall(rule_doc(rule))}
    assert "rules/batch#vb106" in links and "verl-checks#d4" in links
    for link in links:
        assert doc_text(link).strip(), link


def test_a_rule_section_is_that_rule_only() -> None:
    text = doc_text("rules/batch#vb106")
    assert text.startswith("## VB106 ") and "## VB107" not in text and 'id="vb107"' not in text
    assert doc_text("docs/rules/batch.md#VB106") == text  # the repository path works too


def test_a_heading_anchor_is_its_github_slug() -> None:
    assert section("# T\n\n## Worked examples\n\nbody\n\n## Next\n", "worked-examples") == "## Worked examples\n\nbody\n"


def test_links_are_gen_doc_commands() -> None:
    assert doc_link("docs/rules/batch.md#vb106") == "gen doc rules/batch#vb106"
    assert doc_link("docs/step-time-model.md") == "gen doc step-time-model"
    assert "step-time-model" in pages() and "rules/batch" in pages()


@pytest.mark.parametrize("name", ["../README", "../../../etc/passwd", "/etc/passwd", "nope", "rules/../../x",
                                  "step-time-model#no-such-section"])
def test_names_outside_the_docs_or_unknown_are_refused(name: str) -> None:
    with pytest.raises(InputError):
        doc_text(name)
