"""The learner's commands: run, fix, break, progress, review, and the TUI (list and show: :mod:`tutor.cli.browse`).

Each reads its arguments and returns data (:mod:`tutor.cli.replies`); none
prints. Sentences for the learner that belong on stderr whatever the output
(a damaged progress file moved aside, an attempt that could not be saved) go
to ``events.notice`` as they happen (the helpers every command shares are
:mod:`tutor.cli.common`'s). :mod:`tutor.cli` picks the output.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from tutor.model import answers
from tutor import __version__
from tutor.cli.common import (catalog, catalog_or_none, choice_text, confidence_arg, confinement_notices, exercise,
                              learner_named, make_runner, no_folder, retry_notice, store_and_learner,
                              writable_session)
from tutor.cli.replies import (EXIT_CHECK, EXIT_MATCH, EXIT_MISMATCH, EXIT_SAVE, EXIT_USAGE, CouldNotRun, EditReply,
                               Events, EveryoneReply, ProgressReply, Reply, ReviewReply, RunReply, UsageError,
                               VersionReply)
from tutor.model.attempts import WARMUP, ProgressError

# The rules only some commands use (calibration, review, patches, verdicts, the progress format) are
# imported by those commands: 'tutor list' loads none of them.


def run(args, events: Events) -> RunReply:
    """``tutor run``: predict, run the check, grade, save — through one :class:`tutor.app.session.Session`."""
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.sandbox.runner import DeviceError, WorkerError
    from tutor.store.progress import MAX_NOTE_CHARS
    cat = catalog()
    context = {"id": args.id, "learner": None if args.no_save else learner_named(args), "prediction": args.predict}
    try:
        ex = exercise(cat, args.id)
    except UsageError as exc:  # an unknown id still says whose run it was
        raise UsageError(str(exc), context) from None
    context["id"] = ex.id
    try:
        parsed = ex.parse_answer(args.predict)
    except answers.AnswerError as exc:
        raise UsageError(f"{exc} (exercise {ex.id})", context) from None
    if args.explain and len(args.explain) > MAX_NOTE_CHARS and not args.no_save:
        # refused before any work: a note that cannot be kept must not leave an attempt saved without it
        raise UsageError(f"the --explain note is {len(args.explain)} characters long; keep it under "
                         f"{MAX_NOTE_CHARS} (nothing was run or saved)", context)
    confidence = confidence_arg(getattr(args, "confidence", None), ex)
    if args.no_save and args.explain:
        events.notice("--explain is not saved with --no-save; drop --no-save to keep the note.")
    session = writable_session(args, events, cat, context)
    learner = context["learner"]
    if session.store is not None:
        learner = session.progress.learner or learner  # the name the file holds (Ada for --learner ADA)
    try:
        outcome = session.attempt(ex, args.predict, seed=args.seed, note=args.explain, confidence=confidence)
    except DeviceError as exc:
        raise UsageError(str(exc), context) from None
    except WorkerError as exc:
        raise CouldNotRun(str(exc), context) from None
    finally:
        session.close()
    if outcome.save_error:
        events.notice(outcome.save_error if outcome.saved_to else f"the attempt was not saved: {outcome.save_error}")
    result = outcome.result
    if result.status == "timeout":
        events.notice(retry_notice(ex, result, args.predict, args.seed))
    confinement_notices(result, events.notice, getattr(session.runner, "known_confinement_why", ""))
    saved = str(outcome.saved_to) if outcome.saved_to else None
    data = result.to_dict()
    data["learner"] = learner
    data["saved_to"] = saved
    data["observed_text"] = ex.kind.show_observation(result.observed) if result.observed is not None else None
    # Which side the prediction is graded against (the seed it ran with is result.seed).
    data["observe"] = ex.observe
    data["prediction_choice_text"] = choice_text(ex, parsed)
    data["observed_choice_text"] = choice_text(ex, result.observed)
    # the explain-back note as saved: text everywhere, "" when none was saved (as in 'tutor progress')
    data["note"] = args.explain if outcome.note_saved else ""
    data["note_saved"] = outcome.note_saved
    data["confidence"] = confidence  # as given with --confidence (saved with the attempt), or None
    # A warm-up (graded false) is a bet that counts for nothing: a missed bet is no mismatch, so it exits 0.
    data["graded"] = ex.graded
    code = {"pass": EXIT_MATCH, "fail": EXIT_MISMATCH if ex.graded else EXIT_MATCH}.get(result.status, EXIT_CHECK)
    if outcome.save_error and code != EXIT_CHECK:
        code = EXIT_SAVE
        data["error"] = outcome.save_error
    return RunReply(data, code, exercise=ex, result=result, saved_to=saved)


def fix(args, events: Events) -> EditReply:
    """``tutor fix``: run the learner's repaired file (or patch) and measure whether it is fixed.

    Exit 0 fixed, 1 not fixed (the learner's side observed something else,
    raised, timed out or does not compile), 2 usage (no such file, a patch
    that does not apply), 3 could not run (the clean side did not measure,
    or the worker would not start). On the capstone it is the hunt.
    """
    return _edit(args, events, "fix")


def break_(args, events: Events) -> EditReply:
    """``tutor break``: run the learner's own fault of the clean subject file against their prediction.

    Exit 0 the prediction (of the exercise's kind, or an exception name) matched what the learner's side
    did, or was free text; 1 it did not match, or the file does not compile;
    2 usage; 3 could not run.
    """
    return _edit(args, events, "break")


def _edit(args, events: Events, mode: str) -> EditReply:
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.model.patch import EditError
    from tutor.sandbox.runner import DeviceError, WorkerError
    cat = catalog()
    ex = exercise(cat, args.id)
    session = writable_session(args, events, cat, someone_else_confined=True)
    try:
        task = _edit_task(args, events, session, ex, mode)
        text = _learner_text(args, task)
        if task.mode == "hunt":
            _say_hunted_file(args, events, task, text)
        run = session.start_edit(task, text, getattr(args, "predict", None), instruments=not args.no_instruments,
                                 hidden_seeds=getattr(args, "hidden_seeds", None))
        outcome = run.execute()
    except EditError as exc:
        raise UsageError(str(exc)) from None
    except DeviceError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        raise CouldNotRun(str(exc)) from None
    finally:
        session.close()
    working_copy = None
    if session.store is not None:
        try:
            working_copy = str(session.save_working_copy(task, outcome.text))
        except ProgressError as exc:
            events.notice(f"your working copy was not kept: {exc}")
    if outcome.save_error:
        events.notice(f"the attempt was not saved: {outcome.save_error}")
    confinement_notices(outcome.result, events.notice, getattr(session.runner, "known_confinement_why", ""))
    data = edit_data(ex, outcome)
    data["saved_to"] = str(outcome.saved_to) if outcome.saved_to else None
    data["working_copy"] = working_copy
    code = edit_exit_code(outcome)
    if outcome.save_error and code != EXIT_CHECK:
        code = EXIT_SAVE
        data["error"] = f"the attempt was not saved: {outcome.save_error}"
    return EditReply(data, code, exercise=ex, outcome=outcome, saved_to=data["saved_to"],
                     working_copy=working_copy)


def _edit_task(args, events: Events, session, ex, mode: str):
    """The task of ``tutor fix`` / ``tutor break``; with --no-save the capstone still hunts the learner's
    own mystery, read from their progress (which is not written)."""
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.app.session import Session
    seed = getattr(args, "seed", None)
    if session.store is None and seed is None and ex.seed_per_attempt:
        try:
            store, learner = store_and_learner(args, lambda sentence: None)
            reader = Session(session.catalog, session.runner, store, learner)
            reader.load(move_aside=False)
            return reader.edit_task(ex, mode)
        except (UsageError, ProgressError):
            pass  # no progress to read: the first mystery, as for a new learner
    return session.edit_task(ex, mode, seed)


def _say_hunted_file(args, events: Events, task, text: str) -> None:
    """Name the file a hunt runs the learner's file as, and say when the file does not look like it."""
    import difflib  # deferred: only a hunt compares the learner's file with the one it replaces
    name = getattr(args, "patch", None) or args.file
    events.notice(f"the hunt of mystery {task.seed} expects your edited {task.path}: {name} ran in its place")
    if not getattr(args, "patch", None):
        likeness = difflib.SequenceMatcher(None, task.start.splitlines(), text.splitlines()).quick_ratio()
        if likeness < 0.5:
            events.notice(f"{name} shares few lines with {task.path}; is it the file this hunt gave you?")


def _learner_text(args, task) -> str:
    """The learner's whole file: ``--file`` as it is, or ``--patch`` applied to the task's starting file.

    Raises:
        UsageError: the file cannot be read as UTF-8 text; a patch that does not apply (the hunk named).
        tutor.model.patch.EditError: passed on from the patch.
    """
    from tutor.model.patch import MAX_EDIT_BYTES, apply_patch  # deferred: only an edit command reads a patch
    name = getattr(args, "patch", None) or args.file
    what = "patch" if getattr(args, "patch", None) else "file"
    try:
        with open(name, "rb") as fh:
            raw = fh.read(MAX_EDIT_BYTES * 4 + 1)
    except FileNotFoundError:
        raise UsageError(f"there is no {what} {name!r}; give the path of {_wanted(task, what)}") from None
    except OSError as exc:
        raise UsageError(f"cannot read the {what} {name!r} ({exc.strerror or exc})") from None
    if len(raw) > MAX_EDIT_BYTES * 4:
        raise UsageError(f"the {what} {name!r} is larger than {MAX_EDIT_BYTES * 4 // 1024} KiB; "
                         f"edits over {MAX_EDIT_BYTES // 1024} KiB are refused")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"the {what} {name!r} is not UTF-8 text; save it as UTF-8") from None
    if what == "patch":
        return apply_patch(task.start, text, task.path)
    return text


