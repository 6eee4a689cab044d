"""Progress: totals per set, calibration, accuracy over time, and every tried exercise's attempts and note."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, ListItem, ListView, Static
from textual_plotext import PlotextPlot

from tutor.model.attempts import LearnerProgress, ProgressError, show_time
from tutor.model.calibration import accuracy_by_day, calibration_by_set
from tutor.render import WordTable, attempt_row, calibration_renderables, set_totals, sure_bets, sure_cell
from tutor.ui.keys import PageFooter, PageScreen
from tutor.ui.widgets.exercise_tree import MARKS, status_of


def summary_renderable(catalog, progress: LearnerProgress, where: str) -> Group:
    """The head of the progress screen: who, where, totals per set (with Brier scores), calibration."""
    overall, per_set = calibration_by_set(catalog, progress)
    parts: list = [Text.assemble(("Progress of ", "bold"), (progress.learner, "bold cyan"), f"  ({where})")]
    for warning in progress.warnings:
        parts.append(Text(warning, style="yellow"))
    parts += [Text("\nTotals", style="bold underline"), set_totals(catalog, progress, per_set),
              Text("\nCalibration: how often you were right when you said how sure you were",
                   style="bold underline"), *calibration_renderables(overall, sure_bets(progress))]
    return Group(*parts)


def exercise_renderable(exercise, progress) -> Group:
    """One exercise: its mark, id and title, its attempts as a table, its note wrapped at words."""
    mark, style = MARKS[status_of(progress, exercise.graded)]
    parts: list = [Text.assemble((mark, style), " ", (exercise.id, "bold"), f" — {exercise.title}")]
    if progress.attempts:
        # mode: predict, or an edit mode (fix, break, hunt), whose result is its verdict, not "correct"
        columns = ["time", "mode", "prediction", "sure", "observed", "result", "device"] + \
            (["seed"] if exercise.seed_per_attempt else [])
        table = WordTable(columns, box=box.SIMPLE_HEAD)
        for a in progress.attempts:
            seed = [str(a.seed)] if exercise.seed_per_attempt else []  # which mystery the capstone attempt met
            when = show_time(a.time) + (" (before reset)" if a.before_reset else "")
            mode, prediction, observed, result = attempt_row(a, exercise)
            table.add_row(Text(when, style="dim" if a.before_reset else ""), mode, prediction,
                          sure_cell(a, exercise), observed, result, a.device,
                          *seed)
        parts.append(table)
    else:
        parts.append(Text("  no attempts yet", style="dim"))
    if progress.note.strip():
        parts.append(Text.assemble(("  note: ", "bold"), progress.note))
    return Group(*parts)


class ExerciseItem(ListItem):
    """One exercise of the progress list; Enter opens it."""

    def __init__(self, exercise, progress) -> None:
        super().__init__(Static(exercise_renderable(exercise, progress), classes="progress-exercise"))
        self.exercise_id = exercise.id


class ProgressScreen(PageScreen):
    """Totals, calibration, accuracy over time, then the exercises tried (u: the untried too); Enter opens one."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"),
                Binding("u", "toggle_untried", "Untried", tooltip="show or hide the untried exercises"),
                # the list of exercises is a scrolling view of its own, always as tall as its items, so it
                # would take these keys and scroll nothing: they scroll the whole page
                Binding("pagedown", "page(1)", "Page down", show=False, priority=True,
                        tooltip="scroll the page one screen down"),
                Binding("pageup", "page(-1)", "Page up", show=False, priority=True,
                        tooltip="scroll the page one screen up")]
    PAGE_KEYS = (("↑ ↓, Enter", "move through the exercises; Enter opens the highlighted one"),)

    DEFAULT_CSS = """
    ProgressScreen ListView {
        height: auto;
        margin-top: 1;
    }
    ProgressScreen ListItem {
        padding: 0 0 1 0;
    }
    ProgressScreen #accuracy-plot {
        height: 12;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.show_untried = False
        self.progress: LearnerProgress | None = None

    def compose(self) -> ComposeResult:
        session = self.app.session
        yield Header()
        with VerticalScroll(id="progress-body"):
            try:
                self.progress = session.review()  # a review reads the file as it is now, and moves nothing
            except ProgressError as exc:
                yield Static(Text(f"The progress file cannot be read: {exc}", style="bold red"), id="progress-text")
            else:
                where = str(session.progress_file)
                yield Static(summary_renderable(session.catalog, self.progress, where), id="progress-text")
                days = accuracy_by_day(self.progress)
                if days:
                    yield Static(Text("\nAccuracy over time: right per day, and so far", style="bold underline"))
                    yield PlotextPlot(id="accuracy-plot")
                yield Static("", id="progress-list-title")
                yield ListView(id="progress-list")
        yield PageFooter()

    def on_mount(self) -> None:
        if self.progress is None:
            self.query_one("#progress-body").focus()
            return
        days = accuracy_by_day(self.progress)
        if days:
            self._draw_accuracy(days)
        self._fill_list()

    def on_screen_resume(self) -> None:
        """Back from an exercise opened here: read the file again, so its new attempts show."""
        if self.progress is None:
            return
        try:
            self.progress = self.app.session.review()
        except ProgressError:
            return
        session = self.app.session
        self.query_one("#progress-text", Static).update(
            summary_renderable(session.catalog, self.progress, str(session.progress_file)))
        index = self.query_one("#progress-list", ListView).index
        self._fill_list()
        if index is not None:
            list_view = self.query_one("#progress-list", ListView)
            list_view.index = min(index, max(0, len(list_view.children) - 1))

    def _draw_accuracy(self, days) -> None:
        plt = self.query_one("#accuracy-plot", PlotextPlot).plt
        xs = list(range(len(days)))
        plt.plot(xs, [100 * d.rate for d in days], marker="•", color="cyan", label="that day")
        plt.plot(xs, [100 * d.so_far for d in days], marker="x", color="green", label="so far")
        plt.ylim(0, 100)
        plt.yticks([0, 25, 50, 75, 100], ["0 %", "25 %", "50 %", "75 %", "100 %"])
        step = max(1, len(days) // 6)
        ticks = xs[::step]
        plt.xlim(-0.5, max(0.5, len(days) - 0.5))
        plt.xticks(ticks, [days[i].date[5:] for i in ticks])

    def _fill_list(self) -> None:
        catalog = self.app.catalog
        shown = [e for e in catalog.exercises if self.show_untried or self.progress.of(e.id).attempts]
        hidden = len(catalog.exercises) - len(shown)
        list_view = self.query_one("#progress-list", ListView)
        list_view.clear()
        list_view.extend(ExerciseItem(e, self.progress.of(e.id)) for e in shown)
        if hidden and not self.show_untried:
            untried = f"  {hidden} untried hidden (u shows them)"
        else:
            untried = "  u hides the untried" if self.show_untried else ""
        title = Text.assemble(("\nExercises", "bold underline"), (untried, "dim"),
                              ("  Enter opens the highlighted one", "dim") if shown else "")
        self.query_one("#progress-list-title", Static).update(title)
        # focused without scrolling to it: the view opens on the totals (_show_top), whenever the focus lands
        if shown:
            list_view.index = 0
            list_view.focus(scroll_visible=False)
        else:
            self.query_one("#progress-body").focus(scroll_visible=False)
        self._follow_highlight = False
        self.call_after_refresh(self._show_top)

    def _show_top(self) -> None:
        """The totals first; from now on the view follows the highlighted exercise."""
        self.query_one("#progress-body").scroll_home(animate=False)
        self._follow_highlight = True

    def action_page(self, direction: int) -> None:
        body = self.query_one("#progress-body", VerticalScroll)
        (body.scroll_page_down if direction > 0 else body.scroll_page_up)(animate=False)

    def action_toggle_untried(self) -> None:
        if self.progress is not None:
            self.show_untried = not self.show_untried
            self._fill_list()

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        event.stop()
        if isinstance(event.item, ExerciseItem):
            self.app.open_exercise(event.item.exercise_id)

    def on_list_view_highlighted(self, event: ListView.Highlighted) -> None:
        if event.item is not None and getattr(self, "_follow_highlight", False):
            event.item.scroll_visible(animate=False)
