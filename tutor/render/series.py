"""Series as plots: every side's curve of one series on shared axes, log-scaled when the values span decades."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from rich.console import Group
from rich.text import Text

_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 48) -> str:
    """A one-line drawing of a series (min at ▁, max at █)."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [values[int(i * step)] for i in range(width)]
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    return "".join(_BLOCKS[min(len(_BLOCKS) - 1, int((v - lo) / span * (len(_BLOCKS) - 1) + 0.5))] for v in values)


#: Each side's marker (told apart without colour) and colour.
SIDE_STYLE = {"clean": ("•", "cyan"), "faulted": ("x", "red"), "yours": ("+", "orange")}


_OTHER_STYLE = ("o", "magenta")


#: Values spanning more than this ratio (max / min, all positive) are drawn on a log scale.
LOG_SPAN = 100.0


PLOT_HEIGHT = 14


@dataclass
class SeriesGroup:
    """One series of the evidence, every side's curve of it.

    Attributes:
        title: the series' title.
        label: its label (a unit such as ``nats``, or a name), or "".
        curves: values by side, clean first, then faulted, then any other side.
    """

    title: str
    label: str = ""
    curves: dict[str, list[float]] = field(default_factory=dict)

    @property
    def heading(self) -> str:
        return f"{self.title} ({self.label})" if self.label else self.title


def series_groups(evidence: dict[str, list]) -> list[SeriesGroup]:
    """The series of a result's evidence by title, each with every side's values (unreadable values skipped)."""
    order = {"clean": 0, "faulted": 1, "yours": 2}
    found: dict[str, SeriesGroup] = {}
    for side in sorted(evidence, key=lambda s: order.get(s, 3)):
        for item in evidence.get(side) or []:
            if not (isinstance(item, dict) and item.get("type") == "series" and item.get("values")):
                continue
            try:
                values = [float(v) for v in item["values"]]
            except (TypeError, ValueError):
                continue
            title = str(item.get("title", "series"))
            group = found.setdefault(title, SeriesGroup(title, str(item.get("label") or "")))
            group.curves[side] = values
    return list(found.values())


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def plot_scale(curves: dict[str, list[float]]) -> str:
    """``log`` when every finite value is positive and they span more than :data:`LOG_SPAN`, else ``linear``."""
    values = [v for c in curves.values() for v in _finite(c)]
    if values and min(values) > 0 and max(values) / min(values) > LOG_SPAN:
        return "log"
    return "linear"


def _label(value: float) -> str:
    return f"{value:.3g}" if value == 0 or 1e-3 <= abs(value) < 1e4 else f"{value:.0e}"


def nice_ticks(low: float, high: float, scale: str) -> tuple[list[float], float, float]:
    """Tick values for the y axis, and the axis limits that put the outer ticks at its ends.

    Linear: steps of 1, 2, 2.5 or 5 times a power of ten, about five ticks.
    Log: the powers of ten (with 2 and 5 times them when the range spans
    under three decades) from the decade below ``low`` to the one above ``high``.
    """
    if scale == "log":
        lo_exp, hi_exp = math.floor(math.log10(low)), math.ceil(math.log10(high))
        hi_exp = max(hi_exp, lo_exp + 1)
        steps = (1, 2, 5) if hi_exp - lo_exp < 3 else (1,)
        ticks = [m * 10.0 ** e for e in range(lo_exp, hi_exp + 1) for m in steps if m * 10.0 ** e <= 10.0 ** hi_exp]
        # the axis runs from the last tick at or below low to the first at or above high
        below = max(t for t in ticks if t <= low * (1 + 1e-12))
        above = min(t for t in ticks if t >= high * (1 - 1e-12))
        return [t for t in ticks if below <= t <= above], below, above
    if high == low:
        pad = abs(high) * 0.1 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / 4
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start, stop = math.floor(low / step) * step, math.ceil(high / step) * step
    count = int(round((stop - start) / step))
    ticks = [start + i * step for i in range(count + 1)]
    return [0.0 if abs(t) < step * 1e-9 else t for t in ticks], start, stop


