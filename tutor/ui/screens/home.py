"""The first screen: every set and exercise with the learner's marks."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, Tree

from tutor.progress import LearnerProgress
from tutor.ui.widgets.exercise_tree import ExerciseTree, set_id_of, status_of


class HomeScreen(Screen):
    """Sets in order, each exercise marked ✓ solved, ✗ attempted or · untried.

    Enter (or a click) on an exercise opens it; the pane below describes the
    highlighted line, wrapped so nothing is cut at narrow widths.
    """

    BINDINGS = [("enter", "open", "Open")]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._intro(), id="home-intro")
        # Taken from the session here and again on returning to this screen;
        # moving the cursor only describes what was taken.
        self.progress = self._load()
        yield ExerciseTree(self.app.catalog, self.progress, id="exercise-tree")
        with VerticalScroll(id="home-detail"):
            yield Static("", id="home-detail-text")
        yield Footer()

    def on_resize(self, event) -> None:
        """On a short terminal the list gets every row: the intro and detail pane step aside."""
        roomy = event.size.height >= 20
        self.query_one("#home-intro").display = roomy
        self.query_one("#home-detail").display = roomy

    def _intro(self) -> Text:
        return Text.assemble("Pick an exercise and press ", ("Enter", "bold"),
                             ". Predict, run, compare, explain back.  ", ("?", "bold"), " help")

    def _load(self) -> LearnerProgress:
        """The learner's progress as the session holds it (read once, kept up to date by every save)."""
        return self.app.session.progress

    def on_mount(self) -> None:
        tree = self.query_one(ExerciseTree)
        tree.focus()
        tree.cursor_line = 1 if tree.last_line >= 1 else 0  # the first exercise

    def on_screen_resume(self) -> None:
        tree = self.query_one(ExerciseTree)
        self.progress = self._load()
        tree.refresh_progress(self.progress)
        tree.focus()
        self.call_after_refresh(self._update_detail)

    def _update_detail(self) -> None:
        """Describe the line under the cursor (also after marks were redrawn)."""
        node = self.query_one(ExerciseTree).cursor_node
        self.query_one("#home-detail-text", Static).update(self._describe(node.data if node else None))

    def action_open(self) -> None:
        tree = self.query_one(ExerciseTree)
        node = tree.cursor_node
        if node is None:
            return
        if node.data is None or set_id_of(node.data) is not None:
            node.toggle()
            return
        self.app.open_exercise(node.data)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.data is not None and set_id_of(event.node.data) is None:
            self.app.open_exercise(event.node.data)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        event.stop()
        self.query_one("#home-detail-text", Static).update(self._describe(event.node.data))

    def _describe(self, data: str | None) -> Text:
        """What the highlighted line is: a set's summary or an exercise's details."""
        catalog = self.app.catalog
        if data is None:
            return Text("")
        set_id = set_id_of(data)
        if set_id is not None:
            exercise_set = catalog.get_set(set_id)
            return Text.assemble((exercise_set.title, "bold"), f" — {exercise_set.summary}")
        exercise_id = data
        exercise = catalog.get(exercise_id)
        progress = self.progress.of(exercise_id)
        state = {"solved": "solved", "attempted": "attempted, not yet matched", "untried": "not tried yet"}
        # A choice's options are on the exercise's page; here its kind is enough.
        answer = (f"one of {len(exercise.choices)} choices" if exercise.kind == "choice"
                  else exercise.answer_format)
        return Text.assemble((f"{exercise.id}", "bold"), f" · {exercise.title}\n",
                             (exercise.source_label, "dim"), "\n",
                             f"{state[status_of(progress)]} · {len(progress.attempts)} attempt(s) · "
                             f"answer: {answer}")
