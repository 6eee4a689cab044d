"""Rich renderables for a run's result — used by the CLI and inside the TUI.

Evidence tables wrap long cells instead of cutting them, so nothing is
silently truncated on an 80-column terminal, and they wrap at spaces: each
column is at least as wide as its longest word (:class:`WordTable`), so a
cell such as ``(B,T,C)=(2,16,128)`` is never broken in the middle.

Series (loss curves and the like) are drawn as plots with labelled axes:
every side's curve of one series on the same axes, so a faulted curve that
ends at 1.955 sits visibly above a clean one that ends at 0.0058 — on a log
scale when the values span decades (:func:`plot_scale`). :func:`draw_series`
configures a Plotext figure; the CLI draws with ``plotext``
(:class:`SeriesPlot`), the TUI with ``textual-plotext`` through the same
function.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from rich.console import Group
from rich.table import Table
from rich.text import Text

from exercises import answers

_BLOCKS = "▁▂▃▄▅▆▇█"
VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "ok": "bold cyan",
                 "error": "bold yellow", "timeout": "bold yellow", "cancelled": "bold yellow"}
VERDICT_TEXT = {"pass": "✓ your prediction matched the observation",
                "fail": "✗ your prediction did not match the observation",
                "ok": "the check ran (no prediction)",
                "error": "the check could not finish — that is itself an outcome",
                "timeout": "the check ran out of time",
                "cancelled": "the run was cancelled"}
#: What a learner can do about a timeout, after the verdict (the TUI passes its own, naming its key).
TIMEOUT_ADVICE = "the machine may be busy: run it again when it is quieter"


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


def evidence_renderables(items: list[dict], side: str, series: bool = True) -> list:
    """Tables, notes and (unless ``series`` is False) each series' first and last value, of one side's evidence.

    Each line starts with ``[side]``; an empty ``side`` (an exercise with no
    fault has only one side) leaves the label out. The series themselves are
    drawn by :func:`render_result`, every side on one plot.
    """
    prefix = f"[{side}] " if side else ""
    out = []
    for item in items:
        kind = item.get("type")
        if kind == "table":
            # The title goes on its own line: as a table title it would wrap
            # to the width of a narrow table.
            out.append(Text(f"{prefix}{item['title']}", style="bold"))
            out.append(WordTable([str(c) for c in item["columns"]],
                                 [[Text(str(c)) for c in row] for row in item["rows"]]))
        elif kind == "series" and series:
            values = item.get("values", [])
            label = f" {item['label']}" if item.get("label") else ""
            first, last = (values[0], values[-1]) if values else (float("nan"), float("nan"))
            out.append(Text.assemble((f"{prefix}{item['title']}{label}: ", "bold"), f"{first:.4g} → {last:.4g}"))
        elif kind == "note":
            out.append(Text(f"{prefix}{item['text']}", style="italic"))
    return out


def comparison_table(ex, result) -> "WordTable":
    table = WordTable(["", "value"], styles=["bold", ""])
    if result.prediction is not None:
        # As it was read and graded, which is also how it is saved ("capability" for the key 6).
        table.add_row("your prediction", Text(result.prediction_text or result.prediction))
    if result.observed is not None:
        table.add_row("observed", Text(answers.show(ex.kind, result.observed)))
    if ex.fault and result.clean is not None and ex.observe != "clean":
        table.add_row("clean subject", Text(answers.show(ex.kind, result.clean)))
    if ex.fault and result.faulted is not None and ex.observe == "clean":
        table.add_row("faulted subject", Text(answers.show(ex.kind, result.faulted)))
    if ex.seed_per_attempt:
        table.add_row("mystery", Text(f"seed {result.seed} (tutor run {ex.id} --seed {result.seed} rebuilds it)"))
    ran = f" · {result.duration_s:.2f} s" if result.duration_s or result.status != "cancelled" else ""
    table.add_row("device", Text(f"{result.device} · torch {result.torch}{ran}"))
    return table


def render_result(ex, result, series: bool = True, timeout_advice: str = TIMEOUT_ADVICE) -> list:
    """The verdict, prediction against observation, errors, and evidence.

    ``series=False`` leaves the plots of the series out, for a caller that
    draws them itself (:func:`series_groups`); with ``series=True`` each is
    a :class:`SeriesPlot`. An error that several sides
    share (both timed out, say) is said once, naming the sides; a timeout's
    verdict ends with ``timeout_advice``.
    """
    verdict = VERDICT_TEXT.get(result.status, result.status)
    if result.status == "timeout" and timeout_advice:
        verdict = f"{verdict} — {timeout_advice}"
    parts: list = [Text(verdict, style=VERDICT_STYLE.get(result.status, "bold"))]
    parts.append(comparison_table(ex, result))
    # With no fault there is one side, and naming it "clean" would mislead
    # (the capstone's mystery model, say): such lines carry no side label.
    label = (lambda side: side) if ex.fault else (lambda side: "")
    said: dict[str, list[str]] = {}  # each message once, with every side that gave it
    for side, message in result.errors.items():
        if result.status == "cancelled" and side == "run":
            continue  # the verdict line already says so
        said.setdefault(message, []).append(label(side) or "the check")
    for message, sides in said.items():
        parts.append(Text(f"{' and '.join(sides)}: {message}", style="yellow"))
    for side, output in result.output.items():
        if output.strip():
            parts.append(Text(f"{label(side) or 'the check'} printed:\n{output[:600]}", style="dim"))
    for side in ("faulted", "clean"):
        if side in result.evidence:
            # each series is drawn below, every side on one plot, its legend giving the first and last values
            parts.extend(evidence_renderables(result.evidence[side], label(side), series=False))
    if series:
        parts.extend(SeriesPlot(group, sided=bool(ex.fault)) for group in series_groups(result.evidence))
    return parts


# --- tables that wrap at words ---------------------------------------------------

def _longest_word(cell) -> int:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((len(word) for word in text.split()), default=0)


def _longest_line(cell) -> int:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((len(line) for line in text.splitlines()), default=0)


def column_widths(columns: list, rows: list[list], available: int) -> list[int]:
    """Widths for the columns' text that fit ``available`` and break no word when that is possible.

    Each column gets at least its longest word and at most its longest line.
    When even the longest words do not fit side by side, the widest columns
    give way first (only then is a word folded).
    """
    cells = [[columns[i]] + [row[i] for row in rows if i < len(row)] for i in range(len(columns))]
    low = [max(1, max(_longest_word(c) for c in column)) for column in cells]
    high = [max(low[i], max(_longest_line(c) for c in column)) for i, column in enumerate(cells)]
    available = max(len(columns), available)
    if sum(high) <= available:
        return high
    widths = list(low)
    while sum(widths) > available:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= 1:
            break
        widths[widest] -= 1
    spare = available - sum(widths)
    while spare > 0:  # the rest goes to the columns furthest from their longest line
        wanting = [i for i in range(len(widths)) if widths[i] < high[i]]
        if not wanting:
            break
        neediest = max(wanting, key=lambda i: (high[i] - widths[i]) / high[i])
        widths[neediest] += 1
        spare -= 1
    return widths


class WordTable:
    """A table whose cells wrap at spaces, never inside a word that fits (see :func:`column_widths`).

    Args:
        columns: the header of each column (text).
        rows: the cells, text or Rich ``Text``.
        styles: a style per column, or None.
        show_edge: draw the outer border.
        box: a Rich box style, or None for Rich's default.
    """

    def __init__(self, columns: list, rows: list[list] | None = None, styles: list[str] | None = None,
                 show_edge: bool = True, box=None, show_header: bool = True) -> None:
        self.columns = list(columns)
        self.rows = [list(r) for r in (rows or [])]
        self.styles = styles or [""] * len(self.columns)
        self.show_edge = show_edge
        self.box = box
        self.show_header = show_header

    def add_row(self, *cells) -> None:
        self.rows.append(list(cells))

    def table(self, width: int) -> Table:
        """The Rich table laid out for ``width`` columns."""
        n = len(self.columns)
        # borders between and around the columns, and one space of padding inside each
        # (none at the outer edges: pad_edge is off)
        overhead = (n - 1) + (2 if self.show_edge else 0) + 2 * n - 2
        widths = column_widths(self.columns, self.rows, width - overhead)
        options = {"box": self.box} if self.box is not None else {}
        table = Table(show_lines=False, expand=False, pad_edge=False, show_edge=self.show_edge,
                      show_header=self.show_header, **options)
        for column, w, style in zip(self.columns, widths, self.styles):
            table.add_column(column if isinstance(column, Text) else Text(str(column)), width=w, overflow="fold",
                             style=style or None)
        for row in self.rows:
            table.add_row(*[c if isinstance(c, Text) else Text(str(c)) for c in row])
        return table

    def __rich_console__(self, console, options):
        yield self.table(options.max_width)

    def __rich_measure__(self, console, options):
        return self.table(options.max_width).__rich_measure__(console, options)


# --- series as plots on shared axes ----------------------------------------------

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


class DiffView:
    """A unified diff that wraps long lines. A wrapped piece keeps its line's
    +/- marker followed by ↳, so it reads neither as context nor as another
    changed line (colour or not)."""

    STYLES = {"-": ("bold red", "red"), "+": ("bold green", "green"), "@": ("cyan", "cyan"), " ": ("", "dim")}

    def __init__(self, patch: str) -> None:
        self.lines = patch.rstrip("\n").splitlines()

    def __rich_console__(self, console, options):
        width = max(8, options.max_width - 2)
        for line in self.lines:
            if line.startswith(("---", "+++")):
                marker, body, style = " ", line, "bold"
            elif line.startswith("@@"):
                marker, body, style = " ", line, "cyan"
            else:
                marker, body = (line[:1] or " "), line[1:]
                marker = marker if marker in "+-" else " "
                style = self.STYLES[marker][1]
            marker_style = self.STYLES.get(marker, ("", ""))[0]
            pieces = Text(body, style=style).wrap(console, width, overflow="fold", no_wrap=False) or [Text("")]
            for n, piece in enumerate(pieces):
                yield Text.assemble((marker, marker_style), ("↳", "dim") if n else " ", piece)


def render_diff(patch: str) -> "DiffView":
    """The renderable for a fault's diff (see :class:`DiffView`)."""
    return DiffView(patch)


