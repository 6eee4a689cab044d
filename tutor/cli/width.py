"""How wide the command line draws: the terminal's width, else the one the command was typed in, else no wrap."""

from __future__ import annotations

import os
import sys

#: The width drawn at when no terminal says one (output into a file): wide enough that no line wraps.
UNWRAPPED_WIDTH = 1000


def output_width() -> int | None:
    """The width to draw at: None (Rich's own: the terminal's, or ``COLUMNS``) when stdout is a
    terminal; else the width of the terminal the command was typed in (``tutor progress | less``),
    else :data:`UNWRAPPED_WIDTH` (no line wrapped, no word split: into a file or another program)."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return None
    for stream in (sys.stderr, sys.stdin):
        try:
            if stream is not None and stream.isatty():
                return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            continue
    return UNWRAPPED_WIDTH
