"""Review: every exercise's attempts (time, prediction, observed, correct) and note."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from tutor.progress import LearnerProgress, ProgressError, show_time
from tutor.ui.widgets.exercise_tree import MARKS, status_of


def progress_renderable(catalog, progress: LearnerProgress, where: str) -> Group:
    """The learner's progress, exercise by exercise, with wrapping tables.

    Args:
        catalog: the exercises, for order and titles.
        progress: the learner's saved attempts and notes.
        where: the progress file, shown at the top.
    """
    parts: list = [Text.assemble(("Progress of ", "bold"), (progress.learner, "bold cyan"), f"  ({where})")]
    for warning in progress.warnings:
        parts.append(Text(warning, style="yellow"))
    for exercise_set in catalog.sets:
        solved = sum(progress.of(e.id).solved for e in exercise_set.exercises)
        parts.append(Text.assemble("\n", (exercise_set.title, "bold underline"),
                                   f"  {solved}/{len(exercise_set.exercises)} solved"))
        for ex in exercise_set.exercises:
            p = progress.of(ex.id)
            mark, style = MARKS[status_of(p)]
            parts.append(Text.assemble((mark, style), " ", (ex.id, "bold"), f" — {ex.title}"))
            if p.attempts:
                table = Table(expand=False, pad_edge=False, show_edge=False)
                columns = ["time", "prediction", "observed", "correct", "device"] + (["seed"] if ex.seed_per_attempt else [])
                for column in columns:
                    table.add_column(column, overflow="fold")
                for a in p.attempts:
                    seed = [str(a.seed)] if ex.seed_per_attempt else []  # which mystery the capstone attempt met
                    table.add_row(show_time(a.time), Text(a.prediction), Text(a.observed),
                                  Text("yes", style="green") if a.correct else Text("no", style="red"), a.device, *seed)
                parts.append(table)
            else:
                parts.append(Text("  no attempts yet", style="dim"))
            if p.note.strip():
                parts.append(Text.assemble(("  note: ", "bold"), p.note))
    return Group(*parts)


class ProgressScreen(Screen):
    """A scrolling report of the learner's attempts and explain-back notes."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def compose(self) -> ComposeResult:
        session = self.app.session
        try:
            progress = session.review()  # a review reads the file as it is now, and moves nothing
            body = progress_renderable(session.catalog, progress, str(session.store.path(session.learner)))
        except ProgressError as exc:
            body = Text(f"The progress file cannot be read: {exc}", style="bold red")
        yield Header()
        with VerticalScroll(id="progress-body"):
            yield Static(body, id="progress-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#progress-body").focus()