def draw_series(plt, group: SeriesGroup) -> None:
    """Draw ``group`` on a Plotext figure (the ``plotext`` module, or a textual-plotext widget's ``plt``).

    Every side's curve on the same axes; labelled ticks on both axes; a log
    y axis when the values span decades. The caller sets the size and theme;
    :func:`legend` says which marker is which side.
    """
    plt.clear_data()
    scale = plot_scale(group.curves)
    # A log axis is drawn as log10 of the values on a linear one, its ticks
    # labelled with the values: Plotext's own log scale rescales the data in
    # place on every build, and a widget builds on every repaint.
    axis = (lambda v: math.log10(v)) if scale == "log" else (lambda v: v)
    values = [v for c in group.curves.values() for v in _finite(c)]
    longest = max((len(c) for c in group.curves.values()), default=1)
    for side, curve in group.curves.items():
        points = [(x, axis(y)) for x, y in enumerate(curve) if math.isfinite(y) and (scale == "linear" or y > 0)]
        if not points:
            continue
        marker, color = SIDE_STYLE.get(side, _OTHER_STYLE)
        xs, ys = zip(*points)
        plt.plot(list(xs), list(ys), marker=marker, color=color)
    if values:
        ticks, low, high = nice_ticks(min(values), max(values), scale)
        plt.ylim(axis(low), axis(high))
        plt.yticks([axis(t) for t in ticks], [_label(t) for t in ticks])
    last = max(longest - 1, 1)
    step = max(1, nice_ticks(0, last, "linear")[0][1] if last >= 4 else 1)
    xticks = list(range(0, last + 1, int(step)))
    if xticks[-1] != last and last - xticks[-1] >= step / 2:
        xticks.append(last)
    plt.xlim(0, last)
    plt.xticks(xticks, [str(x) for x in xticks])


def legend(group: SeriesGroup, sided: bool = True) -> Text:
    """Which marker is which side, with each curve's first and last value, and the scale."""
    parts: list = []
    for side, curve in group.curves.items():
        marker, color = SIDE_STYLE.get(side, _OTHER_STYLE)
        finite = _finite(curve)
        ends = f"{curve[0]:.4g} → {curve[-1]:.4g}" if curve else ""
        if len(finite) < len(curve):
            ends += f" ({len(curve) - len(finite)} not finite, left out)"
        name = side if sided else "values"
        parts += [(f"{marker} ", f"bold {color}"), (name, color), f" {ends}   "]
    if plot_scale(group.curves) == "log":
        parts.append(("log scale", "dim"))
    return Text.assemble(*parts)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class SeriesPlot:
    """A series drawn with ``plotext`` at the console's width: the heading, the plot, the legend.

    Args:
        group: the series and its curves.
        sided: name the sides in the legend (False for an exercise with one side).
        height: rows of the plot itself.
    """

    def __init__(self, group: SeriesGroup, sided: bool = True, height: int = PLOT_HEIGHT) -> None:
        self.group, self.sided, self.height = group, sided, height

    def plot_text(self, width: int, color: bool = True) -> Text:
        # deferred: plotext loads only when a series is drawn
        import plotext as plt
        plt.clear_figure()
        plt.limitsize(False, False)  # the console's width, not the terminal's
        plt.theme("clear")
        plt.plotsize(max(20, width), self.height)
        draw_series(plt, self.group)
        drawn = plt.build().rstrip("\n")
        plt.clear_figure()
        return Text.from_ansi(drawn) if color else Text(_ANSI.sub("", drawn).rstrip("\n"))

    def __rich_console__(self, console, options):
        yield Group(Text(self.group.heading, style="bold"),
                    self.plot_text(options.max_width, color=console.color_system is not None),
                    legend(self.group, self.sided))
