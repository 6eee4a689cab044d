"""How sure the learner is of a prediction: from the question's chance to 100 %, one key press, optional.

The scale starts at a blind guess's chance of being right (``AnswerKind.chance``: 25 % of four choices,
50 % for yes/no, 10 % for a typed answer), so a learner who guesses can say so. The digits are tens of
percent (3 is 30 %, 0 is 100 %); the digit of the chance's own ten gives the chance (2 on a four-choice
question is 25 %); ``g`` says "a guess", which is the chance.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from tutor.model.attempts import CONFIDENCE_RANGE, GUESS

#: The key that records a guess: the question's chance as the confidence.
GUESS_KEY = GUESS[0]
#: The digits, as tens of percent: 1…9 for 10…90, 0 for 100.
DIGITS = tuple("1234567890")


def confidence_keys(chance: int) -> dict[str, int]:
    """The confidence each key gives on a question whose blind guess is right ``chance`` % of the time.

    A digit gives its tens (``7`` is 70 %, ``0`` is 100 %) when that is at least the chance; the digit of
    the chance's own ten gives the chance (``2`` is 25 % of four choices); a lower digit gives nothing.
    :data:`GUESS_KEY` gives the chance.
    """
    keys = {}
    for digit in DIGITS:
        tens = int(digit) * 10 or CONFIDENCE_RANGE[1]
        if tens >= chance:
            keys[digit] = tens
        elif tens < chance < tens + 10:
            keys[digit] = chance
    return {**keys, GUESS_KEY: chance}


def levels_of(chance: int) -> tuple[int, ...]:
    """The confidences the keys and ←/→ reach, lowest first: the chance, then each ten above it, to 100."""
    return tuple(sorted(set(confidence_keys(chance).values())))


def keys_said(chance: int) -> str:
    """What the keys of a scale give, as the confidence line says it: ``2…9, 0 = 25, 30…90, 100 %; g = a
    guess`` for the scale of four choices (a guess is the chance, the scale's first level)."""
    keys = confidence_keys(chance)
    digits = [d for d in DIGITS[:-1] if d in keys]
    guess = f"{GUESS_KEY} = a guess"
    if not digits:
        return f"0 = 100 %; {guess}"
    first = digits[0]
    levels = f"{keys[first]}…90" if keys[first] == int(first) * 10 else \
        f"{keys[first]}, {int(first) * 10 + 10}…90" if first != "9" else f"{keys[first]}"
    span = f"{first}…9" if first != "9" else first
    return f"{span}, 0 = {levels}, 100 %; {guess}"


class ConfidencePicker(Static, can_focus=True):
    """``How sure are you?  25 [30] 40 … 100 %`` (``[25 guess]`` when a guess) — saved with the attempt when given.

    Focused, the digits (tens of percent, from the question's chance) and
    ``g`` (a guess: the chance) set it, ← and → move it, Backspace clears
    it; the exercise screen also passes those keys on from the page where
    they pick nothing else (:meth:`set_from_key`). A confidence saved from
    ``tutor run --confidence`` that no key gives (75 %) shows in its place
    on the scale. Every change posts :class:`ConfidencePicker.Changed`.

    Args:
        value: the confidence to show, in percent (one below ``chance`` is not on this scale: none).
        chance: the question's chance, in percent, where the scale starts (``AnswerKind.chance``).
        page_keys: whether the keys work from the page (said in the label).
        digits_elsewhere: what the digits do where they do not set it ("digits pick a choice").
        last: the confidence of the last run, shown beside the scale while none is set (a new attempt
            starts with none: how sure is said afresh), never set by itself.
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
    PAGE_KEYS = (("1 2 3 4 5 6 7 8 9 0", "tens of percent: 3 is 30 %, 0 is 100 %. The scale starts at the "
                                         "question's chance (1 in k of k choices, 50 % for yes/no, 10 % for a "
                                         "typed answer): digits below it give nothing, and the digit of its own "
                                         "ten gives the chance (2 is 25 % of four choices). Here they never pick "
                                         "a choice"),
                 (GUESS_KEY, "a guess: records the question's chance as how sure you are (25 % of four choices, "
                             "50 % for yes/no, 10 % for a typed answer)"),
                 ("Enter", "run the check"))

    class Changed(Message):
        """The confidence was set or cleared."""

        def __init__(self, value: int | None) -> None:
            super().__init__()
            self.value = value

    def __init__(self, value: int | None = None, chance: int = 50, page_keys: bool = True,
                 digits_elsewhere: str = "", last: int | None = None, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.last = last
        self.chance = chance
        self.keys = confidence_keys(chance)
        self.levels = levels_of(chance)
        self.value = self._on_scale(value)
        self.page_keys = page_keys
        self.digits_elsewhere = digits_elsewhere

    def _on_scale(self, value: int | None) -> int | None:
        """``value`` when this question's scale holds it (a whole percent from the chance to 100), else None."""
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return value if self.chance <= value <= CONFIDENCE_RANGE[1] else None

    @property
    def is_guess(self) -> bool:
        """Whether the confidence set is a guess: the question's chance."""
        return self.value == self.chance

    def on_mount(self) -> None:
        self._redraw()

    def watch_has_focus(self, has_focus: bool) -> None:
        """Redrawn when the focus comes or goes (``on_focus`` runs before Textual sets ``has_focus``)."""
        super().watch_has_focus(has_focus)
        self._redraw()

    def _redraw(self) -> None:
        # the focus is marked in words and a pointer, not only by colour (NO_COLOR shows it too)
        parts: list = [("▶ " if self.has_focus else "  ", "bold"), ("How sure are you? ", "bold")]
        shown = sorted(set(self.levels) | ({self.value} if self.value is not None else set()))
        for level in shown:
            chosen = level == self.value
            label = f"{level} guess" if chosen and self.is_guess else str(level)  # short when not chosen
            parts.append((f"[{label}]" if chosen else f" {label} ", "bold reverse green" if chosen else ""))
        parts.append(" %  ")
        keys = keys_said(self.chance)
        if self.has_focus:
            how = f"keys {keys} set this; ←/→ move it; Backspace clears"
        elif self.page_keys:
            how = f"keys {keys}"
        else:
            elsewhere = f"{self.digits_elsewhere}; " if self.digits_elsewhere else ""
            how = f"{elsewhere}Tab here, then {keys}"
        last = f"last run {self.last} %; " if self.value is None and self.last is not None else ""
        parts.append((f"(optional; {last}{how})", "dim" if not self.has_focus else "bold"))
        self.update(Text.assemble(*parts))

    def set_value(self, value: int | None) -> None:
        """Set (or with None clear) the confidence; one off this question's scale clears it."""
        value = self._on_scale(value)
        changed = value != self.value
        self.value = value
        self._redraw()
        if changed:
            self.post_message(self.Changed(value))

    def set_from_key(self, key: str) -> bool:
        """Set the confidence a key gives (a digit, or :data:`GUESS_KEY`); False when the key gives none."""
        if key not in self.keys:
            return False
        self.set_value(self.keys[key])
        return True

    def on_key(self, event) -> None:
        if event.character and self.set_from_key(event.character):
            event.stop()
            event.prevent_default()

    def action_move(self, step: int) -> None:
        """One level up (``step`` 1) or down (-1); from none, the middle of the scale. A value no key
        gives (75 %, from ``tutor run``) moves to the next level that way (80 or 70)."""
        levels = self.levels
        if self.value is None:
            self.set_value(levels[len(levels) // 2])
            return
        further = [level for level in levels if (level - self.value) * step > 0]
        if further:
            self.set_value(min(further) if step > 0 else max(further))
