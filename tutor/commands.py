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

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from exercises import answers
from exercises.faults import diff

EXIT_MATCH, EXIT_MISMATCH, EXIT_USAGE, EXIT_CHECK = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input from the user: one sentence, exit 2.

    Attributes:
        context: what the input was about, added to the JSON error object
            (``{"id": ..., "learner": ..., "prediction": ...}`` for an answer
            that does not read), so a refused answer is never mistaken for
            one never given.
    """

    def __init__(self, sentence: str, context: dict | None = None) -> None:
        super().__init__(sentence)
        self.context = dict(context or {})


class CouldNotRun(Exception):
    """The check could not be run at all (e.g. the worker did not start): one sentence, exit 3."""

    def __init__(self, sentence: str, context: dict | None = None) -> None:
        super().__init__(sentence)
        self.context = dict(context or {})


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
    ``unfaulted``/``ran``: the same for exercises without a fault; ``wall_s``: the
    whole check's wall time, seconds, with ``jobs`` workers; ``timeouts``: rows that
    ran out of time; ``show_wall``: ``-j`` was given, so the Rich view prints the wall
    time (the JSON always has it)."""

    faults: int = 0
    shown: int = 0
    unfaulted: int = 0
    ran: int = 0
    wall_s: float = 0.0
    jobs: int = 1
    timeouts: int = 0
    show_wall: bool = False


@dataclass
class ProgressReply(Reply):
    learner: str = ""
    store: Any = None
    progress: Any = None
    seeded: set = field(default_factory=set)
    catalog: Any = None  # None when the catalog cannot be read (the review still works)
    calibration: Any = None  # (overall, {set id: Calibration}) when there is a catalog


@dataclass
class ReviewReply(Reply):
    learner: str = ""
    catalog: Any = None
    due: list = field(default_factory=list)
    later: list = field(default_factory=list)


@dataclass
class EveryoneReply(Reply):
    folder: Path | None = None
    total: int | None = None
    rows: list = field(default_factory=list)
    kept_aside: list = field(default_factory=list)


@dataclass
class VersionReply(Reply):
    pass


@dataclass
class GradeReply(Reply):
    """``tutor grade``: the graded rows (:class:`tutor.grade.RowResult`) and where the files went."""

    rows: list = field(default_factory=list)
    summary: Any = None


@dataclass
class ReportReply(Reply):
    """``tutor report``: the class report (:class:`tutor.report.ClassReport`); ``csv`` when asked for."""

    report: Any = None
    csv: bool = False


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
    """The exercise with this id, read without regard to case.

    Raises:
        UsageError: no such id; the sentence suggests close ones.
    """
    from tutor.finding import UnknownExercise, resolve
    try:
        return resolve(cat, exercise_id)
    except UnknownExercise as exc:
        raise UsageError(exc.args[0]) from None


def confidence_arg(value):
    """``--confidence`` checked: None, or a whole percent from 50 to 100.

    Raises:
        UsageError: any other value.
    """
    from tutor.progress import ProgressError, check_confidence
    try:
        return check_confidence(value)
    except ProgressError as exc:
        raise UsageError(str(exc)) from None


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


def _runner(cat, device: str, timeout_scale: float | None = None, cores: int | None = None):
    """A runner for ``device`` whose time limits take ``timeout_scale`` (``--timeout-scale``) when given.

    Raises:
        UsageError: the device is unknown, or TUTOR_TIMEOUT_SCALE is not a positive number.
    """
    from tutor.runner import DeviceError, Runner
    from tutor.speed import ScaleError
    try:
        return Runner(cat, device=device, timeout_scale=timeout_scale, cores=cores)
    except (DeviceError, ScaleError) as exc:
        raise UsageError(str(exc)) from None


def retry_notice(ex, result, prediction: str | None = None, seed: int | None = None) -> str:
    """The sentence a timed-out run leaves on stderr: the machine may be busy; how to retry with twice the limit.

    Args:
        ex: the exercise.
        result: its timed-out result (``retry_scale`` doubles its limit).
        prediction: the prediction of a ``tutor run``; None names ``tutor check``.
        seed: an explicit ``--seed`` to repeat, or None.
    """
    predict = f" --predict {_shell_word(prediction)}" if prediction is not None else ""
    seeded = f" --seed {seed}" if seed is not None else ""
    command = "run" if prediction is not None else "check"
    return (f"the machine may be busy: 'tutor {command} {ex.id}{predict}{seeded} --timeout-scale "
            f"{result.retry_scale:g}' retries with twice the limit")


