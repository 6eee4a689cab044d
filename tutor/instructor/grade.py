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

The answers file is CSV with a header row, or JSON lines (one object per
line; a JSON array of objects is read too). Which column is which field is
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

With ``--save`` each graded answer (pass or fail) is also saved in its
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
SIGTERM stops the workers and ends the command like Ctrl-C.

Layers: this module imports neither torch nor Textual.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import queue
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from exercises import answers
from tutor.cli.replies import CouldNotRun, UsageError
from tutor.instructor import assignment as assignments
from tutor.instructor import columns as lms
from tutor.instructor import gradebook, memo, results as class_results
from tutor.model.attempts import GRADED  # a row whose check ran to a verdict; the rest score 0 with a reason
from tutor.sandbox.runner import RunResult
from tutor.store.files import write_text_atomically

#: Largest answers file read, in bytes.
MAX_ANSWERS_BYTES = 256 * 1024 * 1024


# --- reading the answers ----------------------------------------------------------------------

@dataclass
class AnswerRow:
    """One row of the answers file, read and checked but not run.

    Attributes:
        line: where the row starts in the file (1 is the first line; a CSV header is line 1), or
            for a JSON array the item's position (1 for the first).
        learner: the learner's name as the row spells it, tidied (None when unusable).
        key: the learner's identity (:func:`tutor.store.names.learner_key`), or None.
        exercise: the exercise id when it names one in the catalog, else the text given (or None).
        answer: the answer as text.
        note: the explain-back note, or None.
        submitted_at: when it was submitted, ISO 8601 in UTC, or None.
        seed: the check's seed.
        problem: why the row cannot be graded (one sentence), or None.
        warnings: what was wrong with the row but did not stop its grading (a time or seed that
            does not read), one sentence each.
        mode: ``predict``, or ``fix`` for a repair (``--fixes``).
        text: a fix's repaired file, as submitted.
    """

    line: int
    learner: str | None = None
    key: str | None = None
    exercise: str | None = None
    answer: str | None = None
    note: str | None = None
    submitted_at: str | None = None
    seed: int = 0
    problem: str | None = None
    warnings: list = field(default_factory=list)
    mode: str = "predict"
    text: str | None = None

    @property
    def submission(self) -> str:
        """The submission id: 16 hex digits of the SHA-256 of (learner, exercise, answer, submitted_at)."""
        who = self.key if self.key is not None else (self.learner or "")
        parts = [who, self.exercise or "", self.answer or "", self.submitted_at or "", self.mode]
        return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def read_answers(path: str | os.PathLike, catalog, columns: dict | None = None) -> list[AnswerRow]:
    """Read an answers file (``-`` is standard input) into rows, each checked against ``catalog``.

    Rows that cannot be graded keep their reason in ``problem``; only a file
    that cannot be read as answers at all raises.

    Args:
        columns: ``--columns`` as :func:`tutor.instructor.columns.parse_columns` reads it.

    Raises:
        UsageError: the file is missing, too large, not UTF-8, has no rows,
            or its header lacks a required column or has an ambiguous one.
    """
    text = _read_text(path)
    stripped = text.lstrip("\ufeff \t\r\n")
    suffix = Path(str(path)).suffix.lower()
    as_json = suffix in (".jsonl", ".ndjson", ".json") or (suffix != ".csv" and stripped[:1] in ("{", "["))
    source = f"the answers file {path}"
    raw = _json_rows(text, columns, source) if as_json else _csv_rows(text, columns, source)
    if not raw:
        raise UsageError(f"{path} holds no answers; write one row per answer with the columns learner, exercise "
                         "and answer")
    checker = _Checker(catalog)
    return [checker(line, fields) for line, fields in raw]


