"""Grading a class, as a use case: a request in, what was graded and written out.

The command line (:mod:`tutor.cli.instructor`) only turns its arguments into
a :class:`Request` and draws the :class:`Graded` that comes back; tests drive
these functions directly. Three gradings share one shape:

* :func:`grade_answers` — an answers file (:mod:`tutor.instructor.grade`);
* :func:`grade_fixes` — a folder of repairs (:mod:`tutor.instructor.fixes`);
* :func:`merge` — the shards' folders joined (:mod:`tutor.instructor.shard`);

and one tail (:func:`tutor.instructor.out_folder.finish`): which row counts,
then gradebook.csv, rows.jsonl and results.json written whole. The output
folder (and, with ``save``, the progress folder for this shard) is held for
the whole grading (:mod:`tutor.instructor.out_folder`).

Raises, in every function: :class:`tutor.model.errors.UsageError` (bad input,
a busy or unwritable folder, a grading that would run unconfined),
:class:`tutor.model.errors.CouldNotRun` (no worker could start) and
:class:`tutor.model.errors.CouldNotSave` (a file could not be written; what
was graded is kept for ``--resume``).

Layers: imports neither torch nor Textual.
"""

from __future__ import annotations

import itertools
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tutor.instructor import answer_rows, gradebook, memo, out_folder, saving
from tutor.instructor import assignment as assignments
from tutor.instructor import columns as lms
from tutor.instructor import grade as grading
from tutor.instructor import shard as sharding
from tutor.instructor import fixes
from tutor.model.attempts import GRADED, ProgressError
from tutor.model.errors import CouldNotRun, CouldNotSave, UsageError
from tutor.sandbox.runner import DeviceError, UnconfinedError, WorkerError


@dataclass
class Request:
    """What to grade and how (the command line's options, as data).

    Attributes:
        answers: the answers file (``-``: standard input), or None.
        fixes: the folder of repairs, or None.
        out: the output folder (None: beside the answers or the repairs).
        assignment: an assignment file; exercises: ``ID,...`` instead.
        columns: ``--columns`` as text; layout: ``long``, ``wide`` or None (detected).
        shard: ``K/N`` or None; resume: carry on a grading that stopped.
        jobs: check workers; device: ``auto``, ``cpu`` or ``cuda``.
        store: the progress store to save into (``--save``), or None.
        hidden_seeds: hidden seeds drawn afresh for each repair, beyond its assignment's own (None: the default).
        runner_factory: ``(catalog, device) -> runner``.
        titles: exercise id -> title, for results.json (from the catalog when empty).
    """

    answers: str | None = None
    fixes: str | None = None
    out: Path | None = None
    assignment: str | None = None
    exercises: str | None = None
    columns: str | None = None
    layout: str | None = None
    shard: str | None = None
    resume: bool = False
    jobs: int = 1
    device: str = "auto"
    store: object = None
    hidden_seeds: int | None = None
    runner_factory: Callable | None = None


#: How many rows graded now a :class:`Graded` keeps for the reply (every row is in the files).
KEPT_ROWS = 10_000


@dataclass
class Graded:
    """What a grading did: the files written, the counts a summary shows, and the first :data:`KEPT_ROWS`
    rows graded now (every row is in ``rows.jsonl``; a class of any size is never held)."""

    out: Path
    plan: object
    written: out_folder.Written
    graded: list = field(default_factory=list)
    resumed: int = 0
    workers: int = 1
    checks: int = 0
    reused: int = 0
    duration_s: float = 0.0
    problem: str | None = None
    problem_kind: str | None = None  # "check" (exit 3) or "save" (exit 4)
    tally: "Tally" = field(default_factory=lambda: Tally())

    @property
    def saved(self) -> int:
        return self.tally.saved

    @property
    def rows_graded(self) -> int:
        """The rows graded now (``graded`` may hold fewer)."""
        return self.tally.rows