def _wanted(task, what: str) -> str:
    """What ``--file`` or ``--patch`` should name, said without giving a hunt away: a hunt's file is
    named once its run has shown the mystery (before then the name tells where the hidden fault is)."""
    if task.hidden:
        mine = "your repaired copy of" if what == "file" else "your diff against"
        return f"{mine} the file that hides mystery {task.seed}'s fault"
    edited = "your repaired" if task.mode == "fix" else "your edited"
    return f"{edited} {task.path}" if what == "file" else f"your diff against the faulted {task.path}"


def edit_data(ex, outcome) -> dict:
    """The JSON of an edit-mode run: ``tutor run``'s fields, then mode, diff, fixed, yours, verdict, instruments."""
    from tutor.model.verdict import YOURS, first_instrument_divergence, instruments_holding  # deferred: edits only
    result, verdict, task = outcome.result, outcome.verdict, outcome.task
    data = result.to_dict()
    data["observed_text"] = ex.kind.show_observation(result.observed) if result.observed is not None else None
    data["observe"] = ex.observe
    data["note"] = None
    if task.hidden:
        data["fault"] = None  # the hunt's fault stays hidden
    data.update(mode=task.mode, file=task.path, diff=outcome.diff, fixed=verdict.fixed, verdict=verdict.to_dict(),
                prediction=outcome.prediction, seed=result.seed)
    data["yours"] = {"status": verdict.yours_status, "observed": verdict.yours_observed,
                     "observed_text": ex.kind.show_observation(verdict.yours_observed)
                     if verdict.yours_status == "ok" else None,
                     "evidence": result.evidence.get(YOURS, []), "error": verdict.yours_error,
                     "output": result.output.get(YOURS, "")}
    if task.mode == "break":
        data["correct"] = verdict.prediction_correct
        data["prediction_correct"] = verdict.prediction_correct
    instruments = outcome.instruments
    data["instruments"] = None if instruments is None else {
        "status": instruments.status, "clean": instruments.observations.get("clean"),
        "yours": instruments.observations.get(YOURS), "errors": instruments.errors,
        "rows": instruments_holding(instruments),
        "first_divergence": first_instrument_divergence(instruments)}
    if verdict.yours_status == "error" and verdict.status == "syntax error":
        data["status"] = "error"
    elif verdict.yours_status in ("error", "timeout"):
        data["status"] = verdict.yours_status
    return data


