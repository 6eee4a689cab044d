"""The first screen: every set and exercise with the learner's marks, where to continue, and a search."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Header, Input, Static, Tree

from tutor.model.attempts import LearnerProgress, ProgressError
from tutor.model.review import continue_point, due
from tutor.render import answers_count, warm_up_state
from tutor.ui.keys import PageFooter, PageScreen
from tutor.ui.widgets.exercise_tree import ExerciseTree, set_id_of, status_of
from tutor.ui.widgets.ordered_input import OrderedInput


class HomeScreen(PageScreen):
    """Sets in order, each exercise marked ✓ solved, ✗ attempted or · untried (↻: due for review).

    At launch the cursor is on the exercise to continue with
    (:func:`tutor.model.review.continue_point`), and the header and the status
    line say which and why. Enter (or a click) on an exercise opens it; ``/``
    filters the list as you type (:func:`tutor.model.finding.matches`); ``x``
    resets the highlighted exercise after a confirmation. The pane below
    describes the highlighted line, wrapped so nothing is cut at narrow widths.
    """

    #: The list has the focus from the start (the search box, first in the layout, is hidden):
    #: one focus change, so the footer is drawn once for it, not twice.
    AUTO_FOCUS = "#exercise-tree"

    BINDINGS = [
        Binding("enter", "open", "Open", tooltip="open the exercise (the cursor starts on the one to continue "
                "with); on a set, fold or unfold it"),
        Binding("slash", "find", "Find", tooltip="find: filter by id, title, set or words of the prompt; "
                "due (or ↻) lists the exercises due for review"),
        Binding("x", "reset", "Reset", tooltip="reset the highlighted exercise (asks first; its attempts are kept)"),
        Binding("c", "to_continue", "Continue",
                tooltip="back to the exercise to continue with (the one ▶ continue names)"),
        Binding("escape", "clear_find", "Clear search", show=False, tooltip="clear the search"),
    ]
    PAGE_KEYS = (("↑ ↓", "move through the list (↓ from the search box too)"),)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._intro(), id="home-intro")
        yield OrderedInput(placeholder="find: id, title, set or words of the prompt (Esc clears)", id="home-find")
        yield Static("", id="home-status")
        # Taken from the session here and again on returning to this screen;
        # moving the cursor only describes what was taken.
        self.progress = self._load()
        self._due_now = due(self.app.catalog, self.progress)
        self._due = {state.exercise_id for state in self._due_now}
        yield ExerciseTree(self.app.catalog, self.progress, self._due, id="exercise-tree")
        with VerticalScroll(id="home-detail"):
            yield Static("", id="home-detail-text")
        yield PageFooter()

    def on_resize(self, event) -> None:
        """On a short terminal the list gets every row: the intro and detail pane step aside."""
        roomy = event.size.height >= 20
        self.query_one("#home-intro").display = roomy
        self.query_one("#home-detail").display = roomy

    def _intro(self) -> Text:
        return Text.assemble("Pick an exercise and press ", ("Enter", "bold"),
                             ". Predict, run, compare, explain back.  ", ("/", "bold"), " find  ",
                             ("?", "bold"), " help")

    def _load(self) -> LearnerProgress:
        """The learner's progress as the session holds it (read once, kept up to date by every save)."""
        return self.app.session.progress

    def on_mount(self) -> None:
        self.query_one("#home-find").display = False
        tree = self.query_one(ExerciseTree)
        tree.focus()
        # the tree was drawn in compose; the first exercise due for review comes first
        self.continue_at = continue_point(self.app.catalog, self.progress, self._due_now)
        self.call_after_refresh(self.move_to_continue_point, tree.cursor_line)
        self._update_status()

    def move_to_continue_point(self, line_at_mount: int) -> None:
        """The cursor on where to continue, unless the learner has moved it since the screen was mounted.

        The move waits for the first refresh (the tree lays out its lines then); a key typed while the app
        was starting may have moved the cursor already, and that move is the learner's, so it stands.
        """
        tree = self.query_one(ExerciseTree)
        if tree.cursor_line == line_at_mount:
            tree.move_to(self.continue_at.exercise_id)

    def action_to_continue(self) -> None:
        """The cursor back on where to continue (the search cleared first when it hides that exercise)."""
        tree = self.query_one(ExerciseTree)
        tree.focus()
        if not tree.move_to(self.continue_at.exercise_id):
            self.action_clear_find()
            self.call_after_refresh(tree.move_to, self.continue_at.exercise_id)

    def on_screen_resume(self) -> None:
        if not getattr(self, "_shown", False):
            self._shown = True  # shown for the first time: compose and on_mount drew this very progress
            return
        tree = self.query_one(ExerciseTree)
        self.progress = self._load()
        self._due_now = due(self.app.catalog, self.progress)
        self._due = {state.exercise_id for state in self._due_now}
        tree.refresh_progress(self.progress, self._due)
        self.continue_at = continue_point(self.app.catalog, self.progress, self._due_now)
        self._update_status()
        tree.focus()
        self.call_after_refresh(self._update_detail)

    # --- the status line and header --------------------------------------------------

    def _update_status(self) -> None:
        """``▶ continue: cache-offset (left unsolved) · 3 due for review``, in the status line and the header."""
        here = self.continue_at
        parts: list = [("▶ ", "bold green"), "continue: ", (here.exercise_id, "bold"), (f" ({here.reason})", "dim")]
        if self._due:
            parts += [" · ", (f"{len(self._due)} due for review", "bold yellow"), (" (↻, /due)", "yellow")]
        self.query_one("#home-status", Static).update(Text.assemble(*parts))
        self.update_header()

    def update_header(self) -> None:
        """The app's line (learner, torch) and where to continue."""
        due_now = f" · {len(self._due)} due for review" if self._due else ""
        self.sub_title = f"{self.app.about or self.app.sub_title} · continue: {self.continue_at.exercise_id}{due_now}"

    def _update_detail(self) -> None:
        """Describe the line under the cursor (also after marks were redrawn)."""
        node = self.query_one(ExerciseTree).cursor_node
        self.query_one("#home-detail-text", Static).update(self._describe(node.data if node else None))

    # --- opening -------------------------------------------------------------------

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

    # --- finding -------------------------------------------------------------------

    def action_find(self) -> None:
        """Show the search box (``/``)."""
        box = self.query_one("#home-find", Input)
        box.display = True
        self._finding = True  # until Enter, ↓ or Esc: keys typed on the way to the box belong in it
        self.set_focus(box)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "home-find":
            return
        event.stop()
        keep, self._keep_on_clear = getattr(self, "_keep_on_clear", None), None
        shown = self.query_one(ExerciseTree).show_only(event.value, keep=None if event.value.strip() else keep)
        if event.value.strip():
            self.query_one("#home-status", Static).update(
                Text.assemble((f"{shown} found", "bold"), " for ", (event.value.strip(), "bold"),
                              ("  Enter: to the list · Esc: clear", "dim")))
        else:
            self._update_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "home-find":
            return
        event.stop()
        self._finding = False
        tree = self.query_one(ExerciseTree)
        tree.focus()
        tree.move_to_first_exercise()

    def on_key(self, event) -> None:
        """In the search box, ↓ goes to the list and Esc clears the search; a key typed after ``/``
        that reached the list before the box had the focus is typed into the box (the box keeps what it
        is typed, so a printable key that reaches the screen while finding was typed before)."""
        box = self.query_one("#home-find", Input)
        if event.key == "slash" and self.focused is not box:
            # here, not only by the binding: a binding acts after the keys typed behind it reached the screen
            event.stop()
            event.prevent_default()
            self.action_find()
            return
        if getattr(self, "_finding", False) and event.is_printable:  # the box takes its own: not typed there
            event.stop()
            event.prevent_default()
            box.insert_text_at_cursor(event.character)
            return
        if self.focused is box and event.key == "down":
            self._finding = False
            event.stop()
            tree = self.query_one(ExerciseTree)
            tree.focus()
            tree.move_to_first_exercise()
        elif self.focused is box and event.key == "escape":
            event.stop()
            self.action_clear_find()

    def action_clear_find(self) -> None:
        self._finding = False
        box = self.query_one("#home-find", Input)
        if not box.display and not box.value:
            return
        tree = self.query_one(ExerciseTree)
        highlighted = tree.cursor_node.data if tree.cursor_node else None
        box.value = ""
        box.display = False
        keep = highlighted if highlighted and set_id_of(highlighted) is None else None
        self._keep_on_clear = keep  # the emptied box reports a change too: it keeps the cursor here
        tree.show_only("", keep=keep)  # stay on what was found
        tree.focus()
        self._update_status()

    # --- resetting -----------------------------------------------------------------

    def action_reset(self) -> None:
        """Ask, then reset the highlighted exercise (its attempts are kept, marked before the reset)."""
        node = self.query_one(ExerciseTree).cursor_node
        if node is None or node.data is None or set_id_of(node.data) is not None:
            self.notify("Highlight an exercise to reset it.")
            return
        exercise_id = node.data
        attempts = len(self.progress.of(exercise_id).current)
        if not attempts:
            self.notify(f"{exercise_id} has no attempts to reset.")
            return
        self.app.push_screen(ConfirmReset(exercise_id, attempts), self._reset_if_confirmed)

    def _reset_if_confirmed(self, confirmed: bool | None) -> None:
        node = self.query_one(ExerciseTree).cursor_node
        if confirmed and node is not None and node.data:
            self._reset(node.data)

    @work(thread=True, exit_on_error=False, group="reset")
    def _reset(self, exercise_id: str) -> None:
        """Thread: the file is changed off the UI thread, like every other save."""
        try:
            self.app.session.reset(exercise_id)
        except ProgressError as exc:
            self.app.call_from_thread(self.notify, f"{exercise_id} was not reset: {exc}", severity="error",
                                      markup=False)
            return
        self.app.recall.pop(exercise_id, None)  # the page opens fresh too
        self.app.call_from_thread(self._after_reset, exercise_id)

    def _after_reset(self, exercise_id: str) -> None:
        self.on_screen_resume()
        self.notify(f"{exercise_id} starts afresh; its earlier attempts are kept in your progress file.")

    # --- the detail pane -----------------------------------------------------------

    def _describe(self, data: str | None) -> Text:
        """What the highlighted line is: a set's primer (its summary, if it has none) or an exercise's details."""
        catalog = self.app.catalog
        if data is None:
            return Text("")
        set_id = set_id_of(data)
        if set_id is not None:
            exercise_set = catalog.get_set(set_id)
            primer = " ".join(exercise_set.primer.split())  # reflowed to the pane's width
            return Text.assemble((exercise_set.title, "bold"), f" — {primer or exercise_set.summary}")
        exercise_id = data
        exercise = catalog.get(exercise_id)
        progress = self.progress.of(exercise_id)
        state = {"solved": "solved", "attempted": "attempted, not yet matched",
                 "warmed": warm_up_state(progress.current), "untried": "not tried yet"}
        # A choice's options are on the exercise's page; here its kind is enough.
        answer = exercise.kind.summary
        review = " · ↻ due for review" if exercise_id in getattr(self, "_due", ()) else ""
        return Text.assemble((f"{exercise.id}", "bold"), f" · {exercise.title}\n",
                             (exercise.source_label, "dim"), "\n",
                             f"{state[status_of(progress, exercise.graded)]} · "
                             f"{answers_count(progress.current, exercise.graded)} · "
                             f"answer: {answer}{review}")


class ConfirmReset(ModalScreen[bool]):
    """``Reset head-split?`` — y resets, n or Esc keeps it."""

    BINDINGS = [Binding("y", "answer(True)", "Reset", tooltip="reset it"),
                Binding("n", "answer(False)", "Keep", tooltip="keep it as it is"),
                Binding("escape", "answer(False)", "Keep", tooltip="keep it as it is")]

    DEFAULT_CSS = """
    ConfirmReset {
        align: center middle;
    }
    ConfirmReset > Vertical {
        width: 60;
        max-width: 100%;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 1 2;
    }
    """

    def __init__(self, exercise_id: str, attempts: int) -> None:
        super().__init__()
        self.exercise_id = exercise_id
        self.attempts = attempts

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text.assemble(
                ("Reset ", "bold"), (self.exercise_id, "bold"), ("?", "bold"),
                f"\nIt will show as fresh. Its {self.attempts} attempt(s) stay in your progress file, "
                "marked as before the reset; your note is kept.\n\n",
                ("y", "bold"), " reset   ", ("n", "bold"), " / ", ("Esc", "bold"), " keep it"))

    def action_answer(self, confirmed: bool) -> None:
        self.dismiss(confirmed)
