"""``tutor grade --save``: each graded answer recorded in its learner's progress file as it is graded.

Recording goes through the learner's :class:`tutor.app.session.Session`, so
the run policy is the one the learner's own runs follow (only pass and fail
become attempts), and each attempt carries the row's submission id: grading
one file twice saves each attempt once.

Layers: this module imports neither torch nor Textual.
"""

from __future__ import annotations

from typing import Callable

from tutor.instructor.grade import RowResult
from tutor.app.session import Session
from tutor.model.attempts import GRADED, ProgressError  # GRADED: a row whose check ran to a verdict; only those are saved


class Saver:
    """Records each graded row in its learner's progress file as it is graded (``--save``).

    One :class:`tutor.app.session.Session` per learner records through the run
    policy (only pass and fail become attempts), with the row's submission
    id: a submission the file holds already is not saved again. A row's
    ``saved_to``, ``save_error``, ``note_saved`` and ``already_saved`` say
    what happened.
    """

    def __init__(self, catalog, store, notice: Callable[[str], None]) -> None:
        self.catalog, self.store, self.notice = catalog, store, notice
        self.sessions: dict = {}
        self.submitted: dict[str, set] = {}

    def __call__(self, outcome: RowResult) -> None:
        row = outcome.row
        if outcome.result is None or outcome.status not in GRADED:
            return
        done = self.submitted.get(row.key)
        if done is None:
            try:
                held = self.store.load(row.learner, move_aside=False)
                done = {a.submission for p in held.exercises.values() for a in p.attempts if a.submission}
            except ProgressError:
                done = set()  # saving says what is wrong with the file
            self.submitted[row.key] = done
        if row.submission in done:
            outcome.already_saved = True
            return
        session = self.sessions.get(row.key)
        if session is None:
            session = self.sessions[row.key] = Session(self.catalog, _NoRunner(), self.store, row.learner)
        # An untimed row is saved untimed (""): older than every timed attempt, as results.json counts it.
        saved = session.record(self.catalog.get(row.exercise), outcome.result, row.note,
                               time=row.submitted_at or "", submission=row.submission)
        outcome.saved_to, outcome.save_error, outcome.note_saved = saved.saved_to, saved.save_error, saved.note_saved
        if saved.saved_to is not None and saved.save_error:
            # the attempt is saved; only its note is not (one too long): a warning on the row, not a failed save
            row.warnings.append(saved.save_error)
            outcome.save_error = None
        if saved.saved_to is not None:
            done.add(row.submission)
        for warning in saved.warnings:
            self.notice(warning)
        if saved.save_error:
            self.notice(f"line {row.line} ({row.learner}, {row.exercise}): "
                        + (saved.save_error if saved.saved_to else f"the attempt was not saved: {saved.save_error}"))


def save_results(catalog, results: list[RowResult], store, notice: Callable[[str], None]) -> None:
    """Record each graded row in its learner's progress file, in the given order (see :class:`Saver`)."""
    saver = Saver(catalog, store, notice)
    for outcome in results:
        saver(outcome)


class _NoRunner:
    """A session that only records needs no runner."""

    def warm_up(self) -> dict:
        return {}

    def run(self, *args, **kwargs):
        raise RuntimeError("this session only records")

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass
