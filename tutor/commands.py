"""The headless commands: each reads its arguments and returns data; none prints.

A command takes the parsed arguments and an :class:`Events` sink and returns
a :class:`Reply`: ``data``, the one JSON object ``--json`` prints, the exit
``code``, and the domain objects the Rich view draws from. Sentences for the
learner that belong on stderr whatever the output (a damaged progress file
moved aside, an attempt that could not be saved) go to ``events.notice`` as
they happen; ``tutor check`` also reports each result as it finishes
(``events.checked``), so a long check shows its lines one by one. Bad input
raises :class:`UsageError` (exit 2); a check that cannot run at all raises
:class:`CouldNotRun` (exit 3). :mod:`tutor.cli` picks the output.

Exit codes (``tutor run``): 0 the prediction matched, 1 it did not, 2 a usage
or input error, 3 the check itself could not run (the subject raised,
crashed or timed out, or the check worker would not start).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from exercises import answers
from exercises.faults import diff

EXIT_MATCH, EXIT_MISMATCH, EXIT_USAGE, EXIT_CHECK = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input from the user: one sentence, exit 2."""


class CouldNotRun(Exception):
    """The check could not be run at all (e.g. the worker did not start): one sentence, exit 3."""


class Events(Protocol):
    """Where a command reports while it works (the chosen output)."""

    def notice(self, sentence: str) -> None:
        """One sentence for the learner, on stderr, now."""

    def checked(self, exercise, result, ok: bool) -> None:
        """``tutor check`` finished one exercise."""


@dataclass
class Reply:
    """What a command hands back.

    Attributes:
        data: the one JSON object ``--json`` prints.
        code: the exit status.
    """

    data: dict
    code: int = 0


@dataclass
class ListReply(Reply):
    sets: tuple = ()


@dataclass
class ShowReply(Reply):
    exercise: Any = None
    fault: Any = None
    patch: str = ""


@dataclass
class RunReply(Reply):
    exercise: Any = None
    result: Any = None
    saved_to: str | None = None


@dataclass
class EditReply(Reply):
    """``tutor fix`` / ``tutor break``: the exercise and the session's :class:`tutor.session.EditOutcome`."""

    exercise: Any = None
    outcome: Any = None
    saved_to: str | None = None
    working_copy: str | None = None


@dataclass
class CheckReply(Reply):
    """``faults``: rows of exercises with a fault; ``shown``: those whose fault showed;
    ``unfaulted``/``ran``: the same for exercises without a fault."""

    faults: int = 0
    shown: int = 0
    unfaulted: int = 0
    ran: int = 0


@dataclass
class ProgressReply(Reply):
    learner: str = ""
    store: Any = None
    progress: Any = None
    seeded: set = field(default_factory=set)


@dataclass
class EveryoneReply(Reply):
    folder: Path | None = None
    total: int | None = None
    rows: list = field(default_factory=list)


# --- shared ------------------------------------------------------------------

def catalog():
    """The catalog; a broken one is a usage error."""
    from tutor.catalog import CatalogError, load_catalog
    try:
        return load_catalog()
    except CatalogError as exc:
        raise UsageError(f"the exercise catalog is broken: {exc}") from None


def catalog_or_none():
    """The catalog, or None when it cannot be loaded (a review of progress still works without it)."""
    try:
        return catalog()
    except UsageError:
        return None


def exercise(cat, exercise_id: str):
    try:
        return cat.get(exercise_id)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def find_set(cat, name: str):
    """The set whose id or title is ``name``, ignoring case.

    Raises:
        UsageError: no set has that id or title; the sentence lists the ids.
    """
    wanted = name.strip().casefold()
    for s in cat.sets:
        if wanted in (s.id.casefold(), s.title.casefold()):
            return s
    raise UsageError(f"there is no set {name!r}; use a set id ({', '.join(s.id for s in cat.sets)}) "
                     "or a set title, as 'tutor list' shows them")


def store_and_learner(args, notice):
    """The progress store and learner name the flags and environment choose.

    A notice about the learner name (the login name could not be used) goes
    to ``notice``.

    Raises:
        UsageError: the learner name is unsafe.
    """
    from tutor.progress import ProgressError, ProgressStore, default_folder, default_learner_and_notice, \
        validate_learner
    try:
        if args.learner is not None:
            learner, sentence = validate_learner(args.learner), None
        else:
            learner, sentence = default_learner_and_notice()
        store = ProgressStore(default_folder(args.progress_dir))
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    if sentence is not None:
        notice(sentence)
    return store, learner