def edit_exit_code(outcome) -> int:
    """0 fixed (or a break's prediction held, or free text), 1 not, 3 could not run (see :func:`fix`)."""
    verdict = outcome.verdict
    if verdict.status == "could not run":
        return EXIT_CHECK
    if outcome.task.mode == "break":
        if verdict.status == "syntax error":
            return EXIT_MISMATCH
        return EXIT_MISMATCH if verdict.prediction_correct is False else EXIT_MATCH
    return EXIT_MATCH if verdict.fixed else EXIT_MISMATCH


def progress(args, events: Events) -> Reply:
    """``tutor progress``: one learner's attempts and notes; reads only, moves nothing.

    A folder given by ``--progress-dir`` or TUTOR_PROGRESS_DIR that does not
    exist, and a learner named by ``--learner`` without a file there, are
    usage errors (exit 2): a typo must not read as "no attempts yet". The
    learner's own default name with no file yet is empty progress.
    """
    from tutor.model.calibration import calibration_by_set  # deferred: only a progress command counts it
    if args.all:
        return progress_of_everyone(args)
    store, learner = store_and_learner(args, events.notice)
    _folder_must_exist(args, store)
    if args.learner is not None and not store.path(learner).exists():
        raise UsageError(_no_such_learner(store, learner), {"learner": learner})
    try:
        loaded = store.load(learner, move_aside=False)  # a review never moves a file
    except ProgressError as exc:
        raise UsageError(str(exc), {"learner": learner}) from None
    for warning in loaded.warnings:
        events.notice(warning)
    data = loaded.to_dict()
    data["file"] = str(store.path(learner))
    cat = catalog_or_none() if loaded.exercises else None
    seeded = {e.id for e in cat.exercises if e.seed_per_attempt} if cat else set()
    _typed_attempts(cat, data)
    data["kept_aside"] = [str(p) for p in _kept_aside_of(store, learner)]
    calibration = None
    if cat is not None:
        overall, per_set = calibration_by_set(cat, loaded)
        calibration = (overall, per_set)
        data["calibration"] = {"overall": overall.to_dict(),
                               "sets": {set_id: c.to_dict() for set_id, c in per_set.items()}}
    return ProgressReply(data, learner=loaded.learner, store=store, progress=loaded, seeded=seeded, catalog=cat,
                         calibration=calibration)


