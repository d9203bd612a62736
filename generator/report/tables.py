"""Tables and titled sections for the library commands (`gen list`, `gen show NAME`): a rich table on a terminal, plain columns elsewhere.

On a terminal (or with FORCE_COLOR) the table has a box and colour; NO_COLOR keeps the box and
drops every escape code (colour and bold alike); piped output (not a terminal) is plain aligned
text with no box-drawing characters and no escape codes, so `gen list | grep` and `gen list >
file` stay clean.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Sequence, TextIO

if TYPE_CHECKING:
    from rich.console import Console

from generator.base.safe_text import markup, one_line


def _console(stream: TextIO) -> Console:
    from rich.console import Console

    from generator.base.safe_text import no_color

    return Console(file=stream, highlight=False, soft_wrap=False, color_system=None if no_color() else "auto")


def is_terminal(stream: TextIO | None = None) -> bool:
    return _console(stream or sys.stdout).is_terminal


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded with spaces; the last column is not padded (no trailing blanks)."""
    rows = [[one_line(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *rows]:
        cells = [cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


PIPED_WIDTH = 100  # columns a table keeps to when not on a terminal (mail, CI logs, a diff)


def fit_columns(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, optional: Sequence[str] = (),
                gap: int = 2) -> tuple[list[str], list[list[str]]]:
    """The table within `width` columns: the `optional` columns are dropped (in the order given)
    until it fits; then the last column's cells are shortened with an ellipsis. The other
    columns (names, keys) are never cut."""
    keep = list(range(len(headers)))
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    for name in optional:
        if sum(widths[i] + gap for i in keep) - gap <= width:
            break
        if name in headers and len(keep) > 1:
            keep.remove(list(headers).index(name))
    kept_headers = [headers[i] for i in keep]
    kept_rows = [[row[i] for i in keep] for row in rows]
    room = width - sum(widths[i] + gap for i in keep[:-1])
    if room >= max(8, len(kept_headers[-1])):
        kept_rows = [[*row[:-1], row[-1] if len(row[-1]) <= room else row[-1][:room - 1] + "…"] for row in kept_rows]
    return kept_headers, kept_rows


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None,
                stream: TextIO | None = None, optional: Sequence[str] = (), wide: bool = False) -> None:
    """On a terminal narrower than the table, the `optional` columns are dropped (in the order
    given) until it fits; a row is never folded over several lines. Piped, the table keeps to
    PIPED_WIDTH columns the same way, unless `wide` (every column, whole)."""
    stream = stream or sys.stdout
    rows = [[one_line(cell) for cell in row] for row in rows]
    console = _console(stream)
    if not is_terminal(stream):
        if title:
            stream.write(one_line(title) + "\n")
        if not wide:
            headers, rows = fit_columns(headers, rows, PIPED_WIDTH, optional)
        stream.write(plain_table(headers, rows))
        return
    from rich.table import Table

    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    keep = list(range(len(headers)))
    for name in optional:
        if sum(widths[i] + 3 for i in keep) + 1 <= console.width:
            break
        if name in headers:
            keep.remove(headers.index(name))
    table = Table(title=title, header_style="bold", title_justify="left")
    for i in keep:
        table.add_column(headers[i], style="cyan" if i == 0 else None, no_wrap=True, overflow="ellipsis",
                         min_width=min(widths[i], 12))
    for row in rows:  # a str cell is rich markup: a recipe's `[link=...]` must stay text
        table.add_row(*(markup(row[i]) for i in keep))
    console.print(table)


def print_sections(sections: Sequence[tuple[str, Sequence[tuple[str, str]]]], *,
                   stream: TextIO | None = None) -> None:
    """Titled blocks of `label  value` lines (used by `gen show NAME`)."""
    stream = stream or sys.stdout
    console = _console(stream)
    sections = [(one_line(title), [(one_line(label), one_line(value)) for label, value in pairs])
                for title, pairs in sections]
    rich = is_terminal(stream)
    for index, (title, pairs) in enumerate(sections):
        if index:
            stream.write("\n") if not rich else console.print()
        width = max((len(label) for label, _ in pairs), default=0)
        if rich:
            from rich.text import Text

            console.print(Text(title, style="bold"))
            for label, value in pairs:
                line = Text("  ")
                line.append(label.ljust(width), style="cyan")
                line.append("  " + value)
                console.print(line)
        else:
            stream.write(one_line(title) + "\n")
            for label, value in pairs:
                stream.write(f"  {label.ljust(width)}  {value}".rstrip() + "\n")
