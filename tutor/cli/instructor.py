"""The instructor's commands: ``tutor grade``, ``tutor report`` (the work is :mod:`tutor.instructor`) and
``tutor progress --all``, a line per learner of a folder."""

from __future__ import annotations

from pathlib import Path

from tutor.cli.common import catalog_or_none, no_folder
from tutor.cli.replies import EXIT_USAGE, Events, EveryoneReply, GradeReply, ReportReply, UsageError
from tutor.model.attempts import ProgressError


def grade(args, events: Events) -> GradeReply:
    """``tutor grade --answers FILE``: see :mod:`tutor.instructor.grade`."""
    # deferred: grading and the report load only for their own command
    from tutor.instructor import grade as grading
    return grading.command(args, events)


def report(args, events: Events) -> ReportReply:
    """``tutor report DIR``: see :mod:`tutor.instructor.report`."""
    # deferred: grading and the report load only for their own command
    from tutor.instructor import report as reporting
    return reporting.command(args, events)


def progress_of_everyone(args) -> EveryoneReply:
    """``tutor progress --all``: one summary line per learner file in the folder; reads only.

    A file that cannot be read gets its reason on its row; the command then
    exits 2, as a review of that learner alone would. A missing folder is an
    error (exit 2); damaged files moved aside earlier are counted and named.
    """
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.store.progress import ProgressStore, default_folder
    if args.learner:
        raise UsageError("--all reviews every learner in the folder; drop --learner, or drop --all")
    store = ProgressStore(default_folder(args.progress_dir))
    if not store.folder.is_dir():
        raise UsageError(no_folder(store.folder))
    cat = catalog_or_none()
    total = len(cat.exercises) if cat else None
    rows = []
    for file in store.learner_files():
        if file.shadowed:
            continue
        row = {"learner": file.name, "file": str(file.path), "error": None}
        try:
            loaded = store.load(file.name, move_aside=False)
        except ProgressError as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        row["learner"] = loaded.learner
        entries = loaded.exercises.values()
        times = [a.time for e in entries for a in e.attempts]
        row.update(tried=sum(bool(e.attempts) for e in entries), solved=sum(e.solved for e in entries),
                   attempts=len(times), notes=sum(bool(e.note.strip()) for e in entries),
                   last_attempt=max(times) if times else None)
        rows.append(row)
    kept = [str(p) for p in store.kept_aside()]
    bad = [r for r in rows if r["error"]]
    data = {"folder": str(store.folder), "exercise_count": total, "learners": rows, "kept_aside": kept}
    if bad:
        data["error"] = (f"{len(bad)} progress file{'s' if len(bad) > 1 else ''} cannot be read "
                         f"({', '.join(Path(r['file']).name for r in bad)}); each row says why")
    return EveryoneReply(data, EXIT_USAGE if bad else 0, folder=store.folder, total=total, rows=rows,
                         kept_aside=kept)
