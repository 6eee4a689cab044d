"""A series of the evidence as a plot: every side's curve on shared, labelled axes (textual-plotext)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from tutor.render import PLOT_HEIGHT, SeriesGroup, draw_series, legend


class SeriesPlot(Vertical):
    """The series' heading, its plot (:func:`tutor.render.draw_series`, as ``tutor run`` draws it), the legend.

    Args:
        group: the series, with a curve per side.
        sided: name the sides in the legend (False for an exercise with one side).
    """

    DEFAULT_CSS = f"""
    SeriesPlot {{
        height: auto;
        margin-top: 1;
    }}
    SeriesPlot > PlotextPlot {{
        height: {PLOT_HEIGHT};
        width: 1fr;
    }}
    SeriesPlot > Static {{
        height: auto;
    }}
    """

    def __init__(self, group: SeriesGroup, sided: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.group = group
        self.sided = sided

    def compose(self) -> ComposeResult:
        yield Static(Text(self.group.heading, style="bold"), classes="series-heading")
        yield PlotextPlot(classes="series-plot")
        yield Static(legend(self.group, self.sided), classes="series-legend")

    def on_mount(self) -> None:
        draw_series(self.query_one(PlotextPlot).plt, self.group)
