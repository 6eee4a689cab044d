"""Fix-mode submissions in a batch: ``tutor grade --fixes DIR``.

``DIR`` holds one folder per learner (the folder's name is the learner: a
name or an e-mail address), and in it one file per exercise: the whole
repaired subject file as ``<exercise-id>.py``, or a unified diff against the
faulted file as ``<exercise-id>.diff`` (or ``.patch``). Every submission is
run on one warm worker — torch is imported once for the whole batch — as
``tutor fix`` runs it: the learner's file is the side ``yours``, and it is
fixed when it observes what the clean subject observes.

An assignment's ``hidden_seeds`` for an exercise are seeds the repair is
also checked at: it counts as fixed only when it is fixed at the check's own
seed and at every hidden one. Hidden seeds are never shown to the learner.

The rows go to the same gradebook and results.json as predictions (mode
``fix``; the answer cell holds the learner's diff), and with ``--save`` to
the learner's progress file as ``tutor fix`` saves them, once per
submission.

Layers: imports neither torch nor Textual.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from tutor.model.errors import UsageError

#: The endings of a submitted file, and what they hold.
ENDINGS = {".py": "file", ".diff": "patch", ".patch": "patch"}


def find(folder: Path, catalog) -> list:
    """The submissions in ``folder``: AnswerRows of mode ``fix``, one per learner and exercise, sorted.

    A file that cannot be a submission (an unknown exercise, a learner folder name that is not allowed, a
    file that is not UTF-8) is an unreadable row with its reason.

    Raises:
        UsageError: ``folder`` is not a folder, or holds no learner folders.
    """
    # deferred: loaded when this step runs (the instructor's modules build on one another)
    from tutor.instructor.answer_rows import AnswerRow
    from tutor.model.attempts import ProgressError
    from tutor.store.names import learner_key, validate_learner
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"there is no folder {folder}; --fixes takes a folder with one folder per learner")
    learners = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not learners:
        raise UsageError(f"{folder} holds no learner folders; put each learner's files in a folder named after them")
    rows = []
    line = 0
    for mine in learners:
        for path in sorted(p for p in mine.iterdir() if p.is_file() and not p.name.startswith(".")):
            line += 1
            row = AnswerRow(line=line, learner=mine.name, exercise=path.stem, mode="fix")
            try:
                row.learner = validate_learner(mine.name)
                row.key = learner_key(row.learner)
            except ProgressError as exc:
                row.problem = str(exc)
            kind = ENDINGS.get(path.suffix.lower())
            if row.problem is None and kind is None:
                row.problem = (f"{path.name} is neither a repaired file (ID.py) nor a patch (ID.diff); "
                               "name it after the exercise")
            if row.problem is None:
                try:
                    row.exercise = catalog.get(path.stem.lower()).id
                except KeyError as exc:
                    row.problem = exc.args[0]
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", "replace")
                row.problem = row.problem or f"{path.name} is not UTF-8 text; save it as UTF-8"
            row.text = text
            row.answer = f"{kind}:{hashlib.sha256(raw).hexdigest()[:16]}"  # the submission's identity
            row.note = kind
            try:
                row.submitted_at = _mtime(path)
            except OSError:
                pass
            rows.append(row)
    return rows


def _mtime(path: Path) -> str:
    # deferred: loaded when this step runs (the instructor's modules build on one another)
    from datetime import datetime, timezone
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")


def seeds_of(assignment, ex_id: str) -> tuple:
    """The hidden seeds an assignment sets for one exercise (none without an assignment)."""
    assigned = assignment.get(ex_id) if assignment is not None else None
    return assigned.hidden_seeds if assigned is not None else ()


def at_hidden_seed(session, task, text: str, seed: int):
    """The repair ``text`` of ``task`` run once more at a hidden ``seed``, never recorded; its outcome.

    The one place hidden seeds reach the runner: through the public session API, as the task's
    seed (``Context.seed`` of every side). Where the runner grows its own way to pass hidden
    seeds (confined runs), this is the call to change.
    """
    return session.start_edit(replace(task, seed=seed), text, record=False).execute()


def grade_one(catalog, runner, row, assignment=None, store=None, save: bool = False):
    """Run one fix submission (and its hidden seeds) on ``runner``; return its RowResult.

    Raises:
        tutor.sandbox.runner.WorkerError, tutor.sandbox.runner.DeviceError: the worker cannot run at all.
    """
    # deferred: loaded when this step runs (the instructor's modules build on one another)
    from tutor.model import patch as edit
    from tutor.instructor.grade import RowResult
    from tutor.app.session import Session
    from tutor.instructor.grade import _points
    if row.problem is not None:
        return RowResult(row, "unreadable", reason=row.problem, points=_points(assignment, row.exercise))
    if assignment is not None and assignment.get(row.exercise) is None:
        return RowResult(row, "not_assigned", points=0, reason=f"{row.exercise} is not in the assignment; "
                                                              "reported, not scored")
    ex = catalog.get(row.exercise)
    session = Session(catalog, runner, store if save else None, row.learner)
    points = _points(assignment, row.exercise)
    try:
        task = session.edit_task(ex, "fix")
        text = edit.apply_patch(task.start, row.text, task.path) if row.note == "patch" else row.text
        outcome = session.start_edit(task, text, record=save and store is not None).execute()
        hidden = []
        for seed in seeds_of(assignment, ex.id):
            if not outcome.verdict.fixed:
                break
            again = at_hidden_seed(session, task, text, seed)
            hidden.append(again.verdict)
            if not again.verdict.fixed:
                outcome = replace(outcome, verdict=replace(again.verdict, sentence=(
                    "not fixed: your version is right at the check's own seed but not at a hidden one")))
    except edit.EditError as exc:
        return RowResult(row, "unreadable", reason=str(exc), points=points)
    verdict = outcome.verdict
    if verdict.status == "could not run":
        status = "error"
    else:
        status = "pass" if verdict.fixed else "fail"
    result = replace(outcome.result, observed=verdict.yours_observed if verdict.yours_status == "ok" else None,
                     correct=bool(verdict.fixed))
    done = RowResult(row, status, reason=None if status in ("pass", "fail") else verdict.sentence, result=result,
                     points=points, verdict=verdict.sentence, diff=outcome.diff or None)
    done.saved_to, done.save_error = getattr(outcome, "saved_to", None), getattr(outcome, "save_error", None)
    return done