def _shell_word(text: str) -> str:
    import shlex
    return shlex.quote(text)


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
    from tutor.progress import MAX_NOTE_CHARS, ProgressError
    from tutor.runner import DeviceError, WorkerError
    from tutor.session import Session
    cat = catalog()
    ex = exercise(cat, args.id)
    context = {"id": ex.id, "learner": None if args.no_save else _learner_named(args), "prediction": args.predict}
    try:
        parsed = ex.parse_answer(args.predict)
    except answers.AnswerError as exc:
        raise UsageError(f"{exc} (exercise {ex.id})", context) from None
    if args.explain and len(args.explain) > MAX_NOTE_CHARS and not args.no_save:
        # refused before any work: a note that cannot be kept must not leave an attempt saved without it
        raise UsageError(f"the --explain note is {len(args.explain)} characters long; keep it under "
                         f"{MAX_NOTE_CHARS} (nothing was run or saved)", context)
    confidence = confidence_arg(getattr(args, "confidence", None))
    store, learner = (None, None) if args.no_save else store_and_learner(args, events.notice)
    context["learner"] = learner
    if args.no_save and args.explain:
        events.notice("--explain is not saved with --no-save; drop --no-save to keep the note.")
    session = Session(cat, _runner(cat, args.device, args.timeout_scale), store, learner)
    if store is not None:
        try:
            session.load()
        except ProgressError as exc:
            raise UsageError(str(exc), context) from None
        for warning in session.warnings:
            events.notice(warning)
        if session.progress.read_only:
            raise UsageError("the progress file is read-only for this tutor; use --no-save or upgrade tutor", context)
        try:
            store.ensure_writable()
        except ProgressError as exc:
            raise UsageError(str(exc), context) from None
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
    saved = str(outcome.saved_to) if outcome.saved_to else None
    data = result.to_dict()
    data["learner"] = learner
    data["saved_to"] = saved
    data["observed_text"] = answers.show(ex.kind, result.observed) if result.observed is not None else None
    # Which side the prediction is graded against (the seed it ran with is result.seed).
    data["observe"] = ex.observe
    data["prediction_choice_text"] = choice_text(ex, parsed)
    data["observed_choice_text"] = choice_text(ex, result.observed)
    # the explain-back note as saved: text everywhere, "" when none was saved (as in 'tutor progress')
    data["note"] = args.explain if outcome.note_saved else ""
    data["note_saved"] = outcome.note_saved
    data["confidence"] = confidence  # as given with --confidence (saved with the attempt), or None
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
        task = _edit_task(args, events, session, ex, mode)
        text = _learner_text(args, task)
        if task.mode == "hunt":
            _say_hunted_file(args, events, task, text)
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


def _edit_task(args, events: Events, session, ex, mode: str):
    """The task of ``tutor fix`` / ``tutor break``; with --no-save the capstone still hunts the learner's
    own mystery, read from their progress (which is not written)."""
    from tutor.progress import ProgressError
    from tutor.session import Session
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
    import difflib
    name = getattr(args, "patch", None) or args.file
    events.notice(f"the hunt of mystery {task.seed} expects your edited {task.path}: {name} ran in its place")
    if not getattr(args, "patch", None):
        likeness = difflib.SequenceMatcher(None, task.start.splitlines(), text.splitlines()).quick_ratio()
        if likeness < 0.5:
            events.notice(f"{name} shares few lines with {task.path}; is it the file this hunt gave you?")


def _edit_session(args, events: Events, cat):
    """The session of ``tutor fix`` / ``tutor break``: progress loaded and writable unless --no-save."""
    from tutor.progress import ProgressError
    from tutor.session import Session
    store, learner = (None, None) if args.no_save else store_and_learner(args, events.notice)
    session = Session(cat, _runner(cat, args.device, args.timeout_scale), store, learner)
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


