"""One learner's record at one progress store: read once, kept up to date by every save.

A :class:`LearnerRecord` is what a session keeps of the learner, apart from
anything it runs (:class:`tutor.app.session.Session` is one, with a runner):

* **progress is read once** (:meth:`LearnerRecord.load`) and kept up to date
  by every save, so the first screen, the exercise screen and the seed of
  the next attempt all read :attr:`LearnerRecord.progress` instead of the file;
* **what is saved**: a ``pass`` or ``fail`` is recorded as a graded attempt
  (and the explain-back note given with it); a ``timeout`` is recorded too,
  with its own status, ``correct = false`` and nothing observed — a fact
  about the run, never a wrong prediction (:data:`tutor.model.attempts.GRADED`
  tells them apart); ``ok``, ``error`` and ``cancelled`` are outcomes to
  show, never attempts (:data:`tutor.model.attempts.RECORDED`);
* **edit mode's files**: an edit-mode attempt is saved with its mode, diff
  and verdict (:meth:`LearnerRecord.record_edit`), and the learner's working
  copies are kept in the progress folder (:meth:`LearnerRecord.save_working_copy`);
* **threads**: every change holds one lock, so the TUI's thread workers and
  its UI thread never write the file at once; :meth:`LearnerRecord.save_note`
  writes the newest text asked for, whichever overlapping call writes.

Layers: imports neither Textual nor torch, nor any run machinery (the first
screen loads this module).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from tutor.app.outcome import EditOutcome, Outcome
from tutor.model.attempts import PREDICT, RECORDED, WARMUP, Attempt, ExerciseProgress, LearnerProgress, ProgressError
from tutor.model.catalog import Exercise

if TYPE_CHECKING:  # named in annotations only: tasks, results and the store are made elsewhere
    from tutor.app.tasks import Task
    from tutor.sandbox.runner import RunResult
    from tutor.store.progress import ProgressStore


class LearnerRecord:
    """One learner's progress, as read and as saved since.

    Attributes:
        store: where progress is saved, or None to save nothing
            (``tutor run --no-save``, ``tutor check``).
        learner: a validated learner name (None without a store).
        progress: the learner's progress as last read or saved; empty until :meth:`load`.
        warnings: sentences about the progress file (a damaged file moved aside, one from a newer tutor).
        loaded: whether :meth:`load` has read the file.
    """

    def __init__(self, store: ProgressStore | None = None, learner: str | None = None) -> None:
        """Nothing is read here: see :meth:`load`."""
        self.store = store
        self.learner = learner
        self.progress = LearnerProgress(learner=learner or "")
        self.warnings: list[str] = []
        self.loaded = False
        self._lock = threading.RLock()  # one change of the progress file at a time
        self._notes_lock = threading.Lock()
        self._notes_asked: dict[str, str] = {}  # note texts asked for and not yet written

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

    def save_draft(self, exercise_id: str, prediction: str, confidence: int | None) -> None:
        """Keep a prediction or confidence left unrun as the app quits, to offer again (an empty one without
        a confidence drops the draft kept); ProgressError as save_note."""
        if self.store is None:
            raise ProgressError("nothing is saved in this session; drop --no-save to keep a prediction")
        with self._lock:
            self.progress = self.store.save_draft(self.learner, exercise_id, prediction, confidence)

    def save_hints(self, exercise_id: str, count: int) -> None:
        """Keep how many of the exercise's hints the learner has revealed, as they reveal them: a hint
        seen is part of the next attempt even after a quit and relaunch; ProgressError as save_note."""
        if self.store is None:
            raise ProgressError("nothing is saved in this session; drop --no-save to keep the hints seen")
        with self._lock:
            self.progress = self.store.save_hints(self.learner, exercise_id, count)

    @property
    def progress_file(self) -> Path | None:
        """The learner's progress file, or None without a store."""
        return self.store.path(self.learner) if self.store is not None else None

    def hunted(self, exercise: Exercise) -> set[int]:
        """The capstone mysteries a hunt showed this learner: a hunt attempt's seed, or a hunt's working copy."""
        if self.store is None:
            return set()
        seeds = {a.seed for a in self.progress.of(exercise.id).edits("hunt")}
        try:
            names = self.store.working_copy_keys(self.learner, exercise.id)
        except ProgressError:
            names = []
        seeds |= {int(name[5:]) for name in names if name.startswith("hunt-") and name[5:].isdigit()}
        return seeds

    def working_copy(self, task: "Task") -> str | None:
        """The learner's saved working copy for ``task``, or None (no store, or none saved).

        Raises:
            ProgressError: the copy exists but cannot be read.
        """
        if self.store is None:
            return None
        return self.store.load_working_copy(self.learner, task.exercise.id, task.key, task.path)

    def working_copy_path(self, task: "Task") -> Path | None:
        """Where the learner's working copy for ``task`` is kept, or None (no store, or a name that
        cannot name a folder)."""
        if self.store is None:
            return None
        try:
            return self.store.working_copy_path(self.learner, task.exercise.id, task.key, task.path)
        except ProgressError:
            return None

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

    def record(self, exercise: Exercise, result: RunResult, note: str | None = None, *,
               time: str | None = None, submission: str = "") -> Outcome:
        """Record a result graded elsewhere (``tutor grade`` grades first, then saves in the answers' order).

        The same policy as a run: only a status in :data:`RECORDED` becomes an
        attempt, with ``note`` saved beside it.

        Args:
            exercise: the exercise the result is for.
            result: a graded result.
            note: the explain-back note to save with it, or None.
            time: the attempt's time (ISO 8601, as :func:`tutor.model.attempts.now`
                writes it), e.g. when the answer was submitted; None is now.
            submission: the graded submission's id; a file that holds it already is not changed.
        """
        if self.store is None or result.status not in RECORDED:
            return Outcome(result)
        return self._record(exercise, result, note, time=time, submission=submission)

    def _record(self, exercise: Exercise, result: RunResult, note: str | None, *, time: str | None = None,
                confidence: int | None = None, submission: str = "", hints: int = 0) -> Outcome:
        """Save the attempt, then its note; ``saved_to`` says whether the attempt was saved, whatever
        became of the note (a note that fails is said in ``save_error``)."""
        outcome = Outcome(result)
        attempt = Attempt.of(result, confidence=confidence, time=time, submission=submission, hints=hints,
                             mode=PREDICT if exercise.graded else WARMUP)  # a warm-up is saved, never counted
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

    def record_edit(self, outcome: EditOutcome) -> EditOutcome:
        """Save an edit-mode outcome's attempt (mode, diff, verdict, a break's prediction); ``saved_to`` says
        where, ``save_error`` why not."""
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

