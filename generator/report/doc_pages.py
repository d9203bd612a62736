"""The project's docs as the installed tool shows them: `gen doc NAME` prints a page (or the section
under one of its anchors), and every doc link the tool prints is written here, as the `gen doc`
command that shows it. A path such as `docs/rules/batch.md#vb106` is dead for anyone who
installed the wheel; the docs travel inside the package (pyproject.toml force-include,
generator/base/resources.docs_dir), so `gen doc rules/batch#vb106` works wherever `gen` does.
"""

from __future__ import annotations

import re
from pathlib import Path

from generator.base.errors import InputError
from generator.base.resources import docs_dir

_ANCHOR = re.compile(r'^<a id="([^"]+)"></a>\s*$')
_HEADING = re.compile(r"^(#{1,6}) ")


def page_name(path: str) -> str:
    """'docs/rules/batch.md#vb106' -> 'rules/batch#vb106' (the name `gen doc` takes)."""
    page, hash_, anchor = path.partition("#")
    page = page.removeprefix("docs/").removesuffix(".md")
    return page + hash_ + anchor


def doc_link(path: str) -> str:
    """How the tool points at a doc page: 'gen doc rules/batch#vb106' for 'docs/rules/batch.md#vb106'."""
    return f"gen doc {page_name(path)}"


def pages() -> list[str]:
    """Every page `gen doc` knows, by name (sorted)."""
    root = docs_dir()
    return sorted(page_name(p.relative_to(root).as_posix()) for p in root.rglob("*.md"))


def _page_file(name: str) -> Path:
    root = docs_dir()
    page = page_name(name.strip()).partition("#")[0].strip("/")
    if not page or ".." in page.split("/") or not re.fullmatch(r"[A-Za-z0-9_./-]+", page):
        raise InputError(f"unknown doc page '{name}'; `gen doc` lists them")
    path = root / f"{page}.md"
    if not path.is_file():
        raise InputError(f"unknown doc page '{name}'; `gen doc` lists them")
    return path


def section(text: str, anchor: str) -> str | None:
    """The part of a page under `<a id="anchor">` or the heading whose slug is `anchor`, up to the
    next heading of the same or a higher level (None when the page has no such place)."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        found = _ANCHOR.match(line)
        if found and found.group(1) == anchor:
            start = i + 1
            break
        heading = _HEADING.match(line)
        if heading and _slug(line[len(heading.group(0)):]) == anchor:
            start = i
            break
    if start is None:
        return None
    while start < len(lines) and not lines[start].strip():
        start += 1
    level = None
    end = len(lines)
    for j in range(start, len(lines)):
        heading = _HEADING.match(lines[j])
        if heading is None:
            if _ANCHOR.match(lines[j]) and level is not None and j > start:
                end = j  # the next entry's anchor sits above its heading
                break
            continue
        depth = len(heading.group(1))
        if level is None:
            level = depth
        elif depth <= level:
            end = j
            break
    return "\n".join(lines[start:end]).rstrip() + "\n"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def doc_text(name: str) -> str:
    """`gen doc NAME`: the page, or the section under NAME's anchor. InputError for an unknown one."""
    path = _page_file(name)
    text = path.read_text(encoding="utf-8")
    anchor = page_name(name).partition("#")[2]
    if not anchor:
        return text if text.endswith("\n") else text + "\n"
    part = section(text, anchor.lower())
    if part is None:
        raise InputError(f"doc page '{page_name(name).partition('#')[0]}' has no section '{anchor}'")
    return part


def doc_index() -> str:
    """`gen doc` with no name: where the docs are and the pages by name."""
    return "".join([f"docs in {docs_dir()}; `gen doc NAME` prints one:\n"] + [f"  {name}\n" for name in pages()])
