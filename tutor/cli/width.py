"""How wide the command line draws: the terminal's width, else the one the command was typed in, else 80 columns."""

from __future__ import annotations

import os
import sys

#: The width drawn at when no terminal says one (output into a file or a script): the width a terminal
#: opens at and most tools assume. A panel or a rule spans the whole width, so no width "wide enough
#: never to wrap" exists: at 1000 columns each border is 1000 characters long.
PIPED_WIDTH = 80


def output_width() -> int | None:
    """The width to draw at: None (Rich's own: the terminal's, or ``COLUMNS``) when stdout is a
    terminal; else the width of the terminal the command was typed in (``tutor progress | less``),
    else :data:`PIPED_WIDTH` (into a file or another program; ``--json`` for a script that reads fields)."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return None
    for stream in (sys.stderr, sys.stdin):
        try:
            if stream is not None and stream.isatty():
                return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            continue
    return PIPED_WIDTH
