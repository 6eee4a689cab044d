"""Edit mode: Fix it, Break it, and the capstone's Find and fix — the learner's own code, measured.

The screen holds the learner's working copy of one subject file
(:meth:`tutor.app.session.Session.edit_task`) and opens it in ``$VISUAL`` /
``$EDITOR`` (:mod:`tutor.ui.external_editor`; any failure gives the terminal
back and says how to set one) or in the built-in :class:`CodeEditor`. Break
it asks for the prediction before any editor opens and runs neither an
unpredicted nor an unchanged file. Saving writes the copy atomically and runs
the check with it as the side ``yours`` in a thread: the verdict first, the
engine's instruments after. Nothing typed is lost: the copy is also saved a
second after typing stops and when the screen closes.
"""

from __future__ import annotations

import threading
import time

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Header, Input, Static

from tutor.app.tasks import Task
from tutor.model.attempts import ProgressError
from tutor.model.catalog import Exercise
from tutor.model.patch import EditError
from tutor.render import render_edit
from tutor.ui.external_editor import at_line, changed_lines, editor_command, run_editor
from tutor.ui.widgets.edit_head import MODE_TITLES, edit_head
from tutor.ui.keys import PageFooter, PageScreen
from tutor.ui.saving import save_notice
from tutor.ui.screens.seeking import Seeking
from tutor.ui.messages import EditCrashed, EditFinished, EditInstrumentsFinished, EditProgressed
from tutor.ui.widgets.code_editor import CodeEditor
from tutor.ui.widgets.ordered_input import OrderedInput

#: Seconds of quiet typing before the working copy is saved.
AUTOSAVE_S = 1.0