# --- edit mode (issue 12) ------------------------------------------------------

#: The verdict of an edit-mode run (``tutor.model.verdict.Verdict.status``): its style and its headline.
EDIT_STYLE = {"fixed": "bold green", "not fixed": "bold red", "changed": "bold cyan", "unchanged": "bold yellow",
              "could not run": "bold yellow", "syntax error": "bold red"}
EDIT_TEXT = {"fixed": "✓ fixed — your code observes what the clean code observes",
             "not fixed": "✗ not fixed — your code does not yet observe what the clean code observes",
             "changed": "your fault shows: the check observes something else",
             "unchanged": "your fault does not show in this check's observation",
             "could not run": "the check could not measure the clean code, so there is no verdict",
             "syntax error": "✗ your file does not compile, so it was not run"}
#: How each side of an edit-mode run is headed, in order.
EDIT_COLUMNS = (("clean", "clean"), ("faulted", "faulted"), ("yours", "yours"))


def side_cell(ex, result, side: str) -> Text:
    """One side's cell of the three columns: its observation, or how it ended."""
    if side in result.observations:
        return Text(answers.show(ex.kind, result.observations[side]))
    if side in result.errors:
        first = result.errors[side]
        return Text(("timed out: " if "did not finish within" in first else "raised: ") + first, style="yellow")
    return Text("-", style="dim")


