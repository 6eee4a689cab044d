"""The instructor's commands: ``tutor grade``, ``tutor gradescope`` and ``tutor report``.

Each reads its arguments, hands the work to :mod:`tutor.instructor` (grading a
class is :mod:`tutor.instructor.course`: data in, data out) and returns a reply
(:mod:`tutor.cli.replies`); the views are in :mod:`tutor.cli.output`. Exit
codes: 0 done; 2 bad input (an ambiguous column, an assignment that does not
read, an unwritable or busy folder, a grading that would run unconfined); 3 a
check could not finish or no worker could start; 4 a graded answer could not be
saved to progress, or a file of the grading could not be written.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tutor.cli.common import catalog as load_catalog
from tutor.cli.common import catalog_or_none
from tutor.cli.replies import EXIT_CHECK, EXIT_SAVE, EXIT_USAGE, Events, GradeReply, GradescopeReply, ReportReply, UsageError
from tutor.instructor import assignment as assignments
from tutor.instructor import course, gradebook
from tutor.instructor import grade as grading
from tutor.model.attempts import ProgressError
from tutor.store.files import write_text_atomically
from tutor.store.progress import ProgressStore, default_folder


@dataclass
class Summary:
    """What ``tutor grade`` did, for its view."""

    counts: dict = field(default_factory=dict)
    rows: int = 0
    learners: int = 0
    exercises: list = field(default_factory=list)
    inferred: bool = False
    max_score: float = 0.0
    workers: int = 1
    duration_s: float = 0.0
    gradebook: Path | None = None
    results: Path | None = None
    saved: int | None = None
    progress_folder: Path | None = None
    checks: int = 0
    resumed: int = 0
    warnings: int = 0


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: stop as Ctrl-C does (every worker stopped, its cgroups removed, the rows
    graded so far kept). SIGHUP is the grader's terminal or ssh session going away mid-batch."""


def refuse_unconfined(args) -> None:
    """Refuse, before anything is read or written, to grade where confinement is turned off
    (``TUTOR_CONFINE=off``) unless ``--allow-unconfined`` says so; a machine that cannot confine is
    refused by the runner at its first run (:class:`tutor.sandbox.runner.UnconfinedError`).

    Raises:
        UsageError: confinement is off and ``--allow-unconfined`` was not given.
    """
    # deferred: the sandbox's policy is read only by the commands that run code
    from tutor.sandbox.confine import ENV, enabled
    from tutor.sandbox.runner import unconfined_sentence
    if not getattr(args, "allow_unconfined", False) and not enabled():
        raise UsageError(unconfined_sentence(f"{ENV}=off turned confinement off"))


def runner_factory(args) -> Callable:
    """How this grading makes its runners: the tests' stand-in, else a :class:`tutor.sandbox.runner.Runner`
    that honours ``--timeout-scale`` and refuses to run unconfined without ``--allow-unconfined``."""
    given = getattr(args, "runner_factory", None)
    if given is not None:
        return given
    return grading.runner_factory_for(bool(getattr(args, "allow_unconfined", False)),
                                      getattr(args, "timeout_scale", None))


def _store_to_save_in(args) -> ProgressStore | None:
    """The progress store ``--save`` writes into, checked writable now; None without ``--save``.

    Raises:
        UsageError: the progress folder cannot be written (the sentence names it).
    """
    if not args.save:
        return None
    store = ProgressStore(default_folder(getattr(args, "progress_dir", None)))
    try:
        store.ensure_writable()
    except ProgressError as exc:
        raise UsageError(course.without_no_save(exc)) from None
    return store


