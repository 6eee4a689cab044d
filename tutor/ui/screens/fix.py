"""Edit mode: Fix it, Break it, and the capstone's Find and fix — the learner's own code, measured.

The screen holds the learner's working copy of one subject file
(:meth:`tutor.app.session.Session.edit_task`). It opens the copy in the
learner's ``$VISUAL`` / ``$EDITOR`` through ``App.suspend()`` when one is
set, else (or when it fails to start) in the in-TUI :class:`CodeEditor`.
Saving (Ctrl+S, or leaving the external editor with a changed file) writes
the working copy atomically to the progress folder and runs the check with
the learner's file as the side ``yours`` in a thread; the verdict
(:mod:`tutor.model.verdict`) appears first, the engine's instruments after it. Esc
leaves and keeps the text; nothing the learner typed is ever lost — the copy
is also saved a second after typing stops and when the screen closes.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, Static

from tutor.app.tasks import Task
from tutor.model.attempts import ProgressError
from tutor.model.catalog import Exercise
from tutor.model.patch import EditError
from tutor.render import render_edit
from tutor.ui.widgets.code_editor import CodeEditor

#: Seconds of quiet typing before the working copy is saved.
AUTOSAVE_S = 1.0
#: How long an editor started without a terminal (one the driver cannot suspend for) may run, seconds.
DETACHED_EDITOR_TIMEOUT_S = 600
MODE_TITLES = {"fix": "Fix it", "break": "Break it", "hunt": "Find and fix"}


def editor_command() -> list[str] | None:
    """The learner's editor as a command line (``$VISUAL``, else ``$EDITOR``), or None when neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError:
                return None
    return None