def edit_columns(ex, outcome) -> Table:
    """Clean, faulted (when the run has it) and yours side by side: what each observed."""
    result, task = outcome.result, outcome.task
    names = [(side, label) for side, label in EDIT_COLUMNS
             if side != "faulted" or any(s.name == "faulted" for s in task.sides(outcome.text))]
    table = Table(show_header=True, expand=False, pad_edge=False)
    table.add_column("", style="bold")
    for _, label in names:
        title = "mystery" if task.hidden and label == "faulted" else label
        table.add_column(title, overflow="fold")
    table.add_row("observed", *[side_cell(ex, result, side) for side, _ in names])
    if outcome.instruments is not None:
        instruments = outcome.instruments
        cells = []
        for side, _ in names:
            if side in instruments.observations:
                first = instruments.observations[side]
                cells.append(Text("all hold" if first == "none" else f"{first} fails first",
                                  style="green" if first == "none" else "red"))
            else:
                cells.append(Text("-", style="dim"))
        table.add_row("instruments", *cells)
    return table


def instruments_table(outcome) -> Table | None:
    """Which of the engine's instruments hold on the clean engine and on yours; None when none ran."""
    from tutor.model.verdict import instruments_holding
    if outcome.instruments is None:
        return None
    rows = instruments_holding(outcome.instruments)
    table = Table(show_header=True, expand=False, pad_edge=False)
    sides = [side for side in ("clean", "faulted", "yours") if any(side in row for row in rows)
             or side in outcome.instruments.errors]
    table.add_column("instrument")
    for side in sides:
        table.add_column("mystery" if side == "faulted" and outcome.task.hidden else side, overflow="fold")
    table.add_column("why it fails on yours", overflow="fold")
    styles = {"holds": "green", "fails": "bold red"}
    for row in rows:
        yours = row.get("yours", "-")
        table.add_row(row["link"], *[Text(row.get(side, "-"), style=styles.get(row.get(side), "")) for side in sides],
                      Text(row.get("yours_verdict", "") if yours == "fails" else "", style="dim"))
    for side, message in outcome.instruments.errors.items():
        table.add_row(Text(f"({side} did not run)"), *[Text(message if s == side else "", style="yellow")
                                                      for s in sides], "")
    return table


