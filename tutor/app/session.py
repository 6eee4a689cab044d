"""The use-case layer: run an exercise, grade it, record it — once, for the CLI and the TUI.

A :class:`Session` is one learner at one progress store with one runner. It
holds the policy both faces used to spell out on their own:

* **progress is read once** (:meth:`Session.load`) and kept up to date by
  every save, so the first screen, the exercise screen and the seed of the
  next attempt all read :attr:`Session.progress` instead of the file;
* **the seed**: an explicit seed wins; else the exercise's
  ``seed_for(earlier graded attempts)`` (the capstone meets a new mystery on
  each graded attempt, every other exercise runs at seed 0, the seed its
  values are pinned at); without a store there are no earlier attempts;
* **what is saved**: a ``pass`` or ``fail`` is recorded as a graded attempt
  (and the explain-back note given with it); a ``timeout`` is recorded too,
  with its own status, ``correct = false`` and nothing observed — a fact
  about the run, never a wrong prediction (:data:`GRADED` tells them apart);
  ``ok``, ``error`` and ``cancelled`` are outcomes to show, never attempts
  (:data:`RECORDED`);
* **retrying a timeout**: :meth:`Session.retry` runs the same prediction,
  seed and sides again with twice the limit that ran out (a busy machine,
  not the learner: ``tutor.sandbox.speed``);
* **cancelled results**: a run stopped before the runner started, or while
  its worker started, becomes ``RunResult.cancelled`` here, timed from the
  moment the run was asked for;
* **where the work happens**: :meth:`Run.execute` runs *and saves* on the
  calling thread, so the TUI calls it from a thread worker and never holds
  the progress file's lock on the UI thread; :meth:`Session.save_note` is
  safe from any thread too (the newest text wins).

Edit mode (issue 12) runs through here too: :meth:`Session.edit_task` says
what the learner edits (``fix``, ``break``, ``hunt``; :mod:`tutor.model.verdict`),
:meth:`Session.start_edit` (or :meth:`fix`, :meth:`break_it`, :meth:`hunt`)
runs their file as the side ``yours``, measures the verdict and records the
attempt with its mode, diff and verdict, and the learner's working copies
are kept in the progress folder (:meth:`Session.save_working_copy`).

A run is made of *sides* (:class:`tutor.sandbox.protocol.Side`): data saying how
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Protocol, Sequence

from tutor.app.tasks import INSTRUMENTS_CHECK, INSTRUMENTS_TIMEOUT_S, Task, task_for
from tutor.model.patch import EditError, MAX_EDIT_BYTES, check_text, syntax_problem
from tutor.model.verdict import Verdict, YOURS, judge, observe_break, read_break_prediction
from tutor.model.catalog import Catalog, Exercise
from tutor.model.attempts import Attempt, ExerciseProgress, LearnerProgress, ProgressError
from tutor.store.progress import ProgressStore
from tutor.sandbox.protocol import Progress, Side
from tutor.sandbox.runner import RunResult, standard_sides

#: The statuses of a graded attempt: the prediction met an observation.
GRADED = ("pass", "fail")
#: The statuses that are recorded as attempts; every other one is only shown. A
#: ``timeout`` is recorded as what it is, never as a failed prediction.
RECORDED = GRADED + ("timeout",)
#: Seconds a run waits for a warm-up in progress before it runs anyway.
WARM_UP_WAIT_S = 120.0


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


@dataclass
class Outcome:
    """What one run came to.

    Attributes:
        result: the graded result (any status).
        saved_to: the progress file the attempt was recorded in, or None
            when it was not recorded.
        save_error: why an attempt that should have been recorded was not
            (one sentence), else None; also why its note was not saved when
            the attempt was (``saved_to`` then names the file).
        note_saved: whether the note given with the attempt was saved.
        warnings: sentences about the progress file from the save (a
            damaged file moved aside).
    """

    result: RunResult
    saved_to: Path | None = None
    save_error: str | None = None
    note_saved: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass
class EditOutcome(Outcome):
    """What one edit-mode run came to (:meth:`Session.start_edit`).

    Attributes:
        task: what the learner edited (mode, file, exercise).
        text: the learner's file as it ran.
        diff: the learner's unified diff (:meth:`tutor.app.tasks.Task.diff`).
        verdict: the measured verdict (:func:`tutor.model.verdict.judge` or
            :func:`tutor.model.verdict.observe_break`).
        prediction: a break's prediction as kept (canonical or free text), else None.
        instruments: the engine instruments' run on the same sides, when
            asked for and the file is part of the engine, else None.
    """

    task: "Task | None" = None
    text: str = ""
    diff: str = ""
    verdict: "Verdict | None" = None
    prediction: str | None = None
    instruments: RunResult | None = None


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
        """The seed of the learner's next attempt (module docstring): edit-mode attempts and timeouts
        do not count."""
        predictions = self.progress.of(exercise.id).predictions if self.store is not None else []
        earlier = sum(a.status in GRADED for a in predictions)
        if not exercise.seed_per_attempt:
            return exercise.seed_for(earlier)
        # A mystery a hunt revealed before any prediction met it is skipped: predictions meet it no more.
        spoiled = self._hunted(exercise) - {a.seed for a in predictions if a.status in GRADED}
        seed, met = exercise.seed_for(0), 0
        while seed in spoiled or met < earlier:
            met += seed not in spoiled
            seed += 1
        return seed

    def _hunted(self, exercise: Exercise) -> set[int]:
        """The capstone mysteries a hunt showed this learner: a hunt attempt's seed, or a hunt's working copy."""
        if self.store is None:
            return set()
        seeds = {a.seed for a in self.progress.of(exercise.id).edits("hunt")}
        try:
            folder = self.store.working_copy_path(self.learner, exercise.id, "hunt-0", "x.py").parent.parent
            names = [entry.name for entry in folder.iterdir() if entry.is_dir()] if folder.is_dir() else []
        except (OSError, ProgressError):
            names = []
        seeds |= {int(name[5:]) for name in names if name.startswith("hunt-") and name[5:].isdigit()}
        return seeds

    def sides_for(self, exercise: Exercise) -> tuple[Side, ...]:
        """The sides of a plain run: clean, and faulted when the exercise has a fault."""
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
            confidence: how sure the learner said they were (percent, 50-100), saved with the attempt.
        """
        return Run(self, exercise, prediction, seed=self.seed_for(exercise) if seed is None else seed,
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
        return Run(self, run.exercise, run.prediction, seed=run.seed, sides=run.sides,
                   note=run.note if note is None else note, record=run.record, timeout_scale=result.retry_scale,
                   confidence=run.confidence)

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

    # --- edit mode (issue 12) -------------------------------------------------

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
            hunted = self._hunted(exercise)
            seed = predicted[-1] if predicted else min(hunted) if hunted else self.seed_for(exercise)
        return task_for(self.catalog, exercise, mode, seed)

    def working_copy(self, task: "Task") -> str | None:
        """The learner's saved working copy for ``task``, or None (no store, or none saved).

        Raises:
            ProgressError: the copy exists but cannot be read.
        """
        if self.store is None:
            return None
        return self.store.load_working_copy(self.learner, task.exercise.id, task.key, task.path)

    def save_working_copy(self, task: "Task", text: str) -> Path | None:
        """Save the learner's working copy for ``task`` atomically (safe from any thread); None without a store.

        Raises:
            ProgressError: it could not be saved.
        """
        if self.store is None:
            return None
        return self.store.save_working_copy(self.learner, task.exercise.id, task.key, task.path, text)

    def fresh_copy(self, task: "Task") -> str:
        """Start ``task`` afresh: the saved copy is kept as ``<file>.previous``; return the starting text.

        Raises:
            ProgressError: the old copy could not be set aside.
        """
        if self.store is not None:
            self.store.discard_working_copy(self.learner, task.exercise.id, task.key, task.path)
        return task.start

    def start_edit(self, task: "Task", text: str, prediction: str | None = None, *,
                   record: bool = True, instruments: bool = False) -> "EditRun":
        """An edit-mode run of the learner's ``text`` for ``task``, asked for now; see :meth:`EditRun.execute`.

        Args:
            task: from :meth:`edit_task`.
            text: the learner's whole file.
            prediction: break only: the learner's prediction, in the
                exercise's kind or as free text.
            record: whether the attempt is recorded (needs a store).
            instruments: also run the engine's instruments on clean and
                yours (engine files only; :data:`tutor.app.tasks.INSTRUMENTS_CHECK`).

        Raises:
            tutor.model.patch.EditError: the text (or its diff) is larger than 64 KiB or holds a NUL byte; a
                break without a prediction, or whose file is still the clean one.
        """
        if task.mode == "break":
            if not (prediction or "").strip():
                raise EditError("predict first: say what your fault will do (an answer of the exercise's "
                                     "kind, or your own words) before it runs")
            if text.replace("\r\n", "\n") == task.start:
                raise EditError(f"you have not changed anything yet: write your fault into {task.path}, "
                                     "then run it")
        return EditRun(self, task, text, prediction, record=record and self.store is not None,
                       instruments=instruments)

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
        exercise = replace(task.exercise, check=INSTRUMENTS_CHECK, timeout_s=INSTRUMENTS_TIMEOUT_S)
        return self.runner.run(exercise, None, on_progress=on_progress, seed=0, sides=task.sides(text, repeat=False))

    def _record_edit(self, outcome: EditOutcome) -> EditOutcome:
        task, verdict = outcome.task, outcome.verdict
        attempt = Attempt.of_edit(outcome.result, task.mode, outcome.diff, verdict, outcome.prediction or "")
        try:
            with self._lock:
                self.progress = self.store.record_attempt(self.learner, task.exercise.id, attempt)
        except ProgressError as exc:
            outcome.save_error = str(exc)
            return outcome
        outcome.saved_to = self.store.path(self.learner)
        return outcome

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

    def record(self, exercise: Exercise, result: RunResult, note: str | None = None, *,
               time: str | None = None) -> Outcome:
        """Record a result graded elsewhere (``tutor grade`` grades first, then saves in the answers' order).

        The same policy as a run: only a status in :data:`RECORDED` becomes an
        attempt, with ``note`` saved beside it.

        Args:
            exercise: the exercise the result is for.
            result: a graded result.
            note: the explain-back note to save with it, or None.
            time: the attempt's time (ISO 8601, as :func:`tutor.model.attempts.now`
                writes it), e.g. when the answer was submitted; None is now.
        """
        if self.store is None or result.status not in RECORDED:
            return Outcome(result)
        return self._record(exercise, result, note, time)

    def _record(self, exercise: Exercise, result: RunResult, note: str | None, time: str | None = None,
                confidence: int | None = None) -> Outcome:
        """Save the attempt, then its note; ``saved_to`` says whether the attempt was saved, whatever
        became of the note (a note that fails is said in ``save_error``)."""
        outcome = Outcome(result)
        attempt = Attempt.of(result, confidence=confidence)
        if result.status not in GRADED:
            attempt = replace(attempt, observed="", correct=False)  # nothing was observed, nothing graded
        if time is not None:
            attempt = replace(attempt, time=time)
        with self._lock:
            try:
                self.progress = self.store.record_attempt(self.learner, exercise.id, attempt)
            except ProgressError as exc:
                outcome.save_error = str(exc)
                return outcome
            outcome.saved_to = self.store.path(self.learner)
            outcome.warnings = list(self.progress.warnings)
            if note:
                try:
                    self.progress = self.store.save_note(self.learner, exercise.id, note)
                    outcome.note_saved = True
                except ProgressError as exc:
                    outcome.save_error = f"the attempt was saved but its note was not: {exc}"
        return outcome


class Run:
    """One run asked for by a learner: cancellable from any thread, executed on one.

    Attributes:
        exercise: the exercise.
        prediction: what the learner typed, or None.
        seed: the seed it runs with.
        sides: the sides it runs.
        note: the note saved with a recorded attempt, or None.
        record: whether a pass, fail or timeout is recorded.
        timeout_scale: the run's own time-limit scale (a retry's), or None.
        confidence: the learner's stated confidence (percent), saved with a recorded attempt, or None.
    """

    def __init__(self, session: Session, exercise: Exercise, prediction: str | None, *, seed: int,
                 sides: tuple[Side, ...], note: str | None, record: bool,
                 timeout_scale: float | None = None, confidence: int | None = None) -> None:
        self.session = session
        self.exercise = exercise
        self.prediction = prediction
        self.seed = seed
        self.sides = sides
        self.note = note
        self.record = record
        self.timeout_scale = timeout_scale
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
        """Run, grade and (for a pass, fail or timeout) record; blocking, on the calling thread.

        Args:
            on_progress: called with each side's :class:`~tutor.sandbox.protocol.Progress`.

        Raises:
            answers.AnswerError: the prediction does not read as the exercise's kind.
            tutor.sandbox.runner.DeviceError: the requested device is not available.
            tutor.sandbox.runner.WorkerError: the check worker could not be started
                (unless the run was cancelled meanwhile: then the outcome is
                a cancelled result).
        """
        session, ex = self.session, self.exercise
        if session._warming.is_set():
            session.warmed.wait(WARM_UP_WAIT_S)
        if self.cancelled:
            return self._finish(RunResult.cancelled(ex, self.prediction, when="before it started", seed=self.seed))
        scale = {} if self.timeout_scale is None else {"timeout_scale": self.timeout_scale}
        try:
            result = session.runner.run(ex, self.prediction, on_progress=on_progress, seed=self.seed,
                                        sides=self.sides, **scale)
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
            return self.session._record(self.exercise, result, self.note, confidence=self.confidence)
        return Outcome(result)


class EditRun(Run):
    """One edit-mode run: the learner's file as the side ``yours``, judged and recorded.

    Cancellable from any thread like :class:`Run`. Attributes as :class:`Run`, and:

    Attributes:
        task: what the learner edited.
        text: the learner's file (line ends made ``\\n``).
        diff: the learner's unified diff.
        syntax: the sentence naming the first syntax error, or None.
        instruments: whether the engine's instruments run too.
    """

    def __init__(self, session: Session, task: "Task", text: str, prediction: str | None, *,
                 record: bool, instruments: bool = False) -> None:
        text = check_text(task.path, text)
        diff = task.diff(text)
        if len(diff.encode("utf-8", "replace")) > MAX_EDIT_BYTES:
            raise EditError(f"your edit of {task.path} is a diff of more than {MAX_EDIT_BYTES // 1024} KiB; "
                                 "edits that large are refused — change only what the exercise needs")
        seed = task.seed if task.seed is not None else session.seed_for(task.exercise)
        super().__init__(session, task.exercise, None, seed=seed, sides=task.sides(text), note=None, record=record)
        self.task = task
        self.text = text
        self.diff = diff
        self.break_prediction = prediction if task.mode == "break" else None
        self.syntax = syntax_problem(task.path, text)
        self.instruments = instruments and task.engine

    def execute(self, on_progress: Callable[[Progress], None] | None = None) -> EditOutcome:
        """Run the sides, judge the learner's side, record the attempt (a measured verdict only).

        A file with a syntax error is not run: the verdict names the line at
        once (status ``syntax error``) and nothing is recorded. With
        ``instruments``, the engine's instruments run after the verdict is
        measured (and recorded) and come back in ``outcome.instruments``.

        Raises:
            tutor.sandbox.runner.DeviceError, tutor.sandbox.runner.WorkerError: as :meth:`Run.execute`.
        """
        task = self.task
        _, kept = read_break_prediction(task.exercise, self.break_prediction)
        if self.syntax is not None:
            result = RunResult(id=task.exercise.id, status="error", device="-", torch="-", fault=task.exercise.fault,
                               kind=task.exercise.kind, errors={YOURS: self.syntax}, seed=self.seed)
            verdict = Verdict(task.mode, "syntax error", f"not run: {self.syntax}", yours_status="error",
                                   yours_error=self.syntax)
            return EditOutcome(result, task=task, text=self.text, diff=self.diff, verdict=verdict, prediction=kept)
        result = super().execute(on_progress).result
        if task.mode == "break":
            verdict = observe_break(task.exercise, result, self.break_prediction)
        else:
            verdict = judge(task.exercise, result, task.mode)
        outcome = EditOutcome(result, task=task, text=self.text, diff=self.diff, verdict=verdict, prediction=kept)
        if self.record and verdict.ran and not self.cancelled:
            outcome = self.session._record_edit(outcome)
        if self.instruments and verdict.ran and not self.cancelled:
            outcome.instruments = self.session.instruments(task, self.text, on_progress)
        return outcome
