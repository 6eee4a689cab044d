"""A running check, as the exercise page shows it: one line of words and a bar over every side."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static


class RunStatus(Vertical):
    """What a running check is doing: shown (class ``-shown``) from :meth:`start` until :meth:`stop`.

    The sides of a run go at once; the bar shows the mean of their fractions
    done, the words each side's share and the last side's message.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._done: dict[str, float] = {}  # side name -> fraction done, 0 … 1

    def compose(self) -> ComposeResult:
        yield Static("", id="running-status")
        yield ProgressBar(total=None, show_eta=False, id="running-bar")

    def start(self, status: str) -> None:
        """A run begins: no side has reported, the bar waits, ``status`` says what is starting."""
        self._done = {}
        self.query_one("#running-bar", ProgressBar).update(total=None, progress=0)
        self.say(Text(f"{status}  (Esc cancels)"))
        self.add_class("-shown")

    def stop(self) -> None:
        """The run is over: the words go and the box hides."""
        self.say(Text(""))
        self.remove_class("-shown")

    def say(self, words: Text | str) -> None:
        """Put ``words`` on the status line (``Cancelling…``)."""
        self.query_one("#running-status", Static).update(words)

    def report(self, sides: list[str], side: str, fraction: float, message: str) -> None:
        """Side ``side`` of ``sides`` is ``fraction`` done (kept at its highest so far) and says ``message``."""
        self._done[side] = max(self._done.get(side, 0.0), max(0.0, min(1.0, fraction)))
        done = sum(self._done.get(s, 0.0) for s in sides) / len(sides)
        self.query_one("#running-bar", ProgressBar).update(total=1.0, progress=done)
        each = " · ".join(f"{s} {self._done.get(s, 0.0):.0%}" for s in sides)
        self.say(Text(f"Running… {each} — {side}: {message}  (Esc cancels)"))