class EditScreen(Screen):
    """One exercise in one edit mode (``fix``, ``break``; ``fix`` on the capstone is its hunt).

    Attributes:
        exercise: the exercise.
        mode: the mode asked for.
        edit_task: what is edited (set on mount; a :class:`tutor.app.tasks.Task`).
        outcome: the last run's :class:`tutor.app.session.EditOutcome`, or None.
        save_to_verdict_s: seconds from the last save to its verdict on screen, or None.
    """

    BINDINGS = [
        Binding("ctrl+s", "save_and_run", "Save and run", priority=True),
        Binding("ctrl+o", "open_editor", "Open in $EDITOR"),
        Binding("ctrl+n", "fresh", "Fresh copy"),
        Binding("escape", "leave", "Back"),
    ]

    DEFAULT_CSS = """
    EditScreen #edit-head {
        height: auto;
        padding: 0 1;
    }
    EditScreen #edit-prediction {
        display: none;
    }
    EditScreen.-break #edit-prediction {
        display: block;
    }
    EditScreen #edit-status {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    EditScreen #edit-result {
        height: 1fr;
        display: none;
        border: round $accent;
        padding: 0 1;
    }
    EditScreen #edit-result.-shown {
        display: block;
    }
    EditScreen #edit-result-text {
        height: auto;
    }
    """

    class Finished(Message):
        """The verdict of a run is in (posted from the run's thread)."""

        def __init__(self, outcome, seconds: float) -> None:
            super().__init__()
            self.outcome = outcome
            self.seconds = seconds

        # ``outcome`` is a tutor.app.session.EditOutcome

    class InstrumentsFinished(Message):
        """The engine's instruments ran after the verdict (posted from the run's thread)."""

        def __init__(self, outcome) -> None:
            super().__init__()
            self.outcome = outcome

    class Crashed(Message):
        """The run could not start at all (no worker, no device)."""

        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    class Progressed(Message):
        """A side's progress report."""

        def __init__(self, side: str, fraction: float, message: str) -> None:
            super().__init__()
            self.side = side
            self.fraction = fraction
            self.message = message

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

    # --- layout --------------------------------------------------------------

    def compose(self) -> ComposeResult:
        self._session = self.app.session
        yield Header()
        with Vertical():
            yield Static("", id="edit-head")
            yield Input(placeholder="your prediction", id="edit-prediction")
            yield self._editor
            yield Static("", id="edit-status")
            with VerticalScroll(id="edit-result"):
                yield Static("", id="edit-result-text")
        yield Footer()

    def on_mount(self) -> None:
        try:
            self.edit_task = self._session.edit_task(self.exercise, self.mode)
        except EditError as exc:
            self.app.notify(str(exc), severity="warning", markup=False)
            self.app.pop_screen()
            return
        task = self.edit_task
        self.set_class(task.mode == "break", "-break")
        self.sub_title = f"{MODE_TITLES[task.mode]} · {self.exercise.id}"
        self.query_one("#edit-head", Static).update(self._head())
        if task.mode == "break":
            box = self.query_one("#edit-prediction", Input)
            box.placeholder = f"your prediction: {self.exercise.answer_format}, or in your own words"
        try:
            saved = self._session.working_copy(task)
        except ProgressError as exc:
            self.notify(str(exc), severity="error", markup=False, timeout=15)
            saved = None
        if saved is not None and saved != task.start:
            changed = sum(1 for line in task.diff(saved).splitlines()
                          if line[:1] in "+-" and not line.startswith(("+++", "---")))
            where = self._copy_path()
            # deferred: a screen loads when it first opens, so the first screen stays fast
            from tutor.ui.screens.copy_choice import CopyChoiceScreen
            self.app.push_screen(CopyChoiceScreen(task.path, str(where or "the progress folder"), changed),
                                 lambda choice: self._begin(saved if choice != "fresh" else None))
        else:
            self._begin(saved)

    def _head(self) -> Text:
        task, ex = self.edit_task, self.exercise
        title = Text.assemble((MODE_TITLES[task.mode], "bold"), f" · {ex.id} · ", (task.path, "bold"), "\n")
        if task.mode == "fix":
            title.append(f"Your copy of {task.path} with the fault {task.fault.id} applied. Repair it: the tutor "
                         "runs the check on your file and compares it with the clean code.", style="dim")
        elif task.mode == "hunt":
            title.append(f"This {task.path} carries the hidden fault of mystery {task.seed}. Edit it until every "
                         "audit link holds; the fault's diff stays hidden.", style="dim")
        else:
            title.append(f"The clean {task.path}. Write a fault of your own, predict what it does above, and "
                         "run: the tutor shows what your engine does and where it first diverges from clean.",
                         style="dim")
        keys = "Ctrl+S save and run · Esc back (your text is kept) · Ctrl+N fresh copy"
        if editor_command():
            keys += " · Ctrl+O open in your editor"
        title.append("\n" + keys, style="dim italic")
        return title

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
        self._editor.load_text(text)
        self._save_copy()  # the copy exists on disk from the start, for the external editor too
        if editor_command():
            self.call_after_refresh(self.action_open_editor)
        else:
            self._status("No $VISUAL or $EDITOR is set, so the built-in editor is open. "
                         "Ctrl+S saves and runs.")
            self._editor.focus()

    # --- the working copy ------------------------------------------------------

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
        self._editor.load_text(text)
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
        self.flush_copy()
        path = self._copy_path()
        if path is None:
            self._status("There is no progress folder to keep a working copy in; use the built-in editor.")
            self._editor.focus()
            return
        before = self.text
        problem = self._run_editor(command + [str(path)])
        if problem is not None:
            self.notify(f"Your editor did not start ({problem}); the built-in editor is open instead.",
                        severity="warning", markup=False, timeout=10)
            self._editor.focus()
            return
        try:
            after = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.notify(f"Your working copy could not be read back ({exc}); the built-in editor shows the "
                        "text from before.", severity="error", markup=False)
            self._editor.focus()
            return
        self._saved_text = after
        if after != before:
            self._editor.load_text(after)
            self.action_save_and_run()
        else:
            self._status("Your editor closed without a change. Ctrl+S runs, Ctrl+O reopens your editor.")
            self._editor.focus()

    def _run_editor(self, argv: list[str]) -> str | None:
        """Run the editor until it exits, with the terminal handed over; None, or why it did not start."""
        try:
            with self.app.suspend():
                code = subprocess.call(argv)
        except SuspendNotSupported:
            # No terminal to hand over (a test's headless driver, a web driver): run it detached.
            try:
                code = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, timeout=DETACHED_EDITOR_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"{argv[0]}: {exc}"
        except OSError as exc:
            return f"{argv[0]}: {exc.strerror or exc}"
        if code != 0:
            return f"{argv[0]} exited with status {code}"
        return None

    # --- running ---------------------------------------------------------------

    def action_save_and_run(self) -> None:
        """Save the working copy, then run the check with it as the side ``yours``."""
        if self.edit_task is None:
            return
        if self.running:
            self.notify("A check is already running; Esc cancels it.", severity="warning")
            return
        text = self.text
        self.flush_copy()
        prediction = self.query_one("#edit-prediction", Input).value if self.edit_task.mode == "break" else None
        try:
            self._run = self._session.start_edit(self.edit_task, text, prediction)
        except EditError as exc:
            self._status(str(exc), error=True)
            return
        self.running = True
        self._status("Running your file… (Esc cancels)")
        self._execute(self._run, time.perf_counter())

    def on_code_editor_save_requested(self, event: CodeEditor.SaveRequested) -> None:
        event.stop()
        self.action_save_and_run()

    def on_code_editor_leave_requested(self, event: CodeEditor.LeaveRequested) -> None:
        event.stop()
        self.action_leave()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save_and_run()

    @work(thread=True, exclusive=True, group="edit-run", exit_on_error=False)
    def _execute(self, run, saved_at: float) -> None:
        """Thread: run and judge (the attempt is recorded here), then the engine's instruments."""
        def on_progress(update) -> None:
            self.post_message(self.Progressed(update.side, float(update.fraction or 0.0), update.message))
        try:
            outcome = run.measure(on_progress)
        except Exception as exc:  # WorkerError, DeviceError: an outcome to show, never a crash
            self.post_message(self.Crashed(f"{exc} ({exc.__class__.__name__})"))
            return
        self.post_message(self.Finished(outcome, time.perf_counter() - saved_at))
        try:
            ran = run.add_instruments(outcome, on_progress)  # the verdict is shown first, then these
        except Exception as exc:
            self.post_message(self.Crashed(f"the instruments could not run: {exc}"))
            return
        if ran:
            self.post_message(self.InstrumentsFinished(outcome))

    def on_edit_screen_progressed(self, message: "EditScreen.Progressed") -> None:
        if self.running:
            self._status(f"Running… {message.side}: {message.fraction:.0%} {message.message}  (Esc cancels)")

    def on_edit_screen_finished(self, message: "EditScreen.Finished") -> None:
        outcome = message.outcome
        self.outcome = outcome
        self.save_to_verdict_s = message.seconds
        self.running = self._run.instruments_follow(outcome)
        self._show(outcome)
        saved = "" if outcome.saved_to is None else " · attempt saved"
        if outcome.save_error:
            self.notify(f"The attempt was not saved: {outcome.save_error}", severity="error", markup=False)
        more = " · the engine's instruments are running…" if self.running else ""
        self._status(f"{outcome.verdict.status} · {message.seconds:.1f} s from save to verdict{saved}{more}",
                     error=outcome.verdict.status in ("not fixed", "syntax error"))

    def on_edit_screen_instruments_finished(self, message: "EditScreen.InstrumentsFinished") -> None:
        self.running = False
        self._show(message.outcome)
        self._status(f"{message.outcome.verdict.status} · the instruments ran on your engine (below)")

    def on_edit_screen_crashed(self, message: "EditScreen.Crashed") -> None:
        self.running = False
        self._status(f"The check could not run: {message.reason}", error=True)

    def _show(self, outcome) -> None:
        panel = self.query_one("#edit-result")
        self.query_one("#edit-result-text", Static).update(Group(*render_edit(self.exercise, outcome)))
        panel.add_class("-shown")
        panel.scroll_home(animate=False)

    def _status(self, sentence: str, error: bool = False) -> None:
        self.query_one("#edit-status", Static).update(Text(sentence, style="bold red" if error else ""))

    # --- leaving -----------------------------------------------------------------

    def action_leave(self) -> None:
        """Cancel a running check; else keep the text and go back."""
        if self.running:
            self._status("Cancelling…")
            self._cancel()
            return
        self.flush_copy()
        self.app.pop_screen()

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
