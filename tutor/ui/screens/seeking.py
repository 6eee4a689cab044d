"""Edit mode's find bar: find text in the learner's file (Ctrl+F) or go to a line (Ctrl+G).

:class:`Seeking` is mixed into :class:`tutor.ui.screens.fix.EditScreen`, whose
``#edit-seek`` input, built-in editor (``_editor``) and status line it drives.
"""

from __future__ import annotations

import time

from textual.widgets import Input

#: Seconds after the box closes in which another Esc is taken as the same press repeated, not as "leave".
REPEATED_ESC_S = 0.6


class Seeking:
    """The find / go-to-line box of edit mode (Enter acts; Esc closes it, see ``EditScreen.action_leave``)."""

    _seeking: str | None = None  # what the box does: "find" or "line"
    _seek_closed_at = float("-inf")

    def seek_takes_escape(self) -> bool:
        """Esc, as edit mode reads it: True when it closed the box (open, wherever the focus is) or
        came right after that (a second Esc meant for the box), so it must not leave the screen."""
        if self.query_one("#edit-seek", Input).has_class("-shown"):
            self._close_seek()
            return True
        return time.monotonic() - self._seek_closed_at < REPEATED_ESC_S

    def action_find(self) -> None:
        """Ctrl+F: a box to find text in the file (Enter finds the next match from the cursor)."""
        self._open_seek("find", "find in your file: type, then Enter (Enter again: the next match; Esc closes)")

    def action_goto_line(self) -> None:
        """Ctrl+G: a box to go to a line by its number."""
        lines = self._editor.document.line_count
        self._open_seek("line", f"go to line (1-{lines}): type its number, then Enter; Esc closes")

    def _open_seek(self, what: str, placeholder: str) -> None:
        box = self.query_one("#edit-seek", Input)
        if self._seeking != what:
            box.value = ""
        self._seeking = what
        box.placeholder = placeholder
        box.add_class("-shown")
        box.focus()

    def _close_seek(self) -> None:
        self._seek_closed_at = time.monotonic()
        self.query_one("#edit-seek", Input).remove_class("-shown")
        self._editor.focus()
        self._editor.scroll_cursor_visible()

    def _seek_submitted(self, value: str) -> None:
        if self._seeking == "line":
            self._goto(value)
        else:
            self._find_next(value)

    def _find_next(self, needle: str) -> None:
        """Select the next match of ``needle`` (:meth:`CodeEditor.find_next`); say where, or that there is none."""
        found = self._editor.find_next(needle) if needle else None
        if found is None:
            if needle:
                self._status(f"{needle!r} is not in your file.", error=True)
            return
        line, wrapped = found
        self._status(f"{needle!r} on line {line}" + (" (from the top again)" if wrapped else "") +
                     " · Enter: the next match · Esc: back to your file")

    def _goto(self, value: str) -> None:
        """Move the cursor to the start of the line numbered ``value``."""
        lines = self._editor.document.line_count
        try:
            line = self._editor.go_to_line(int(value.strip()))
        except ValueError:
            self._status(f"A line number, 1 to {lines}, goes here (not {value.strip()!r}).", error=True)
            return
        self._close_seek()
        self._status(f"Line {line} of {lines}.")