def render_edit(ex, outcome, series: bool = True, diff: bool = True) -> list:
    """An edit-mode run: the verdict, the three columns, the first difference, your diff, your evidence.

    Args:
        ex: the exercise.
        outcome: a :class:`tutor.app.session.EditOutcome`.
        series: whether loss curves are drawn as text (the TUI draws its own).
        diff: whether the learner's diff is shown.
    """
    verdict, result, task = outcome.verdict, outcome.result, outcome.task
    mode = {"fix": "Fix it", "break": "Break it", "hunt": "Find and fix"}[task.mode]
    parts: list = [Text.assemble((f"{mode} · ", "bold"), (EDIT_TEXT.get(verdict.status, verdict.status),
                                                         EDIT_STYLE.get(verdict.status, "bold")))]
    if verdict.status != "syntax error":
        parts.append(edit_columns(ex, outcome))
    parts.append(Text(verdict.sentence))
    if task.mode == "break" and outcome.prediction:
        graded = {True: ("✓ your prediction matched", "green"), False: ("✗ your prediction did not match", "red"),
                  None: ("(free text, not graded)", "dim")}[verdict.prediction_correct]
        parts.append(Text.assemble(("your prediction: ", "bold"), outcome.prediction, "  ", graded))
    if "run" in result.errors and result.errors["run"] not in verdict.sentence:
        parts.append(Text(result.errors["run"], style="yellow"))
    output = result.output.get("yours", "")
    if output.strip():
        parts.append(Text(f"yours printed:\n{output[:600]}", style="dim"))
    if diff:
        parts.append(Text("your diff" + (" (against the file you were given)" if task.hidden else
                                         " (against the clean file)"), style="bold"))
        parts.append(render_diff(outcome.diff) if outcome.diff.strip() else Text("(no change)", style="dim"))
    if "yours" in result.evidence:
        parts.extend(evidence_renderables(result.evidence["yours"], "yours", series))
    table = instruments_table(outcome)
    if table is not None:
        from tutor.model.verdict import first_instrument_divergence
        parts.append(Text("The engine's instruments on your engine", style="bold"))
        parts.append(table)
        first = first_instrument_divergence(outcome.instruments)
        parts.append(Text(f"First instrument that diverges from clean: {first}" if first else
                          "Every instrument agrees with the clean engine.", style="bold" if first else "green"))
    ran = f" · {result.duration_s:.2f} s" if result.duration_s else ""
    parts.append(Text(f"device {result.device} · torch {result.torch}{ran}", style="dim"))
    return parts
# --- progress: totals and calibration (the progress screen and `tutor progress`) ----

def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:.0f} %"


def set_totals(catalog, progress, per_set: dict | None = None) -> WordTable:
    """Per set: solved, tried, of how many, and (with calibration) the Brier score of its rated predictions."""
    columns = ["set", "solved", "tried", "exercises"] + (["rated", "Brier"] if per_set is not None else [])
    table = WordTable(columns, styles=["bold"] + [""] * (len(columns) - 1))
    totals = [0, 0, 0]
    for exercise_set in catalog.sets:
        entries = [progress.of(e.id) for e in exercise_set.exercises]
        row = [sum(e.solved for e in entries), sum(bool(e.current) for e in entries), len(entries)]
        totals = [a + b for a, b in zip(totals, row)]
        extra = []
        if per_set is not None:
            c = per_set.get(exercise_set.id)
            extra = [str(c.count) if c else "0", f"{c.brier:.3f}" if c and c.brier is not None else "-"]
        table.add_row(exercise_set.title, *[str(v) for v in row], *extra)
    extra = [""] * 2 if per_set is not None else []
    table.add_row(Text("all", style="bold"), *[Text(str(v), style="bold") for v in totals], *extra)
    return table


def calibration_renderables(overall) -> list:
    """How often the learner was right at each confidence, and the Brier score; a sentence when nothing is rated."""
    if not overall.count:
        return [Text("No prediction carries a confidence yet: give one with each prediction (keys 5…9 and 0 "
                     "in the TUI, --confidence with tutor run) to see how well you judge your own answers.",
                     style="dim")]
    table = WordTable(["you said", "predictions", "right", "right %", "reads as"])
    for bucket in overall.buckets:
        if bucket.count:
            style = {"about right": "green", "over-confident": "red", "under-confident": "yellow"}.get(
                bucket.verdict, "dim")
            table.add_row(f"{bucket.confidence} %", str(bucket.count), str(bucket.right), _percent(bucket.rate),
                          Text(bucket.verdict, style=style))
    unrated = f"; {overall.unrated} without a confidence are left out" if overall.unrated else ""
    return [table, Text.assemble(("Brier score ", "bold"), (f"{overall.brier:.3f}", "bold cyan"),
                                 f" over {overall.count} rated prediction(s) (0 is perfect, always saying 50 % "
                                 f"scores 0.250){unrated}")]