def _folder_must_exist(args, store) -> None:
    """A progress folder named by ``--progress-dir`` or TUTOR_PROGRESS_DIR that is missing: exit 2."""
    named = args.progress_dir or os.environ.get("TUTOR_PROGRESS_DIR")
    if named and not store.folder.is_dir():
        raise UsageError(no_folder(store.folder))


def _no_such_learner(store, learner: str) -> str:
    """The sentence for a learner without a progress file: who is there, or how a first attempt is saved."""
    others = store.learners()
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        return (f"there is no progress for learner {learner!r} in {store.folder}; the learners there are "
                f"{shown} ('tutor progress --all' lists them)")
    return (f"there is no progress for learner {learner!r} in {store.folder} yet; attempts are saved there by "
            f"'tutor run ID --predict ANSWER --learner NAME'")


def _kept_aside_of(store, learner: str) -> list:
    """The damaged files of this learner that were moved aside."""
    name = store.path(learner).name
    return [p for p in store.kept_aside() if p.name.startswith(f"{name}.corrupt-")]


def _typed_attempts(cat, data: dict) -> None:
    """Give each attempt of a progress document the run command's types: ``observed`` as the value
    (a list for a shape, a number, true/false), ``observed_text`` and ``prediction_text`` as text.

    ``observed`` is read back from the saved text by the exercise's kind; it is None when the
    exercise is not in the catalog or the text does not read (an older tutor's words).
    """
    for ex_id, entry in data.get("exercises", {}).items():
        try:
            ex = cat.get(ex_id) if cat is not None else None
        except KeyError:
            ex = None
        for attempt in entry.get("attempts", []):
            text = attempt.get("observed", "")
            attempt["observed_text"] = text
            attempt["prediction_text"] = attempt.get("prediction", "")
            attempt["observed"] = typed_value(ex, text)


def typed_value(ex, text: str):
    """A saved answer text as the exercise's canonical value, or None when it does not read."""
    if ex is None or not text:
        return None
    try:
        return ex.parse_answer(text)
    except answers.AnswerError:
        return None


