"""One exercise: read, predict, run, compare, explain back.

The page's widgets are in ``tutor/ui/widgets`` (the running check is
:class:`~tutor.ui.widgets.run_status.RunStatus`); how the page reads single
keys while reading is :mod:`tutor.ui.screens.reading_keys`; this module is
the page's layout and its actions.
"""

from __future__ import annotations

import threading

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Header, Input, Markdown, Static, TextArea

from tutor.model import answers
from tutor.app.run import Run
from tutor.model.attempts import ANSWER_MODES, ProgressError
from tutor.model.catalog import Exercise
from tutor.model.review import due_state, next_after, seen_ago
from tutor.render import exercise_history, last_said, saved_attempt
from tutor.ui.keys import PageFooter, PageScreen
from tutor.ui.recall import open_page, recall_of
from tutor.ui.saving import kept_of, save_notice
from tutor.ui.screens.reading_keys import ReadingKeys
from tutor.ui.messages import RunCrashed, RunFinished, RunProgress
from tutor.ui.widgets.confidence import GUESS_KEY, ConfidencePicker, confidence_keys
from tutor.ui.widgets.fault_view import FaultView
from tutor.ui.widgets.hint_list import HintList
from tutor.ui.widgets.note_editor import NoteEditor
from tutor.ui.widgets.prediction import PredictionInput
from tutor.ui.widgets.result_panel import ResultPanel
from tutor.ui.widgets.run_status import RunStatus


