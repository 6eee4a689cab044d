"""The console for output into a pipe or a file: whole lines of prose, tables as wide as their content.

A terminal wraps what it shows; a pipe or a file keeps what it is given. So
into a pipe (``tutor fix ... | cat``, ``tutor report DIR > report.txt``) the
tutor breaks no line of prose itself: a sentence or a path goes out whole, and
whoever reads it (a pager, an editor, a terminal) wraps it where it shows it,
so a path copied from it is the path. A table is drawn as wide as its content
up to :data:`TABLE_WIDTH`, so a column keeps at least its header's words (a
cell wraps at its words only past that width). Framed pieces (a panel, a diff,
a plot, an indented block) keep the width :func:`tutor.cli.width.output_width`
chose, as :attr:`Console.width`.
"""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.text import Text

#: The widest a table is drawn into a pipe or a file: as wide as its content, never wider than this.
TABLE_WIDTH = 200


class PipedConsole(Console):
    """A Rich console whose lines of prose are never wrapped and whose tables fit their content.

    ``print`` of text alone (``str`` or ``Text``, the caller asking for no
    wrapping or cutting of its own) soft-wraps: each line goes out whole. A
    ``print`` of tables alone draws them at their content's width, between
    the console's width and :data:`TABLE_WIDTH`. Anything else is drawn at the
    console's width, as Rich draws it.
    """

    def print(self, *objects, **options) -> None:
        asks = any(options.get(key) is not None for key in ("soft_wrap", "no_wrap", "overflow", "width", "crop"))
        if not objects or asks:
            return super().print(*objects, **options)
        if all(isinstance(o, (str, Text)) for o in objects):
            return super().print(*objects, **{**options, "soft_wrap": True})
        # deferred: a table is looked for only among what is no text, so `tutor list | cat`, all text,
        # loads neither Rich's tables nor tutor.render
        from rich.table import Table

        from tutor.render.tables import WordTable
        if all(isinstance(o, (Table, WordTable)) for o in objects):
            wide = self.options.update(width=TABLE_WIDTH)
            needed = max(Measurement.get(self, wide, o).maximum for o in objects)
            width = self.width
            self.width = max(width, min(needed, TABLE_WIDTH))
            try:
                return super().print(*objects, **options)
            finally:
                self.width = width
        return super().print(*objects, **options)
