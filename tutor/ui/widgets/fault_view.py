"""The fault an exercise applies: its one-line summary and its unified diff."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from exercises.faults import Fault, diff
from tutor.render import render_diff


class FaultView(Vertical):
    """Shows the fault's summary and its diff, syntax-highlighted and wrapped (never cut)."""

    DEFAULT_CSS = """
    FaultView {
        height: auto;
        border: round $secondary;
        border-title-color: $secondary;
        padding: 0 1;
    }
    FaultView > .fault-summary {
        margin-bottom: 1;
    }
    """

    def __init__(self, fault: Fault | None, observe: str = "faulted", hidden: bool = False, **kwargs) -> None:
        """Args:
            fault: the exercise's fault, or None for an exercise on clean code.
            observe: which side the exercise grades (``faulted``, ``clean`` or ``both``).
            hidden: the check itself draws a fault the learner must find (the capstone).
        """
        super().__init__(**kwargs)
        self.fault = fault
        self.observe = observe
        self.hidden = hidden

    def compose(self) -> ComposeResult:
        if self.fault is None and self.hidden:
            self.border_title = "the fault: hidden"
            yield Static("The check builds the model with one hidden fault, or none: a new mystery for each attempt; "
                         "the result names it.", classes="fault-summary")
            return
        if self.fault is None:
            self.border_title = "no fault"
            yield Static("This exercise runs the clean code as it is; nothing is edited.",
                         classes="fault-summary")
            return
        self.border_title = f"the fault: {self.fault.id}"
        yield Static(Text.assemble(("What changes: ", "bold"), self.fault.summary,
                                   (f"  ({self.fault.file})", "dim")), classes="fault-summary")
        yield Static(render_diff(diff(self.fault)), classes="fault-diff")