@dataclass
class Tally:
    """What the exit status and the summary need of the rows graded now, kept as they pass: counts, and
    the first lines whose check could not finish."""

    rows: int = 0
    saved: int = 0
    unsaved: int = 0
    unfinished: int = 0
    unfinished_lines: list = field(default_factory=list)
    kept: list = field(default_factory=list)

    def add(self, outcome) -> None:
        self.rows += 1
        self.saved += outcome.saved_to is not None
        self.unsaved += bool(outcome.save_error)
        if outcome.status not in GRADED and (outcome.result is not None or outcome.verdict == gradebook.COULD_NOT_RUN):
            self.unfinished += 1
            if len(self.unfinished_lines) < 10:
                self.unfinished_lines.append(outcome.row.line)
        if len(self.kept) < KEPT_ROWS:
            self.kept.append(outcome)


def without_no_save(exc: Exception) -> str:
    """A progress folder's refusal, with the fix grading has: it has no --no-save, it grades without --save."""
    return str(exc).replace("or pass --no-save", "or grade without --save")


def _mine(rows, shard: str | None):
    """The rows of this shard (all without one), as lazily as ``rows`` comes."""
    part = sharding.parse(shard)
    if part is None:
        return rows
    return (r for r in rows if sharding.belongs(r.key if r.key is not None else (r.learner or ""), part))


def _held(stack: ExitStack, req: Request, out: Path) -> None:
    stack.callback(out_folder.hold(out).release)
    if req.store is not None:
        try:
            req.store.ensure_writable()
        except ProgressError as exc:
            raise UsageError(without_no_save(exc)) from None
        stack.callback(out_folder.progress_lock(req.store.folder, req.shard).release)


def _graded_so_far(out: Path) -> gradebook.Earlier:
    """What ``--resume`` keeps of ``out``'s rows (:func:`tutor.instructor.gradebook.graded_so_far`).

    Raises:
        UsageError: its ``rows.jsonl`` exists but cannot be read.
    """
    try:
        return gradebook.graded_so_far(out)
    except OSError as exc:
        raise UsageError(f"cannot read the rows graded so far in {out / gradebook.ROWS} ({exc.strerror or exc}); "
                         "fix its permissions, or grade again without --resume") from None


def _readable(req: Request, answers: str, catalog, columns: dict):
    """The answers' rows for a grading without an assignment, and the assignment inferred from every
    readable row: the file (``answers``: standard input is a copy by now) is read twice, a row at a time
    (once to infer, once to grade)."""
    def reading():
        return _mine(answer_rows.iter_answers(answers, catalog, columns, req.layout, name=str(req.answers)),
                     req.shard)
    named, readable = set(), 0
    for r in reading():
        if r.problem is None:
            named.add(r.exercise)
            readable += 1
    return reading(), assignments.inferred(catalog, named), readable


def grade_answers(req: Request, catalog, on_graded: Callable, notice: Callable[[str], None]) -> Graded:
    """Grade every row of ``req.answers`` on warm workers; each row is written (and saved) as it is graded,
    and let go: memory does not grow with the rows (:mod:`tutor.instructor.tail`)."""
    started = time.perf_counter()
    notice = _escaping(notice)
    out = Path(req.out) if req.out else Path(req.answers).with_name(f"{Path(req.answers).stem}-graded")
    given = grading.chosen_assignment(req.assignment, req.exercises, catalog)
    columns = lms.parse_columns(req.columns)
    with ExitStack() as files:  # standard input is copied to a file once, to be read as often as a file is
        answers = files.enter_context(answer_rows.stdin_copy()) if str(req.answers) == "-" else req.answers
        if given is None:  # the assignment is inferred from every readable row: read once for it, then graded
            rows, plan, readable = _readable(req, answers, catalog, columns)
            jobs = workers(req.jobs, readable, notice)
        else:  # rows stream from the file as they are graded
            plan = given
            reading = answer_rows.iter_answers(answers, catalog, columns, req.layout, given, name=str(req.answers))
            first = next(reading)  # the header (and the first row) read now: a bad one refuses before anything is written
            rows = _mine(itertools.chain([first], reading), req.shard)
            jobs = workers(req.jobs, req.jobs, notice)
        return _graded(req, catalog, out, plan, rows, jobs, on_graded, notice, started)


