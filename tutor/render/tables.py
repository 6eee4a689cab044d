"""Tables that wrap at words: each column at least as wide as its longest word, so no cell is cut."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


def _longest_word(cell) -> int:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((len(word) for word in text.split()), default=0)


def _longest_line(cell) -> int:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((len(line) for line in text.splitlines()), default=0)


def column_widths(columns: list, rows: list[list], available: int) -> list[int]:
    """Widths for the columns' text that fit ``available`` and break no word when that is possible.

    Each column gets at least its longest word and at most its longest line.
    When even the longest words do not fit side by side, the widest columns
    give way first (only then is a word folded), down to their header's
    longest word: a cell's long word is folded before a header's word is, so
    a header reads whole ("predictions", never "prediction" over "s") while
    any column is wider than its header.
    """
    cells = [[columns[i]] + [row[i] for row in rows if i < len(row)] for i in range(len(columns))]
    low = [max(1, max(_longest_word(c) for c in column)) for column in cells]
    high = [max(low[i], max(_longest_line(c) for c in column)) for i, column in enumerate(cells)]
    header = [max(1, _longest_word(c)) for c in columns]
    available = max(len(columns), available)
    if sum(high) <= available:
        return high
    widths = list(low)
    while sum(widths) > available:
        above = [i for i in range(len(widths)) if widths[i] > header[i]] or range(len(widths))
        widest = max(above, key=lambda i: widths[i])
        if widths[widest] <= 1:
            break
        widths[widest] -= 1
    spare = available - sum(widths)
    while spare > 0:  # the rest goes to the columns furthest from their longest line
        wanting = [i for i in range(len(widths)) if widths[i] < high[i]]
        if not wanting:
            break
        neediest = max(wanting, key=lambda i: (high[i] - widths[i]) / high[i])
        widths[neediest] += 1
        spare -= 1
    return widths


class WordTable:
    """A table whose cells wrap at spaces, never inside a word that fits (see :func:`column_widths`).

    Args:
        columns: the header of each column (text).
        rows: the cells, text or Rich ``Text``.
        styles: a style per column, or None.
        show_edge: draw the outer border.
        box: a Rich box style, or None for Rich's default.
    """

    def __init__(self, columns: list, rows: list[list] | None = None, styles: list[str] | None = None,
                 show_edge: bool = True, box=None, show_header: bool = True) -> None:
        self.columns = list(columns)
        self.rows = [list(r) for r in (rows or [])]
        self.styles = styles or [""] * len(self.columns)
        self.show_edge = show_edge
        self.box = box
        self.show_header = show_header

    def add_row(self, *cells) -> None:
        self.rows.append(list(cells))

    def table(self, width: int) -> Table:
        """The Rich table laid out for ``width`` columns."""
        n = len(self.columns)
        # borders between and around the columns, and one space of padding inside each
        # (none at the outer edges: pad_edge is off)
        overhead = (n - 1) + (2 if self.show_edge else 0) + 2 * n - 2
        widths = column_widths(self.columns, self.rows, width - overhead)
        options = {"box": self.box} if self.box is not None else {}
        table = Table(show_lines=False, expand=False, pad_edge=False, show_edge=self.show_edge,
                      show_header=self.show_header, **options)
        for column, w, style in zip(self.columns, widths, self.styles):
            table.add_column(column if isinstance(column, Text) else Text(str(column)), width=w, overflow="fold",
                             style=style or None)
        for row in self.rows:
            table.add_row(*[c if isinstance(c, Text) else Text(str(c)) for c in row])
        return table

    def __rich_console__(self, console, options):
        yield self.table(options.max_width)

    def __rich_measure__(self, console, options):
        return self.table(options.max_width).__rich_measure__(console, options)
