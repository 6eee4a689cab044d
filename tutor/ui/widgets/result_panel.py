"""The result of a run: verdict, prediction against observation, errors, evidence."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Sparkline, Static

from tutor.catalog import Exercise
from tutor.render import render_result
from tutor.runner import RunResult


def paired_series(result: RunResult) -> list[tuple[str, list[float] | None, list[float] | None]]:
    """Series evidence by title, as ``(title, clean values, faulted values)``.

    A side without that series (or without evidence) gives None.
    """
    found: dict[str, dict[str, list[float]]] = {}
    for side in ("clean", "faulted"):
        for item in result.evidence.get(side, []):
            if isinstance(item, dict) and item.get("type") == "series" and item.get("values"):
                title = str(item.get("title", "series"))
                try:
                    values = [float(v) for v in item["values"]]
                except (TypeError, ValueError):
                    continue
                found.setdefault(title, {})[side] = values
    return [(title, sides.get("clean"), sides.get("faulted")) for title, sides in found.items()]


class SeriesPair(Vertical):
    """One series drawn as two sparklines, clean beside faulted."""

    DEFAULT_CSS = """
    SeriesPair {
        height: auto;
        margin-top: 1;
    }
    SeriesPair > Horizontal {
        height: auto;
    }
    SeriesPair .series-side {
        width: 1fr;
        height: auto;
        padding-right: 1;
    }
    SeriesPair Sparkline {
        height: 3;
    }
    """

    def __init__(self, title: str, clean: list[float] | None, faulted: list[float] | None) -> None:
        super().__init__()
        self.title = title
        self.clean = clean
        self.faulted = faulted

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble((self.title, "bold"), " (taller is larger)"))
        with Horizontal():
            for side, values in (("clean", self.clean), ("faulted", self.faulted)):
                if values is None:
                    continue
                with Vertical(classes="series-side"):
                    yield Static(f"{side}: {values[0]:.4g} → {values[-1]:.4g}", markup=False)
                    yield Sparkline(values, summary_function=max, classes=f"spark-{side}")


class ResultPanel(Vertical):
    """Empty until a run finishes; then :func:`tutor.render.render_result` plus sparklines."""

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

    def compose(self) -> ComposeResult:
        yield Static("", id="result-text")

    def show(self, exercise: Exercise, result: RunResult) -> None:
        """Replace the panel's content with this result."""
        self.query_one("#result-text", Static).update(Group(*render_result(exercise, result, series=False)))
        self.query(SeriesPair).remove()
        pairs = paired_series(result)
        if pairs:
            self.mount_all([SeriesPair(title, clean, faulted) for title, clean, faulted in pairs])
        self.set_class(True, "-shown")

    def show_text(self, renderable) -> None:
        """Show a plain message (e.g. the check could not start) instead of a result."""
        self.query(SeriesPair).remove()
        self.query_one("#result-text", Static).update(renderable)
        self.set_class(True, "-shown")

    def clear(self) -> None:
        """Hide the previous result (a new answer is being entered)."""
        self.query(SeriesPair).remove()
        self.query_one("#result-text", Static).update("")
        self.set_class(False, "-shown")