def review(args, events: Events) -> ReviewReply:
    """``tutor review``: the exercises due for review today (Leitner boxes after 1, 3 and 7 days); reads only."""
    from tutor.model.review import INTERVALS_DAYS, SURE, review_states  # deferred: only a review uses the boxes
    store, learner = store_and_learner(args, events.notice)
    try:
        loaded = store.load(learner, move_aside=False)  # a review never moves a file
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    for warning in loaded.warnings:
        events.notice(warning)
    cat = catalog()
    now = datetime.now(timezone.utc)
    states = review_states(cat, loaded)
    due = [s for s in states if s.due <= now]
    later = [s for s in states if s.due > now]

    def row(state) -> dict:
        ex = cat.get(state.exercise_id)
        return {**state.to_dict(), "set": ex.set, "title": ex.title}
    return ReviewReply({"learner": learner, "file": str(store.path(learner)), "now": now.isoformat(timespec="seconds"),
                        "due": [row(s) for s in due], "later": [row(s) for s in later],
                        "intervals_days": list(INTERVALS_DAYS), "sure_percent": SURE},
                       learner=learner, catalog=cat, due=due, later=later)


def progress_of_everyone(args) -> EveryoneReply:
    """``tutor progress --all``: one summary line per learner file in the folder; reads only.

    A file that cannot be read gets its reason on its row; the command then
    exits 2, as a review of that learner alone would. A missing folder is an
    error (exit 2); damaged files moved aside earlier are counted and named.
    """
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.store.migration import classify, read_bytes
    from tutor.store.progress import ProgressStore, default_folder
    if args.learner:
        raise UsageError("--all reviews every learner in the folder; drop --learner, or drop --all")
    store = ProgressStore(default_folder(args.progress_dir))
    if not store.folder.is_dir():
        raise UsageError(no_folder(store.folder))
    cat = catalog_or_none()
    total = len(cat.exercises) if cat else None
    ungraded = {e.id for e in cat.exercises if not e.graded} if cat else set()
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
        if loaded.read_only:
            try:
                newer = classify(read_bytes(file.path))
            except ProgressError:
                newer = None
            if newer is not None and newer.newer is not None and newer.data is None:
                # a newer tutor's file in a shape this one cannot read: named, never an empty learner
                row["error"] = (f"{file.path} was written by a newer tutor (format {newer.newer}) in a shape this "
                                "one cannot read; upgrade tutor to see it")
                rows.append(row)
                continue
            row["read_only"] = True
        row["learner"] = loaded.learner
        entries = loaded.exercises.values()
        times = [a.time for e in entries for a in e.attempts]
        # a warm-up (its bets, a Find and fix of its mystery) scores nothing: counted apart from the exercises
        # tried, never in them
        warmed = sum(bool(e.attempts) and (ex_id in ungraded or all(a.mode == WARMUP for a in e.attempts))
                     for ex_id, e in loaded.exercises.items())
        row.update(tried=sum(bool(e.attempts) for e in entries) - warmed, warm_ups=warmed,
                   solved=sum(e.solved for e in entries),
                   attempts=len(times), notes=sum(bool(e.note.strip()) for e in entries),
                   last_attempt=max(times) if times else None)
        rows.append(row)
    kept = [str(p) for p in store.kept_aside()]
    bad = [r for r in rows if r["error"]]
    data = {"folder": str(store.folder), "exercise_count": total, "warm_up_count": len(ungraded) if cat else None,
            "learners": rows, "kept_aside": kept}
    if bad:
        data["error"] = (f"{len(bad)} progress file{'s' if len(bad) > 1 else ''} cannot be read "
                         f"({', '.join(Path(r['file']).name for r in bad)}); each row says why")
    return EveryoneReply(data, EXIT_USAGE if bad else 0, folder=store.folder, total=total, rows=rows,
                         kept_aside=kept, ungraded=len(ungraded))


def version(args, events: Events) -> VersionReply:
    """``tutor --version``: this tutor's version, its JSON schema and progress format."""
    from tutor.store.migration import FORMAT_VERSION  # deferred: as in progress_of_everyone
    return VersionReply({"version": __version__, "progress_format": FORMAT_VERSION})


def tui(args) -> int:
    """Open the terminal UI: one session, its progress read once, shown until the learner quits."""
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.app.session import Session
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the terminal UI needs an interactive terminal; use 'tutor list', 'tutor show ID' "
                         "and 'tutor run ID --predict ANSWER' instead")
    notices: list[str] = []
    store, learner = store_and_learner(args, notices.append)  # shown in the TUI, where stderr is hidden
    cat = catalog()
    session = Session(cat, make_runner(cat, args.device, args.timeout_scale), store, learner)
    try:
        session.load()
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    # Textual loads only when the TUI opens (the first screen of 'tutor' and every other command stay fast)
    from tutor.ui.app import run_app
    run_app(session, warnings=notices)
    return 0