def _graded(req: Request, catalog, out: Path, plan, rows, jobs: int, on_graded: Callable,
            notice: Callable[[str], None], started: float) -> Graded:
    """The grading of ``rows`` (read as they are taken) into ``out``, and its summary."""
    with ExitStack() as stack:
        _held(stack, req, out)
        earlier = _graded_so_far(out) if req.resume else None  # ids and counts, never the rows
        todo = answer_rows.still_to_grade(rows, earlier.held if earlier else {})
        saver = saving.Saver(catalog, req.store, notice) if req.store is not None else None
        writer = out_folder.Rows(out, earlier)
        stack.callback(writer.close)
        pool = grading.RunnerPool(catalog, req.device, jobs, req.runner_factory)
        observations = memo.Observations()
        tally = Tally()

        def done(outcome) -> None:
            if saver is not None:
                saver(outcome)
            writer.append(outcome.to_dict())
            tally.add(outcome)
            on_graded(outcome)

        try:
            grading.grade_rows(catalog, todo, pool, done, plan, observations, keep=False)
        finally:
            pool.close()
        resumed = earlier.rows if earlier else 0
        written = out_folder.finish(out, plan, grading.titles(catalog), str(req.answers))
    result = Graded(out, plan, written, tally.kept, resumed, jobs, observations.measured, observations.reused,
                    time.perf_counter() - started, tally=tally)
    _problems(result)
    return result


def _fix_graded(catalog, runner, row, plan, req: Request, writer: out_folder.Rows):
    """One repair graded and its row written: whatever fails while it is graded, but the machine, is that
    row's error (:func:`tutor.instructor.fixes.not_graded`), never the class's.

    Raises:
        UsageError: the device asked for is missing, or the runner refuses to run unconfined.
        CouldNotRun: no worker could start at all (one that started before and died is this row's).
        CouldNotSave: the row cannot be written.
    """
    try:
        outcome = fixes.grade_guarded(catalog, runner, row, plan, req.store, save=req.store is not None,
                                      hidden_seeds=req.hidden_seeds)
    except (DeviceError, UnconfinedError) as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        if not grading.worker_answered_before(runner):
            raise CouldNotRun(str(exc)) from None
        runner.close()  # the next row starts a fresh worker
        outcome = grading.worker_died(row, exc, grading.points_for(plan, row.exercise))
    try:
        writer.append(outcome.to_dict())
        return outcome
    except CouldNotSave:
        raise
    except Exception as exc:  # a row that cannot be written as it is (too deep, not text): its error instead
        outcome = fixes.not_graded(row, exc, plan)
    writer.append(outcome.to_dict())
    return outcome


