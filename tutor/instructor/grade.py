"""Grading a class: ``tutor grade --answers FILE``.

An instructor collects answers — one row per learner and exercise — and
grades them all at once. Every distinct check runs now (truth is measured,
never stored), once per grading (:mod:`tutor.instructor.memo`: a hundred
rows over ten exercises run ten checks), on warm workers that have torch
imported already. Each row ends with a result, whatever happened:

* ``pass`` / ``fail`` — the check ran and the answer matched / did not;
* ``unreadable`` — the row could not be graded, with the reason: a learner
  name that is not allowed, an unknown exercise, an answer that does not
  read as the exercise's kind, a line that is not a JSON object;
* ``not_assigned`` — the exercise is not in the assignment: reported, not
  run, never scored;
* ``error`` / ``timeout`` — the check itself could not finish.

The answers file (:mod:`tutor.instructor.answer_rows` reads it) is CSV with
a header row, or JSON lines (one object per line; a JSON array of objects is
read too). Which column is which field is
:mod:`tutor.instructor.columns`' rule (``--columns`` names them outright):
``learner``, ``exercise``, ``answer``, and optionally ``note`` (the
explain-back note), ``submitted_at`` (ISO 8601; a time without an offset is
read as UTC) and ``seed`` (the capstone's mystery; 0 otherwise). A learner
may be a name or an e-mail address; two spellings that differ only by case
are one learner. A ``submitted_at`` or ``seed`` that does not read is a
warning on its row (no time; seed 0), and the answer is still graded.

What is graded and for how many points is the assignment
(:mod:`tutor.instructor.assignment`: ``--assignment FILE.toml`` or
``--exercises ID,...``); without one it is inferred from the readable rows,
and the output says so. Which of a learner's rows for one exercise counts
is :func:`tutor.model.attempts.counting`'s rule: the latest
``submitted_at``, the file's order at a tie.

Written to ``--out`` (default: ``<answers>-graded/`` beside the answers):

* ``gradebook.csv`` and ``rows.jsonl`` — one line per answers row
  (:mod:`tutor.instructor.gradebook`), appended as each row is graded, so a
  killed grading loses at most the row in flight and ``--resume`` carries
  on; once every row is graded, the CSV is put in the file's order;
* ``results.json`` — per learner, a Gradescope-style result
  (:mod:`tutor.instructor.results`).

With ``--save`` (:mod:`tutor.instructor.saving`) each graded answer (pass or fail) is also saved in its
learner's progress file as soon as it is graded, with its note and a
submission id (learner, exercise, answer, submitted_at): grading the same
file twice saves each attempt once.

``--shard K/N`` grades only the learners of shard K of N (a stable hash of
the learner), so N machines can share a class; ``tutor grade merge DIR...``
joins their folders (:mod:`tutor.instructor.shard`).

Exit status: 0 every row has its result in the files; 2 bad input that
stops the grading (no such file, no header, an ambiguous column, an
unwritable folder, a missing CUDA device); 3 a row's check could not finish,
or no worker could start; 4 a graded answer could not be saved to progress.
SIGTERM and SIGHUP stop the workers and end the command like Ctrl-C.

Layers: this module imports neither torch nor Textual.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from tutor.model import answers
from tutor.model.errors import CouldNotRun, UsageError
from tutor.instructor import assignment as assignments
from tutor.instructor import gradebook, memo, results as class_results
from tutor.instructor.answer_rows import AnswerRow
from tutor.instructor.columns import IDENTITY
from tutor.model.attempts import ANSWER_MODES, WARMUP
from tutor.sandbox.runner import DeviceError, Runner, RunResult, UnconfinedError, WorkerError, standard_sides


# --- running every row on warm workers ---------------------------------------------------------

@dataclass
class RowResult:
    """What one answers row came to.

    Attributes:
        row: the row as read.
        status: pass, fail, unreadable, not_assigned, error, timeout or cancelled.
        reason: why a row scored 0 other than by a wrong answer (one sentence), else None.
        result: the graded run (None for a row that did not run).
        points: what a pass scores (the assignment's points), or 0 for a row outside it.
        reused: whether its check's measurement was another row's (:mod:`tutor.instructor.memo`).
        saved_to: the progress file the attempt went to (``--save``), else None.
        save_error: why an attempt that should have been saved was not, else None.
        note_saved: whether the row's note was saved with it.
        already_saved: the progress file held this submission already (``--save`` twice).
        verdict: a fix's verdict (fixed, not fixed, syntax error, could not run), or could not run for any row
            whose worker died (``--resume`` grades it again); else None.
        diff: a fix's unified diff against the clean file (the gradebook's answer cell), else None.
        warmup: the row answers a warm-up (``Exercise.graded`` false): its mode is ``warmup``, and it is
            told and counted as one (:func:`tutor.instructor.gradebook.tally_of`), never as a pass or a fail.
    """

    row: AnswerRow
    status: str
    reason: str | None = None
    result: RunResult | None = None
    points: float = 1.0
    reused: bool = False
    saved_to: Path | None = None
    save_error: str | None = None
    note_saved: bool = False
    already_saved: bool = False
    verdict: str | None = None
    diff: str | None = None
    warmup: bool = False

    @property
    def mode(self) -> str:
        """The row's mode as the gradebook says it: the answer's (``predict``, ``fix``), ``warmup`` for a warm-up."""
        return WARMUP if self.warmup else self.row.mode

    @property
    def tally(self) -> str:
        """What the row is counted and said as (:func:`tutor.instructor.gradebook.tally_of`)."""
        return gradebook.tally_of({"mode": self.mode, "status": self.status})

    @property
    def learner(self) -> str | None:
        return self.row.learner

    @property
    def exercise(self) -> str | None:
        return self.row.exercise

    @property
    def answer_text(self) -> str:
        return (self.row.answer or "").strip().replace("\n", " ")

    @property
    def score(self) -> float:
        return self.points if self.status == "pass" else 0

    def to_dict(self) -> dict:
        """The row as JSON: the answer and its verdict, what was observed (typed and as text), why not graded."""
        r, res = self.row, self.result
        observed = res.observed if res is not None else None
        score = self.score
        return {"line": r.line, "learner": r.learner, "key": r.key,
                **{k: r.identity.get(k) for k in IDENTITY}, "exercise": r.exercise,
                "answer": self.diff if self.diff is not None else r.answer,
                "mode": self.mode, "status": self.status, "score": int(score) if float(score).is_integer() else score,
                "points": int(self.points) if float(self.points).is_integer() else self.points,
                "correct": res.correct if res else None,
                "prediction_text": res.prediction_text if res and self.mode in ANSWER_MODES else None,
                "observed": observed,
                "observed_text": _shown(res), "verdict": self.verdict, "reason": self.reason,
                "warnings": list(r.warnings), "note": r.note or "", "submitted_at": r.submitted_at, "seed": r.seed,
                "device": res.device if res else None, "confined": res.confined if res else None,
                "same_as": list(r.same_as), "refused": r.refused,
                # a reused measurement took no time of its own: durations sum to the grading's checks
                "duration_s": (0.0 if self.reused else round(res.duration_s, 3)) if res else None,
                "reused": self.reused,
                "saved": self.saved_to is not None or self.already_saved,
                "saved_to": str(self.saved_to) if self.saved_to else None, "save_error": self.save_error,
                "note_saved": self.note_saved, "submission": r.submission}


def _shown(result: RunResult | None) -> str | None:
    if result is None or result.observed is None:
        return None
    return answers.show_observed(result.kind, result.observed)


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def runner_factory_for(allow_unconfined: bool = False, timeout_scale: float | None = None) -> Callable:
    """``(catalog, device) -> Runner`` for grading: confined only unless ``allow_unconfined``, every time
    limit scaled by ``timeout_scale`` when given (``--timeout-scale``)."""
    return lambda cat, dev: Runner(cat, device=dev, timeout_scale=timeout_scale, allow_unconfined=allow_unconfined)


class RunnerPool:
    """N runners, each with its own warm worker, taking jobs from one queue: one thread per runner.

    Each thread starts its worker (torch imported once), then takes the next
    job until none are left; ``on_done`` is called with each result as it is
    ready, one call at a time. ``run`` blocks; Ctrl-C stops every worker.

    Attributes:
        runners: the runners, made at construction (no process yet).
    """

    def __init__(self, catalog, device: str, jobs: int, runner_factory: Callable | None = None) -> None:
        factory = runner_factory or runner_factory_for()
        self.device = device
        self.runners = [factory(catalog, device) for _ in range(max(1, jobs))]

    def run(self, jobs: Iterable, work: Callable[[Any, Any], Any], on_done: Callable[[Any], None] | None = None,
            keep: bool = True) -> list:
        """Run ``work(runner, job)`` for every job; return the results in the jobs' order (none when not
        ``keep``: each is ``on_done``'s alone, and let go after it, so a class of any size is never held).

        Raises:
            whatever ``work`` raised first (the other threads stop taking jobs).
            KeyboardInterrupt: Ctrl-C; every worker was stopped.
        """
        source = iter(jobs)  # taken one at a time: a large class's rows stream from the file as they are graded
        results: dict = {}
        taken = [0]
        failures: list[BaseException] = []
        report_lock, source_lock = threading.Lock(), threading.Lock()

        def take():
            with source_lock:
                if failures:
                    return None
                try:
                    job = next(source)
                except StopIteration:
                    return None
                taken[0] += 1
                return taken[0] - 1, job

        def serve(runner) -> None:
            while not failures:
                try:
                    got = take()
                except BaseException as exc:  # the file stopped reading (not UTF-8): handed to the calling thread
                    failures.append(exc)
                    return
                if got is None:
                    return
                i, job = got
                try:
                    results[i] = work(runner, job)
                except BaseException as exc:  # handed to the calling thread
                    failures.append(exc)
                    return
                if on_done is not None:
                    with report_lock:
                        if failures:
                            return  # another thread's row could not be written: stop, as it did
                        try:
                            on_done(results[i])
                        except BaseException as exc:  # a full disk: handed to the calling thread, never a traceback
                            failures.append(exc)
                            return
                if not keep:
                    del results[i]

        threads = [threading.Thread(target=serve, args=(r,), daemon=True, name=f"tutor-grade-{n}")
                   for n, r in enumerate(self.runners)]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            failures.append(KeyboardInterrupt())
            for r in self.runners:
                r.cancel()
            raise
        if failures:
            raise failures[0]
        return [results[i] for i in range(taken[0])] if keep else []

    def close(self) -> None:
        for r in self.runners:
            r.close()


def grade_rows(catalog, rows: list[AnswerRow], pool: RunnerPool,
               on_result: Callable[[RowResult], None] | None = None, assignment=None,
               observations: memo.Observations | None = None, keep: bool = True) -> list[RowResult]:
    """Grade every row on the pool's warm workers (nothing is saved here); a row that cannot run is its
    result at once. Each distinct measurement runs once (:mod:`tutor.instructor.memo`). Results come back
    in the rows' order; ``on_result`` gets each as it is ready (in the file's order with one worker).

    Args:
        assignment: the :class:`tutor.instructor.assignment.Assignment`; rows for other exercises are
            ``not_assigned`` and do not run. None grades every readable row for one point.
        observations: the measurements to share (a new set when None).
        keep: return every result; False returns none (each is ``on_result``'s alone: bounded memory).

    Raises:
        UsageError: the device asked for is missing (a missing CUDA).
        CouldNotRun: no check worker could start at all.
    """
    kept = observations if observations is not None else memo.Observations()
    device = getattr(pool, "device", "auto")

    def work(runner, row: AnswerRow) -> RowResult:
        if row.problem is not None:
            return RowResult(row, "unreadable", reason=row.problem, points=points_for(assignment, row.exercise))
        if assignment is not None and assignment.get(row.exercise) is None:
            return RowResult(row, "not_assigned", points=0,
                             reason=f"{row.exercise} is not in the assignment"
                                    f"{' ' + assignment.name if assignment.name else ''}; reported, not scored")
        ex = catalog.get(row.exercise)
        sides = standard_sides(catalog, ex)
        try:
            measured, reused = kept.get(memo.key(ex.id, row.seed, sides, device),
                                        lambda: runner.run(ex, None, seed=row.seed, sides=sides))
        except UnconfinedError as exc:
            raise UsageError(str(exc)) from None  # grading never runs a class's code unconfined by accident
        except WorkerError as exc:
            if not worker_answered_before(runner):
                raise CouldNotRun(str(exc)) from None  # a worker that cannot start is the machine's, for every row
            runner.close()  # the next row starts a fresh worker
            return worker_died(row, exc, points_for(assignment, row.exercise))
        result = memo.graded(ex, measured, row.answer)
        reason = None if result.status == "pass" else result.error
        if result.status == "fail":
            reason = (f"the prediction {result.prediction_text} is not what the check observed "
                      f"({_shown(result)})")
        return RowResult(row, result.status, reason=reason, result=result, points=points_for(assignment, row.exercise),
                         reused=reused, warmup=not ex.graded)

    try:
        return pool.run(rows, work, on_result, keep=keep)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None


def worker_answered_before(runner) -> bool:
    """Whether ``runner``'s worker started and said hello at least once: a worker that fails after that died
    during one row (killed, or killed while a fresh one started), while one that never started is the
    machine's failure, for every row."""
    return getattr(getattr(runner, "worker", None), "hello", None) is not None


def worker_died(row: AnswerRow, exc: BaseException, points: float) -> RowResult:
    """The row of a submission whose check worker died while it was graded (``exc``, the runner's
    :class:`tutor.sandbox.runner.WorkerError`): status ``error``, score 0, verdict
    :data:`tutor.instructor.gradebook.COULD_NOT_RUN`;
    the rows after it are graded on a fresh worker, and ``--resume`` grades this one again."""
    said = " ".join(str(exc).split())[:200]
    return RowResult(row, "error", points=points, verdict=gradebook.COULD_NOT_RUN,
                     reason=f"could not run: the check worker died ({said}); it scores 0 for now — "
                            "grade it again with --resume")


def points_for(assignment, ex_id: str | None) -> float:
    """An exercise's points: 1 without an assignment, the assignment's for it, 0 for one it leaves out."""
    if assignment is None:
        return 1.0
    assigned = assignment.get(ex_id) if ex_id else None
    return assigned.points if assigned is not None else 0.0


# --- the files ----------------------------------------------------------------------------------

def gradebook_csv(results: list[RowResult]) -> str:
    """The gradebook (:mod:`tutor.instructor.gradebook`): one line per answers row, in the given order."""
    return gradebook.to_csv(r.to_dict() for r in results)


def results_json(catalog, results: list, answers_path: str, assignment=None) -> dict:
    """Gradescope-style results per learner (:func:`tutor.instructor.results.class_results`).

    ``results`` are :class:`RowResult` or their ``to_dict`` rows.
    """
    rows = [r.to_dict() if isinstance(r, RowResult) else r for r in results]
    if assignment is None:
        assignment = infer_assignment(catalog, rows)
    return class_results.class_results(rows, assignment, titles(catalog), answers_path)


def infer_assignment(catalog, rows: Iterable[dict]):
    """Every catalog exercise that a readable row names (an unreadable row never adds to max_score); ``rows``
    are taken one at a time."""
    named = {r["exercise"] for r in rows if r.get("status") != "unreadable" and r.get("exercise")}
    return assignments.inferred(catalog, named)


def assignment(catalog, results: list) -> list[str]:
    """The exercises of the inferred assignment, in the catalog's order."""
    return infer_assignment(catalog, [r.to_dict() if isinstance(r, RowResult) else r for r in results]).ids


def titles(catalog) -> dict:
    """Each exercise's title by id (results.json names its tests with them)."""
    return {e.id: e.title for e in catalog.exercises}


def chosen_assignment(path: str | None, ids: str | None, catalog):
    """The assignment of ``--assignment FILE`` (``path``) or ``--exercises`` (``ids``), or None (inferred later).

    Raises:
        UsageError: both are given, or the one given does not read.
    """
    if path and ids:
        raise UsageError("give the assignment once: --assignment FILE.toml or --exercises ID,..., not both")
    if path:
        return assignments.load(path, catalog)
    if ids:
        return assignments.from_ids(ids, catalog)
    return None
