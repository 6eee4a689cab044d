"""One exercise: read, predict, run, compare, explain back."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Header, Input, Markdown, ProgressBar, Static, TextArea

from exercises import answers
from tutor.catalog import Exercise
from tutor.progress import ProgressError
from tutor.session import Run
from tutor.ui.messages import RunCrashed, RunFinished, RunProgress
from tutor.ui.widgets.fault_view import FaultView
from tutor.ui.widgets.hint_list import HintList
from tutor.ui.widgets.note_editor import NoteEditor
from tutor.ui.widgets.prediction import PredictionInput
from tutor.ui.widgets.result_panel import ResultPanel

class ExerciseScreen(Screen):
    """The whole loop for one exercise, in one scrolling column.

    Run (``r`` or the button) parses the prediction first — an unreadable one
    shows the expected format inline and runs nothing — then runs the check
    in a thread worker that reports by :mod:`tutor.ui.messages`. Esc cancels
    a running check (``Run.cancel()``), otherwise goes back. What is run,
    with which seed, and what is recorded is the session's policy
    (:mod:`tutor.session`): a pass or fail is recorded as an attempt — in the
    run's thread, never on the UI thread — a timeout is recorded as a
    timeout, never as a wrong prediction, and error and cancelled are shown
    as outcomes and not recorded. After a timeout the prediction stays in its
    box and ``r`` retries it with twice the limit that ran out (the machine
    may be busy: ``tutor.speed``).
    """

    BINDINGS = [
        Binding("r", "run", "Run"),
        Binding("ctrl+r", "run", "Run", show=False),
        Binding("h", "hint", "Hint"),
        Binding("a", "answer", "Answer"),
        Binding("e", "explain", "Explain back"),
        Binding("f", "fix", "Fix it"),  # edit mode (tutor.ui.screens.fix); F and B work where f or b pick a choice
        Binding("b", "break_it", "Break it"),
        Binding("F", "fix", "Fix it", show=False),
        Binding("B", "break_it", "Break it", show=False),
        Binding("escape", "cancel_or_back", "Back"),  # cancels a running check first
    ]
    #: single keys that keep their meaning while reading; any other printable
    #: key starts typing the answer (when the answer box is a text box). The
    #: action keys no choice may take, plus a (to the answer box) and ? (help).
    _COMMAND_KEYS = set(answers.ACTION_KEYS) | set("a?") | set("fbFB")

    def __init__(self, exercise: Exercise) -> None:
        """Args:
            exercise: the exercise to show.
        """
        super().__init__()
        self.exercise = exercise
        self.running = False
        self._run: Run | None = None  # the run in progress, or the last one
        self._cancel_requested = False
        self._side_done: dict[str, float] = {}
        self._timed_out = None  # the last result, when it ran out of time: r then retries it

    # --- layout --------------------------------------------------------------

    def compose(self) -> ComposeResult:
        ex = self.exercise
        app = self.app
        # Kept here so the note can still be saved while the app shuts down.
        self._session = app.session
        progress = self._session.progress_of(ex.id)
        yield Header()
        with VerticalScroll(id="exercise-body"):
            yield Static(Text.assemble((ex.id, "bold"), f" · {ex.title}\n", (ex.source_label, "dim")),
                         id="exercise-title")
            if progress.attempts:
                last = progress.attempts[-1]
                verdict = ("✓ solved", "green") if progress.solved else ("✗ not solved yet", "red")
                seen = (", the check ran out of time",) if last.status == "timeout" else \
                    (", the check observed ", (last.observed, "bold"))
                yield Static(Text.assemble(verdict, f" · {len(progress.attempts)} attempt(s); last: you said ",
                                           (last.prediction, "bold"), *seen), id="exercise-history")
            yield Markdown(ex.prompt, id="exercise-prompt")
            yield FaultView(app.catalog.fault_of(ex), ex.observe, hidden=ex.seed_per_attempt, id="exercise-fault")
            # A list is picked from, so its ids (the typed format) are not shown here.
            what, how = {
                "choice": ("pick one choice", "press the key shown beside it, or Tab to the list and Enter; "
                                              "r or Ctrl+R runs"),
                "bool": ("yes or no", "press y or n, or Tab to the list and Enter; r or Ctrl+R runs"),
            }.get(ex.kind, (f"answer with {ex.answer_format}", "Tab to reach it; Enter or Ctrl+R runs"))
            yield Static(Text.assemble(("Your prediction", "bold"), f" — {what}  ", (f"({how})", "dim")),
                         classes="section-label")
            yield PredictionInput(ex, id="prediction")
            yield Static("", id="answer-error")
            with Horizontal(id="exercise-buttons"):
                yield Button("Run ▶ r", id="run-button", variant="primary")
                yield Button("Hint h", id="hint-button")
            with Vertical(id="running"):
                yield Static("", id="running-status")
                yield ProgressBar(total=None, show_eta=False, id="running-bar")
            yield ResultPanel(id="result")
            yield HintList(ex.hints, id="hints")
            note = NoteEditor(ex.explain, progress.note, self._save_note, id="note-editor")
            # The explain-back question can give the answer away: it appears
            # after the first run (or at once when a note or attempt exists).
            note.display = bool(progress.note or progress.attempts)
            yield note
        yield Footer()

    def on_mount(self) -> None:
        # Focus the scrolling body (not the answer box) so the prompt is read
        # first, the arrow keys scroll, and the footer shows every key.
        self.query_one("#exercise-body").focus()
        self.sub_title = self.exercise.id

    def action_answer(self) -> None:
        """Move the focus to the prediction widget."""
        prediction = self.query_one(PredictionInput)
        prediction.focus_input()
        prediction.scroll_visible()

    def action_explain(self) -> None:
        """Move the focus to the explain-back note (shown after the first run)."""
        if not self.query_one(NoteEditor).display:
            self.notify("Run the check first; then explain back what you saw.")
            return
        editor = self.query_one(NoteEditor).query_one("TextArea")
        editor.focus()
        editor.move_cursor(editor.document.end)  # continue the note, do not type in front of it
        editor.scroll_visible()

    def action_fix(self) -> None:
        """Fix it (the capstone: Find and fix): the learner repairs the fault in their own copy."""
        from tutor.ui.screens.fix import EditScreen
        self.app.push_screen(EditScreen(self.exercise, "fix"))

    def action_break_it(self) -> None:
        """Break it: the learner writes a fault of their own into the clean subject file."""
        from tutor.ui.screens.fix import EditScreen
        self.app.push_screen(EditScreen(self.exercise, "break"))

    def on_key(self, event) -> None:
        """Keys that answer straight away while reading.

        For a choice (or yes/no) exercise, the key shown beside a choice (its
        letter, its number 1…9 / 0 when the ids are words, or y / n) picks it.
        For a typed answer, any printable key that is not a command
        key starts the answer in the answer box, so nothing typed is lost.
        """
        char = event.character
        if char is None or not char.isprintable():
            return
        prediction = self.query_one(PredictionInput)
        if isinstance(self.focused, TextArea):
            return
        if isinstance(self.focused, Input):
            # A box consumes its own keys, so a key that reaches the screen
            # while a box has focus was typed before the focus moved there:
            # it belongs at the end of the answer.
            event.stop()
            event.prevent_default()
            self.focused.insert_text_at_cursor(char)
            return
        if char.isspace():
            return
        if prediction.options:
            if char in "FB":
                return  # capitals open Fix it / Break it even where f or b picks a choice
            choice = prediction.choice_for_key(char)
            if choice is not None:
                event.stop()
                event.prevent_default()
                prediction.set_value(choice)
            return
        if self.focused is self.query_one("#exercise-body") and char not in self._COMMAND_KEYS:
            event.stop()
            event.prevent_default()
            box = prediction.query_one(Input)
            self.set_focus(box)  # at once, so the next key already lands in the box
            box.value = ""  # typing from the page starts a new answer (press a to edit the old one)
            box.insert_text_at_cursor(char)

    # --- running -------------------------------------------------------------

    def action_run(self) -> None:
        """Parse the prediction, then run the check in a thread."""
        if self.running:
            self.notify("A check is already running; Esc cancels it.", severity="warning")
            return
        ex = self.exercise
        text = self.query_one(PredictionInput).value
        timed_out, last = self._timed_out, self._run
        if timed_out is not None and last is not None and text.strip() in ("", (last.prediction or "").strip()):
            self._run = self._session.retry(last, timed_out)  # the same prediction and seed, twice the limit
            self._set_running(True, f"retrying with twice the limit{self._retry_seconds(timed_out)}…")
            self._run_check(self._run)
            return
        error = self.query_one("#answer-error", Static)
        try:
            ex.parse_answer(text)
        except answers.AnswerError as exc:
            # The last result stays: a refused answer is not a run.
            picked_nothing = self.query_one(PredictionInput).options and not text.strip()
            message = "pick a choice first: press the key shown beside it" if picked_nothing else str(exc)
            error.update(Text(f"✗ {message}", style="bold red"))
            error.add_class("-shown")
            self.call_after_refresh(error.scroll_visible)
            return
        self._clear_answer_error()
        self._run = self._session.start(ex, text)  # the seed and sides are the session's to choose
        self._set_running(True, "starting the check (the first run loads torch)…")
        self._run_check(self._run)

    def _clear_answer_error(self) -> None:
        error = self.query_one("#answer-error", Static)
        error.update("")
        error.remove_class("-shown")

    def on_prediction_input_changed(self, event: PredictionInput.Changed) -> None:
        """A new answer: the complaint about the old one no longer applies."""
        event.stop()
        self._clear_answer_error()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "run-button":
            self.action_run()
        elif event.button.id == "hint-button":
            self.action_hint()

    def on_prediction_input_submitted(self, event: PredictionInput.Submitted) -> None:
        event.stop()
        self.action_run()

    @work(thread=True, exclusive=True, group="run", exit_on_error=False)
    def _run_check(self, run: Run) -> None:
        """Thread: run, grade and record through the session; report by message."""
        def on_progress(update) -> None:
            self.post_message(RunProgress(update.side, float(update.fraction or 0.0), update.message))
        try:
            outcome = run.execute(on_progress)
        except Exception as exc:  # WorkerError, DeviceError, or anything else: an outcome, not a traceback
            reason = str(exc) or exc.__class__.__name__
            self.post_message(RunCrashed(f"{reason} ({exc.__class__.__name__})"))
            return
        self.post_message(RunFinished(outcome))

    def on_run_progress(self, message: RunProgress) -> None:
        """The sides run at once: the bar shows their mean, the text each one."""
        sides = [side.name for side in self._run.sides] if self._run else ["clean"]
        side = message.side if message.side in sides else sides[0]
        self._side_done[side] = max(self._side_done.get(side, 0.0), max(0.0, min(1.0, message.progress)))
        done = sum(self._side_done.get(s, 0.0) for s in sides) / len(sides)
        self.query_one("#running-bar", ProgressBar).update(total=1.0, progress=done)
        each = " · ".join(f"{s} {self._side_done.get(s, 0.0):.0%}" for s in sides)
        self.query_one("#running-status", Static).update(
            Text(f"Running… {each} — {side}: {message.message}  (Esc cancels)"))

    @staticmethod
    def _retry_seconds(result) -> str:
        """Twice the limit ``result`` ran out of, as text (" (60 s)"), or "" when it does not say its limit."""
        seconds = (result.time_limit or {}).get("seconds")
        return f" ({2 * seconds:g} s)" if seconds else ""

    def on_run_finished(self, message: RunFinished) -> None:
        outcome = message.outcome
        self._set_running(False)
        panel = self.query_one(ResultPanel)
        panel.show(self.exercise, outcome.result)
        self._timed_out = outcome.result if outcome.result.status == "timeout" else None
        if self._timed_out is not None:
            panel.mount(Static(Text(f"the machine may be busy: r retries with twice the limit"
                                    f"{self._retry_seconds(self._timed_out)}", style="bold yellow"),
                               id="retry-hint"), after="#result-text")
        if outcome.save_error:
            self.notify(f"The attempt was not saved: {outcome.save_error}", severity="error", timeout=10,
                        markup=False)
        self.query_one(NoteEditor).display = True
        if not self.query_one(PredictionInput).options and self._timed_out is None:
            self.query_one(PredictionInput).set_value("")  # the answer is in the result; the box starts fresh
        self.query_one("#exercise-body").focus()  # h, e, r and the arrows work again
        self.call_after_refresh(panel.scroll_visible)

    def on_run_crashed(self, message: RunCrashed) -> None:
        self._set_running(False)
        panel = self.query_one(ResultPanel)
        panel.show_text(Text.assemble(("the check could not start — ", "bold yellow"), message.reason))
        self.call_after_refresh(panel.scroll_visible)

    def _set_running(self, running: bool, status: str = "") -> None:
        self.running = running
        if running:
            self.query("#retry-hint").remove()
            self._cancel_requested = False
            self._side_done = {}
            self.query_one("#running-bar", ProgressBar).update(total=None, progress=0)
        self.query_one("#running-status", Static).update(Text(f"{status}  (Esc cancels)" if running else ""))
        self.query_one("#running").set_class(running, "-shown")
        self.query_one("#run-button", Button).disabled = running
        if running:
            running_box = self.query_one("#running")
            self.call_after_refresh(running_box.scroll_visible)  # after it is shown, wherever the page was

    # --- cancel, hints, note -------------------------------------------------

    def action_cancel_or_back(self) -> None:
        """Cancel a running check; else leave the answer box or note; else go back to the list."""
        if not self.running and isinstance(self.focused, (Input, TextArea)):
            self.query_one("#exercise-body").focus()
            return
        if self.running:
            if not self._cancel_requested:
                self._cancel_requested = True
                self.query_one("#running-status", Static).update("Cancelling…")
                self._cancel()
            return
        self.app.pop_screen()

    @work(thread=True, group="cancel", exit_on_error=False)
    def _cancel(self) -> None:
        """Thread: stop the run (killing the worker process may take a moment)."""
        try:
            self._run.cancel()
        except Exception:  # the run reports its own outcome; cancelling must never crash the UI
            pass

    def action_hint(self) -> None:
        if not self.query_one(HintList).reveal():
            self.notify("All hints are shown.")

    def _save_note(self, text: str) -> str | None:
        """Store the explain-back note; None, or the sentence saying why not."""
        try:
            self._session.save_note(self.exercise.id, text)
        except ProgressError as exc:
            return str(exc)
        return None

    def flush_note(self) -> None:
        """Save unsaved note text now (used when the app quits)."""
        for editor in self.query(NoteEditor):
            editor.flush()

    def on_unmount(self) -> None:
        if self.running and self._run is not None:
            self._cancel_requested = True
            try:
                self._run.cancel()
            except Exception:
                pass
