"""The use-case layer: run an exercise, grade it, record it — once, for the CLI and the TUI.

A :class:`Session` is one learner at one progress store with one runner. It
holds the policy both faces used to spell out on their own:

* **progress is read once** (:meth:`Session.load`) and kept up to date by
  every save, so the first screen, the exercise screen and the seed of the
  next attempt all read :attr:`Session.progress` instead of the file;
* **the seed**: an explicit seed wins; else the exercise's
  ``seed_for(earlier attempts)`` (the capstone meets a new mystery on each
  attempt, every other exercise runs at seed 0, the seed its values are
  pinned at); without a store there are no earlier attempts;
* **what is saved**: a ``pass`` or ``fail`` is recorded as an attempt (and
  the explain-back note given with it); ``ok``, ``error``, ``timeout`` and
  ``cancelled`` are outcomes to show, never attempts (:data:`RECORDED`);
* **cancelled results**: a run stopped before the runner started, or while
  its worker started, becomes ``RunResult.cancelled`` here, timed from the
  moment the run was asked for;
* **where the work happens**: :meth:`Run.execute` runs *and saves* on the
  calling thread, so the TUI calls it from a thread worker and never holds
  the progress file's lock on the UI thread; :meth:`Session.save_note` is
  safe from any thread too (the newest text wins).

A run is made of *sides* (:class:`tutor.protocol.Side`): data saying how
each private tree is built. A plain run has ``clean`` and, for an exercise
with a fault, ``faulted`` (:meth:`Session.sides_for`). A learner's own
edited subject file is one more side — ``Side.replacing("yours",
fault.file, text)`` — passed in ``sides``; the runner and the worker run it
like any other, and its observation, evidence and errors come back in the
result under ``"yours"`` (``RunResult.observations`` etc.).

Layers: this module imports neither Textual nor torch.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Protocol, Sequence

from tutor.catalog import Catalog, Exercise
from tutor.progress import Attempt, ExerciseProgress, LearnerProgress, ProgressError, ProgressStore
from tutor.protocol import Progress, Side
from tutor.runner import RunResult, standard_sides

#: The statuses that are recorded as attempts; every other one is only shown.
RECORDED = ("pass", "fail")
#: Seconds a run waits for a warm-up in progress before it runs anyway.
WARM_UP_WAIT_S = 120.0


class RunnerLike(Protocol):
    """What a session needs from a runner (:class:`tutor.runner.Runner`, or a test's fake)."""

    def warm_up(self) -> dict: ...
    def run(self, exercise: Exercise, prediction: str | None = None,
            on_progress: Callable[[Progress], None] | None = None, seed: int = 0,
            sides: Sequence[Side] | None = None) -> RunResult: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...


@dataclass
class Outcome:
    """What one run came to.

    Attributes:
        result: the graded result (any status).
        saved_to: the progress file the attempt was recorded in, or None
            when it was not recorded.
        save_error: why an attempt that should have been recorded was not
            (one sentence), else None.
        note_saved: whether the note given with the attempt was saved.
    """

    result: RunResult
    saved_to: Path | None = None
    save_error: str | None = None
    note_saved: bool = False


class Session:
    """One learner's runs and progress, the same for the CLI and the TUI.

    Attributes:
        catalog: every exercise.
        runner: runs checks (blocking).
        store: where progress is saved, or None to save nothing
            (``tutor run --no-save``, ``tutor check``).
        learner: a validated learner name (None without a store).
        progress: the learner's progress as last read or saved; empty until
            :meth:`load`.
        warnings: sentences about the progress file for the learner (a
            damaged file moved aside, a file from a newer tutor).
        loaded: whether :meth:`load` has read the file.
        warmed: set once a warm-up (:meth:`warm_up`) has finished or failed.
    """

    def __init__(self, catalog: Catalog, runner: RunnerLike, store: ProgressStore | None = None,
                 learner: str | None = None) -> None:
        """Nothing is read or started here: see :meth:`load` and :meth:`warm_up`."""
        self.catalog = catalog
        self.runner = runner
        self.store = store
        self.learner = learner
        self.progress = LearnerProgress(learner=learner or "")
        self.warnings: list[str] = []
        self.loaded = False
        self.warmed = threading.Event()
        self._warming = threading.Event()
        self._lock = threading.RLock()  # one change of the progress file at a time
        self._notes_lock = threading.Lock()
        self._notes_asked: dict[str, str] = {}  # note texts asked for and not yet written

    # --- progress ------------------------------------------------------------

    def load(self, move_aside: bool = True) -> LearnerProgress:
        """Read the learner's progress file, once; later reads use :attr:`progress`.

        A damaged file is moved aside (``move_aside``) and said in
        :attr:`warnings`. Without a store, progress stays empty.

        Raises:
            ProgressError: the file cannot be read (or, with
                ``move_aside=False``, is damaged: ``DamagedProgressError``).
        """
        if self.store is None:
            return self.progress
        progress = self.store.load(self.learner, move_aside=move_aside)
        with self._lock:
            self.progress = progress
            self.warnings += [w for w in progress.warnings if w not in self.warnings]
            self.loaded = True
        return progress

    def review(self) -> LearnerProgress:
        """The progress file as it is now, read without moving anything (a review screen).

        Raises:
            ProgressError: no store, or the file cannot be read as progress.
        """
        if self.store is None:
            raise ProgressError("there is no progress store to review")
        return self.store.load(self.learner, move_aside=False)

    def progress_of(self, exercise_id: str) -> ExerciseProgress:
        """One exercise's attempts and note, from :attr:`progress`."""
        return self.progress.of(exercise_id)

    def reset(self, exercise_id: str) -> None:
        """Start an exercise afresh (its attempts are kept, marked before the reset); safe from any thread.

        Raises:
            ProgressError: no store, or the file cannot be changed.
        """
        if self.store is None:
            raise ProgressError("nothing is saved in this session, so there is nothing to reset")
        with self._lock:
            self.progress = self.store.reset(self.learner, exercise_id)

    def save_note(self, exercise_id: str, text: str) -> None:
        """Store the explain-back note (replacing the previous one); safe from any thread.

        Calls may overlap (a debounced save in a thread, the last one on the
        UI thread as the app quits): the newest text asked for is the one
        written, whichever call gets to write.

        Raises:
            ProgressError: no store, or the note cannot be saved (too long,
                the file is locked or read-only, the folder is not writable).
        """
        if self.store is None:
            raise ProgressError("notes are not saved in this session; drop --no-save to keep them")
        with self._notes_lock:
            self._notes_asked[exercise_id] = text
        with self._lock:
            with self._notes_lock:
                newest = self._notes_asked.pop(exercise_id, None)
            if newest is None:
                return  # a call that came later already wrote the newest text
            try:
                self.progress = self.store.save_note(self.learner, exercise_id, newest)
            except ProgressError:
                with self._notes_lock:
                    self._notes_asked.setdefault(exercise_id, newest)  # still unsaved: a later call tries again
                raise

    # --- running -------------------------------------------------------------

    def seed_for(self, exercise: Exercise) -> int:
        """The seed of the learner's next attempt (module docstring)."""
        earlier = len(self.progress.of(exercise.id).attempts) if self.store is not None else 0
        return exercise.seed_for(earlier)

    def sides_for(self, exercise: Exercise) -> tuple[Side, ...]:
        """The sides of a plain run: clean, and faulted when the exercise has a fault."""
        return standard_sides(self.catalog, exercise)

    def start(self, exercise: Exercise, prediction: str | None = None, *, seed: int | None = None,
              sides: Sequence[Side] | None = None, note: str | None = None, record: bool = True,
              confidence: int | None = None) -> "Run":
        """A run, asked for now and not started: call :meth:`Run.execute` (blocking) to run it.

        Args:
            exercise: the exercise to run.
            prediction: what the learner typed, or None for an ungraded run.
            seed: the check's seed; None takes :meth:`seed_for`.
            sides: the sides to run; None takes :meth:`sides_for`. Add a
                learner's own file as one more side (module docstring).
            note: an explain-back note saved with the attempt, if it is recorded.
            record: whether a pass or fail is recorded (needs a store).
            confidence: how sure the learner said they were (percent, 50-100), saved with the attempt.
        """
        return Run(self, exercise, prediction, seed=self.seed_for(exercise) if seed is None else seed,
                   sides=tuple(sides) if sides is not None else self.sides_for(exercise), note=note,
                   record=record and self.store is not None, confidence=confidence)

    def attempt(self, exercise: Exercise, prediction: str, *, seed: int | None = None,
                sides: Sequence[Side] | None = None, note: str | None = None,
                on_progress: Callable[[Progress], None] | None = None, confidence: int | None = None) -> Outcome:
        """Run, grade and record one prediction (blocking): ``start(...).execute(...)``.

        Raises:
            answers.AnswerError: the prediction does not read as the exercise's kind.
            tutor.runner.DeviceError: the requested device is not available.
            tutor.runner.WorkerError: the check worker could not be started.
        """
        return self.start(exercise, prediction, seed=seed, sides=sides, note=note,
                          confidence=confidence).execute(on_progress)

    def check(self, exercise: Exercise, *, seed: int = 0, sides: Sequence[Side] | None = None) -> RunResult:
        """Run an exercise without a prediction (``tutor check``); nothing is recorded.

        Raises:
            tutor.runner.DeviceError, tutor.runner.WorkerError: as :meth:`attempt`.
        """
        return self.start(exercise, None, seed=seed, sides=sides, record=False).execute().result

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

    def close(self) -> None:
        """Stop the runner's worker."""
        self.runner.close()

    # --- recording (called by Run) -------------------------------------------

    def _record(self, exercise: Exercise, result: RunResult, note: str | None,
                confidence: int | None = None) -> Outcome:
        outcome = Outcome(result)
        try:
            with self._lock:
                self.progress = self.store.record_attempt(self.learner, exercise.id,
                                                          Attempt.of(result, confidence=confidence))
                if note:
                    self.progress = self.store.save_note(self.learner, exercise.id, note)
                    outcome.note_saved = True
        except ProgressError as exc:
            outcome.save_error = str(exc)
            return outcome
        outcome.saved_to = self.store.path(self.learner)
        return outcome


class Run:
    """One run asked for by a learner: cancellable from any thread, executed on one.

    Attributes:
        exercise: the exercise.
        prediction: what the learner typed, or None.
        seed: the seed it runs with.
        sides: the sides it runs.
        note: the note saved with a recorded attempt, or None.
        record: whether a pass or fail is recorded.
        confidence: the learner's stated confidence (percent), saved with a recorded attempt, or None.
    """

    def __init__(self, session: Session, exercise: Exercise, prediction: str | None, *, seed: int,
                 sides: tuple[Side, ...], note: str | None, record: bool, confidence: int | None = None) -> None:
        self.session = session
        self.exercise = exercise
        self.prediction = prediction
        self.seed = seed
        self.sides = sides
        self.note = note
        self.record = record
        self.confidence = confidence
        self._asked_at = time.monotonic()
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Stop this run (from any thread): before it starts it never starts; while it runs, the
        runner's worker is stopped and replaced. Killing a process may take a moment."""
        self._cancel.set()
        self.session.runner.cancel()

    def execute(self, on_progress: Callable[[Progress], None] | None = None) -> Outcome:
        """Run, grade and (for a pass or fail) record; blocking, on the calling thread.

        Args:
            on_progress: called with each side's :class:`~tutor.protocol.Progress`.

        Raises:
            answers.AnswerError: the prediction does not read as the exercise's kind.
            tutor.runner.DeviceError: the requested device is not available.
            tutor.runner.WorkerError: the check worker could not be started
                (unless the run was cancelled meanwhile: then the outcome is
                a cancelled result).
        """
        session, ex = self.session, self.exercise
        if session._warming.is_set():
            session.warmed.wait(WARM_UP_WAIT_S)
        if self.cancelled:
            return self._finish(RunResult.cancelled(ex, self.prediction, when="before it started", seed=self.seed))
        try:
            result = session.runner.run(ex, self.prediction, on_progress=on_progress, seed=self.seed,
                                        sides=self.sides)
        except Exception:
            if not self.cancelled:
                raise
            # Cancelling while the worker starts makes the start fail: that is the cancel, not an error.
            result = RunResult.cancelled(ex, self.prediction, when="while the check worker started", seed=self.seed)
        return self._finish(result)

    def _finish(self, result: RunResult) -> Outcome:
        if result.status == "cancelled" and not result.duration_s:
            # Stopped before the runner timed anything: time it from when it was asked for.
            result = replace(result, duration_s=time.monotonic() - self._asked_at)
        if self.record and result.status in RECORDED:
            return self.session._record(self.exercise, result, self.note, self.confidence)
        return Outcome(result)
