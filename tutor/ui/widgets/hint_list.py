"""Hints revealed one at a time: first a nudge, then the mechanism."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static


class HintList(Vertical):
    """Shows how many hints there are and reveals them one by one."""

    DEFAULT_CSS = """
    HintList {
        height: auto;
        padding: 0 1;
    }
    HintList > .hint {
        margin-top: 1;
    }
    HintList > .hint-status {
        color: $text-muted;
    }
    """

    def __init__(self, hints: tuple[str, ...], **kwargs) -> None:
        """Args:
            hints: the exercise's hints, in order.
        """
        super().__init__(**kwargs)
        self.hints = hints
        self.shown = 0

    def compose(self) -> ComposeResult:
        yield Static(self._status(), classes="hint-status", markup=False)

    def _status(self) -> str:
        left = len(self.hints) - self.shown
        if left == 0:
            return f"All {len(self.hints)} hints shown."
        if self.shown == 0:  # none seen yet: there is no "next" or "left" to speak of
            return f"{left} hint{'s' if left != 1 else ''} — press h (or the Hint button) to see the first."
        return f"{left} hint{'s' if left != 1 else ''} left — press h (or the Hint button) to see the next."

    def reveal(self, scroll: bool = True) -> bool:
        """Show the next hint (and, unless ``scroll`` is False, scroll it into view).

        Returns:
            True if a hint was revealed, False if all were already shown.
        """
        if self.shown >= len(self.hints):
            return False
        self.shown += 1
        hint = Static(Text.assemble((f"Hint {self.shown}/{len(self.hints)}: ", "bold"),
                                    self.hints[self.shown - 1]), classes="hint")
        self.mount(hint, before=self.query_one(".hint-status"))
        self.query_one(".hint-status", Static).update(self._status())
        if scroll:
            hint.scroll_visible()
        return True