def _runner(cat, device: str):
    from tutor.runner import DeviceError, Runner
    try:
        return Runner(cat, device=device)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None


def choice_text(ex, choice_id) -> str | None:
    """The text of choice ``choice_id`` of a choice exercise; None for other kinds or no choice."""
    if ex.kind != "choice":
        return None
    return dict(ex.choices).get(choice_id) if isinstance(choice_id, str) else None


# --- commands ----------------------------------------------------------------

def list_(args, events: Events) -> ListReply:
    cat = catalog()
    sets = (find_set(cat, args.set_id),) if args.set_id else cat.sets
    return ListReply({"sets": [{"id": s.id, "title": s.title, "summary": s.summary,
                                "exercises": [e.to_dict() for e in s.exercises]} for s in sets],
                      "count": sum(len(s.exercises) for s in sets)}, sets=sets)


def show(args, events: Events) -> ShowReply:
    cat = catalog()
    ex = exercise(cat, args.id)
    fault = cat.fault_of(ex)
    patch = diff(fault) if fault else ""
    data = ex.to_dict()
    data.update(prompt=ex.prompt, explain=ex.explain, hints=list(ex.hints), diff=patch,
                fault_summary=fault.summary if fault else None)
    return ShowReply(data, exercise=ex, fault=fault, patch=patch)


def run(args, events: Events) -> RunReply:
    """``tutor run``: predict, run the check, grade, save — through one :class:`tutor.session.Session`."""
    from tutor.progress import ProgressError
    from tutor.runner import DeviceError, WorkerError
    from tutor.session import Session
    cat = catalog()
    ex = exercise(cat, args.id)
    try:
        parsed = ex.parse_answer(args.predict)
    except answers.AnswerError as exc:
        raise UsageError(f"{exc} (exercise {ex.id})") from None
    store, learner = (None, None) if args.no_save else store_and_learner(args, events.notice)
    if args.no_save and args.explain:
        events.notice("--explain is not saved with --no-save; drop --no-save to keep the note.")
    session = Session(cat, _runner(cat, args.device), store, learner)
    if store is not None:
        try:
            session.load()
        except ProgressError as exc:
            raise UsageError(str(exc)) from None
        for warning in session.warnings:
            events.notice(warning)
        if session.progress.read_only:
            raise UsageError("the progress file is read-only for this tutor; use --no-save or upgrade tutor")
        try:
            store.ensure_writable()
        except ProgressError as exc:
            raise UsageError(str(exc)) from None
    try:
        outcome = session.attempt(ex, args.predict, seed=args.seed, note=args.explain)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        raise CouldNotRun(str(exc)) from None
    finally:
        session.close()
    if outcome.save_error:
        events.notice(f"the attempt was not saved: {outcome.save_error}")
    result = outcome.result
    saved = str(outcome.saved_to) if outcome.saved_to else None
    data = result.to_dict()
    data["saved_to"] = saved
    data["observed_text"] = answers.show(ex.kind, result.observed) if result.observed is not None else None
    # Which side the prediction is graded against (the seed it ran with is result.seed).
    data["observe"] = ex.observe
    data["prediction_choice_text"] = choice_text(ex, parsed)
    data["observed_choice_text"] = choice_text(ex, result.observed)
    data["note"] = args.explain if outcome.note_saved else None  # the explain-back note, when saved
    code = {"pass": EXIT_MATCH, "fail": EXIT_MISMATCH}.get(result.status, EXIT_CHECK)
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
    from tutor import edit
    from tutor.progress import ProgressError
    from tutor.runner import DeviceError, WorkerError
    cat = catalog()
    ex = exercise(cat, args.id)
    session = _edit_session(args, events, cat)
    try:
        task = session.edit_task(ex, mode, getattr(args, "seed", None))
        text = _learner_text(args, task)
        run = session.start_edit(task, text, getattr(args, "predict", None), instruments=not args.no_instruments)
        outcome = run.execute()
    except edit.EditError as exc:
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
    data = edit_data(ex, outcome)
    data["saved_to"] = str(outcome.saved_to) if outcome.saved_to else None
    data["working_copy"] = working_copy
    return EditReply(data, edit_exit_code(outcome), exercise=ex, outcome=outcome, saved_to=data["saved_to"],
                     working_copy=working_copy)


