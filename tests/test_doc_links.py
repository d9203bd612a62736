"""Every relative link in the project's documentation resolves: README.md, CONTRIBUTING.md and
docs/**/*.md link to files and folders that exist, and an anchor (`page.md#section`, `#section`)
names a heading of its page as GitHub spells it. The README is a front door that sends readers to
docs/; a page that moves must take its links with it."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from conftest import REPO

# [text](target) and ![alt](target); the target may be <wrapped> and followed by a "title".
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target (a reference definition at the start of a line)
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def documents(root: Path) -> list[Path]:
    found = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").rglob("*.md"))]
    return [path for path in found if path.is_file()]


def _prose_lines(text: str, *, blank_code: bool = True) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked out
    (`blank_code`)."""
    lines, fenced = [], None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            if fenced is None:
                fenced = fence.group(1)
            elif fence.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            lines.append((number, CODE_SPAN.sub(lambda m: " " * len(m.group()), line) if blank_code else line))
    return lines


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every link in prose."""
    found = []
    for number, line in _prose_lines(text):
        found += [(number, m.group(1)) for m in INLINE_LINK.finditer(line)]
        found += [(number, m.group(1)) for m in REFERENCE_LINK.finditer(line)]
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup and punctuation dropped, lower case, spaces to
    hyphens (hyphens and underscores kept)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page offers: its headings' slugs (repeats numbered -1, -2 as GitHub does)
    and explicit `<a name=...>`/`id=...` targets."""
    seen: dict[str, int] = {}
    found = set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    for _, line in _prose_lines(text, blank_code=False):
        heading = HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def dead_links(path: Path, root: Path) -> list[str]:
    """`file:line: target (why)` for each relative link of `path` that does not resolve."""
    text = path.read_text(encoding="utf-8")
    dead = []
    for number, target in links(text):
        if not target or EXTERNAL.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        where = f"{path.relative_to(root)}:{number}: {target}"
        resolved = (path.parent / file_part).resolve() if file_part else path
        if file_part and (root.resolve() not in resolved.parents and resolved != root.resolve()):
            dead.append(f"{where} (leaves the repository)")
        elif not resolved.exists():
            dead.append(f"{where} (no such file)")
        elif anchor and resolved.suffix == ".md" and resolved.is_file():
            if anchor not in anchors(resolved.read_text(encoding="utf-8")):
                dead.append(f"{where} (no heading with that anchor)")
    return dead


@pytest.mark.parametrize("path", documents(REPO), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert dead_links(path, REPO) == []


def test_the_front_door_links_every_page_of_docs() -> None:
    """A page under docs/ (not docs/rules/: the rules index links those) that the README does not
    link, directly or through a page it links, is a page nobody finds."""
    readme = REPO / "README.md"
    reached, queue = {readme.resolve()}, [readme]
    while queue:
        page = queue.pop()
        for _, target in links(page.read_text(encoding="utf-8")):
            file_part = target.partition("#")[0]
            if not file_part or EXTERNAL.match(file_part):
                continue
            resolved = (page.parent / file_part).resolve()
            if resolved.is_file() and resolved.suffix == ".md" and resolved not in reached:
                reached.add(resolved)
                queue.append(resolved)
    pages = {p.resolve() for p in (REPO / "docs").glob("*.md")}
    assert sorted(str(p.relative_to(REPO.resolve())) for p in pages - reached) == []


def test_a_dead_link_and_a_dead_anchor_are_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# There\n\n## The `gen check` step, 1\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "See [there](docs/there.md#the-gen-check-step-1), [gone](docs/gone.md), [bad](docs/there.md#nope),\n"
        "[out](../elsewhere.md), [web](https://example.com/x.md), `[code](docs/gone.md)` and [self](#see).\n"
        "```\n[fenced](docs/gone.md)\n```\n[ref]: docs/missing.md\n", encoding="utf-8")
    assert dead_links(tmp_path / "README.md", tmp_path) == [
        "README.md:1: docs/gone.md (no such file)",
        "README.md:1: docs/there.md#nope (no heading with that anchor)",
        "README.md:2: ../elsewhere.md (leaves the repository)",
        "README.md:2: #see (no heading with that anchor)",
        "README.md:6: docs/missing.md (no such file)",
    ]
