"""The use-case layer: run an exercise, grade it, record it — once, for the CLI and the TUI.

A :class:`Session` is one learner at one progress store with one runner. What
it keeps and saves of the learner — progress read once, what is recorded,
notes, working copies — is :class:`tutor.app.learner.LearnerRecord`'s, which a
session is; this module is what it runs, with which seed and sides:

* **the seed**: an explicit seed wins; else the exercise's
  ``seed_for(earlier graded attempts)`` (the capstone meets a new mystery on
  each graded attempt, every other exercise runs at seed 0, the seed its
  values are pinned at); without a store there are no earlier attempts;
* **retrying a timeout**: :meth:`Session.retry` runs the same prediction,
  seed and sides again with twice the limit that ran out (a busy machine,
  not the learner: ``tutor.sandbox.speed``);
* **cancelled results**: a run stopped before the runner started, or while
  its worker started, becomes ``RunResult.cancelled`` here, timed from the
  moment the run was asked for;
* **where the work happens**: :meth:`Run.execute` runs *and saves* on the
  calling thread, so the TUI calls it from a thread worker and never holds
  the progress file's lock on the UI thread; :meth:`Session.save_note` is safe from any thread too.

Edit mode runs through here too: :meth:`Session.edit_task` says
what the learner edits (``fix``, ``break``, ``hunt``; :mod:`tutor.model.verdict`),
:meth:`Session.start_edit` (or :meth:`fix`, :meth:`break_it`, :meth:`hunt`)
runs their file as the side ``yours``, measures the verdict and records the
attempt with its mode, diff and verdict (:meth:`LearnerRecord.record_edit`).

A run is made of *sides* (:class:`tutor.sandbox.protocol.Side`), data saying how each private tree
is built: ``clean`` and, with a fault, ``faulted`` (:meth:`Session.sides_for`); a learner's edited
file is one more, ``Side.replacing("yours", fault.file, text)``, run like any other, its results
under ``"yours"`` (``RunResult.observations`` etc.).

Layers: this module imports neither Textual nor torch. The first screen loads
it (``tutor.ui.app``) but none of a run's machinery — ``tutor.app.run``, and
with it ``tutor.sandbox.runner`` (``tests/test_import_hygiene.py`` checks
both), and no edit task (``tutor.app.tasks``, which loads the sandbox's
protocol and the verdict rules): on this project's 2-core test machine each
adds about 60 ms to the first screen (``python -X importtime``). So they are
imported in the methods that make a run or a task, each marked "deferred:
the first screen loads no run machinery" or "… edits nothing".
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from tutor.app.learner import LearnerRecord
from tutor.app.outcome import EditOutcome, Outcome
from tutor.app.seeds import next_seed
from tutor.model.attempts import GRADED
from tutor.model.catalog import Catalog, Exercise
from tutor.model.patch import EditError

if TYPE_CHECKING:  # named in annotations only; a run's machinery loads with the first run (module docstring)
    from tutor.app.run import EditRun, Run, RunPorts
    from tutor.app.tasks import Task
    from tutor.sandbox.protocol import Progress, Side
    from tutor.sandbox.runner import RunResult
    from tutor.store.progress import ProgressStore


class RunnerLike(Protocol):
    """What a session needs from a runner (:class:`tutor.sandbox.runner.Runner`, or a test's fake)."""

    def warm_up(self) -> dict: ...
    def run(self, exercise: Exercise, prediction: str | None = None,
            on_progress: Callable[[Progress], None] | None = None, seed: int = 0,
            sides: Sequence[Side] | None = None) -> RunResult: ...
    # A runner that scales time limits also takes ``timeout_scale=`` (:class:`tutor.sandbox.runner.Runner`);
    # a run passes it only when it has one (a retry), so a runner without it still serves every other run.
    def cancel(self) -> None: ...
    def close(self) -> None: ...


class Session(LearnerRecord):
    """One learner's runs and progress, the same for the CLI and the TUI.

    What is kept and saved of the learner (progress, notes, drafts, attempts,
    working copies) is :class:`tutor.app.learner.LearnerRecord`'s; a session
    adds the exercises and the runner that runs them.

    Attributes:
        catalog: every exercise.
        runner: runs checks (blocking).
        warmed: set once a warm-up (:meth:`warm_up`) has finished or failed.
        store, learner, progress, warnings, loaded: as :class:`tutor.app.learner.LearnerRecord`.
    """

    def __init__(self, catalog: Catalog, runner: RunnerLike, store: ProgressStore | None = None,
                 learner: str | None = None) -> None:
        """Nothing is read or started here: see :meth:`load` and :meth:`warm_up`."""
        super().__init__(store, learner)
        self.catalog = catalog
        self.runner = runner
        self.warmed = threading.Event()
        self._warming = threading.Event()

    # --- running -------------------------------------------------------------

    def seed_for(self, exercise: Exercise) -> int:
        """The seed of the learner's next attempt (module docstring): edit-mode attempts and timeouts
        do not count (:func:`tutor.app.seeds.next_seed`)."""
        predictions = self.progress.of(exercise.id).predictions if self.store is not None else []
        hunted = self.hunted(exercise) if exercise.seed_per_attempt else set()
        return next_seed(exercise, predictions, hunted)

    def sides_for(self, exercise: Exercise) -> tuple[Side, ...]:
        """The sides of a plain run: clean, and faulted when the exercise has a fault."""
        from tutor.sandbox.runner import standard_sides  # deferred: the first screen loads no run machinery
        return standard_sides(self.catalog, exercise)

    def start(self, exercise: Exercise, prediction: str | None = None, *, seed: int | None = None,
              sides: Sequence[Side] | None = None, note: str | None = None, record: bool = True,
              timeout_scale: float | None = None, confidence: int | None = None) -> "Run":
        """A run, asked for now and not started: call :meth:`Run.execute` (blocking) to run it.

        Args:
            exercise: the exercise to run.
            prediction: what the learner typed, or None for an ungraded run.
            seed: the check's seed; None takes :meth:`seed_for`.
            sides: the sides to run; None takes :meth:`sides_for`. Add a
                learner's own file as one more side (module docstring).
            note: an explain-back note saved with the attempt, if it is recorded.
            record: whether a pass, fail or timeout is recorded (needs a store).
            timeout_scale: this run's time-limit scale, over the runner's own
                (``tutor.sandbox.speed``); None lets the runner choose.
            confidence: how sure the learner said they were (percent, from the question's chance to 100),
                saved with the attempt.
        """
        from tutor.app.run import Run  # deferred: the first screen loads no run machinery
        return Run(self._ports(), exercise, prediction, seed=self.seed_for(exercise) if seed is None else seed,
                   sides=tuple(sides) if sides is not None else self.sides_for(exercise), note=note,
                   record=record and self.store is not None, timeout_scale=timeout_scale,
                   confidence=confidence)

    def retry(self, run: "Run", result: RunResult, note: str | None = None) -> "Run":
        """The same run again with twice the time limit that ``result`` ran out of (not started).

        Same exercise, prediction, seed and sides; the scale is
        ``result.retry_scale`` (2 when the result does not say its limit).

        Args:
            run: the run that timed out.
            result: its result.
            note: the note to save with the retry's attempt (default: the run's).
        """
        from tutor.app.run import Run  # deferred: the first screen loads no run machinery
        return Run(self._ports(), run.exercise, run.prediction, seed=run.seed, sides=run.sides,
                   note=run.note if note is None else note, record=run.record, timeout_scale=result.retry_scale,
                   confidence=run.confidence, hints=run.hints)

    def attempt(self, exercise: Exercise, prediction: str, *, seed: int | None = None,
                sides: Sequence[Side] | None = None, note: str | None = None,
                on_progress: Callable[[Progress], None] | None = None, confidence: int | None = None) -> Outcome:
        """Run, grade and record one prediction (blocking): ``start(...).execute(...)``.

        Raises:
            answers.AnswerError: the prediction does not read as the exercise's kind.
            tutor.sandbox.runner.DeviceError: the requested device is not available.
            tutor.sandbox.runner.WorkerError: the check worker could not be started.
        """
        return self.start(exercise, prediction, seed=seed, sides=sides, note=note,
                          confidence=confidence).execute(on_progress)

    def check(self, exercise: Exercise, *, seed: int = 0, sides: Sequence[Side] | None = None) -> RunResult:
        """Run an exercise without a prediction (``tutor check``); nothing is recorded.

        Raises:
            tutor.sandbox.runner.DeviceError, tutor.sandbox.runner.WorkerError: as :meth:`attempt`.
        """
        return self.start(exercise, None, seed=seed, sides=sides, record=False).execute().result

    # --- edit mode -------------------------------------------------

    def edit_task(self, exercise: Exercise, mode: str, seed: int | None = None) -> "Task":
        """What the learner edits in ``mode`` (``fix``, ``break``, ``hunt``) for ``exercise``.

        ``fix`` on the capstone is its hunt. Unless ``seed`` is given, a
        hunt meets the mystery of the learner's last graded prediction
        (already predicted, so the hunt spoils nothing), else the mystery an
        earlier hunt showed, else the one the next prediction would meet —
        or the next one that hides a fault. A mystery a hunt shows before a
        prediction met it counts as revealed: :meth:`seed_for` skips it, so
        the next prediction meets a new one.

        Raises:
            tutor.model.patch.EditError: the exercise has nothing to fix in that mode.
        """
        if mode in ("fix", "hunt") and exercise.seed_per_attempt and seed is None:
            predicted = [a.seed for a in self.progress.of(exercise.id).predictions if a.status in GRADED] \
                if self.store is not None else []
            hunted = self.hunted(exercise)
            seed = predicted[-1] if predicted else min(hunted) if hunted else self.seed_for(exercise)
        from tutor.app.tasks import task_for  # deferred: the first screen edits nothing (module docstring)
        return task_for(self.catalog, exercise, mode, seed)

    def start_edit(self, task: "Task", text: str, prediction: str | None = None, *,
                   record: bool = True, instruments: bool = False, hidden_seeds: int | None = None, seeds: tuple = ()
                   ) -> "EditRun":
        """An edit-mode run of the learner's ``text`` for ``task``, asked for now; see :meth:`EditRun.execute`.

        Args:
            task: from :meth:`edit_task`.
            text: the learner's whole file.
            prediction: break only: the learner's prediction, in the exercise's kind or as free text.
            record: whether the attempt is recorded (needs a store).
            instruments: also run the engine's instruments on clean and yours (engine files only;
                :data:`tutor.app.tasks.INSTRUMENTS_CHECK`).
            hidden_seeds: fix and hunt: judge a fixed verdict again at this
                many seeds drawn at random now (None: :data:`tutor.model.verdict.DEFAULT_HIDDEN_SEEDS`).
            seeds: hidden seeds chosen beforehand (an assignment's), judged first, counted in ``hidden_seeds``.

        Raises:
            tutor.model.patch.EditError: the text (or its diff) is larger than 64 KiB or holds a NUL byte; a
                break without a prediction, or whose file is still the clean one.
        """
        from tutor.app.run import EditRun  # deferred: the first screen loads no run machinery
        if task.mode == "break":
            if not (prediction or "").strip():
                raise EditError("predict first: say what your fault will do (an answer of the exercise's "
                                "kind, or your own words) before it runs")
            if text.replace("\r\n", "\n") == task.start:
                raise EditError(f"you have not changed anything yet: write your fault into {task.path}, "
                                "then run it")
        seed = task.seed if task.seed is not None else self.seed_for(task.exercise)
        return EditRun(self._ports(), task, text, prediction, seed=seed, record=record and self.store is not None,
                       instruments=instruments, hidden_seeds=hidden_seeds, seeds=seeds)

    def fix(self, exercise: Exercise, text: str, **options) -> EditOutcome:
        """Run the learner's repair of ``exercise``'s fault (blocking); ``options`` as :meth:`start_edit`.

        Raises:
            tutor.model.patch.EditError, tutor.sandbox.runner.DeviceError, tutor.sandbox.runner.WorkerError.
        """
        on_progress = options.pop("on_progress", None)
        return self.start_edit(self.edit_task(exercise, "fix"), text, **options).execute(on_progress)

    def break_it(self, exercise: Exercise, text: str, prediction: str | None = None, **options) -> EditOutcome:
        """Run the learner's own fault of ``exercise``'s subject file (blocking); see :meth:`start_edit`."""
        on_progress = options.pop("on_progress", None)
        return self.start_edit(self.edit_task(exercise, "break"), text, prediction, **options).execute(on_progress)

    def hunt(self, exercise: Exercise, text: str, seed: int | None = None, **options) -> EditOutcome:
        """Run the learner's repair of the capstone's mystery (blocking); see :meth:`start_edit`."""
        on_progress = options.pop("on_progress", None)
        return self.start_edit(self.edit_task(exercise, "hunt", seed), text, **options).execute(on_progress)

    def instruments(self, task: "Task", text: str,
                    on_progress: Callable[[Progress], None] | None = None) -> RunResult | None:
        """The engine's instruments on each side of ``task`` (clean, faulted when there is a fault, and
        the learner's), blocking; None when the file is not part of the engine. Never recorded.

        Raises:
            tutor.sandbox.runner.DeviceError, tutor.sandbox.runner.WorkerError: as :meth:`attempt`.
        """
        if not task.engine:
            return None
        from tutor.app.tasks import INSTRUMENTS_CHECK, INSTRUMENTS_TIMEOUT_S  # deferred: the first screen edits nothing (module docstring)
        exercise = replace(task.exercise, check=INSTRUMENTS_CHECK, timeout_s=INSTRUMENTS_TIMEOUT_S)
        return self.runner.run(exercise, None, on_progress=on_progress, seed=0, sides=task.sides(text, repeat=False))

    def _ports(self) -> RunPorts:
        """What a run of this session uses of it: the runner, the warm-up's wait, the two savers, the instruments."""
        from tutor.app.run import RunPorts  # deferred: the first screen loads no run machinery
        return RunPorts(self.runner, self._wait_for_warm_up, self._record, self.record_edit, self.instruments)

    def _wait_for_warm_up(self) -> None:
        """Return once a warm-up in progress has finished, or ``WARM_UP_WAIT_S`` passed; at once when none is."""
        if self._warming.is_set():
            from tutor.app.run import WARM_UP_WAIT_S  # deferred: the first screen loads no run machinery
            self.warmed.wait(WARM_UP_WAIT_S)

    def warm_up(self) -> dict:
        """Start the runner's worker now (blocking; it imports torch); return its hello.

        Runs asked for meanwhile wait for it (up to :data:`WARM_UP_WAIT_S`),
        so a run never races the worker's start. :attr:`warmed` is set at
        the end, whether it worked or not.

        Raises:
            whatever the runner's warm-up raises (``WorkerError``).
        """
        self._warming.set()
        try:
            return self.runner.warm_up()
        finally:
            self.warmed.set()

    def cancel(self) -> None:
        """Stop whatever the runner is running now (from any thread); a run cancels itself with :meth:`Run.cancel`."""
        self.runner.cancel()

    def close(self) -> None:
        """Stop the runner's worker."""
        self.runner.close()