class ExerciseScreen(ReadingKeys, PageScreen):
    """The whole loop for one exercise, in one scrolling column.

    Run (``r`` or the button) parses the prediction first — an unreadable one
    shows the expected format inline and runs nothing — then runs the check
    in a thread worker that reports by :mod:`tutor.ui.messages`. Esc cancels
    a running check (``Run.cancel()``), otherwise goes back. What is run,
    with which seed, and what is recorded is the session's policy
    (:mod:`tutor.app.session`): a pass or fail is recorded as an attempt — in the
    run's thread, never on the UI thread — a timeout is recorded as a
    timeout, never as a wrong prediction, and error and cancelled are shown
    as outcomes and not recorded. After a timeout the prediction stays in its
    box and ``r`` retries it with twice the limit that ran out (the machine
    may be busy: ``tutor.sandbox.speed``).
    """

    BINDINGS = [
        # the footer fits 80 columns: Hint is on its button, a and e in the help and the page's own words
        Binding("r", "run", "Run", tooltip="run the check (Enter in the answer box too)"),
        Binding("ctrl+r", "run", "Run", show=False),
        Binding("h", "hint", "Hint", show=False, tooltip="reveal the next hint (the Hint button too)"),
        Binding("a", "answer", "Answer", show=False,
                tooltip="move to the answer box (typing a digit or bracket starts it too)"),
        Binding("e", "explain", "Explain", show=False,
                tooltip="move to the explain-back note (it appears after the first run)"),
        # edit mode (tutor.ui.screens.fix); F and B work, and show, where f or b pick a choice
        Binding("f", "fix", "Fix it", tooltip="Fix it: repair the fault in your own copy (capstone: Find and fix)"),
        Binding("b", "break_it", "Break it", tooltip="Break it: predict, then write a fault of your own"),
        Binding("F", "fix", "Fix it"),
        Binding("B", "break_it", "Break it"),
        Binding("n", "next", "Next", tooltip="open the next exercise, once a result is shown (N on yes/no pages)"),
        Binding("escape", "cancel_or_back", "Back", tooltip="cancel a running check; else leave the box; else back"),
        Binding("tab", "tab_on", "Next field", show=False,
                tooltip="the next field; once a choice is picked where digits pick choices, the confidence line"),
    ]
    #: keys the page reads itself (``on_key``), for the help
    PAGE_KEYS = (
        ("a, b, c… / 1, 2, 3… / y, n", "on a choice or yes/no page: pick the choice with that key (shown beside it)"),
        ("1 … 9, 0, g", "how sure you are: tens of percent from the question's chance (2 is 25 % of four "
                        "choices, 5 is 50 % of yes/no), 0 for 100 %, g a guess (the chance); optional, saved with "
                        "the attempt and said afresh for each (the last run's shows beside the scale); on pages "
                        "where digits or g answer, Tab to the confidence line"),
        ("N", "on a yes/no page, or where n picks a choice: open the next exercise"),
        ("Enter", "in the answer box, on the confidence, or right after a confidence key: run the check"),
    )

    def __init__(self, exercise: Exercise) -> None:
        """Args:
            exercise: the exercise to show.
        """
        super().__init__()
        self.exercise = exercise
        self.running = False
        self._run: Run | None = None  # the run in progress, or the last one
        self._cancel_requested = False
        self._timed_out = None  # the last result, when it ran out of time: r then retries it

    # --- layout --------------------------------------------------------------

    def compose(self) -> ComposeResult:
        ex = self.exercise
        app = self.app
        # Kept here so the note can still be saved while the app shuts down.
        self._session = app.session
        progress = self._session.progress_of(ex.id)
        current = progress.current  # since the last reset: a reset exercise shows as fresh
        said = [a for a in current if a.mode in ANSWER_MODES]  # a warm-up's bet too; fix, break, hunt are no answers
        self._said_before = said
        # due for review: asked as a recall, so the last answer and observation show only after the new run
        self._review = due_state(ex.id, progress)
        self._recall = recall_of(app, ex.id)
        self._recall.hints = max(self._recall.hints, progress.hints)  # revealed before a relaunch: still seen
        # a draft left unrun when the learner quit is offered again; a new attempt says how sure afresh
        self._offer_draft, last_confidence = open_page(self._recall, progress.draft, said, self._review)
        yield Header()
        with VerticalScroll(id="exercise-body"):
            yield Static(Text.assemble((ex.id, "bold"), f" · {ex.title}\n", (ex.source_label, "dim")),
                         id="exercise-title")
            if self._review is not None:
                yield Static(Text.assemble(("↻ review", "bold yellow"), f": last seen {seen_ago(self._review.last)}"
                                           " — predict it again from memory; your last answer shows after the run"),
                             id="exercise-history")
            elif current:
                yield Static(exercise_history(progress, ex.graded), id="exercise-history")
            yield Markdown(ex.prompt, id="exercise-prompt")
            yield FaultView(app.catalog.fault_of(ex), ex.observe, hidden=ex.seed_per_attempt, id="exercise-fault")
            # A list is picked from, so its ids (the typed format) are not shown here.
            if ex.kind.picking is not None:
                what, keys = ex.kind.picking
                how = f"{keys}, or Tab to the list and Enter; r or Ctrl+R runs"
            else:
                runs = "Enter, r or Ctrl+R runs" if ex.kind.run_key_is_free else "Enter or Ctrl+R runs"
                what, how = f"answer with {ex.answer_format}", f"Tab to reach it; {runs}"
            yield Static(Text.assemble(("Your prediction", "bold"), f" — {what}  ", (f"({how})", "dim")),
                         classes="section-label")
            yield PredictionInput(ex, id="prediction")
            elsewhere = "digits pick a choice" if ex.kind.options else "digits type the answer"
            yield ConfidencePicker(self._recall.confidence, chance=ex.kind.chance, page_keys=self._digits_free(ex),
                                   digits_elsewhere=elsewhere, last=last_confidence, id="confidence")
            yield Static("", id="answer-error")
            with Horizontal(id="exercise-buttons"):
                yield Button("Run ▶ r", id="run-button", variant="primary")
                yield Button("Hint h", id="hint-button")
            yield RunStatus(id="running")
            yield ResultPanel(id="result")
            yield Static("", id="next-hint")
            yield HintList(ex.hints, id="hints")
            draft = self._recall.note  # a note that could not be saved when the page was left: offered again
            note = NoteEditor(ex.explain, progress.note if draft is None else draft, self._save_note,
                              saved=progress.note, id="note-editor")
            # The explain-back question can give the answer away: it appears
            # after the first run (or at once when a note or attempt exists;
            # after a reset, only once the exercise is run again).
            note.display = bool(current or draft or (progress.note and not progress.reset_time))
            yield note
        yield PageFooter()

    def on_mount(self) -> None:
        # Focus the scrolling body (not the answer box) so the prompt is read
        # first, the arrow keys scroll, and the footer shows every key.
        self.set_focus(self.query_one("#exercise-body"))  # now: the keys held for the page read it
        self.sub_title = self.exercise.id
        self._reopen()
        self.call_after_refresh(self.mark_shown)
        if self._offer_draft:
            what = "prediction" if self._recall.answer.strip() else "confidence"
            self.notify(f"Your {what} from last time, left unrun when you quit, is back: r runs it.",
                        title="kept", timeout=10)

    @staticmethod
    def _digits_free(exercise: Exercise) -> bool:
        """Whether the confidence digits work from the page: no choice takes one, and no answer is typed."""
        if not exercise.kind.options:
            return False
        digits = set(confidence_keys(exercise.kind.chance)) - {GUESS_KEY}
        return not set(exercise.kind.keys()) & digits

    def _reopen(self) -> None:
        """Show what the page had when it was last left: answer, confidence, hints, last result."""
        recall, prediction = self._recall, self.query_one(PredictionInput)
        if recall.answer:
            prediction.set_value(recall.answer)
        hints = self.query_one(HintList)
        for _ in range(min(recall.hints, len(self.exercise.hints))):
            hints.reveal(scroll=False)
        panel = self.query_one(ResultPanel)
        if recall.result is not None:
            panel.show(self.exercise, recall.result, title="last result", kept=recall.kept)
        elif self._review is None and self._said_before:  # a review shows the last answer only after the run
            panel.show_text(saved_attempt(self._said_before[-1]), title="last result (saved)")
        self._update_next_hint()
        self.query_one("#exercise-body").scroll_home(animate=False)

    # --- moving on -------------------------------------------------------------

    def _next_key(self) -> str:
        """``n``, or ``N`` where n answers (yes/no pages, a choice keyed n)."""
        return "N" if "n" in self.query_one(PredictionInput).keys else "n"

    def _update_next_hint(self) -> None:
        hint = self.query_one("#next-hint", Static)
        if not self.query_one(ResultPanel).has_class("-shown"):
            hint.update("")
            return
        following = next_after(self.app.catalog, self._session.progress, self.exercise.id)
        hint.update(Text.assemble((self._next_key(), "bold"), f" opens the next exercise: {following}", style="dim")
                    if following else Text("This is the last exercise.", style="dim"))
        self.refresh_bindings()

    def page_keys(self) -> set[str]:
        """On a choice or yes/no page, the choices' keys, and the confidence keys that pick no choice
        (g for a guess; the digits where no choice takes one)."""
        prediction = self.query(PredictionInput)
        if not prediction or not prediction.first().options:
            return set()
        keys = {k for k in prediction.first().keys if k}
        if self._digits_free(self.exercise):
            keys |= set(confidence_keys(self.exercise.kind.chance))
        keys.add(GUESS_KEY)
        return keys

    def check_action(self, action: str, parameters) -> bool | None:
        """Show ``n Next`` in the footer once a result is on the page (and n answers nothing)."""
        if action == "next":
            return self.query_one(ResultPanel).has_class("-shown") and self._next_key() == "n"
        return True

    def action_next(self) -> None:
        """Open the next exercise (see :func:`tutor.model.review.next_after`) in place of this one."""
        if not self.query_one(ResultPanel).has_class("-shown"):
            return
        following = next_after(self.app.catalog, self._session.progress, self.exercise.id)
        if following is None:
            self.notify("This is the last exercise.")
            return
        self.flush_note()
        self.app.open_exercise(following, unseen=True)  # in place of this page

    def action_tab_on(self) -> None:
        """Tab: the next field, but from the page after a pick where digits pick choices, the confidence.

        There the digits pick choices everywhere but on the confidence line: a Tab that landed
        on the choice list would make the next digit change the answer instead of saying how sure.
        """
        prediction = self.query_one(PredictionInput)
        if (prediction.options and prediction.chosen and not self._digits_free(self.exercise)
                and self.focused is self.query_one("#exercise-body")):
            picker = self.query_one(ConfidencePicker)
            picker.focus()
            picker.scroll_visible()
            return
        self.focus_next()

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
        # deferred: a screen loads when it first opens, so the first screen stays fast
        from tutor.ui.screens.fix import EditScreen
        self.app.push_screen(EditScreen(self.exercise, "fix"))

    def action_break_it(self) -> None:
        """Break it: the learner writes a fault of their own into the clean subject file."""
        # deferred: a screen loads when it first opens, so the first screen stays fast
        from tutor.ui.screens.fix import EditScreen
        self.app.push_screen(EditScreen(self.exercise, "break"))

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
            self.query_one(ResultPanel).clear()  # the timeout's panel goes while the retry runs
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
        confidence = self.query_one(ConfidencePicker).value
        # the seed and sides are the session's to choose
        self._run = self._session.start(ex, text, confidence=confidence)
        self._run.hints = self.query_one(HintList).shown  # the hints seen before predicting go with the attempt
        self._recall.answer, self._recall.confidence = text, confidence
        self.query_one(ResultPanel).clear()  # a new run: the old result (a timeout, say) goes
        self._update_next_hint()
        self._set_running(True, self.app.starting_words())
        self._run_check(self._run)

    def _clear_answer_error(self) -> None:
        error = self.query_one("#answer-error", Static)
        error.update("")
        error.remove_class("-shown")

    def on_prediction_input_changed(self, event: PredictionInput.Changed) -> None:
        """A new answer: the complaint about the old one no longer applies."""
        event.stop()
        self._clear_answer_error()
        prediction = self.query_one(PredictionInput)
        if prediction.options and prediction.chosen and prediction.value != self._recall.answer:
            # a pick (not the page reopened): the confidence line the next key may set comes into view too
            self.call_after_refresh(self.query_one(ConfidencePicker).scroll_visible, animate=False)
        self._recall.answer = prediction.value

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
        self.query_one(RunStatus).report(sides, side, message.progress, message.message)

    @staticmethod
    def _retry_seconds(result) -> str:
        """Twice the limit ``result`` ran out of, as text (" (60 s)"), or "" when it does not say its limit."""
        seconds = (result.time_limit or {}).get("seconds")
        return f" ({2 * seconds:g} s)" if seconds else ""

    def on_run_finished(self, message: RunFinished) -> None:
        outcome = message.outcome
        self._set_running(False)
        panel = self.query_one(ResultPanel)
        panel.show(self.exercise, outcome.result, kept=kept_of(outcome))
        self._timed_out = outcome.result if outcome.result.status == "timeout" else None
        if self._timed_out is not None:
            panel.mount(Static(Text(f"the machine may be busy: r retries with twice the limit"
                                    f"{self._retry_seconds(self._timed_out)}", style="bold yellow"),
                               id="retry-hint"), after="#result-text")
        self._recall.result, self._recall.kept = outcome.result, kept_of(outcome)
        if self._review is not None and self._said_before:  # recalled and run: now the last answer shows
            self._review = None
            self.query_one("#exercise-history", Static).update(Text.assemble(
                ("↻ reviewed", "bold yellow"), " · before this run: ", last_said(self._said_before[-1])))
        if outcome.saved_to is not None and self._run is not None:  # recorded: no longer a draft
            self._recall.ran = (self._run.prediction or "", getattr(self._run, "confidence", None))
        if (notice := save_notice(outcome)) is not None:  # not saved (why), or saved without its note
            self.notify(notice, severity="error", timeout=10, markup=False)
        self.query_one(NoteEditor).display = True
        # the answer stays in the box: r runs it again, a (or typing from the page) changes it
        self._update_next_hint()
        self.query_one("#exercise-body").focus()  # h, e, r and the arrows work again
        self.call_after_refresh(panel.scroll_visible)

    def on_run_crashed(self, message: RunCrashed) -> None:
        self._set_running(False)
        panel = self.query_one(ResultPanel)
        panel.show_text(Text.assemble(("the check could not start — ", "bold yellow"), message.reason))
        self.call_after_refresh(panel.scroll_visible)

    def _set_running(self, running: bool, status: str = "") -> None:
        self.running = running
        box = self.query_one(RunStatus)
        if running:
            self.query("#retry-hint").remove()
            self._cancel_requested = False
            box.start(status)
            self.call_after_refresh(box.scroll_visible)  # after it is shown, wherever the page was
        else:
            box.stop()
        self.query_one("#run-button", Button).disabled = running

    # --- cancel, hints, note -------------------------------------------------

    def action_cancel_or_back(self) -> None:
        """Cancel a running check; else leave the answer box or note; else go back to the list."""
        if not self.running and isinstance(self.focused, (Input, TextArea)):
            self.query_one("#exercise-body").focus()
            return
        if self.running:
            if not self._cancel_requested:
                self._cancel_requested = True
                self.app.note_cancel()
                self.query_one(RunStatus).say("Cancelling…")
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
        hints = self.query_one(HintList)
        if not hints.reveal():
            self.notify("All hints are shown.")
            return
        self._recall.hints = hints.shown
        try:  # saved now: the hint is seen, whatever happens before the next run
            self._session.save_hints(self.exercise.id, hints.shown)
        except ProgressError as exc:
            self.notify(f"The hints you saw were not saved: {exc}", severity="warning", markup=False)

    def on_confidence_picker_changed(self, event: ConfidencePicker.Changed) -> None:
        event.stop()
        self._recall.confidence = event.value

    def _save_note(self, text: str) -> str | None:
        """Store the explain-back note; None, or the sentence saying why not."""
        try:
            self._session.save_note(self.exercise.id, text)
        except ProgressError as exc:
            self._recall.note = text  # kept while the app runs, and offered when the page opens again
            return str(exc)
        self._recall.note = None
        return None

    def flush_note(self) -> None:
        """Save unsaved note text now (leaving the page, another page on top of it, the app quitting)."""
        for editor in self.query(NoteEditor):
            editor.flush()

    def on_screen_suspend(self) -> None:
        """Another screen covers this one (the command palette, help, edit mode): the note is saved
        now, not a debounce later, so nothing typed waits on a page the learner may not come back to."""
        self.flush_note()

    def leave_running(self) -> str:
        """The app quits during this page's check: cancel it (in a thread: the tutor ends at once) and
        keep the prediction to offer again; returns the sentence saying so."""
        run, self._cancel_requested = self._run, True
        threading.Thread(target=run.cancel, name="cancel-on-quit", daemon=True).start()
        sure = f" ({run.confidence} % sure)" if getattr(run, "confidence", None) is not None else ""
        try:
            self._session.save_draft(self.exercise.id, run.prediction or "", getattr(run, "confidence", None))
        except ProgressError as exc:
            return f"the check of {self.exercise.id} was cancelled and your prediction was not kept: {exc}"
        self._recall.answer, self._recall.confidence = run.prediction or "", getattr(run, "confidence", None)
        return (f"the check of {self.exercise.id} was cancelled as you quit; your prediction "
                f"{run.prediction!r}{sure} is kept and offered when you open it again.")

    def on_unmount(self) -> None:
        if self.running and self._run is not None:
            self._cancel_requested = True
            try:
                self._run.cancel()
            except Exception:
                pass