def _edit_session(args, events: Events, cat):
    """The session of ``tutor fix`` / ``tutor break``: progress loaded and writable unless --no-save."""
    from tutor.progress import ProgressError
    from tutor.session import Session
    store, learner = (None, None) if args.no_save else store_and_learner(args, events.notice)
    session = Session(cat, _runner(cat, args.device), store, learner)
    if store is None:
        return session
    try:
        session.load()
        for warning in session.warnings:
            events.notice(warning)
        if session.progress.read_only:
            raise UsageError("the progress file is read-only for this tutor; use --no-save or upgrade tutor")
        store.ensure_writable()
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    return session


def _learner_text(args, task) -> str:
    """The learner's whole file: ``--file`` as it is, or ``--patch`` applied to the task's starting file.

    Raises:
        UsageError: the file cannot be read as UTF-8 text; a patch that does not apply (the hunk named).
        tutor.edit.EditError: passed on from the patch.
    """
    from tutor import edit
    name = getattr(args, "patch", None) or args.file
    what = "patch" if getattr(args, "patch", None) else "file"
    try:
        with open(name, "rb") as fh:
            raw = fh.read(edit.MAX_EDIT_BYTES * 4 + 1)
    except FileNotFoundError:
        raise UsageError(f"there is no {what} {name!r}; give the path of your edited {task.path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read the {what} {name!r} ({exc.strerror or exc})") from None
    if len(raw) > edit.MAX_EDIT_BYTES * 4:
        raise UsageError(f"the {what} {name!r} is larger than {edit.MAX_EDIT_BYTES * 4 // 1024} KiB; "
                         f"edits over {edit.MAX_EDIT_BYTES // 1024} KiB are refused")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"the {what} {name!r} is not UTF-8 text; save it as UTF-8") from None
    if what == "patch":
        return edit.apply_patch(task.start, text, task.path)
    return text


def edit_data(ex, outcome) -> dict:
    """The JSON of an edit-mode run: ``tutor run``'s fields, then mode, diff, fixed, yours, verdict, instruments."""
    from tutor import edit
    result, verdict, task = outcome.result, outcome.verdict, outcome.task
    data = result.to_dict()
    data["observed_text"] = answers.show(ex.kind, result.observed) if result.observed is not None else None
    data["observe"] = ex.observe
    data["note"] = None
    if task.hidden:
        data["fault"] = None  # the hunt's fault stays hidden
    data.update(mode=task.mode, file=task.path, diff=outcome.diff, fixed=verdict.fixed, verdict=verdict.to_dict(),
                prediction=outcome.prediction, seed=result.seed)
    data["yours"] = {"status": verdict.yours_status, "observed": verdict.yours_observed,
                     "observed_text": answers.show(ex.kind, verdict.yours_observed)
                     if verdict.yours_status == "ok" else None,
                     "evidence": result.evidence.get(edit.YOURS, []), "error": verdict.yours_error,
                     "output": result.output.get(edit.YOURS, "")}
    if task.mode == "break":
        data["correct"] = verdict.prediction_correct
        data["prediction_correct"] = verdict.prediction_correct
    instruments = outcome.instruments
    data["instruments"] = None if instruments is None else {
        "status": instruments.status, "clean": instruments.observations.get("clean"),
        "yours": instruments.observations.get(edit.YOURS), "errors": instruments.errors,
        "rows": edit.instruments_holding(instruments),
        "first_divergence": edit.first_instrument_divergence(instruments)}
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


