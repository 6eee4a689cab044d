"""The instructor's commands: ``tutor grade``, ``tutor gradescope`` and ``tutor report``.

Each reads its arguments, hands the work to :mod:`tutor.instructor` (data in,
data out) and returns a reply (:mod:`tutor.cli.replies`); the views are in
:mod:`tutor.cli.output`. Exit codes: 0 done; 2 bad input (an ambiguous
column, an assignment that does not read, an unwritable folder); 3 a check
could not finish or no worker could start; 4 a graded answer could not be
saved to progress.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tutor.cli.common import catalog as load_catalog
from tutor.cli.common import catalog_or_none
from tutor.cli.replies import (EXIT_CHECK, EXIT_SAVE, EXIT_USAGE, CouldNotRun, Events, GradeReply, GradescopeReply,
                               ReportReply, UsageError)
from tutor.instructor import assignment as assignments
from tutor.instructor import answer_rows, saving
from tutor.instructor import columns as lms
from tutor.instructor import grade as grading
from tutor.instructor import gradebook, memo
from tutor.instructor import results as class_results
from tutor.instructor import shard as sharding
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
    """SIGTERM arrived: stop as Ctrl-C does (every worker stopped, the rows graded so far kept)."""


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
    # deferred: each instructor command loads a runner only when it runs
    from tutor.sandbox.runner import Runner
    allow, scale = bool(getattr(args, "allow_unconfined", False)), getattr(args, "timeout_scale", None)
    return lambda cat, dev: Runner(cat, device=dev, timeout_scale=scale, allow_unconfined=allow)


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
        raise UsageError(str(exc)) from None
    return store


def grade(args, events: Events) -> GradeReply:
    """``tutor grade``: answers (``--answers``), repairs (``--fixes``) or ``merge DIR...`` — see
    :mod:`tutor.instructor.grade`. SIGTERM ends it as Ctrl-C does: every worker stopped, the rows graded so far kept."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        def terminated(signum, _frame):
            raise Terminated()
        previous = signal.signal(signal.SIGTERM, terminated)
    try:
        return _grade(args, events)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _grade(args, events: Events) -> GradeReply:
    started = time.perf_counter()
    catalog = load_catalog()
    words = list(getattr(args, "words", None) or [])
    if words:
        if words[0] != "merge" or len(words) < 2:
            raise UsageError(f"tutor grade takes 'merge DIR...' or --answers FILE, not {' '.join(words)!r}")
        return _merge(args, events, catalog, [Path(w) for w in words[1:]], started)
    refuse_unconfined(args)
    if getattr(args, "fixes", None) and getattr(args, "answers", None):
        raise UsageError("grade one kind at a time: --answers FILE (predictions) or --fixes DIR (repairs), not both")
    if getattr(args, "fixes", None):
        return _grade_fixes(args, events, catalog, started)
    if not getattr(args, "answers", None):
        raise UsageError("say what to grade: --answers FILE (predictions) or --fixes DIR (repairs)")
    if args.answers == "-" and not args.out:
        raise UsageError("--answers - reads standard input; say where the gradebook goes with --out DIR")
    out = Path(args.out) if args.out else _default_out(Path(args.answers))
    given = grading.chosen_assignment(getattr(args, "assignment", None), getattr(args, "exercises", None), catalog)
    rows = answer_rows.read_answers(args.answers, catalog, lms.parse_columns(getattr(args, "columns", None)))
    part = sharding.parse(getattr(args, "shard", None))
    if part is not None:
        rows = [r for r in rows if sharding.belongs(r.key if r.key is not None else (r.learner or ""), part)]
    plan = given or assignments.inferred(catalog, {r.exercise for r in rows if r.problem is None})
    _ensure_folder(out)
    store = _store_to_save_in(args)
    saver = saving.Saver(catalog, store, events.notice) if store is not None else None
    earlier = gradebook.read_rows(out) if getattr(args, "resume", False) else []
    todo = answer_rows.not_yet_graded(rows, earlier)
    readable = sum(r.problem is None for r in todo)
    jobs = _workers(args.jobs, readable, events.notice)
    try:
        writer = gradebook.Writer(out, earlier)
    except OSError as exc:
        raise UsageError(f"cannot write the gradebook to {out} ({exc.strerror or exc}); choose another --out") from None
    pool = grading.RunnerPool(catalog, args.device, jobs, runner_factory(args))
    observations = memo.Observations()
    graded_now: list[dict] = []

    def done(outcome) -> None:
        if saver is not None:
            saver(outcome)
        record = outcome.to_dict()
        writer.append(record)
        graded_now.append(record)
        events.graded(outcome)

    try:
        results = grading.grade_rows(catalog, todo, pool, done, plan, observations)
    finally:
        pool.close()
        writer.close()
    every = sorted(earlier + graded_now, key=lambda r: r["line"])
    gradebook_path, results_path = out / gradebook.GRADEBOOK, out / "results.json"
    try:
        write_text_atomically(gradebook_path, gradebook.to_csv(every))
        data_json = class_results.class_results(every, plan, grading._titles(catalog), str(args.answers))
        write_text_atomically(results_path, json.dumps(data_json, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write the gradebook to {out} ({exc.strerror or exc}); choose another --out") from None
    counts: dict[str, int] = {}
    for r in every:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    summary = Summary(counts=counts, rows=len(every), learners=len({r["key"] for r in every if r.get("key")}),
                      exercises=plan.ids, inferred=plan.inferred, max_score=plan.max_score, workers=jobs,
                      duration_s=time.perf_counter() - started, gradebook=gradebook_path, results=results_path,
                      saved=sum(r.saved_to is not None for r in results) if store is not None else None,
                      progress_folder=store.folder if store is not None else None, checks=observations.measured,
                      resumed=len(earlier), warnings=sum(bool(r.get("warnings")) for r in every))
    unfinished = [r for r in results if r.result is not None and r.status not in grading.GRADED]
    unsaved = [r for r in results if r.save_error]
    data = {"answers": str(args.answers), "out": str(out), "gradebook": str(gradebook_path),
            "results": str(results_path), "rows_file": str(out / gradebook.ROWS), "workers": jobs,
            "rows": [r.to_dict() for r in results], "counts": counts, "learners": summary.learners,
            "exercises": summary.exercises, "assignment": plan.to_dict(), "inferred": plan.inferred,
            "max_score": plan.max_score, "saved": summary.saved, "checks_run": observations.measured,
            "checks_reused": observations.reused, "resumed_rows": len(earlier),
            "shard": getattr(args, "shard", None),
            "progress_folder": str(store.folder) if store is not None else None,
            "duration_s": round(summary.duration_s, 3)}
    code = 0
    if unfinished:
        code = EXIT_CHECK
        data["error"] = (f"the check of {len(unfinished)} row{'s' if len(unfinished) > 1 else ''} could not finish "
                         f"(lines {', '.join(str(r.row.line) for r in unfinished[:10])}); they score 0 in the "
                         "gradebook: grade them again when the machine is quiet")
    if unsaved:
        code = EXIT_SAVE
        data["error"] = (f"{len(unsaved)} graded answer{'s' if len(unsaved) > 1 else ''} could not be saved in full "
                         "to progress; each row's save_error says why")
    return GradeReply(data, code, rows=results, summary=summary)


def _merge(args, events: Events, catalog, folders: list[Path], started: float) -> GradeReply:
    """``tutor grade merge DIR... --out DIR``: the shards' rows as one gradebook and one results.json."""
    if not getattr(args, "out", None):
        raise UsageError("tutor grade merge needs --out DIR for the joined gradebook and results.json")
    out = Path(args.out)
    plan = grading.chosen_assignment(getattr(args, "assignment", None), getattr(args, "exercises", None), catalog)
    rows = sharding.merge_rows(folders)
    plan = plan or grading.infer_assignment(catalog, rows)
    _ensure_folder(out)
    try:
        writer = gradebook.Writer(out, rows)
        writer.close()
        write_text_atomically(out / gradebook.GRADEBOOK, gradebook.to_csv(rows))
        data_json = class_results.class_results(rows, plan, grading._titles(catalog), ", ".join(str(f) for f in folders))
        write_text_atomically(out / "results.json", json.dumps(data_json, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write the gradebook to {out} ({exc.strerror or exc}); choose another --out") from None
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    summary = Summary(counts=counts, rows=len(rows), learners=len({r["key"] for r in rows if r.get("key")}),
                      exercises=plan.ids, inferred=plan.inferred, max_score=plan.max_score, workers=0,
                      duration_s=time.perf_counter() - started, gradebook=out / gradebook.GRADEBOOK,
                      results=out / "results.json")
    data = {"merged": [str(f) for f in folders], "out": str(out), "gradebook": str(summary.gradebook),
            "results": str(summary.results), "counts": counts, "learners": summary.learners,
            "exercises": plan.ids, "inferred": plan.inferred, "max_score": plan.max_score, "rows": rows}
    return GradeReply(data, 0, rows=[], summary=summary)


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
    cores = grading.usable_cores()
    jobs = asked
    if asked > cores:
        notice(f"-j {asked} asks for more check workers than this machine's {cores} core"
               f"{'s' if cores > 1 else ''}; using {cores}")
        jobs = cores
    return max(1, min(jobs, rows))


def _grade_fixes(args, events: Events, catalog, started: float) -> GradeReply:
    """``tutor grade --fixes DIR``: every learner's repairs on one warm worker (:mod:`tutor.instructor.fixes`)."""
    # deferred: each instructor command loads its own tools and a runner only when it runs
    from tutor.instructor import fixes
    from tutor.sandbox.runner import DeviceError, UnconfinedError, WorkerError
    plan = grading.chosen_assignment(getattr(args, "assignment", None), getattr(args, "exercises", None), catalog)
    rows = fixes.find(Path(args.fixes), catalog)
    part = sharding.parse(getattr(args, "shard", None))
    if part is not None:
        rows = [r for r in rows if sharding.belongs(r.key if r.key is not None else (r.learner or ""), part)]
    plan = plan or assignments.inferred(catalog, {r.exercise for r in rows if r.problem is None})
    out = Path(args.out) if args.out else Path(str(args.fixes).rstrip("/") + "-graded")
    _ensure_folder(out)
    store = _store_to_save_in(args)
    earlier = gradebook.read_rows(out) if getattr(args, "resume", False) else []
    todo = answer_rows.not_yet_graded(rows, earlier)
    for row in todo:
        if row.refused is not None:
            events.notice(f"{row.learner}: {row.problem}")
    runner = runner_factory(args)(catalog, args.device)
    writer = gradebook.Writer(out, earlier)
    results, graded = [], []
    seeds = getattr(args, "hidden_seeds", None)
    try:
        for row in todo:
            try:
                outcome = fixes.grade_one(catalog, runner, row, plan, store, save=store is not None,
                                          hidden_seeds=seeds)
            except (DeviceError, UnconfinedError) as exc:
                raise UsageError(str(exc)) from None
            except WorkerError as exc:
                raise CouldNotRun(str(exc)) from None
            record = outcome.to_dict()
            writer.append(record)
            results.append(outcome)
            graded.append(record)
            events.graded(outcome)
    finally:
        runner.close()
        writer.close()
    every = sorted(earlier + graded, key=lambda r: r["line"])
    write_text_atomically(out / gradebook.GRADEBOOK, gradebook.to_csv(every))
    data_json = class_results.class_results(every, plan, grading._titles(catalog), str(args.fixes))
    write_text_atomically(out / "results.json", json.dumps(data_json, indent=2, ensure_ascii=False) + "\n")
    counts: dict = {}
    for r in every:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    duration = time.perf_counter() - started
    summary = Summary(counts=counts, rows=len(every), learners=len({r["key"] for r in every if r.get("key")}),
                              exercises=plan.ids, inferred=plan.inferred, max_score=plan.max_score, workers=1,
                              duration_s=duration, gradebook=out / gradebook.GRADEBOOK, results=out / "results.json",
                              saved=sum(r.saved_to is not None for r in results) if store is not None else None,
                              progress_folder=store.folder if store is not None else None, checks=len(results),
                              resumed=len(earlier))
    data = {"fixes": str(args.fixes), "out": str(out), "gradebook": str(summary.gradebook),
            "results": str(summary.results), "rows": graded, "counts": counts, "learners": summary.learners,
            "exercises": plan.ids, "inferred": plan.inferred, "max_score": plan.max_score, "workers": 1,
            "saved": summary.saved, "resumed_rows": len(earlier), "duration_s": round(duration, 3),
            "per_submission_s": round(duration / max(1, len(todo)), 3)}
    code = 0
    if any(r.status in ("error", "timeout") for r in results):
        code = EXIT_CHECK
        data["error"] = "the check of some submissions could not run; they score 0 — grade them again"
    if any(r.save_error for r in results):
        code = EXIT_SAVE
        data["error"] = "some graded repairs could not be saved to progress; each row's save_error says why"
    return GradeReply(data, code, rows=results, summary=summary)


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
    code, error, result = 0, None, None
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
        result = autograder.failure(error or "the autograder stopped")
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
