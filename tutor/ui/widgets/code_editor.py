"""The in-TUI code editor of edit mode: a TextArea set up for Python, with save-and-run and leave keys."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea
from textual.widgets.text_area import Selection


class CodeEditor(TextArea):
    """Textual's ``TextArea`` in code-editor mode for one subject file.

    Python highlighting (tree-sitter, from ``textual[syntax]``) when it is
    installed — plain text otherwise, never an error — line numbers, Tab
    indents. Ctrl+S posts :class:`CodeEditor.SaveRequested`; Esc posts
    :class:`CodeEditor.LeaveRequested` instead of moving the focus, so the
    screen can keep the text and go back. The text itself is the screen's
    to save: this widget never writes a file.
    """

    DEFAULT_CSS = """
    CodeEditor {
        height: 1fr;
        min-height: 6;
    }
    """

    BINDINGS = [Binding("ctrl+s", "save", "Run", priority=True,
                        tooltip="save your file and run the check on it"),
                Binding("home", "cursor_line_start", "Line start", show=False,
                        tooltip="the start of the line, column 1 (Shift+Home selects to there)"),
                Binding("ctrl+a", "select_all", "Select all", show=False, tooltip="select the whole file")]
    #: keys the editor reads itself, for the help
    PAGE_KEYS = (
        ("Tab", "indent (in the editor Tab does not move the focus: Shift+Tab or Ctrl+T leaves it)"),
        ("Esc", "leave edit mode; your text is kept"),
    )

    class SaveRequested(Message):
        """The learner pressed Ctrl+S: save the text and run it."""

        def __init__(self, editor: "CodeEditor") -> None:
            super().__init__()
            self.editor = editor

    class LeaveRequested(Message):
        """The learner pressed Esc: keep the text and leave."""

        def __init__(self, editor: "CodeEditor") -> None:
            super().__init__()
            self.editor = editor

    def __init__(self, text: str = "", **kwargs) -> None:
        """Args:
            text: the file's text.
            kwargs: passed to ``TextArea`` (id, classes, ...).
        """
        super().__init__(text, soft_wrap=False, tab_behavior="indent", show_line_numbers=True, theme="monokai",
                         **kwargs)
        if "python" in self.available_languages:
            self.language = "python"

    @property
    def highlighted(self) -> bool:
        """Whether the text is highlighted as Python (tree-sitter is installed)."""
        return self.language == "python"

    def find_next(self, needle: str) -> tuple[int, bool] | None:
        """Select the next match of ``needle`` after the cursor, wrapping to the top, and show it.

        Returns:
            (its line, counted from 1; whether the search wrapped), or None when the text has no match.
        """
        text, document = self.text, self.document
        index = text.find(needle, document.get_index_from_location(self.selection.end))
        wrapped = index < 0
        if wrapped:
            index = text.find(needle)
        if index < 0:
            return None
        self.selection = Selection(document.get_location_from_index(index),
                                   document.get_location_from_index(index + len(needle)))
        self.scroll_cursor_visible(center=True)
        return self.selection.end[0] + 1, wrapped

    def go_to_line(self, line: int) -> int:
        """Put the cursor at the start of ``line`` (from 1; kept within the file) and show it; return the line."""
        line = max(1, min(self.document.line_count, line))
        self.move_cursor((line - 1, 0), center=True)
        return line

    def on_resize(self, event: events.Resize) -> None:
        """Shrunk (a result panel opened below, a smaller terminal): keep the line being edited on screen."""
        self.call_after_refresh(self.scroll_cursor_visible)

    def action_cursor_line_start(self, select: bool = False) -> None:
        """Home: the start of the line, column 1, as the help says (Textual's own Home stops at the
        first character that is not a space first, which a learner reading "line start" does not expect)."""
        row, _ = self.cursor_location
        self.move_cursor((row, 0), select=select)

    def action_save(self) -> None:
        self.post_message(self.SaveRequested(self))

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            self.post_message(self.LeaveRequested(self))
            return
        await super()._on_key(event)
