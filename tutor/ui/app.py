"""The Textual app: wiring only. Screens and widgets live in their own modules.

The app holds one :class:`tutor.app.session.Session` — the learner's progress,
read once, and the runner — and every screen runs, records and reads
progress through it. ``build_app`` makes the session from a catalog,
progress store and runner, so tests can pass a fake runner; ``run_app``
runs the app over a session the command line made (with the real
:class:`tutor.sandbox.runner.Runner`). Nothing here imports torch: the runner's
worker process does, and it is started in a thread after the first screen
is up.
"""

from __future__ import annotations

import os
import signal
from functools import partial
from typing import Iterable

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from tutor.app.session import RunnerLike, Session
from tutor.model.attempts import ProgressError
from tutor.model.catalog import Catalog
from tutor.model.finding import UnknownExercise, resolve
from tutor.store.progress import ProgressStore
from tutor.ui.key_order import KeysInOrder
from tutor.ui.messages import WarmUpFinished
from tutor.ui.screens.home import HomeScreen

# The other screens (and the Markdown widget they use) are imported when
# first opened, so the home screen appears sooner.

__all__ = ["TutorApp", "build_app", "run_app", "RunnerLike"]


class ExerciseCommands(Provider):
    """Every exercise as a command of the palette (Ctrl+P): ``open cache-offset``, found by id or title."""

    def _commands(self):
        app = self.app
        for exercise in app.catalog.exercises:
            yield f"open {exercise.id}", exercise, partial(app.open_exercise, exercise.id)

    async def discover(self) -> Hits:
        for command, exercise, callback in self._commands():
            yield DiscoveryHit(command, callback, help=exercise.title)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command, exercise, callback in self._commands():
            # the id is what learners type; the title finds it too ("open the cache offset")
            score = max(matcher.match(command), matcher.match(f"open {exercise.title}") * 0.8)
            if score > 0:
                yield Hit(score, matcher.highlight(command), callback, help=exercise.title)


