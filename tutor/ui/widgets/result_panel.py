"""The result of a run: verdict, prediction against observation, errors, evidence, plots."""

from __future__ import annotations

from rich.console import Group
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from tutor.model.catalog import Exercise
from tutor.render import render_result, series_groups
from tutor.sandbox.runner import RunResult
from tutor.ui.saving import Kept
from tutor.ui.widgets.series_plot import SeriesPlot


class ResultPanel(Vertical):
    """Empty until a run finishes; then :func:`tutor.render.render_result` and a plot per series.

    Attributes:
        timeout_advice: what the verdict of a timed-out run tells the learner to do.
    """

    DEFAULT_CSS = """
    ResultPanel {
        height: auto;
        border: round $accent;
        padding: 0 1;
        display: none;
    }
    ResultPanel.-shown {
        display: block;
    }
    """

    BORDER_TITLE = "result"
    timeout_advice = ""  # said once, by the exercise screen's retry line ("r retries with twice the limit")

    def compose(self) -> ComposeResult:
        yield Static("", id="result-text")

    def show(self, exercise: Exercise, result: RunResult, title: str = "result", kept: Kept = Kept()) -> None:
        """Replace the panel's content with this result (``title`` on its border); ``kept`` is what its
        save did, which a warm-up's verdict says (saved, or not saved and why)."""
        self.border_title = title
        self.query_one("#result-text", Static).update(
            Group(*render_result(exercise, result, series=False, timeout_advice=self.timeout_advice,
                                 saved=kept.saved, unsaved_why=kept.why)))
        self.query(SeriesPlot).remove()
        groups = series_groups(result.evidence)
        if groups:
            self.mount_all([SeriesPlot(group, sided=bool(exercise.fault)) for group in groups])
        self.set_class(True, "-shown")

    def show_text(self, renderable, title: str = "result") -> None:
        """Show a plain message (e.g. the check could not start, or a saved attempt) instead of a result."""
        self.border_title = title
        self.query(SeriesPlot).remove()
        self.query_one("#result-text", Static).update(renderable)
        self.set_class(True, "-shown")

    def clear(self) -> None:
        """Hide the previous result (a new run has started)."""
        self.query(SeriesPlot).remove()
        self.query_one("#result-text", Static).update("")
        self.set_class(False, "-shown")