def check(args, events: Events) -> CheckReply:
    """``tutor check``: run every chosen exercise on both sides; does each fault show?"""
    from tutor.runner import DeviceError, WorkerError
    from tutor.session import Session
    cat = catalog()
    exercises = [exercise(cat, i) for i in args.ids] if args.ids else cat.exercises
    if args.set_id:
        wanted = find_set(cat, args.set_id).id
        exercises = [e for e in exercises if e.set == wanted]
    runner = _runner(cat, args.device)
    session = Session(cat, runner)
    rows = []
    try:
        try:
            runner.device  # resolve the device once: a missing CUDA is a usage error, not a traceback
        except DeviceError as exc:
            raise UsageError(str(exc)) from None
        for ex in exercises:
            result = session.check(ex)
            ok = fault_shows(ex, result)
            rows.append({"id": ex.id, "set": ex.set, "fault": ex.fault, "status": result.status,
                         "clean": result.clean, "faulted": result.faulted, "differs": result.differs,
                         "ok": ok, "duration_s": result.duration_s, "device": result.device, "error": result.error})
            events.checked(ex, result, ok)
    except WorkerError as exc:
        raise CouldNotRun(str(exc)) from None
    finally:
        session.close()
    passed = sum(r["ok"] for r in rows)
    # An exercise without a fault (the capstone) can only show that it ran; it
    # is counted apart, never as a fault that showed.
    faulted = [r for r in rows if r["fault"]]
    shown = sum(r["ok"] for r in faulted)
    return CheckReply({"results": rows, "passed": passed, "total": len(rows),
                       "faults_shown": shown, "faults": len(faulted)},
                      0 if passed == len(rows) else EXIT_CHECK,
                      faults=len(faulted), shown=shown, unfaulted=len(rows) - len(faulted), ran=passed - shown)


def fault_shows(ex, result) -> bool:
    """Whether ``tutor check`` counts this run as good: it ran, and a fault (if any) changed the observation."""
    return result.status == "ok" and (result.differs is not False)


def progress(args, events: Events) -> Reply:
    """``tutor progress``: one learner's attempts and notes; reads only, moves nothing."""
    if args.all:
        return _progress_of_everyone(args)
    from tutor.progress import ProgressError
    store, learner = store_and_learner(args, events.notice)
    try:
        loaded = store.load(learner, move_aside=False)  # a review never moves a file
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    for warning in loaded.warnings:
        events.notice(warning)
    data = loaded.to_dict()
    data["file"] = str(store.path(learner))
    cat = catalog_or_none() if loaded.exercises else None
    seeded = {e.id for e in cat.exercises if e.seed_per_attempt} if cat else set()
    return ProgressReply(data, learner=learner, store=store, progress=loaded, seeded=seeded)


def _progress_of_everyone(args) -> EveryoneReply:
    """``tutor progress --all``: one summary line per learner file in the folder; reads only.

    A file that cannot be read gets its reason on its row; the command then
    exits 2, as a review of that learner alone would.
    """
    from tutor.progress import ProgressError, ProgressStore, default_folder
    if args.learner:
        raise UsageError("--all reviews every learner in the folder; drop --learner, or drop --all")
    store = ProgressStore(default_folder(args.progress_dir))
    cat = catalog_or_none()
    total = len(cat.exercises) if cat else None
    rows = []
    for learner in store.learners():
        row = {"learner": learner, "file": str(store.path(learner)), "error": None}
        try:
            loaded = store.load(learner, move_aside=False)
        except ProgressError as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        entries = loaded.exercises.values()
        times = [a.time for e in entries for a in e.attempts]
        row.update(tried=sum(bool(e.attempts) for e in entries), solved=sum(e.solved for e in entries),
                   attempts=len(times), notes=sum(bool(e.note.strip()) for e in entries),
                   last_attempt=max(times) if times else None)
        rows.append(row)
    code = EXIT_USAGE if any(r["error"] for r in rows) else 0
    return EveryoneReply({"folder": str(store.folder), "exercises": total, "learners": rows}, code,
                         folder=store.folder, total=total, rows=rows)


def tui(args) -> int:
    """Open the terminal UI: one session, its progress read once, shown until the learner quits."""
    from tutor.progress import ProgressError
    from tutor.session import Session
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the terminal UI needs an interactive terminal; use 'tutor list', 'tutor show ID' "
                         "and 'tutor run ID --predict ANSWER' instead")
    notices: list[str] = []
    store, learner = store_and_learner(args, notices.append)  # shown in the TUI, where stderr is hidden
    cat = catalog()
    session = Session(cat, _runner(cat, args.device), store, learner)
    try:
        session.load()
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    from tutor.ui.app import run_app
    run_app(session, warnings=notices)
    return 0


#: The headless commands by name (``tutor audit`` and the TUI are dispatched apart).
COMMANDS = {"list": list_, "show": show, "run": run, "check": check, "progress": progress}
COMMANDS.update({"fix": fix, "break": break_})  # edit mode (issue 12)
