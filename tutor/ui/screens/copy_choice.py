"""Reopening edit mode: continue the learner's last working copy, or start from a fresh one."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class CopyChoiceScreen(ModalScreen[str]):
    """Asks whether to continue the saved working copy; dismisses with ``"continue"`` or ``"fresh"``.

    Esc continues (nothing is thrown away by accident); a fresh start keeps
    the old copy beside the new one as ``<file>.previous``.
    """

    DEFAULT_CSS = """
    CopyChoiceScreen {
        align: center middle;
    }
    CopyChoiceScreen > Vertical {
        width: 70;
        max-width: 95%;
        height: auto;
        border: round $accent;
        padding: 1 2;
        background: $surface;
    }
    CopyChoiceScreen Horizontal {
        height: auto;
        margin-top: 1;
    }
    CopyChoiceScreen Button {
        margin-right: 2;
    }
    """

    BINDINGS = [Binding("escape", "pick('continue')", "Continue my copy", tooltip="continue your working copy"),
                Binding("c", "pick('continue')", "Continue", show=False, tooltip="continue your working copy"),
                Binding("n", "pick('fresh')", "Fresh copy", show=False,
                        tooltip="start from a fresh copy (yours is kept as .previous)")]

    def __init__(self, path: str, where: str, changed_lines: int) -> None:
        """Args:
            path: the subject file (``engine/model.py``).
            where: where the working copy is saved.
            changed_lines: how many lines the copy changes from the file it started as.
        """
        super().__init__()
        self.path = path
        self.where = where
        self.changed_lines = changed_lines

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text.assemble(("You have a working copy of ", "bold"), (self.path, "bold"),
                                       f" ({self.changed_lines} changed line{'s' if self.changed_lines != 1 else ''})",
                                       "\n", (f"saved in {self.where}", "dim")))
            with Horizontal():
                yield Button("Continue my copy (c)", id="copy-continue", variant="primary")
                yield Button("Start fresh (n)", id="copy-fresh")

    def on_mount(self) -> None:
        self.query_one("#copy-continue", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss("continue" if event.button.id == "copy-continue" else "fresh")

    def action_pick(self, choice: str) -> None:
        self.dismiss(choice)
