"""The explain-back note: a text area saved as the learner types (debounced)."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static, TextArea

#: seconds of quiet typing before the note is saved
DEBOUNCE_S = 1.0


class NoteEditor(Vertical):
    """The explain-back question and the learner's answer, saved through ``on_save``.

    Saving happens ``DEBOUNCE_S`` after the last keystroke (in a thread, so
    a progress file locked by another tutor never freezes the screen), on
    :meth:`flush`, and when the widget is unmounted (leaving the screen,
    quitting the app; then at once, on the calling thread), so no typed text
    is lost. ``on_save(text)`` must be safe to call from any thread, the
    newest text winning (:meth:`tutor.app.session.Session.save_note`); it returns
    None on success or a sentence saying why it failed, which is shown under
    the text area.
    """

    DEFAULT_CSS = """
    NoteEditor {
        height: auto;
        border: round $primary;
        padding: 0 1;
    }
    NoteEditor > TextArea {
        height: 8;
        min-height: 4;
    }
    NoteEditor > .note-status {
        color: $text-muted;
    }
    NoteEditor > .note-status.-error {
        color: $error;
    }
    """

    BORDER_TITLE = "explain back (e)"

    def __init__(self, question: str, text: str, on_save: Callable[[str], str | None],
                 saved: str | None = None, **kwargs) -> None:
        """Args:
            question: the exercise's explain-back question.
            text: the note to show (the saved one, or a draft kept from before).
            on_save: stores a note; returns None or a one-sentence error.
            saved: the note as saved, when ``text`` is a draft that differs from it (saved soon).
        """
        super().__init__(**kwargs)
        self.question = question
        self._saved_text = text if saved is None else saved
        self._on_save = on_save
        self._timer: Timer | None = None
        # Held directly: its document outlives unmounting, so a flush on the
        # way out still reads what was typed.
        self._area = TextArea(text, id="note", soft_wrap=True, show_line_numbers=False)

    def compose(self) -> ComposeResult:
        # The catalog's line breaks are the TOML file's, not the learner's
        # screen's: join each paragraph's lines so the box wraps them cleanly.
        paragraphs = [" ".join(part.split()) for part in self.question.strip().split("\n\n")]
        yield Static("\n\n".join(paragraphs), classes="note-question", markup=False)
        yield self._area
        yield Static("Saved as you type.", classes="note-status")

    def on_mount(self) -> None:
        if self.dirty:  # a draft kept from before: say so, and save it
            self.query_one(".note-status", Static).update("Your unsaved note from before is back; saving it.")
            self._timer = self.set_timer(DEBOUNCE_S, self._save_in_background)

    @property
    def text(self) -> str:
        """What the text area holds now."""
        return self._area.text

    @property
    def dirty(self) -> bool:
        """Whether the text differs from what was last saved."""
        return self._area.text != self._saved_text

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        if self.dirty:
            self._timer = self.set_timer(DEBOUNCE_S, self._save_in_background)

    class Saved(Message):
        """A save in a thread finished (posted by the thread; ``post_message`` never blocks)."""

        def __init__(self, text: str, error: str | None) -> None:
            super().__init__()
            self.text = text
            self.error = error

    def _save_in_background(self) -> None:
        """The typing paused: save the text as it is now, in a thread."""
        self._timer = None
        text = self._area.text
        if text == self._saved_text:
            return

        def save() -> None:
            self.post_message(self.Saved(text, self._on_save(text)))
        self.run_worker(save, thread=True, group="note-save", exit_on_error=False)

    def on_note_editor_saved(self, event: "NoteEditor.Saved") -> None:
        event.stop()
        if event.error is None:
            self._saved_text = event.text
        self._set_status(event.error)

    def flush(self) -> None:
        """Save now, on this thread, if the text changed since the last save."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        text = self._area.text
        if text == self._saved_text:
            return
        error = self._on_save(text)
        if error is None:
            self._saved_text = text
        self._set_status(error)

    def _set_status(self, error: str | None) -> None:
        try:
            status = self.query_one(".note-status", Static)
        except Exception:
            return
        status.update(Text(f"Not saved: {error}" if error else "Saved."))
        status.set_class(error is not None, "-error")

    def on_unmount(self) -> None:
        self.flush()