def grade_fixes(req: Request, catalog, on_graded: Callable, notice: Callable[[str], None]) -> Graded:
    """Grade every repair in ``req.fixes`` on one warm worker, at hidden seeds too (:mod:`tutor.instructor.fixes`).

    One repair's failure is its own row's (:func:`_fix_graded`): the rows after it are graded, results.json
    is written, and ``--resume`` passes over it as over any graded row — but a row whose worker died
    (:data:`tutor.instructor.gradebook.COULD_NOT_RUN`), which it grades again on a fresh worker. Every notice
    is :func:`escaped <tutor.instructor.gradebook.escaped>`: a file name or a side's sentence cannot act on
    the terminal."""
    started = time.perf_counter()
    notice = _escaping(notice)
    plan = grading.chosen_assignment(req.assignment, req.exercises, catalog)
    rows = list(_mine(fixes.find(Path(req.fixes), catalog), req.shard))
    plan = plan or assignments.inferred(catalog, {r.exercise for r in rows if r.problem is None})
    out = Path(req.out) if req.out else Path(str(req.fixes).rstrip("/") + "-graded")
    tally = Tally()
    with ExitStack() as stack:
        _held(stack, req, out)
        earlier = _graded_so_far(out) if req.resume else None
        todo = answer_rows.not_yet_graded(rows, earlier.held if earlier else {})
        for row in todo:
            if row.refused is not None:
                notice(f"{row.learner}: {row.problem}")
        runner = (req.runner_factory or grading.runner_factory_for())(catalog, req.device)
        stack.callback(runner.close)
        writer = out_folder.Rows(out, earlier)
        stack.callback(writer.close)
        for row in todo:
            outcome = _fix_graded(catalog, runner, row, plan, req, writer)
            tally.add(outcome)
            if outcome.status == "error" and (outcome.result is None or outcome.verdict == gradebook.COULD_NOT_RUN):
                notice(f"{row.learner}: {outcome.reason}")
            # what a side tried or could not do (a cgroup it could not join, a tree left behind), said per learner
            for side, said in (getattr(outcome.result, "refused", None) or {}).items():
                for what in said:
                    notice(f"{row.learner}: the {side} side {what}")
            on_graded(outcome)
        written = out_folder.finish(out, plan, grading.titles(catalog), str(req.fixes))
    result = Graded(out, plan, written, tally.kept, earlier.rows if earlier else 0, 1, tally.rows, 0, time.perf_counter() - started,
                    tally=tally)
    _problems(result)
    return result


def _escaping(notice: Callable[[str], None]) -> Callable[[str], None]:
    """``notice`` for one line on a terminal: every character a terminal acts on (an escape sequence, a line
    end) written as its escape (:func:`tutor.instructor.gradebook.escaped`)."""
    return lambda text: notice(gradebook.escaped(text))


def merge(req: Request, catalog, folders: list[Path]) -> Graded:
    """The shards' folders joined into one gradebook and results.json in ``req.out``, a row at a time."""
    started = time.perf_counter()
    if not req.out:
        raise UsageError("tutor grade merge needs --out DIR for the joined gradebook and results.json")
    out = Path(req.out)
    plan = grading.chosen_assignment(req.assignment, req.exercises, catalog)
    with ExitStack() as stack:
        stack.callback(out_folder.hold(out).release)
        out_folder.write_rows(out, sharding.merge_rows(folders))
        if plan is None:
            plan = grading.infer_assignment(catalog, gradebook.iter_rows(out))
        written = out_folder.finish(out, plan, grading.titles(catalog), ", ".join(str(f) for f in folders))
    return Graded(out, plan, written, [], 0, 0, 0, 0, time.perf_counter() - started)


def _problems(result: Graded) -> None:
    """What the exit status says beyond bad input: a check that could not finish (3), a failed save (4)."""
    tally = result.tally
    if tally.unfinished:
        n = tally.unfinished
        result.problem_kind = "check"
        result.problem = (f"the check of {n} row{'s' if n > 1 else ''} could not finish (lines "
                          f"{', '.join(str(line) for line in tally.unfinished_lines)}); they score 0 in the "
                          "gradebook: grade them again when the machine is quiet")
    if tally.unsaved:
        n = tally.unsaved
        result.problem_kind = "save"
        result.problem = (f"{n} graded answer{'s' if n > 1 else ''} could not be saved in full to progress; each "
                          "row's save_error says why")


def workers(asked: int, rows: int, notice: Callable[[str], None]) -> int:
    """The workers to start: as asked, but no more than the cores (said once) or the rows to run."""
    cores = grading.usable_cores()
    jobs = asked
    if asked > cores:
        notice(f"-j {asked} asks for more check workers than this machine's {cores} core"
               f"{'s' if cores > 1 else ''}; using {cores}")
        jobs = cores
    return max(1, min(jobs, rows))