def _learner_named(args) -> str | None:
    """The learner a command is about, best effort and without a notice: for an error's context only."""
    from tutor.progress import ProgressError, default_learner_and_notice, validate_learner
    try:
        return validate_learner(args.learner) if args.learner is not None else default_learner_and_notice()[0]
    except ProgressError:
        return args.learner


def check(args, events: Events) -> CheckReply:
    """``tutor check``: run every chosen exercise on both sides; does each fault show?

    With ``-j N`` the exercises are shared among N workers (each with its
    share of the cores); the lines still come in catalog order, each as soon
    as it and every one before it are done. The reply says the wall time.
    """
    import time

    from tutor.runner import DeviceError, WorkerError
    cat = catalog()
    exercises = [exercise(cat, i) for i in args.ids] if args.ids else cat.exercises
    if args.set_id:
        wanted = find_set(cat, args.set_id).id
        exercises = [e for e in exercises if e.set == wanted]
    asked = getattr(args, "jobs", None)
    jobs = max(1, min(asked or 1, len(exercises) or 1))
    scale = getattr(args, "timeout_scale", None)
    cores = None if jobs == 1 else max(1, (os.cpu_count() or 1) // jobs)
    runners = [_runner(cat, args.device, scale, cores) for _ in range(jobs)]
    rows = []
    started = time.perf_counter()
    results = _checked_in_order(cat, runners, exercises)
    try:
        try:
            runners[0].device  # resolve the device once: a missing CUDA is a usage error, not a traceback
        except DeviceError as exc:
            raise UsageError(str(exc)) from None
        for ex, result in results:
            ok = fault_shows(ex, result)
            rows.append({"id": ex.id, "set": ex.set, "fault": ex.fault, "status": result.status,
                         "clean": result.clean, "faulted": result.faulted, "differs": result.differs,
                         "ok": ok, "duration_s": result.duration_s, "device": result.device, "error": result.error,
                         "time_limit_s": (result.time_limit or {}).get("seconds")})
            events.checked(ex, result, ok)
            if result.status == "timeout":
                events.notice(retry_notice(ex, result))
    except WorkerError as exc:
        raise CouldNotRun(str(exc)) from None
    finally:
        results.close()  # no worker takes another exercise
        for runner in runners:
            runner.close()
    wall_s = round(time.perf_counter() - started, 2)
    passed = sum(r["ok"] for r in rows)
    # An exercise without a fault (the capstone) can only show that it ran; it
    # is counted apart, never as a fault that showed.
    faulted = [r for r in rows if r["fault"]]
    shown = sum(r["ok"] for r in faulted)
    timeouts = sum(r["status"] == "timeout" for r in rows)
    data = {"results": rows, "passed": passed, "total": len(rows), "faults_shown": shown, "faults": len(faulted),
            "timeouts": timeouts, "wall_s": wall_s, "jobs": jobs}
    if passed != len(rows):
        data["error"] = (f"{len(rows) - passed} of {len(rows)} checks did not run or their fault changed nothing; "
                         "see the rows marked FAIL")
    return CheckReply(data,
                      0 if passed == len(rows) else EXIT_CHECK,
                      faults=len(faulted), shown=shown, unfaulted=len(rows) - len(faulted), ran=passed - shown,
                      wall_s=wall_s, jobs=jobs, timeouts=timeouts, show_wall=asked is not None)


def _checked_in_order(cat, runners, exercises):
    """Yield ``(exercise, result)`` in the order given, running them on all ``runners`` at once.

    Each runner gets a thread that takes the next exercise not yet taken; the
    results are handed back on the calling thread, in order, each as soon as
    it and those before it are done.

    Raises:
        WorkerError: a worker could not be started (the first such error).
    """
    import queue
    import threading

    from tutor.session import Session
    if len(runners) == 1:  # one worker: no threads at all
        session = Session(cat, runners[0])
        for ex in exercises:
            yield ex, session.check(ex)
        return
    todo = queue.SimpleQueue()
    for index, ex in enumerate(exercises):
        todo.put((index, ex))
    done = queue.SimpleQueue()
    stopping = threading.Event()

    def work(session) -> None:
        while not stopping.is_set():
            try:
                index, ex = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((index, session.check(ex), None))
            except Exception as exc:  # handed to the calling thread, which raises it
                done.put((index, None, exc))
                return

    threads = [threading.Thread(target=work, args=(Session(cat, runner),), daemon=True, name=f"check-{n}")
               for n, runner in enumerate(runners)]
    for thread in threads:
        thread.start()
    finished: dict[int, object] = {}
    try:
        for index in range(len(exercises)):
            while index not in finished:
                got, result, error = done.get()
                if error is not None:
                    raise error
                finished[got] = result
            yield exercises[index], finished.pop(index)
    finally:
        stopping.set()


def fault_shows(ex, result) -> bool:
    """Whether ``tutor check`` counts this run as good: it ran, and a fault (if any) changed the observation."""
    return result.status == "ok" and (result.differs is not False)


def progress(args, events: Events) -> Reply:
    """``tutor progress``: one learner's attempts and notes; reads only, moves nothing.

    A folder given by ``--progress-dir`` or TUTOR_PROGRESS_DIR that does not
    exist, and a learner named by ``--learner`` without a file there, are
    usage errors (exit 2): a typo must not read as "no attempts yet". The
    learner's own default name with no file yet is empty progress.
    """
    if args.all:
        return _progress_of_everyone(args)
    from tutor.progress import ProgressError
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
        from tutor.calibration import calibration_by_set
        overall, per_set = calibration_by_set(cat, loaded)
        calibration = (overall, per_set)
        data["calibration"] = {"overall": overall.to_dict(),
                               "sets": {set_id: c.to_dict() for set_id, c in per_set.items()}}
    return ProgressReply(data, learner=loaded.learner, store=store, progress=loaded, seeded=seeded, catalog=cat,
                         calibration=calibration)


def _folder_must_exist(args, store) -> None:
    """A progress folder named by ``--progress-dir`` or TUTOR_PROGRESS_DIR that is missing: exit 2."""
    import os
    named = args.progress_dir or os.environ.get("TUTOR_PROGRESS_DIR")
    if named and not store.folder.is_dir():
        raise UsageError(_no_folder(store.folder))


def _no_folder(folder) -> str:
    return (f"there is no progress folder {folder}; check the path given to --progress-dir "
            "(or TUTOR_PROGRESS_DIR)")


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
    from datetime import datetime, timezone

    from tutor.progress import ProgressError
    from tutor.review import INTERVALS_DAYS, SURE, review_states
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


def _progress_of_everyone(args) -> EveryoneReply:
    """``tutor progress --all``: one summary line per learner file in the folder; reads only.

    A file that cannot be read gets its reason on its row; the command then
    exits 2, as a review of that learner alone would. A missing folder is an
    error (exit 2); damaged files moved aside earlier are counted and named.
    """
    from tutor.progress import ProgressError, ProgressStore, default_folder
    if args.learner:
        raise UsageError("--all reviews every learner in the folder; drop --learner, or drop --all")
    store = ProgressStore(default_folder(args.progress_dir))
    if not store.folder.is_dir():
        raise UsageError(_no_folder(store.folder))
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


def version(args, events: Events) -> VersionReply:
    """``tutor --version``: this tutor's version, its JSON schema and progress format."""
    from tutor import __version__
    from tutor.progress import FORMAT_VERSION
    return VersionReply({"version": __version__, "progress_format": FORMAT_VERSION})


def grade(args, events: Events) -> GradeReply:
    """``tutor grade --answers FILE``: see :mod:`tutor.grade`."""
    from tutor import grade as grading
    return grading.command(args, events)


def report(args, events: Events) -> ReportReply:
    """``tutor report DIR``: see :mod:`tutor.report`."""
    from tutor import report as reporting
    return reporting.command(args, events)


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
    session = Session(cat, _runner(cat, args.device, args.timeout_scale), store, learner)
    try:
        session.load()
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    from tutor.ui.app import run_app
    run_app(session, warnings=notices)
    return 0


#: The headless commands by name (``tutor audit`` and the TUI are dispatched apart).
COMMANDS = {"list": list_, "show": show, "run": run, "check": check, "progress": progress, "grade": grade,
            "report": report, "fix": fix, "break": break_, "review": review}