class EditScreen(Seeking, PageScreen):
    """One exercise in one edit mode (``fix``, ``break``; ``fix`` on the capstone is its hunt).

    Attributes:
        exercise: the exercise.
        mode: the mode asked for.
        edit_task: what is edited (set on mount; a :class:`tutor.app.tasks.Task`).
        outcome: the last run's :class:`tutor.app.session.EditOutcome`, or None.
        save_to_verdict_s: seconds from the last save to its verdict on screen, or None.
    """

    BINDINGS = [
        Binding("ctrl+s", "save_and_run", "Run", priority=True, tooltip="save your file and run the check on it"),
        Binding("ctrl+o", "open_editor", "$EDITOR", tooltip="open your file in $VISUAL or $EDITOR (when one is set)"),
        Binding("ctrl+t", "toggle_result", "Result", tooltip="move between your file and the result panel"),
        Binding("ctrl+f", "find", "Find", tooltip="find text in your file (Enter: the next match; Esc: close)"),
        Binding("ctrl+g", "goto_line", "Line", tooltip="go to a line of your file by its number"),
        Binding("ctrl+n", "fresh", "Fresh", tooltip="start again from a fresh copy (yours is kept as .previous)"),
        Binding("escape", "leave", "Back", tooltip="cancel a running check; else go back (your text is kept)"),
    ]

    def __init__(self, exercise: Exercise, mode: str = "fix") -> None:
        """Args:
            exercise: the exercise.
            mode: ``fix`` (the capstone's is its hunt) or ``break``.
        """
        super().__init__()
        self.exercise = exercise
        self.mode = mode
        self.edit_task: Task | None = None
        self.outcome = None
        self.running = False
        self.save_to_verdict_s: float | None = None
        self._saved_text: str | None = None
        self._timer: Timer | None = None
        self._run = None
        self._editor = CodeEditor("", id="edit-code")
        self._done: dict[str, float] = {}  # side name -> fraction done, in the run or the instruments' run
        self._verdict_line: str | None = None  # the verdict's status line while the instruments run after it
        self._verdict_error = False

    # --- layout --------------------------------------------------------------

    def compose(self) -> ComposeResult:
        self._session = self.app.session
        yield Header()
        with Vertical():
            yield Static("", id="edit-head")
            yield OrderedInput(placeholder="your prediction", id="edit-prediction")
            yield self._editor
            yield OrderedInput(id="edit-seek")
            yield Static("", id="edit-status")
            with VerticalScroll(id="edit-result"):
                yield Static("", id="edit-result-text")
        yield PageFooter()

    def on_mount(self) -> None:
        try:
            self.edit_task = self._session.edit_task(self.exercise, self.mode)
        except EditError as exc:
            no_fault = self.mode == "fix" and self.app.catalog.fault_of(self.exercise) is None
            # the session's sentence names the command line; here the key is the way on
            self.app.notify(f"{self.exercise.id} has no fault to fix: press b (Break it) to write one of "
                            "your own." if no_fault else str(exc), severity="warning", markup=False)
            self.app.pop_screen()
            return
        task = self.edit_task
        self.set_class(task.mode == "break", "-break")
        self.sub_title = f"{MODE_TITLES[task.mode]} · {self.exercise.id}"
        self.query_one("#edit-head", Static).update(edit_head(task, self.exercise, editor_command() is not None))
        if task.mode == "break":
            box = self.query_one("#edit-prediction", Input)
            box.placeholder = f"your prediction: {self.exercise.answer_format}, or in your own words"
        try:
            saved = self._session.working_copy(task)
        except ProgressError as exc:
            self.notify(str(exc), severity="error", markup=False, timeout=15)
            saved = None
        if saved is not None and saved != task.start:
            changed = changed_lines(task.start, saved)
            where = self._copy_path()
            # deferred: a screen loads when it first opens, so the first screen stays fast
            from tutor.ui.screens.copy_choice import CopyChoiceScreen
            self.app.push_screen(CopyChoiceScreen(task.path, str(where or "the progress folder"), changed),
                                 lambda choice: self._begin(saved if choice != "fresh" else None))
        else:
            self._begin(saved)

    def _copy_path(self):
        return self._session.working_copy_path(self.edit_task)

    def _begin(self, saved: str | None) -> None:
        """Load the text (the saved copy, or a fresh one), then open the learner's editor if there is one."""
        if saved is None:
            try:
                text = self._session.fresh_copy(self.edit_task)
            except ProgressError as exc:
                self.notify(str(exc), severity="error", markup=False)
                text = self.edit_task.start
        else:
            text = saved
        self._load(text)
        self._save_copy()  # the copy exists on disk from the start, for the external editor too
        if self.edit_task.mode == "break" and not self._prediction():
            # Predict first: the prediction box comes before any editor, so no fault is run unpredicted.
            self._status("Predict first: what will your fault do? Type it above and press Enter; "
                         "then write your fault.")
            self.query_one("#edit-prediction", Input).focus()
        elif editor_command():
            self.call_after_refresh(self.action_open_editor)
        else:
            self._status("No $VISUAL or $EDITOR is set, so the built-in editor is open. "
                         "Ctrl+S saves and runs.")
            self._editor.focus()

    # --- the working copy ------------------------------------------------------

    def _load(self, text: str) -> None:
        """Put ``text`` in the built-in editor, its cursor at the task's line (the fault's, where there is one)."""
        self._editor.load_text(text)
        self._editor.go_to_line(self.edit_task.line)
        # once laid out, the line in the middle of the view with the code before it (it stood at the top)
        self.call_after_refresh(self._editor.scroll_cursor_visible, center=True)

    @property
    def text(self) -> str:
        """The learner's text as the editor holds it now."""
        return self._editor.text

    def _save_copy(self, text: str | None = None) -> bool:
        """Write the working copy now (atomically); False (and a notice) when it could not be."""
        if self.edit_task is None:
            return False
        text = self.text if text is None else text
        if text == self._saved_text:
            return True
        try:
            self._session.save_working_copy(self.edit_task, text)
        except ProgressError as exc:
            self.notify(f"Your working copy was not saved: {exc}", severity="error", markup=False, timeout=15)
            return False
        self._saved_text = text
        return True

    def on_text_area_changed(self, event) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(AUTOSAVE_S, self._autosave)

    def _autosave(self) -> None:
        self._timer = None
        self._save_copy()

    def flush_copy(self) -> None:
        """Save the working copy now if it changed (leaving, quitting)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._save_copy()

    def flush_note(self) -> None:
        """What the app calls on every screen as it quits or hangs up (``TutorApp.flush_notes``): here,
        save the working copy."""
        self.flush_copy()

    def action_fresh(self) -> None:
        """Start again from the starting file; the old copy is kept as ``<file>.previous``."""
        if self.edit_task is None or self.running:
            return
        self.flush_copy()
        try:
            text = self._session.fresh_copy(self.edit_task)
        except ProgressError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self._saved_text = None
        self._load(text)
        self._save_copy()
        self._status("A fresh copy; your previous one is kept beside it as .previous.")

    # --- the learner's own editor ------------------------------------------------

    def action_open_editor(self) -> None:
        """Open the working copy in ``$VISUAL`` / ``$EDITOR``; run it when the editor saved a change."""
        command = editor_command()
        if self.edit_task is None or self.running:
            return
        if command is None:
            self.notify("Set $VISUAL or $EDITOR to edit in your own editor; the built-in one is open.")
            self._editor.focus()
            return
        if self.edit_task.mode == "break" and not self._prediction():
            self._status("Predict first: type what your fault will do in the box above and press Enter; "
                         "your editor opens then.", error=True)
            self.query_one("#edit-prediction", Input).focus()
            return
        self.flush_copy()
        path = self._copy_path()
        if path is None:
            self._status("There is no progress folder to keep a working copy in; use the built-in editor.")
            self._editor.focus()
            return
        before = self.text
        problem = self._run_editor(at_line(command, str(path), self.edit_task.line))
        after = self._read_back(path)
        if after is None:
            return
        self._saved_text = after
        if problem is not None:
            if after != before:
                self._take_back(after)  # what the editor wrote is kept, not run
            self._offer_built_in(problem)
            return
        if after != before:
            self._take_back(after)
            self.action_save_and_run()
        else:
            if self.edit_task.mode == "break" and after.replace("\r\n", "\n") == self.edit_task.start:
                self._status("You have not changed anything yet: write your fault (Ctrl+O reopens your editor, "
                             "or edit below), then Ctrl+S runs it.")
            else:
                self._status("Your editor closed without a change. Ctrl+S runs, Ctrl+O reopens your editor.")
            self._editor.focus()

    def _take_back(self, text: str) -> None:
        """The built-in editor holds what the learner's editor wrote, its cursor and view where they were
        (loading a text puts both at line 1; the learner was working further down)."""
        editor = self._editor
        (row, column), (x, y) = editor.cursor_location, editor.scroll_offset
        editor.load_text(text)
        row = min(row, editor.document.line_count - 1)
        editor.move_cursor((row, min(column, len(editor.document.get_line(row)))))
        self.call_after_refresh(editor.scroll_to, x, y, animate=False)

    def _read_back(self, path) -> str | None:
        """The working copy as the editor left it, or None (said; the built-in editor keeps the text from before)."""
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.notify(f"Your working copy could not be read back ({exc}); the built-in editor shows the "
                        "text from before.", severity="error", markup=False)
            self._editor.focus()
            return None

    def _offer_built_in(self, problem: str) -> None:
        """Say what went wrong with the learner's editor and how to set one; the built-in editor takes over."""
        sentence = (f"{problem}, so the built-in editor is open: set $EDITOR to an editor installed here "
                    "(export EDITOR=nano, say) or unset it, and press Ctrl+O to try yours again.")
        self.notify(sentence, title="editor", severity="warning", markup=False, timeout=15)
        self._status(sentence, error=True)
        self._editor.focus()

    def _run_editor(self, argv: list[str]) -> str | None:
        """Run the editor with the terminal handed over (:func:`run_editor`); None, or what went wrong."""
        problem = run_editor(self.app, argv)
        self.refresh(layout=True)
        return problem

    def check_action(self, action: str, parameters) -> bool | None:
        """Ctrl+O is shown only where there is an editor to open (``$VISUAL`` / ``$EDITOR``)."""
        return editor_command() is not None if action == "open_editor" else True

    # --- running ---------------------------------------------------------------

    def action_save_and_run(self) -> None:
        """Save the working copy and run it as the side ``yours``, after the keys typed before Ctrl+S
        (a priority key, acted on as it arrives, while those may still wait in this screen's queue or
        the editor's on a busy machine): the save waits its turn behind them in both queues."""
        self.call_later(self._editor.call_later, self._save_and_run_now)

    def _save_and_run_now(self) -> None:
        if self.edit_task is None or not self.is_attached:
            return
        if self.running:
            self.notify("A check is already running; Esc cancels it.", severity="warning")
            return
        text = self.text
        self.flush_copy()
        prediction = self._prediction() if self.edit_task.mode == "break" else None
        if self.edit_task.mode == "break":
            if not prediction:
                self._status("Predict first: type what your fault will do in the box above, then run.", error=True)
                self.query_one("#edit-prediction", Input).focus()
                return
            if text.replace("\r\n", "\n") == self.edit_task.start:
                self._status("You have not changed anything yet: write your fault into the file, then Ctrl+S "
                             "runs it.", error=True)
                self._editor.focus()
                return
        try:
            self._run = self._session.start_edit(self.edit_task, text, prediction)
        except EditError as exc:
            self._status(str(exc), error=True)
            return
        self.running, self._done, self._verdict_line = True, {}, None
        self._status("Running your file… (Esc cancels)")
        self._execute(self._run, time.perf_counter())

    def on_code_editor_save_requested(self, event: CodeEditor.SaveRequested) -> None:
        event.stop()
        self.action_save_and_run()

    def on_code_editor_leave_requested(self, event: CodeEditor.LeaveRequested) -> None:
        event.stop()
        self.action_leave()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the prediction box: on to the editor while the file is unchanged, else run."""
        event.stop()
        if event.input.id == "edit-seek":
            self._seek_submitted(event.value)
            return
        if self.edit_task is None:
            return
        if not self._prediction():
            self._status("Predict first: type what your fault will do, then press Enter.", error=True)
            return
        if self.text.replace("\r\n", "\n") != self.edit_task.start:
            self.action_save_and_run()
        elif editor_command():
            self.action_open_editor()
        else:
            self._status("Now write your fault in the file below; Ctrl+S saves and runs it.")
            self._editor.focus()

    def _prediction(self) -> str:
        """The break prediction as typed (stripped; empty when there is none)."""
        return self.query_one("#edit-prediction", Input).value.strip()

    @work(thread=True, exclusive=True, group="edit-run", exit_on_error=False)
    def _execute(self, run, saved_at: float) -> None:
        """Thread: run and judge (the attempt is recorded here), then the engine's instruments."""
        def on_progress(update) -> None:
            self.post_message(EditProgressed(update.side, float(update.fraction or 0.0), update.message))
        try:
            outcome = run.measure(on_progress)
        except Exception as exc:  # WorkerError, DeviceError: an outcome to show, never a crash
            self.post_message(EditCrashed(f"{exc} ({exc.__class__.__name__})"))
            return
        self.post_message(EditFinished(outcome, time.perf_counter() - saved_at))
        try:
            ran = run.add_instruments(outcome, on_progress)  # the verdict is shown first, then these
        except Exception as exc:
            self.post_message(EditCrashed(f"the instruments could not run: {exc}"))
            return
        if ran:
            self.post_message(EditInstrumentsFinished(outcome))

    def on_edit_progressed(self, message: EditProgressed) -> None:
        """Every side's share done (each kept at its highest); once the verdict is shown, the instruments'
        progress follows it on its line and never takes the verdict's place."""
        if not self.running:
            return
        self._done[message.side] = max(self._done.get(message.side, 0.0), min(1.0, max(0.0, message.fraction)))
        each = " · ".join(f"{side} {done:.0%}" for side, done in self._done.items())
        if self._verdict_line is not None:
            self._status(f"{self._verdict_line} · the engine's instruments are running… {each}",
                         error=self._verdict_error)
        else:
            self._status(f"Running… {each} — {message.side}: {message.message}  (Esc cancels)")

    def on_edit_finished(self, message: EditFinished) -> None:
        outcome = message.outcome
        self.outcome = outcome
        self.save_to_verdict_s = message.seconds
        self.running = self._run.instruments_follow(outcome)
        self._show(outcome)
        saved = "" if outcome.saved_to is None else " · attempt saved"
        if (notice := save_notice(outcome)) is not None:
            self.notify(notice, severity="error", markup=False)
        self._verdict_line = f"{outcome.verdict.status} · {message.seconds:.1f} s from save to verdict{saved}"
        self._verdict_error, self._done = outcome.verdict.status in ("not fixed", "syntax error"), {}
        more = " · the engine's instruments are running…" if self.running else ""
        self._status(self._verdict_line + more, error=self._verdict_error)

    def on_edit_instruments_finished(self, message: EditInstrumentsFinished) -> None:
        self.running = False
        self._show(message.outcome)
        self._status(f"{message.outcome.verdict.status} · the instruments ran on your engine (below)")

    def on_edit_crashed(self, message: EditCrashed) -> None:
        self.running = False
        self._status(f"The check could not run: {message.reason}", error=True)

    def _show(self, outcome) -> None:
        panel = self.query_one("#edit-result")
        self.query_one("#edit-result-text", Static).update(Group(*render_edit(self.exercise, outcome)))
        panel.add_class("-shown")
        panel.scroll_home(animate=False)
        # the panel takes rows from the file: keep the line being edited on screen
        self.call_after_refresh(self._editor.scroll_cursor_visible)

    def _status(self, sentence: str, error: bool = False) -> None:
        self.query_one("#edit-status", Static).update(Text(sentence, style="bold red" if error else ""))

    # --- moving about: the result panel (find and go to line: Seeking) --------------------

    def action_toggle_result(self) -> None:
        """Move the focus to the result panel, or back to the file."""
        panel = self.query_one("#edit-result")
        if not panel.has_class("-shown"):
            self._status("There is no result yet: Ctrl+S runs your file, and the result panel appears below.")
            return
        if self.focused is panel:
            self._editor.focus()
            self._editor.scroll_cursor_visible()
        else:
            panel.focus()

    # --- leaving -----------------------------------------------------------------

    def action_leave(self) -> None:
        """Close the find box; else cancel a running check; else keep the text and go back."""
        if self.seek_takes_escape():
            return
        if self.running:
            self._status("Cancelling…")
            self.app.note_cancel()
            self._cancel()
            return
        self.flush_copy()
        self.app.pop_screen()

    def leave_running(self) -> str:
        """The app quits during this screen's check: cancel it at once (so the tutor ends promptly,
        its worker stopped) and say so; the working copy was saved as the app began quitting."""
        stop = self._run.cancel if self._run is not None else self._session.cancel
        threading.Thread(target=stop, name="cancel-on-quit", daemon=True).start()
        where = self._copy_path()
        return (f"the check of your file for {self.exercise.id} was cancelled as you quit; your file is kept"
                + (f" in {where}." if where else "."))

    @work(thread=True, group="edit-cancel", exit_on_error=False)
    def _cancel(self) -> None:
        try:
            if self._run is not None:
                self._run.cancel()
            else:
                self._session.cancel()
        except Exception:
            pass

    def on_unmount(self) -> None:
        self.flush_copy()
        if self.running and self._run is not None:
            try:
                self._run.cancel()
            except Exception:
                pass
