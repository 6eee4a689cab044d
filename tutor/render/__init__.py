"""Rich renderables shared by the command line (:mod:`tutor.cli.output`) and the TUI.

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

One module per subject: :mod:`~tutor.render.result` (a run),
:mod:`~tutor.render.edit` (an edit-mode run), :mod:`~tutor.render.tables`,
:mod:`~tutor.render.series`, :mod:`~tutor.render.progress`; the names the
CLI and the TUI draw with are gathered here.
"""

from tutor.render.edit import EDIT_STYLE, EDIT_TEXT, edit_columns, instruments_table, render_edit, side_cell
from tutor.render.progress import (answers_count, attempt_result, attempt_row, calibration_renderables, edits_summary,
                                   exercise_history, last_said, progress_table, saved_attempt, set_totals,
                                   sure_bets, sure_cell, warm_up_state)
from tutor.render.result import (TIMEOUT_ADVICE, VERDICT_STYLE, VERDICT_TEXT, DiffView, comparison_table,
                                 evidence_renderables, render_diff, render_result)
from tutor.render.series import (LOG_SPAN, PLOT_HEIGHT, SIDE_STYLE, SeriesGroup, SeriesPlot, draw_series, legend,
                                 nice_ticks, plot_scale, series_groups, sparkline)
from tutor.render.tables import WordTable, column_widths

__all__ = ["EDIT_STYLE", "EDIT_TEXT", "LOG_SPAN", "PLOT_HEIGHT", "SIDE_STYLE", "TIMEOUT_ADVICE", "VERDICT_STYLE",
           "VERDICT_TEXT", "DiffView", "attempt_result", "attempt_row", "edits_summary", "exercise_history", "last_said",
           "progress_table", "saved_attempt", "answers_count",
           "SeriesGroup", "SeriesPlot", "WordTable", "calibration_renderables",
           "column_widths", "comparison_table", "draw_series", "edit_columns", "evidence_renderables",
           "instruments_table", "legend", "nice_ticks", "plot_scale", "render_diff", "render_edit", "render_result",
           "series_groups", "set_totals", "side_cell", "sparkline", "sure_bets", "sure_cell", "warm_up_state"]
