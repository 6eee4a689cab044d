"""How sure the learner is of a prediction: 50 % to 100 %, one key press, optional."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

#: The confidence each key gives, in percent: 5 6 7 8 9 for 50…90, 0 for 100.
CONFIDENCE_KEYS = {"5": 50, "6": 60, "7": 70, "8": 80, "9": 90, "0": 100}
LEVELS = tuple(CONFIDENCE_KEYS.values())


class ConfidencePicker(Static, can_focus=True):
    """``How sure are you? 50 60 [70] 80 90 100 %`` — saved with the attempt when given.

    Focused, the keys 5…9 and 0 set it, ← and → move it, Backspace clears it;
    the exercise screen also passes those digits on from the page where they
    pick nothing else (:meth:`set_from_key`). Every change posts
    :class:`ConfidencePicker.Changed`.

    Args:
        page_keys: whether the digit keys work from the page (said in the label).
    """

    DEFAULT_CSS = """
    ConfidencePicker {
        height: auto;
        padding: 0 1;
        margin-top: 1;
    }
    ConfidencePicker:focus {
        background: $boost;
    }
    """

    BINDINGS = [
        Binding("left", "move(-1)", "Less sure", show=False, tooltip="less sure (one step down)"),
        Binding("right", "move(1)", "More sure", show=False, tooltip="more sure (one step up)"),
        Binding("backspace", "clear", "No confidence", show=False, tooltip="no confidence (clear it)"),
        Binding("delete", "clear", "No confidence", show=False, tooltip="no confidence (clear it)"),
    ]
    #: keys it reads itself (``on_key``), for the help
    PAGE_KEYS = (("5 6 7 8 9 0", "50, 60, 70, 80, 90 or 100 % sure (here they never pick a choice)"),
                 ("Enter", "run the check"))

    class Changed(Message):
        """The confidence was set or cleared."""

        def __init__(self, value: int | None) -> None:
            super().__init__()
            self.value = value

    def __init__(self, value: int | None = None, page_keys: bool = True, digits_elsewhere: str = "",
                 **kwargs) -> None:
        super().__init__("", **kwargs)
        self.value = value if value in LEVELS else None
        self.page_keys = page_keys
        #: what the digits do while the focus is not here, where they do not set it ("digits pick a choice")
        self.digits_elsewhere = digits_elsewhere

    def on_mount(self) -> None:
        self._redraw()

    def watch_has_focus(self, has_focus: bool) -> None:
        """Redrawn when the focus comes or goes (``on_focus`` runs before Textual sets ``has_focus``)."""
        super().watch_has_focus(has_focus)
        self._redraw()

    def _redraw(self) -> None:
        # the focus is marked in words and a pointer, not only by colour (NO_COLOR shows it too)
        parts: list = [("▶ " if self.has_focus else "  ", "bold"), ("How sure are you? ", "bold")]
        for key, level in CONFIDENCE_KEYS.items():
            chosen = level == self.value
            parts.append((f"[{level}]" if chosen else f" {level} ", "bold reverse green" if chosen else ""))
        parts.append(" %  ")
        if self.has_focus:
            how = "keys 5…9, 0 set this; ←/→ move it; Backspace clears"
        elif self.page_keys:
            how = "keys 5…9, 0"
        else:
            elsewhere = f"{self.digits_elsewhere}; " if self.digits_elsewhere else ""
            how = f"{elsewhere}Tab here, then 5…9, 0"
        parts.append((f"(optional; {how})", "dim" if not self.has_focus else "bold"))
        self.update(Text.assemble(*parts))

    def set_value(self, value: int | None) -> None:
        """Set (or with None clear) the confidence."""
        value = value if value in LEVELS else None
        changed = value != self.value
        self.value = value
        self._redraw()
        if changed:
            self.post_message(self.Changed(value))

    def set_from_key(self, key: str) -> bool:
        """Set the confidence a digit key gives; False when the key gives none."""
        if key not in CONFIDENCE_KEYS:
            return False
        self.set_value(CONFIDENCE_KEYS[key])
        return True

    def on_key(self, event) -> None:
        if event.character and self.set_from_key(event.character):
            event.stop()
            event.prevent_default()

    def action_move(self, step: int) -> None:
        index = LEVELS.index(self.value) if self.value in LEVELS else (len(LEVELS) // 2 - step)
        self.set_value(LEVELS[max(0, min(len(LEVELS) - 1, index + step))])

    def action_clear(self) -> None:
        self.set_value(None)
