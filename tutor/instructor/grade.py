"""Grading a class: ``tutor grade --answers FILE``.

An instructor collects answers — one row per learner and exercise — and
grades them all at once. Every row's check runs now (truth is measured, never
stored), on warm workers that have torch imported already: one by default,
``-j N`` at once where the machine has the cores. Each row ends with a
result, whatever happened:

* ``pass`` / ``fail`` — the check ran and the answer matched / did not;
* ``unreadable`` — the row could not be graded, with the reason: a learner
  name that is not allowed, an unknown exercise, an answer that does not
  read as the exercise's kind, a line that is not a JSON object;
* ``error`` / ``timeout`` — the check itself could not finish.

The answers file is CSV with a header row, or JSON lines (one object per
line; a JSON array of objects is read too). Its columns, in any order and
any case: ``learner``, ``exercise`` (or ``id``), ``answer`` (or
``prediction``), and optionally ``note`` (the explain-back note),
``submitted_at`` (ISO 8601; a time without an offset is read as UTC) and
``seed`` (the capstone's mystery; 0 otherwise). Other columns are ignored.
Two names that differ only by case are one learner.

Written to ``--out`` (default: ``<answers>-graded/`` beside the answers):

* ``gradebook.csv`` — one line per answers row, in the file's order: the
  answer, status, score (1 or 0), what was observed and why a row was not
  graded. Text that a spreadsheet would run as a formula (``=``, ``+``,
  ``-``, ``@`` before anything but a number) starts with ``'``.
* ``results.json`` — per learner, a Gradescope-style result: ``score``,
  ``max_score``, ``output`` and one test per exercise of the assignment
  (every exercise some row names) with its score and output text. When a
  learner has several rows for one exercise, the last submitted counts
  (``submitted_at``, else the file's order); a missing one scores 0.

With ``--save`` each graded answer (pass or fail, as a run records it) is
also saved in its learner's progress file, with its note, in the answers'
order — after every row is graded, so an interrupted grading saves nothing.
Unreadable rows and checks that could not finish are never saved as
attempts: they are in the gradebook.

Exit status: 0 every row has its result in the files; 2 bad input that
stops the grading (no such file, no header, a column missing, an unwritable
folder, a missing CUDA device) or an attempt that could not be saved; 3 a
row's check could not finish, or no worker could start.

Layers: this module imports neither torch nor Textual.
"""

from __future__ import annotations

import csv
import io
import json
import os
import queue
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from exercises import answers
from tutor.cli.learner import catalog as load_catalog
from tutor.cli.replies import EXIT_CHECK, EXIT_USAGE, CouldNotRun, GradeReply, UsageError
from tutor.model.attempts import GRADED  # a row whose check ran to a verdict; the rest score 0 with a reason
from tutor.sandbox.runner import RunResult
from tutor.store.files import spreadsheet_safe, write_text_atomically

#: Column names as the answers file may spell them (lower case), by the name used here.
COLUMNS = {"learner": ("learner", "name", "student"), "exercise": ("exercise", "id", "exercise_id"),
           "answer": ("answer", "prediction", "predict"), "note": ("note", "explain"),
           "submitted_at": ("submitted_at", "submitted", "time"), "seed": ("seed",)}
REQUIRED = ("learner", "exercise", "answer")
#: Largest answers file read, in bytes.
MAX_ANSWERS_BYTES = 64 * 1024 * 1024
#: The gradebook's columns, in order.
GRADEBOOK_COLUMNS = ("line", "learner", "exercise", "answer", "status", "score", "prediction", "observed",
                     "reason", "submitted_at", "seed", "device", "duration_s", "saved", "note_saved")


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


def read_answers(path: str | os.PathLike, catalog) -> list[AnswerRow]:
    """Read an answers file (``-`` is standard input) into rows, each checked against ``catalog``.

    Rows that cannot be graded keep their reason in ``problem``; only a file
    that cannot be read as answers at all raises.

    Raises:
        UsageError: the file is missing, too large, not UTF-8, has no rows,
            or (CSV) its header lacks a required column.
    """
    text = _read_text(path)
    stripped = text.lstrip("\ufeff \t\r\n")
    suffix = Path(str(path)).suffix.lower()
    as_json = suffix in (".jsonl", ".ndjson", ".json") or (suffix != ".csv" and stripped[:1] in ("{", "["))
    raw = _json_rows(text) if as_json else _csv_rows(text, path)
    if not raw:
        raise UsageError(f"{path} holds no answers; write one row per answer with the columns learner, exercise "
                         "and answer")
    return [_checked(line, fields, catalog) for line, fields in raw]


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