def _read_text(path) -> str:
    try:
        if str(path) == "-":
            data = sys.stdin.buffer.read(MAX_ANSWERS_BYTES + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(MAX_ANSWERS_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"there is no answers file {path}; check the path given to --answers") from None
    except OSError as exc:
        raise UsageError(f"cannot read the answers file {path} ({exc.strerror or exc})") from None
    if len(data) > MAX_ANSWERS_BYTES:
        raise UsageError(f"the answers file {path} is larger than {MAX_ANSWERS_BYTES // 2**20} MiB; split it")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the answers file {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def _csv_rows(text: str, columns: dict | None, source: str) -> list[tuple[int, dict]]:
    """CSV rows as (line, {field: value}), the header mapped by :func:`tutor.instructor.columns.resolve`."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return []
    except csv.Error as exc:
        raise UsageError(f"{source} is not CSV ({exc})") from None
    mapping = lms.resolve(header, columns, source)
    rows = []
    line = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            rows.append((line, {"_problem": f"line {line} is not CSV ({exc})"}))
            line = reader.line_num + 1
            continue
        if any(c.strip() for c in cells):
            fields = mapping.fields(cells)
            if len(cells) > len(header):
                fields["_problem"] = f"line {line} has {len(cells)} cells but the header names {len(header)}"
            rows.append((line, fields))
        line = reader.line_num + 1
    return rows


def _json_rows(text: str, columns: dict | None, source: str) -> list[tuple[int, dict]]:
    """JSON lines (or one JSON array) as (line, {field: value}); a line that is no object is a problem row.
    The keys of every object together are the header (:func:`tutor.instructor.columns.resolve`)."""
    stripped = text.lstrip("\ufeff \t\r\n")
    items: list[tuple[int, Any]] = []
    if stripped.startswith("["):
        try:
            array = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise UsageError(f"the answers are not a JSON array of objects ({exc.msg}, line {exc.lineno})") from None
        items = list(enumerate(array if isinstance(array, list) else [array], 1))
    else:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                items.append((n, _Bad(f"line {n} is not a JSON object ({exc.msg})")))
    header: list[str] = []
    seen = set()
    for _, item in items:
        if isinstance(item, dict):
            for k in item:
                if str(k) not in seen:
                    seen.add(str(k))
                    header.append(str(k))
    mapping = lms.resolve(header, columns, source) if header else None
    rows = []
    for n, item in items:
        if isinstance(item, _Bad):
            rows.append((n, {"_problem": item.problem}))
        elif not isinstance(item, dict) or mapping is None:
            rows.append((n, {"_problem": f"line {n} is not a JSON object"}))
        else:
            values = [_json_text(item.get(h)) for h in header]
            rows.append((n, {f: v for f, v in mapping.fields(values).items() if v is not None}))
    return rows


@dataclass
class _Bad:
    problem: str


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    return json.dumps(value)  # 0.25, -1, [2, 7]: written as a learner would type them


class _Checker:
    """Reads each row's fields (learner names and exercise ids looked up once per spelling)."""

    def __init__(self, catalog) -> None:
        self.catalog = catalog
        self.learners: dict = {}
        self.exercises: dict = {}

    def learner(self, text: str):
        # deferred: loaded when this step runs (the instructor's modules build on one another)
        from tutor.model.attempts import ProgressError
        from tutor.store.names import learner_key, validate_learner
        found = self.learners.get(text)
        if found is None:
            try:
                name = validate_learner(text)
                found = (name, learner_key(name), None)
            except ProgressError as exc:
                found = (None, None, str(exc) if text else "the row names no learner")
            self.learners[text] = found
        return found

    def exercise(self, text: str):
        found = self.exercises.get(text)
        if found is None:
            try:
                found = (self.catalog.get(text.lower()), None)  # ids are lower case: HEAD-SPLIT is head-split
            except KeyError as exc:
                found = (None, exc.args[0])
            self.exercises[text] = found
        return found

    def __call__(self, line: int, fields: dict) -> AnswerRow:
        """A row with every field read, or its first problem named."""
        row = AnswerRow(line=line)
        given = {k: (v.strip() if k not in ("answer", "note") else v) for k, v in fields.items() if k != "_problem"}
        row.learner = given.get("learner") or None
        row.exercise = given.get("exercise") or None
        row.answer = given.get("answer")
        row.note = given.get("note") or None
        if fields.get("_problem"):
            row.problem = fields["_problem"]
            return row
        name, key, problem = self.learner(given.get("learner", ""))
        if problem is None:
            row.learner, row.key = name, key
        ex = None
        if problem is None:
            if not row.exercise:
                problem = "the row names no exercise"
            else:
                ex, problem = self.exercise(row.exercise)
        if problem is None and ex is not None:
            row.exercise = ex.id
            try:
                ex.parse_answer(row.answer if row.answer is not None else "")
            except answers.AnswerError as exc:
                problem = str(exc)
        if given.get("seed"):
            try:
                row.seed = int(given["seed"])
                if row.seed < 0:
                    raise ValueError
            except ValueError:
                row.seed = 0
                row.warnings.append(f"the seed {given['seed'][:20]!r} is not a whole number 0 or more; graded "
                                    "with seed 0")
        if given.get("submitted_at"):
            row.submitted_at, warning = _time(given["submitted_at"])
            if warning:
                row.warnings.append(warning)
        row.problem = problem
        return row


def _time(text: str) -> tuple[str | None, str | None]:
    """``submitted_at`` in the progress file's form (UTC, seconds), or the sentence why it does not read."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None, (f"submitted_at {text[:40]!r} is not a date and time such as 2026-11-29T10:00:00+00:00; "
                      "graded without a time")
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat(timespec="seconds"), None


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
        verdict: a fix's verdict as its sentence, else None.
        diff: a fix's unified diff against the clean file (the gradebook's answer cell), else None.
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
        return {"line": r.line, "learner": r.learner, "key": r.key, "exercise": r.exercise,
                "answer": self.diff if self.diff is not None else r.answer,
                "mode": r.mode, "status": self.status, "score": int(score) if float(score).is_integer() else score,
                "points": int(self.points) if float(self.points).is_integer() else self.points,
                "correct": res.correct if res else None,
                "prediction_text": res.prediction_text if res and r.mode == "predict" else None,
                "observed": observed,
                "observed_text": _shown(res), "verdict": self.verdict, "reason": self.reason,
                "warnings": list(r.warnings), "note": r.note or "", "submitted_at": r.submitted_at, "seed": r.seed,
                "device": res.device if res else None,
                "duration_s": round(res.duration_s, 3) if res else None, "reused": self.reused,
                "saved": self.saved_to is not None or self.already_saved,
                "saved_to": str(self.saved_to) if self.saved_to else None, "save_error": self.save_error,
                "note_saved": self.note_saved, "submission": r.submission}


def _shown(result: RunResult | None) -> str | None:
    if result is None or result.observed is None:
        return None
    return answers.show(result.kind, result.observed)


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class RunnerPool:
    """N runners, each with its own warm worker, taking jobs from one queue: one thread per runner.

    Each thread starts its worker (torch imported once), then takes the next
    job until none are left; ``on_done`` is called with each result as it is
    ready, one call at a time. ``run`` blocks; Ctrl-C stops every worker.

    Attributes:
        runners: the runners, made at construction (no process yet).
    """

    def __init__(self, catalog, device: str, jobs: int, runner_factory: Callable | None = None,
                 allow_unconfined: bool = False) -> None:
        # deferred: loaded when this step runs (the instructor's modules build on one another)
        from tutor.sandbox.runner import Runner
        factory = runner_factory or (lambda cat, dev: Runner(cat, device=dev, allow_unconfined=allow_unconfined))
        self.device = device
        self.runners = [factory(catalog, device) for _ in range(max(1, jobs))]

    def run(self, jobs: Iterable, work: Callable[[Any, Any], Any], on_done: Callable[[Any], None] | None = None
            ) -> list:
        """Run ``work(runner, job)`` for every job; return the results in the jobs' order.

        Raises:
            whatever ``work`` raised first (the other threads stop taking jobs).
            KeyboardInterrupt: Ctrl-C; every worker was stopped.
        """
        jobs = list(jobs)
        results: list = [None] * len(jobs)
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for i in range(len(jobs)):
            todo.put(i)
        failures: list[BaseException] = []
        report_lock = threading.Lock()

        def serve(runner) -> None:
            while not failures:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[i] = work(runner, jobs[i])
                except BaseException as exc:  # handed to the calling thread
                    failures.append(exc)
                    return
                if on_done is not None:
                    with report_lock:
                        on_done(results[i])

        threads = [threading.Thread(target=serve, args=(r,), daemon=True, name=f"tutor-grade-{n}")
                   for n, r in enumerate(self.runners[:max(1, min(len(self.runners), len(jobs)))])]
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
        return results

    def close(self) -> None:
        for r in self.runners:
            r.close()


def grade_rows(catalog, rows: list[AnswerRow], pool: RunnerPool,
               on_result: Callable[[RowResult], None] | None = None, assignment=None,
               observations: memo.Observations | None = None) -> list[RowResult]:
    """Grade every row on the pool's warm workers (nothing is saved here); a row that cannot run is its
    result at once. Each distinct measurement runs once (:mod:`tutor.instructor.memo`). Results come back
    in the rows' order; ``on_result`` gets each as it is ready (in the file's order with one worker).

    Args:
        assignment: the :class:`tutor.instructor.assignment.Assignment`; rows for other exercises are
            ``not_assigned`` and do not run. None grades every readable row for one point.
        observations: the measurements to share (a new set when None).

    Raises:
        UsageError: the device asked for is missing (a missing CUDA).
        CouldNotRun: no check worker could start at all.
    """
    # deferred: loaded when this step runs (the instructor's modules build on one another)
    from tutor.sandbox.runner import DeviceError, WorkerError, standard_sides
    kept = observations if observations is not None else memo.Observations()
    device = getattr(pool, "device", "auto")

    def work(runner, row: AnswerRow) -> RowResult:
        if row.problem is not None:
            return RowResult(row, "unreadable", reason=row.problem, points=_points(assignment, row.exercise))
        if assignment is not None and assignment.get(row.exercise) is None:
            return RowResult(row, "not_assigned", points=0,
                             reason=f"{row.exercise} is not in the assignment"
                                    f"{' ' + assignment.name if assignment.name else ''}; reported, not scored")
        ex = catalog.get(row.exercise)
        sides = standard_sides(catalog, ex)
        try:
            measured, reused = kept.get(memo.key(ex.id, row.seed, sides, device),
                                        lambda: runner.run(ex, None, seed=row.seed, sides=sides))
        except WorkerError as exc:
            raise CouldNotRun(str(exc)) from None  # a worker that cannot start is the machine's, for every row
        result = memo.graded(ex, measured, row.answer)
        return RowResult(row, result.status, reason=None if result.status in GRADED else result.error,
                         result=result, points=_points(assignment, row.exercise), reused=reused)

    try:
        return pool.run(rows, work, on_result)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None


def _points(assignment, ex_id: str | None) -> float:
    if assignment is None:
        return 1.0
    assigned = assignment.get(ex_id) if ex_id else None
    return assigned.points if assigned is not None else 0.0


# --- saving -------------------------------------------------------------------------------------

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
        # deferred: loaded when this step runs (the instructor's modules build on one another)
        from tutor.model.attempts import ProgressError
        from tutor.app.session import Session
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
        saved = session.record(self.catalog.get(row.exercise), outcome.result, row.note, time=row.submitted_at,
                               submission=row.submission)
        outcome.saved_to, outcome.save_error, outcome.note_saved = saved.saved_to, saved.save_error, saved.note_saved
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
    return class_results.class_results(rows, assignment, _titles(catalog), answers_path)


def infer_assignment(catalog, rows: list[dict]):
    """Every catalog exercise that a readable row names (an unreadable row never adds to max_score)."""
    named = {r["exercise"] for r in rows if r.get("status") != "unreadable" and r.get("exercise")}
    return assignments.inferred(catalog, named)


def assignment(catalog, results: list) -> list[str]:
    """The exercises of the inferred assignment, in the catalog's order."""
    return infer_assignment(catalog, [r.to_dict() if isinstance(r, RowResult) else r for r in results]).ids


def _titles(catalog) -> dict:
    return {e.id: e.title for e in catalog.exercises}


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`tutor.store.files.write_text_atomically`)."""
    write_text_atomically(path, text)


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


def not_yet_graded(rows: list[AnswerRow], earlier: list[dict]) -> list[AnswerRow]:
    """The rows ``--resume`` still has to grade: each submission as often as the file has it, less the
    times the gradebook holds it already."""
    held: dict[str, int] = {}
    for r in earlier:
        held[r.get("submission", "")] = held.get(r.get("submission", ""), 0) + 1
    todo = []
    for row in rows:
        sid = row.submission
        if held.get(sid, 0) > 0:
            held[sid] -= 1
            continue
        todo.append(row)
    return todo
