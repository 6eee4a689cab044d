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
import json
import time
from dataclasses import replace
from pathlib import Path

from exercises import answers
from tutor.cli.replies import EXIT_CHECK, EXIT_SAVE, GradeReply, UsageError

#: The endings of a submitted file, and what they hold.
ENDINGS = {".py": "file", ".diff": "patch", ".patch": "patch"}


def find(folder: Path, catalog) -> list:
    """The submissions in ``folder``: AnswerRows of mode ``fix``, one per learner and exercise, sorted.

    A file that cannot be a submission (an unknown exercise, a learner folder name that is not allowed, a
    file that is not UTF-8) is an unreadable row with its reason.

    Raises:
        UsageError: ``folder`` is not a folder, or holds no learner folders.
    """
    from tutor.instructor.grade import AnswerRow
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
    from datetime import datetime, timezone
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")


def seeds_of(assignment, ex_id: str) -> tuple:
    """The hidden seeds an assignment sets for one exercise (none without an assignment)."""
    assigned = assignment.get(ex_id) if assignment is not None else None
    return assigned.hidden_seeds if assigned is not None else ()


def grade_one(catalog, runner, row, assignment=None, store=None, save: bool = False):
    """Run one fix submission (and its hidden seeds) on ``runner``; return its RowResult.

    Raises:
        tutor.sandbox.runner.WorkerError, tutor.sandbox.runner.DeviceError: the worker cannot run at all.
    """
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
            again = session.start_edit(replace(task, seed=seed), text, record=False).execute()
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


def command(args, events, catalog) -> GradeReply:
    """``tutor grade --fixes DIR``: every learner's repairs on one warm worker, into one gradebook."""
    from tutor.instructor import grade as grading
    from tutor.instructor import gradebook
    from tutor.instructor import results as class_results
    from tutor.model.attempts import ProgressError
    from tutor.store.progress import ProgressStore, default_folder
    from tutor.sandbox.runner import DeviceError, Runner, WorkerError
    started = time.perf_counter()
    plan = grading.load_assignment(args, catalog)
    rows = find(Path(args.fixes), catalog)
    part = grading.sharding.parse(getattr(args, "shard", None))
    if part is not None:
        rows = [r for r in rows if grading.sharding.belongs(r.key if r.key is not None else (r.learner or ""), part)]
    plan = plan or grading.assignments.inferred(catalog, {r.exercise for r in rows if r.problem is None})
    out = Path(args.out) if args.out else Path(str(args.fixes).rstrip("/") + "-graded")
    grading._ensure_folder(out)
    store = None
    if args.save:
        store = ProgressStore(default_folder(getattr(args, "progress_dir", None)))
        try:
            store.ensure_writable()
        except ProgressError as exc:
            raise UsageError(str(exc)) from None
    earlier = gradebook.read_rows(out) if getattr(args, "resume", False) else []
    todo = grading._not_yet_graded(rows, earlier)
    factory = getattr(args, "runner_factory", None) or (lambda cat, dev: Runner(cat, device=dev))
    runner = factory(catalog, args.device)
    writer = gradebook.Writer(out, earlier)
    results, graded = [], []
    try:
        for row in todo:
            try:
                outcome = grade_one(catalog, runner, row, plan, store, save=store is not None)
            except DeviceError as exc:
                raise UsageError(str(exc)) from None
            except WorkerError as exc:
                from tutor.cli.replies import CouldNotRun
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
    grading.write_atomically(out / gradebook.GRADEBOOK, gradebook.to_csv(every))
    data_json = class_results.class_results(every, plan, grading._titles(catalog), str(args.fixes))
    grading.write_atomically(out / "results.json", json.dumps(data_json, indent=2, ensure_ascii=False) + "\n")
    counts: dict = {}
    for r in every:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    duration = time.perf_counter() - started
    summary = grading.Summary(counts=counts, rows=len(every), learners=len({r["key"] for r in every if r.get("key")}),
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