def _csv_rows(text: str, path) -> list[tuple[int, dict]]:
    """CSV rows as (line, {column: value}) with the columns named as :data:`COLUMNS` names them."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return []
    except csv.Error as exc:
        raise UsageError(f"the answers file {path} is not CSV ({exc})") from None
    names = [_column(h) for h in header]
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        shown = ", ".join(h.strip() for h in header if h.strip())[:120] or "nothing"
        raise UsageError(f"the answers file {path} has no column {', '.join(missing)} in its header (it has "
                         f"{shown}); the header needs learner, exercise and answer")
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
            fields = {n: c for n, c in zip(names, cells) if n is not None}
            if len(cells) > len(names):
                fields["_problem"] = f"line {line} has {len(cells)} cells but the header names {len(names)}"
            rows.append((line, fields))
        line = reader.line_num + 1
    return rows


def _json_rows(text: str) -> list[tuple[int, dict]]:
    """JSON lines (or one JSON array) as (line, {column: value}); a line that is no object is a problem row."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise UsageError(f"the answers are not a JSON array of objects ({exc.msg}, line {exc.lineno})") from None
        return [(n, _json_fields(item, n)) for n, item in enumerate(items, 1)]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            rows.append((n, {"_problem": f"line {n} is not a JSON object ({exc.msg})"}))
            continue
        rows.append((n, _json_fields(item, n)))
    return rows


def _json_fields(item: Any, n: int) -> dict:
    if not isinstance(item, dict):
        return {"_problem": f"line {n} is not a JSON object"}
    fields = {}
    for key, value in item.items():
        name = _column(str(key))
        if name is None:
            continue
        if value is None:
            continue
        if isinstance(value, bool):
            fields[name] = "yes" if value else "no"
        elif isinstance(value, str):
            fields[name] = value
        else:
            fields[name] = json.dumps(value)  # 0.25, -1, [2, 7]: written as a learner would type them
    return fields


def _column(header: str) -> str | None:
    wanted = header.strip().lower().replace(" ", "_").replace("-", "_")
    return next((name for name, spellings in COLUMNS.items() if wanted in spellings), None)


def _checked(line: int, fields: dict, catalog) -> AnswerRow:
    """A row with every field read, or its first problem named."""
    from tutor.model.attempts import ProgressError
    from tutor.store.names import learner_key, validate_learner
    row = AnswerRow(line=line)
    given = {k: (v.strip() if k != "answer" and k != "note" else v) for k, v in fields.items() if k != "_problem"}
    row.learner = given.get("learner") or None
    row.exercise = given.get("exercise") or None
    row.answer = given.get("answer")
    row.note = given.get("note") or None
    if fields.get("_problem"):
        row.problem = fields["_problem"]
        return row
    problem = None
    try:
        row.learner = validate_learner(given.get("learner", ""))
        row.key = learner_key(row.learner)
    except ProgressError as exc:
        problem = str(exc) if given.get("learner") else "the row names no learner"
    ex = None
    if problem is None:
        if not row.exercise:
            problem = "the row names no exercise"
        else:
            try:
                ex = catalog.get(row.exercise.lower())  # ids are lower case: HEAD-SPLIT is head-split
            except KeyError as exc:
                problem = exc.args[0]
    if problem is None and ex is not None:
        row.exercise = ex.id
        try:
            ex.parse_answer(row.answer if row.answer is not None else "")
        except answers.AnswerError as exc:
            problem = str(exc)
    if problem is None and given.get("seed"):
        try:
            row.seed = int(given["seed"])
            if row.seed < 0:
                raise ValueError
        except ValueError:
            problem = f"the seed {given['seed'][:20]!r} is not a whole number 0 or more"
    if problem is None and given.get("submitted_at"):
        row.submitted_at, problem = _time(given["submitted_at"])
    row.problem = problem
    return row