def grade(args, events: Events) -> GradeReply:
    """``tutor grade``: answers (``--answers``), repairs (``--fixes``) or ``merge DIR...`` — see
    :mod:`tutor.instructor.grade`. SIGTERM and SIGHUP end it as Ctrl-C does: every worker stopped, the rows
    graded so far kept."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        def terminated(signum, _frame):
            raise Terminated()
        signals = [signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]  # no SIGHUP on Windows
        previous = {sig: signal.signal(sig, terminated) for sig in signals}
    try:
        return _grade(args, events)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _grade(args, events: Events) -> GradeReply:
    started = time.perf_counter()
    catalog = load_catalog()
    words = list(getattr(args, "words", None) or [])
    req = request(args)
    if words:
        if words[0] != "merge" or len(words) < 2:
            raise UsageError(f"tutor grade takes 'merge DIR...' or --answers FILE, not {' '.join(words)!r}")
        done = course.merge(req, catalog, [Path(w) for w in words[1:]])
        data = {"merged": words[1:], **_files(done), "rows": _read_rows(done)}
        return GradeReply(data, 0, rows=[], summary=_summary(done, started))
    if req.fixes and req.answers:
        raise UsageError("grade one kind at a time: --answers FILE (predictions) or --fixes DIR (repairs), not both")
    if not req.fixes and not req.answers:
        raise UsageError("say what to grade: --answers FILE (predictions) or --fixes DIR (repairs)")
    if req.answers == "-" and not req.out:
        raise UsageError("--answers - reads standard input; say where the gradebook goes with --out DIR")
    refuse_unconfined(args)
    req.store = _store_to_save_in(args)
    use = course.grade_fixes if req.fixes else course.grade_answers
    with Progress(sys.stderr) as progress:
        def graded(outcome) -> None:
            events.graded(outcome)
            progress.graded(outcome)
        done = use(req, catalog, graded, events.notice)
    data = {("fixes" if req.fixes else "answers"): str(req.fixes or req.answers), **_files(done),
            "workers": done.workers, "rows": [r.to_dict() for r in done.graded],
            "rows_not_shown": done.rows_graded - len(done.graded), "saved": done.saved
            if req.store is not None else None, "checks_run": done.checks, "checks_reused": done.reused,
            "resumed_rows": done.resumed, "shard": req.shard,
            "progress_folder": str(req.store.folder) if req.store is not None else None,
            "duration_s": round(done.duration_s, 3)}
    if req.fixes:
        data["per_submission_s"] = round(done.duration_s / max(1, done.rows_graded), 3)
    code = 0
    if done.problem:
        code = EXIT_SAVE if done.problem_kind == "save" else EXIT_CHECK
        data["error"] = done.problem
    summary = _summary(done, started, req.store)
    return GradeReply(data, code, rows=done.graded, summary=summary)


class Progress:
    """How far a grading is, on stderr: a Rich progress bar on a terminal, else a line of counts every
    :attr:`EVERY` rows and one at the end (a log keeps them; nothing is redrawn)."""

    EVERY = 1000

    def __init__(self, stream) -> None:
        self.stream, self.counts, self.rows, self.bar = stream, {}, 0, None
        self.terminal = bool(getattr(stream, "isatty", lambda: False)())

    def __enter__(self) -> "Progress":
        if self.terminal:
            # deferred: Rich loads only when something is drawn
            from rich.console import Console
            from rich.progress import BarColumn, Progress as Bar, SpinnerColumn, TextColumn
            self.bar = Bar(SpinnerColumn(), TextColumn("graded {task.completed} rows"), BarColumn(),
                           TextColumn("{task.description}"), console=Console(file=self.stream), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("", total=None)
        return self

    def graded(self, outcome) -> None:
        self.rows += 1
        said = getattr(outcome, "tally", outcome.status)  # a warm-up's row apart from the passes and fails
        self.counts[said] = self.counts.get(said, 0) + 1
        if self.bar is not None:
            self.bar.update(self.task, completed=self.rows, description=self._counts())
        elif self.rows % self.EVERY == 0:
            self._line()

    def _counts(self) -> str:
        return ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(self.counts.items()))

    def _line(self) -> None:
        self.stream.write(f"graded {self.rows} rows: {self._counts()}\n")
        self.stream.flush()

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
        elif self.rows and self.rows % self.EVERY:
            self._line()


def request(args) -> course.Request:
    """The grading the arguments ask for, as data (:class:`tutor.instructor.course.Request`)."""
    return course.Request(answers=getattr(args, "answers", None), fixes=getattr(args, "fixes", None),
                          out=Path(args.out) if getattr(args, "out", None) else None,
                          assignment=getattr(args, "assignment", None), exercises=getattr(args, "exercises", None),
                          columns=getattr(args, "columns", None), layout=getattr(args, "layout", None),
                          shard=getattr(args, "shard", None), resume=bool(getattr(args, "resume", False)),
                          jobs=getattr(args, "jobs", 1) or 1, device=getattr(args, "device", "auto"),
                          hidden_seeds=getattr(args, "hidden_seeds", None), runner_factory=runner_factory(args))


def _files(done) -> dict:
    w = done.written
    return {"out": str(done.out), "gradebook": str(w.gradebook), "results": str(w.results),
            "rows_file": str(w.rows_file), "counts": w.counts, "learners": w.learners, "exercises": done.plan.ids,
            "assignment": done.plan.to_dict(), "inferred": done.plan.inferred, "max_score": done.plan.max_score}


def _read_rows(done) -> list:
    return gradebook.read_rows(done.out)


def _summary(done, started: float, store=None) -> Summary:
    w = done.written
    return Summary(counts=w.counts, rows=w.rows, learners=w.learners, exercises=done.plan.ids,
                   inferred=done.plan.inferred, max_score=done.plan.max_score, workers=done.workers,
                   duration_s=time.perf_counter() - started, gradebook=w.gradebook, results=w.results,
                   saved=done.saved if store is not None else None,
                   progress_folder=store.folder if store is not None else None, checks=done.checks,
                   resumed=done.resumed, warnings=w.warnings)


# --- Gradescope ------------------------------------------------------------------------------------

def gradescope(args, events: Events) -> GradescopeReply:
    """``tutor gradescope``: read the submission, grade it, write results.json (always, even when it fails);
    see :mod:`tutor.instructor.gradescope`."""
    # deferred: each instructor command loads its own tools and a runner only when it runs
    from tutor.instructor import gradescope as autograder
    from tutor.sandbox.runner import DeviceError, UnconfinedError, WorkerError
    root = Path(args.root)
    submission = Path(args.submission) if args.submission else root / "submission"
    results_path = Path(args.results) if args.results else root / "results" / "results.json"
    plan_path = Path(args.assignment) if args.assignment else root / "source" / "assignment.toml"
    code, error, result, plan = 0, None, None, None
    try:
        refuse_unconfined(args)
        catalog = load_catalog()
        plan = assignments.load(plan_path, catalog)
        meta = autograder.metadata(root)
        if plan.due is None and isinstance(meta.get("assignment"), dict) and meta["assignment"].get("due_date"):
            plan = assignments.parse({**autograder.plan_data(plan), "due": meta["assignment"]["due_date"]}, catalog,
                                     str(plan_path))
        rows = autograder.read_submission(submission, catalog, autograder.submitter(meta), meta.get("created_at"))
        runner = runner_factory(args)(catalog, args.device)
        try:
            result = autograder.grade_submission(catalog, rows, plan, runner,
                                                 hidden_seeds=getattr(args, "hidden_seeds", None))
        finally:
            runner.close()
    except (UsageError, UnconfinedError) as exc:
        code, error = EXIT_USAGE, str(exc)
    except (DeviceError, WorkerError) as exc:
        code, error = EXIT_CHECK, str(exc)
    if result is None:
        result = autograder.failure(error or "the autograder stopped", plan)
    try:
        results_path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(results_path, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {results_path} ({exc.strerror or exc})") from None
    data = {"results": str(results_path), "result": result}
    if error:
        data["error"] = error
    return GradescopeReply(data, code, path=results_path)


# --- the class report -------------------------------------------------------------------------------

def report(args, events: Events) -> ReportReply:
    """``tutor report DIR`` (:mod:`tutor.instructor.report`): build the report; a damaged file makes the exit status 2, the report is whole."""
    # deferred: each instructor command loads its own tools and a runner only when it runs
    from tutor.instructor.report import build_report
    report = build_report(args.folder, catalog_or_none(), args.top)
    data = report.to_dict()
    code = 0
    if report.damaged:
        code = EXIT_USAGE
        names = ", ".join(Path(d["file"]).name for d in report.damaged[:5])
        more = f" and {len(report.damaged) - 5} more" if len(report.damaged) > 5 else ""
        data["error"] = (f"{len(report.damaged)} progress file{'s' if len(report.damaged) > 1 else ''} cannot be read "
                         f"and {'are' if len(report.damaged) > 1 else 'is'} not counted ({names}{more}); "
                         "'damaged' says why — fix them by hand, nothing was changed")
        if getattr(args, "json", False):
            events.notice(data["error"])  # the Rich and CSV views say it after the report
    return ReportReply(data, code, report=report, csv=bool(getattr(args, "csv", False)))