class TutorApp(KeysInOrder, App):
    """The tutor's terminal UI: its keys are handled one at a time, in order (:mod:`tutor.ui.key_order`).

    Attributes:
        session: runs, records and holds the learner's progress.
    """

    CSS_PATH = "tutor.tcss"
    TITLE = "tutor"
    COMMANDS = App.COMMANDS | {ExerciseCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip="quit (notes and working copies are saved first)"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help", tooltip="this help"),
        Binding("f1", "help", "Help", show=False),
        Binding("p", "progress", "Progress", tooltip="your progress: attempts, modes and notes"),
    ]
    #: keys no binding lists, for the help
    PAGE_KEYS = (("Ctrl+P", "the command palette: \"open cache-offset\" opens any exercise"),)

    def __init__(self, session: Session, warnings: Iterable[str] = ()) -> None:
        """Args:
            session: the learner's session (its progress may be read already).
            warnings: sentences to show once (e.g. about the learner name).
        """
        super().__init__()
        self.session = session
        self._startup_warnings = list(warnings)
        #: each exercise page as it was left, while the app runs (see tutor.ui.recall.Recall)
        self.recall: dict = {}
        #: the header's line about the learner and the worker; screens add to it (home: where to continue)
        self.about = ""

    @property
    def catalog(self) -> Catalog:
        return self.session.catalog

    @property
    def learner(self) -> str:
        return self.session.learner

    @property
    def warmed(self):
        """Set once the runner's warm-up finished (or failed)."""
        return self.session.warmed

    def get_default_screen(self) -> HomeScreen:
        """The home screen, at the bottom of the stack (one screen made at start, not a blank one
        under it), drawn from the progress read here."""
        self.about = self.sub_title = f"learner {self.learner}"
        if not self.session.loaded:
            try:
                self.session.load()  # the one read of the progress file; screens read session.progress
            except Exception as exc:  # never fatal here: the screens show empty progress
                self._startup_warnings.append(str(exc))
        return HomeScreen()

    def on_mount(self) -> None:
        warnings = list(self._startup_warnings)
        warnings += [w for w in self.session.warnings if w not in warnings]
        for warning in warnings:
            self.notify(warning, title="progress", severity="warning", timeout=15, markup=False)
        self.call_after_refresh(self._warm_up)

    @work(thread=True, exit_on_error=False, group="warm-up")
    def _warm_up(self) -> None:
        """Thread: start the runner's worker (it imports torch) while the learner reads."""
        try:
            info = self.session.warm_up()
            self.post_message(WarmUpFinished(info if isinstance(info, dict) else {}, None))
        except Exception as exc:
            self.post_message(WarmUpFinished(None, str(exc) or exc.__class__.__name__))

    def note_cancel(self) -> None:
        """A screen cancelled a run: while the worker is still starting, its start fails because of it."""
        if not self.session.warmed.is_set():
            self._cancelled_start = True

    def starting_words(self) -> str:
        """What the status line says as a run starts: the worker's first start, a restart, or neither."""
        worker = getattr(self.session.runner, "worker", None)
        if not self.session.warmed.is_set() or (worker is not None and getattr(worker, "hello", 1) is None):
            return "starting the check worker (the first run loads torch)…"
        if worker is not None and getattr(worker, "stopped", False):
            return "restarting the check worker (it was stopped; it loads torch again)…"
        return "starting the check…"

    def on_warm_up_finished(self, message: WarmUpFinished) -> None:
        if message.error and getattr(self, "_cancelled_start", False):
            # not an error: the learner's cancel stopped the worker as it started
            self.notify("Cancelled while the check worker was starting; it starts again with your next run.",
                        title="cancelled", timeout=8, markup=False)
        elif message.error:
            self.notify(f"The check worker did not start: {message.error}", title="check worker",
                        severity="error", timeout=15, markup=False)
        elif message.info and message.info.get("torch"):
            cuda = " · CUDA available" if message.info.get("cuda") else ""
            self.about = self.sub_title = f"learner {self.learner} · torch {message.info['torch']}{cuda}"
            if hasattr(self.screen, "update_header"):  # the home screen adds where to continue
                self.screen.update_header()

    def open_exercise(self, exercise_id: str, unseen: bool = False) -> None:
        """Push the exercise screen for this id (any case; an unknown id is said, with close ones).

        ``unseen``: the learner did not pick this exercise (n opened the one after), so keys typed before
        its page is drawn cannot answer it: the page drops them, saying so (:mod:`tutor.ui.screens.reading_keys`).
        """
        # deferred: a screen loads when it first opens, so the first screen stays fast
        from tutor.ui.screens.exercise import ExerciseScreen
        try:
            exercise = resolve(self.catalog, exercise_id)
        except UnknownExercise as exc:
            self.notify(exc.args[0], severity="warning", markup=False)
            return
        self._leave_exercise_pages()
        screen = ExerciseScreen(exercise)
        screen.unseen = unseen
        self.push_screen(screen)

    def _leave_exercise_pages(self) -> None:
        """Close the exercise pages on top of the stack (an exercise, its edit mode, their questions),
        so an exercise opened from another (Ctrl+P, n) replaces it and Esc goes back to where the
        learner came from, not through every exercise opened since. Each page saves its drafts as it
        closes (its note, its working copy)."""
        # deferred: these screens load when first opened, and only an open one is on the stack
        from tutor.ui.screens.copy_choice import CopyChoiceScreen
        from tutor.ui.screens.exercise import ExerciseScreen
        from tutor.ui.screens.fix import EditScreen
        while len(self.screen_stack) > 1 and isinstance(self.screen, (ExerciseScreen, EditScreen,
                                                                      CopyChoiceScreen)):
            self.pop_screen()

    def action_help(self) -> None:
        # deferred: a screen loads when it first opens, so the first screen stays fast
        from tutor.ui.screens.help import HelpScreen
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_progress(self) -> None:
        # deferred: a screen loads when it first opens, so the first screen stays fast
        from tutor.ui.screens.progress import ProgressScreen
        if not isinstance(self.screen, ProgressScreen):
            self.push_screen(ProgressScreen())

    def flush_notes(self) -> None:
        """Save every unsaved explain-back note on the screen stack."""
        for screen in self.screen_stack:
            if hasattr(screen, "flush_note"):  # an exercise screen
                screen.flush_note()

    def keep_drafts(self, skip: Iterable[str] = ()) -> list[str]:
        """Save in the progress file, as a draft, the prediction and confidence each page opened in
        this run of the app holds and has not run (its page offers it again after a relaunch; nothing
        is run or recorded); a draft the learner cleared is dropped. ``skip``: exercise ids whose
        draft was kept otherwise (a check cancelled as the app quits). Returns the sentences to say
        as the tutor ends: which predictions (or confidences alone) were kept, or why one was not."""
        kept, said = [], []
        for exercise_id, recall in list(self.recall.items()):
            if exercise_id in skip or not recall.opened:
                continue
            draft = recall.draft()
            if draft == self.session.progress_of(exercise_id).draft:
                continue  # kept already (or nothing to keep, and nothing kept)
            try:
                self.session.save_draft(exercise_id, draft.get("prediction", ""), draft.get("confidence"))
            except ProgressError as exc:
                said.append(f"your unrun prediction for {exercise_id} was not kept: {exc}")
                continue
            if draft:
                kept.append((exercise_id, draft))
        return kept_words(kept) + said

    def action_quit(self) -> None:
        """Quit: every note and working copy saved first; a check still running is cancelled (at
        once, so the tutor ends promptly) and its prediction kept to be offered again, as is every
        prediction typed and not run; what became of them is said as the tutor ends."""
        self.flush_notes()
        running = [screen for screen in self.screen_stack
                   if getattr(screen, "running", False) and hasattr(screen, "leave_running")]
        said = [screen.leave_running() for screen in running]
        skip = set()
        if running:  # an exercise page's check cancelled here: its prediction was kept as it was run
            from tutor.ui.screens.exercise import ExerciseScreen  # loaded already: one of its pages runs
            skip = {screen.exercise.id for screen in running if isinstance(screen, ExerciseScreen)}
        said += self.keep_drafts(skip=skip)
        self.exit(message="\n".join(f"tutor: {s}" for s in said if s) or None)