def _time(text: str) -> tuple[str | None, str | None]:
    """``submitted_at`` in the progress file's form (UTC, seconds), or the sentence why it does not read."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None, (f"submitted_at {text[:40]!r} is not a date and time such as 2026-11-29T10:00:00+00:00")
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat(timespec="seconds"), None


# --- running every row on warm workers ---------------------------------------------------------

@dataclass
class RowResult:
    """What one answers row came to.

    Attributes:
        row: the row as read.
        status: pass, fail, unreadable, error, timeout or cancelled.
        reason: why a row scored 0 other than by a wrong answer (one sentence), else None.
        result: the graded run (None for an unreadable row).
        saved_to: the progress file the attempt went to (``--save``), else None.
        save_error: why an attempt that should have been saved was not, else None.
        note_saved: whether the row's note was saved with it.
    """

    row: AnswerRow
    status: str
    reason: str | None = None
    result: RunResult | None = None
    saved_to: Path | None = None
    save_error: str | None = None
    note_saved: bool = False

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
    def score(self) -> int:
        return 1 if self.status == "pass" else 0

    def to_dict(self) -> dict:
        """The row as JSON: the answer and its verdict, what was observed (typed and as text), why not graded."""
        r, res = self.row, self.result
        observed = res.observed if res is not None else None
        return {"line": r.line, "learner": r.learner, "exercise": r.exercise, "answer": r.answer,
                "status": self.status, "score": self.score, "correct": res.correct if res else None,
                "prediction_text": res.prediction_text if res else None, "observed": observed,
                "observed_text": _shown(res), "reason": self.reason, "note": r.note or "",
                "submitted_at": r.submitted_at, "seed": r.seed, "device": res.device if res else None,
                "duration_s": round(res.duration_s, 3) if res else None, "saved": self.saved_to is not None,
                "saved_to": str(self.saved_to) if self.saved_to else None, "save_error": self.save_error,
                "note_saved": self.note_saved}


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

    def __init__(self, catalog, device: str, jobs: int, runner_factory: Callable | None = None) -> None:
        from tutor.sandbox.runner import Runner
        factory = runner_factory or (lambda cat, dev: Runner(cat, device=dev))
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
               on_result: Callable[[RowResult], None] | None = None) -> list[RowResult]:
    """Grade every row on the pool's warm workers, each through a :class:`tutor.app.session.Session`
    (nothing is saved here); an unreadable row is its result at once. Results come back in the rows'
    order; ``on_result`` gets each as it is ready (in the file's order with one worker).

    Raises:
        UsageError: the device asked for is missing (a missing CUDA).
        CouldNotRun: no check worker could start at all.
    """
    from tutor.sandbox.runner import DeviceError, WorkerError
    from tutor.app.session import Session
    sessions: dict[int, Session] = {}

    def work(runner, row: AnswerRow) -> RowResult:
        if row.problem is not None:
            return RowResult(row, "unreadable", reason=row.problem)
        session = sessions.get(id(runner))
        if session is None:
            session = sessions[id(runner)] = Session(catalog, runner)
        ex = catalog.get(row.exercise)
        try:
            result = session.start(ex, row.answer, seed=row.seed, record=False).execute().result
        except WorkerError as exc:
            raise CouldNotRun(str(exc)) from None  # a worker that cannot start is the machine's, for every row
        return RowResult(row, result.status, reason=None if result.status in GRADED else result.error,
                         result=result)

    try:
        return pool.run(rows, work, on_result)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None


# --- saving, and the files --------------------------------------------------------------------

def save_results(catalog, results: list[RowResult], store, notice: Callable[[str], None]) -> None:
    """Record each graded row in its learner's progress file, in the answers' order (``--save``).

    One :class:`tutor.app.session.Session` per learner records through the run
    policy (only pass and fail become attempts); a row's ``saved_to``,
    ``save_error`` and ``note_saved`` say what happened.
    """
    from tutor.app.session import Session
    sessions: dict[str, Session] = {}
    for outcome in results:
        row = outcome.row
        if outcome.result is None or outcome.status not in GRADED:
            continue
        session = sessions.get(row.key)
        if session is None:
            session = sessions[row.key] = Session(catalog, _NoRunner(), store, row.learner)
        saved = session.record(catalog.get(row.exercise), outcome.result, row.note, time=row.submitted_at)
        outcome.saved_to, outcome.save_error, outcome.note_saved = saved.saved_to, saved.save_error, saved.note_saved
        for warning in saved.warnings:
            notice(warning)
        if saved.save_error:
            notice(f"line {row.line} ({row.learner}, {row.exercise}): "
                   + (saved.save_error if saved.saved_to else f"the attempt was not saved: {saved.save_error}"))


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


def gradebook_csv(results: list[RowResult]) -> str:
    """The gradebook: :data:`GRADEBOOK_COLUMNS`, one line per answers row, in the file's order."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(GRADEBOOK_COLUMNS)
    for outcome in results:
        d = outcome.to_dict()
        cells = [d["line"], d["learner"] or "", d["exercise"] or "", outcome.answer_text, d["status"], d["score"],
                 d["prediction_text"] or "", d["observed_text"] or "", d["reason"] or "", d["submitted_at"] or "",
                 d["seed"], d["device"] or "", "" if d["duration_s"] is None else f"{d['duration_s']:.3f}",
                 "yes" if d["saved"] else "no", "yes" if d["note_saved"] else "no"]
        writer.writerow([spreadsheet_safe(c) for c in cells])
    return out.getvalue()


def assignment(catalog, results: list[RowResult]) -> list[str]:
    """The exercises graded: every exercise some row names, in the catalog's order."""
    named = {r.row.exercise for r in results if r.row.problem is None or r.row.exercise in _ids(catalog)}
    return [e.id for e in catalog.exercises if e.id in named]


def _ids(catalog) -> set:
    return {e.id for e in catalog.exercises}


def results_json(catalog, results: list[RowResult], answers_path: str) -> dict:
    """Gradescope-style results per learner (module docstring): score, max_score, output, tests."""
    exercises = assignment(catalog, results)
    learners: dict[str, dict] = {}
    last: dict[tuple[str, str], RowResult] = {}
    for outcome in results:  # in file order: a later row (or a later submitted_at) replaces an earlier one
        row = outcome.row
        if row.key is None or row.exercise not in exercises:
            continue
        learners.setdefault(row.key, {"name": row.learner, "time": 0.0})
        if outcome.result is not None:
            learners[row.key]["time"] += outcome.result.duration_s
        earlier = last.get((row.key, row.exercise))
        if earlier is None or _later_or_same(row, earlier.row):
            last[(row.key, row.exercise)] = outcome
    entries = []
    for key in sorted(learners):
        tests = []
        for n, ex_id in enumerate(exercises, 1):
            outcome = last.get((key, ex_id))
            title = catalog.get(ex_id).title
            tests.append({"name": f"{ex_id} · {title}", "number": str(n),
                          "score": float(outcome.score) if outcome else 0.0, "max_score": 1.0,
                          "status": "passed" if outcome and outcome.status == "pass" else "failed",
                          "output": _test_output(catalog, outcome), "visibility": "visible",
                          "extra_data": {"exercise": ex_id, "status": outcome.status if outcome else "missing",
                                         "line": outcome.row.line if outcome else None}})
        score = sum(t["score"] for t in tests)
        entries.append({"score": score, "max_score": float(len(tests)), "execution_time": round(learners[key]["time"], 3),
                        "output": f"{learners[key]['name']}: {score:g} of {len(tests)} exercises matched what "
                                  "their checks observed.",
                        "visibility": "visible", "stdout_visibility": "hidden",
                        "extra_data": {"learner": learners[key]["name"]}, "tests": tests})
    unattributed = [{"line": r.row.line, "reason": r.reason} for r in results
                    if r.row.key is None or r.row.exercise not in exercises]
    return {"schema_version": 1, "answers": answers_path, "graded_at": _now(), "exercises": exercises,
            "learners": entries, "unattributed_rows": unattributed}


def _later_or_same(row: AnswerRow, earlier: AnswerRow) -> bool:
    if row.submitted_at and earlier.submitted_at:
        return row.submitted_at >= earlier.submitted_at
    return True  # the file's order


def _test_output(catalog, outcome: RowResult | None) -> str:
    """A test's output text: the answer, what was observed, and the verdict (or why there is none)."""
    if outcome is None:
        return "No answer was submitted for this exercise."
    res = outcome.result
    if outcome.status == "unreadable":
        return f"Your answer {outcome.answer_text[:80]!r} could not be graded: {outcome.reason}."
    if outcome.status not in GRADED:
        return f"The check could not finish ({outcome.status}): {outcome.reason}. This is not your mistake."
    ex = catalog.get(res.id)
    observed = answers.show(ex.kind, res.observed)
    verdict = "matched" if res.correct else "did not match"
    return f"You predicted {res.prediction_text}. The check observed {observed}. Your prediction {verdict}."


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --- the command ------------------------------------------------------------------------------

@dataclass
class Summary:
    """What ``tutor grade`` did, for its Rich view."""

    counts: dict = field(default_factory=dict)
    rows: int = 0
    learners: int = 0
    exercises: list = field(default_factory=list)
    workers: int = 1
    duration_s: float = 0.0
    gradebook: Path | None = None
    results: Path | None = None
    saved: int | None = None
    progress_folder: Path | None = None


def command(args, events) -> GradeReply:
    """``tutor grade``: read, check the outputs can be written, grade on warm workers, write, save."""
    from tutor.model.attempts import ProgressError
    from tutor.store.progress import ProgressStore, default_folder
    started = time.perf_counter()
    catalog = load_catalog()
    if args.answers == "-" and not args.out:
        raise UsageError("--answers - reads standard input; say where the gradebook goes with --out DIR")
    out = Path(args.out) if args.out else _default_out(Path(args.answers))
    rows = read_answers(args.answers, catalog)
    _ensure_folder(out)
    store = None
    if args.save:
        store = ProgressStore(default_folder(getattr(args, "progress_dir", None)))
        try:
            store.ensure_writable()
        except ProgressError as exc:
            raise UsageError(str(exc)) from None
    readable = sum(r.problem is None for r in rows)
    jobs = _workers(args.jobs, readable, events.notice)
    pool = RunnerPool(catalog, args.device, jobs, getattr(args, "runner_factory", None))
    try:
        results = grade_rows(catalog, rows, pool, events.graded)
    finally:
        pool.close()
    if store is not None:
        save_results(catalog, results, store, events.notice)
    gradebook, results_path = out / "gradebook.csv", out / "results.json"
    try:
        write_text_atomically(gradebook, gradebook_csv(results))
        write_text_atomically(results_path, json.dumps(results_json(catalog, results, str(args.answers)), indent=2) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write the gradebook to {out} ({exc.strerror or exc}); choose another --out") from None
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    summary = Summary(counts=counts, rows=len(results), learners=len({r.row.key for r in results if r.row.key}),
                      exercises=assignment(catalog, results), workers=jobs,
                      duration_s=time.perf_counter() - started, gradebook=gradebook, results=results_path,
                      saved=sum(r.saved_to is not None for r in results) if store is not None else None,
                      progress_folder=store.folder if store is not None else None)
    unfinished = [r for r in results if r.result is not None and r.status not in GRADED]
    unsaved = [r for r in results if r.save_error]
    data = {"answers": str(args.answers), "out": str(out), "gradebook": str(gradebook), "results": str(results_path),
            "workers": jobs, "rows": [r.to_dict() for r in results], "counts": counts, "learners": summary.learners,
            "exercises": summary.exercises, "saved": summary.saved,
            "progress_folder": str(store.folder) if store is not None else None,
            "duration_s": round(summary.duration_s, 3)}
    code = 0
    if unsaved:
        code = EXIT_USAGE
        data["error"] = (f"{len(unsaved)} graded answer{'s' if len(unsaved) > 1 else ''} could not be saved in full "
                         "to progress; each row's save_error says why")
    if unfinished:
        code = EXIT_CHECK
        data["error"] = (f"the check of {len(unfinished)} row{'s' if len(unfinished) > 1 else ''} could not finish "
                         f"(lines {', '.join(str(r.row.line) for r in unfinished[:10])}); they score 0 in the "
                         "gradebook: grade them again when the machine is quiet")
    return GradeReply(data, code, rows=results, summary=summary)


def _default_out(answers_path: Path) -> Path:
    return answers_path.with_name(f"{answers_path.stem}-graded")


def _ensure_folder(out: Path) -> None:
    """Make the output folder and prove it writable before any check runs.

    Raises:
        UsageError: it cannot be made or written.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".tutor-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"cannot write the gradebook to {out} ({exc.strerror or exc}); choose another --out") from None


def _workers(asked: int, rows: int, notice: Callable[[str], None]) -> int:
    """The workers to start: as asked, but no more than the cores (said once) or the rows to run."""
    cores = usable_cores()
    jobs = asked
    if asked > cores:
        notice(f"-j {asked} asks for more check workers than this machine's {cores} core"
               f"{'s' if cores > 1 else ''}; using {cores}")
        jobs = cores
    return max(1, min(jobs, rows))


def show_summary(console, reply: GradeReply) -> None:
    """The Rich view after the rows' lines: counts, where the files went, what was saved."""
    from rich.text import Text
    s = reply.summary
    order = ("pass", "fail", "unreadable", "error", "timeout", "cancelled")
    counts = ", ".join(f"{s.counts[k]} {k}" for k in order if s.counts.get(k))
    console.print(Text(f"Graded {s.rows} row{'s' if s.rows != 1 else ''} ({s.learners} learner"
                       f"{'s' if s.learners != 1 else ''}, {len(s.exercises)} exercise"
                       f"{'s' if len(s.exercises) != 1 else ''}) in {s.duration_s:.1f} s on {s.workers} worker"
                       f"{'s' if s.workers != 1 else ''}: {counts}.", style="bold"))
    console.print(Text(f"Gradebook: {s.gradebook}"))
    console.print(Text(f"Results:   {s.results}"))
    if s.saved is not None:
        console.print(Text(f"Saved {s.saved} attempt{'s' if s.saved != 1 else ''} to the progress files in "
                           f"{s.progress_folder}."))
    if reply.data.get("error"):
        from tutor.cli.output import fail
        fail(reply.data["error"])
