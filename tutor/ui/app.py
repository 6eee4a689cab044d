"""The Textual app: wiring only. Screens and widgets live in their own modules.

``build_app`` takes its catalog, progress store and runner, so tests can pass
a fake runner; ``run_app`` makes the real :class:`tutor.runner.Runner` and
runs the app. Nothing here imports torch: the runner's worker process does,
and it is started in a thread after the first screen is up.
"""

from __future__ import annotations

import threading
from typing import Iterable, Protocol

from textual import work
from textual.app import App
from textual.binding import Binding

from tutor.catalog import Catalog
from tutor.progress import ProgressStore
from tutor.ui.messages import WarmUpFinished
from tutor.ui.screens.home import HomeScreen

# The other screens (and the Markdown widget they use) are imported when
# first opened, so the home screen appears sooner.


class RunnerLike(Protocol):
    """What the app needs from a runner (the real one, or a test's fake)."""

    def warm_up(self) -> dict: ...
    def run(self, exercise, prediction=None, on_progress=None, seed=0): ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...


class TutorApp(App):
    """The tutor's terminal UI.

    Attributes:
        catalog: every exercise.
        store: where progress and notes are saved.
        learner: whose progress.
        runner: runs checks (blocking; only called from thread workers).
        warmed: set once the runner's warm-up finished (or failed), so a run
            never races the worker's start.
    """

    CSS_PATH = "tutor.tcss"
    TITLE = "tutor"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("f1", "help", "Help", show=False),
        Binding("p", "progress", "Progress"),
    ]

    def __init__(self, catalog: Catalog, store: ProgressStore, learner: str, runner: RunnerLike,
                 warnings: Iterable[str] = ()) -> None:
        """Args:
            catalog: the loaded catalog.
            store: the progress store.
            learner: a validated learner name.
            runner: a :class:`tutor.runner.Runner` or anything with its four methods.
            warnings: sentences to show once (e.g. from an earlier progress load).
        """
        super().__init__()
        self.catalog = catalog
        self.store = store
        self.learner = learner
        self.runner = runner
        self.warmed = threading.Event()
        self._startup_warnings = list(warnings)

    def on_mount(self) -> None:
        self.sub_title = f"learner {self.learner}"
        self.push_screen(HomeScreen())
        warnings = list(self._startup_warnings)
        try:
            loaded = self.store.load(self.learner)
            warnings += [w for w in loaded.warnings if w not in warnings]
        except Exception as exc:  # shown by the screens too; never fatal here
            warnings.append(str(exc))
        for warning in warnings:
            self.notify(warning, title="progress", severity="warning", timeout=15, markup=False)
        self.call_after_refresh(self._warm_up)

    @work(thread=True, exit_on_error=False, group="warm-up")
    def _warm_up(self) -> None:
        """Thread: start the runner's worker (it imports torch) while the learner reads."""
        try:
            info = self.runner.warm_up()
            self.post_message(WarmUpFinished(info if isinstance(info, dict) else {}, None))
        except Exception as exc:
            self.post_message(WarmUpFinished(None, str(exc) or exc.__class__.__name__))
        finally:
            self.warmed.set()

    def on_warm_up_finished(self, message: WarmUpFinished) -> None:
        if message.error:
            self.notify(f"The check worker did not start: {message.error}", title="runner",
                        severity="error", timeout=15, markup=False)
        elif message.info and message.info.get("torch"):
            cuda = " · CUDA available" if message.info.get("cuda") else ""
            self.sub_title = f"learner {self.learner} · torch {message.info['torch']}{cuda}"

    def open_exercise(self, exercise_id: str) -> None:
        """Push the exercise screen for this id."""
        from tutor.ui.screens.exercise import ExerciseScreen
        self.push_screen(ExerciseScreen(self.catalog.get(exercise_id)))

    def action_help(self) -> None:
        from tutor.ui.screens.help import HelpScreen
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_progress(self) -> None:
        from tutor.ui.screens.progress import ProgressScreen
        if not isinstance(self.screen, ProgressScreen):
            self.push_screen(ProgressScreen())

    def flush_notes(self) -> None:
        """Save every unsaved explain-back note on the screen stack."""
        for screen in self.screen_stack:
            if hasattr(screen, "flush_note"):  # an exercise screen
                screen.flush_note()

    async def action_quit(self) -> None:
        self.flush_notes()
        self.exit()


def build_app(catalog: Catalog, store: ProgressStore, learner: str, runner: RunnerLike,
              warnings: Iterable[str] = ()) -> TutorApp:
    """The app, with everything it depends on passed in (tests pass a fake runner).

    Args:
        catalog: the loaded catalog.
        store: the progress store.
        learner: a validated learner name.
        runner: has ``warm_up``, ``run``, ``cancel`` and ``close``.
        warnings: progress warnings to show at start.
    """
    return TutorApp(catalog, store, learner, runner, warnings)


def run_app(catalog: Catalog, store: ProgressStore, learner: str, device: str = "auto",
            warnings: Iterable[str] = ()) -> None:
    """Run the TUI with the real runner until the learner quits.

    Args:
        catalog: the loaded catalog.
        store: the progress store.
        learner: a validated learner name.
        device: ``auto``, ``cpu`` or ``cuda``.
        warnings: progress warnings to show at start.

    Raises:
        tutor.runner.DeviceError: ``device`` is not a known device name.
    """
    from tutor.runner import Runner

    runner = Runner(catalog, device=device)
    app = build_app(catalog, store, learner, runner, warnings)
    _save_notes_on_hangup(app, runner)
    try:
        app.run()
    finally:
        try:
            app.flush_notes()  # normally already done on quit and unmount; this is the last net
        finally:
            runner.close()


def _save_notes_on_hangup(app: TutorApp, runner) -> None:
    """Closing the terminal (SIGHUP) or a kill (SIGTERM) still saves the notes."""
    import os
    import signal

    def handler(signum, _frame) -> None:
        try:
            app.flush_notes()
        finally:
            runner.close()
            os._exit(128 + signum)

    for name in ("SIGHUP", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), handler)