def kept_words(kept: list[tuple[str, dict]]) -> list[str]:
    """What the tutor says as it ends of the drafts it kept ((exercise id, draft) pairs): a prediction is
    said as one; a confidence set with no prediction is said as only that, never as a prediction."""
    predictions = [exercise_id for exercise_id, draft in kept if draft["prediction"].strip()]
    alone = [f"{exercise_id} ({draft['confidence']} %)" for exercise_id, draft in kept
             if not draft["prediction"].strip()]
    said = []
    for what, ids, how in (("your unrun prediction for", predictions, ""),
                           ("your confidence for", alone, ", set with no prediction yet,")):
        if ids:
            said.append(f"{what} {', '.join(ids)}{how} is kept and offered when you open "
                        f"{'it' if len(ids) == 1 else 'them'} again.")
    return said


def build_app(catalog: Catalog, store: ProgressStore, learner: str, runner: RunnerLike,
              warnings: Iterable[str] = ()) -> TutorApp:
    """The app over a new session, with everything it depends on passed in (tests pass a fake runner).

    The progress file is read when the app mounts.

    Args:
        catalog: the loaded catalog.
        store: the progress store.
        learner: a validated learner name.
        runner: has ``warm_up``, ``run``, ``cancel`` and ``close`` (:class:`tutor.app.session.RunnerLike`).
        warnings: sentences to show at start.
    """
    return TutorApp(Session(catalog, runner, store, learner), warnings)


def run_app(session: Session, warnings: Iterable[str] = ()) -> None:
    """Run the TUI over ``session`` until the learner quits, then stop its runner.

    Args:
        session: the learner's session, with the real runner.
        warnings: sentences to show at start.
    """
    app = TutorApp(session, warnings)
    _save_notes_on_hangup(app, session)
    try:
        app.run()
    finally:
        try:
            app.flush_notes()  # normally already done on quit and unmount; this is the last net
            app.keep_drafts()  # likewise done on quit
        finally:
            session.close()


def _save_notes_on_hangup(app: TutorApp, session: Session) -> None:
    """Closing the terminal (SIGHUP) or a kill (SIGTERM) still saves the notes."""

    def handler(signum, _frame) -> None:
        try:
            app.flush_notes()
            app.keep_drafts()
        finally:
            session.close()
            os._exit(128 + signum)

    for name in ("SIGHUP", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), handler)
