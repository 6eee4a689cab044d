"""What every command of the command line shares: reading ids and flags, and opening a session.

Each helper turns a problem into a :class:`tutor.cli.replies.UsageError`
(one sentence, exit 2), so a command reads as its own steps.
"""

from __future__ import annotations

import shlex

from tutor.cli.replies import Events, UsageError
from tutor.model.attempts import ProgressError, check_confidence
from tutor.model.catalog import CatalogError
from tutor.store.catalog_cache import load_catalog
from tutor.model.finding import UnknownExercise, resolve


def catalog():
    """The catalog; a broken one is a usage error."""
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
    try:
        return resolve(cat, exercise_id)
    except UnknownExercise as exc:
        raise UsageError(exc.args[0]) from None


def confidence_arg(value, exercise):
    """``--confidence`` checked against ``exercise``'s scale: None, or a whole percent from its chance
    (``guess`` is that chance) to 100.

    Raises:
        UsageError: any other value, naming the exercise's scale.
    """
    try:
        return check_confidence(value, exercise.kind.chance)
    except ProgressError as exc:
        raise UsageError(f"{exc} (exercise {exercise.id})") from None


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
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.store.names import default_learner_and_notice, validate_learner
    from tutor.store.progress import ProgressStore, default_folder
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


def make_runner(cat, device: str, timeout_scale: float | None = None, cores: int | None = None,
                allow_unconfined: bool = True):
    """A runner for ``device`` whose time limits take ``timeout_scale`` (``--timeout-scale``) when given.

    ``allow_unconfined=False`` makes its runs refuse to start where code
    under check cannot be confined (``tutor.sandbox.runner.UnconfinedError``).

    Raises:
        UsageError: the device is unknown, or TUTOR_TIMEOUT_SCALE is not a positive number.
    """
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.sandbox.runner import DeviceError, Runner
    from tutor.sandbox.speed import ScaleError
    try:
        return Runner(cat, device=device, timeout_scale=timeout_scale, cores=cores,
                      allow_unconfined=allow_unconfined)
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
    predict = f" --predict {shell_word(prediction)}" if prediction is not None else ""
    seeded = f" --seed {seed}" if seed is not None else ""
    command = "run" if prediction is not None else "check"
    return (f"the machine may be busy: 'tutor {command} {ex.id}{predict}{seeded} --timeout-scale "
            f"{result.retry_scale:g}' retries with twice the limit")


def shell_word(text: str) -> str:
    return shlex.quote(text)


def choice_text(ex, choice_id) -> str | None:
    """The text of choice ``choice_id`` of a choice exercise; None for other kinds or no choice."""
    return ex.kind.choice_text(choice_id)


def learner_named(args) -> str | None:
    """The learner a command is about, best effort and without a notice: for an error's context only."""
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.store.names import default_learner_and_notice, validate_learner
    try:
        return validate_learner(args.learner) if args.learner is not None else default_learner_and_notice()[0]
    except ProgressError:
        return args.learner


def no_folder(folder) -> str:
    return (f"there is no progress folder {folder}; check the path given to --progress-dir "
            "(or TUTOR_PROGRESS_DIR)")


def confinement_notices(result, notice, why: str = "") -> None:
    """Say on stderr, once, that the run was unconfined (and which layer is missing), and what each side tried."""
    if result is None:
        return
    if result.confined is False:
        notice("code under check ran unconfined here: it could reach files outside its private copy ("
               + (why or "a layer of the sandbox is missing on this machine, or TUTOR_CONFINE=off") + ")")
    for side, tried in (getattr(result, "refused", None) or {}).items():
        for what in tried:
            notice(f"the {side} side {what}")
    for side in getattr(result, "tampered", None) or ():
        notice(f"the {side} side wrote lines of its own on its result pipe: tampered, its result is not taken")


def someone_else(args) -> bool:
    """Whether ``--learner`` names someone other than the person running the tutor (their file is graded)."""
    if getattr(args, "learner", None) is None:
        return False
    # the store's names are read only when a learner is named
    from tutor.store.names import default_learner_and_notice
    try:
        return args.learner.strip().lower() != default_learner_and_notice()[0].strip().lower()
    except (ProgressError, AttributeError):
        return True


def writable_session(args, events: Events, cat, context: dict | None = None, someone_else_confined: bool = False):
    """The session of a command that saves (``tutor run``, ``fix``, ``break``): progress loaded, its
    warnings told, and the folder writable before any work is done; no store with ``--no-save``.

    Args:
        args: the command's arguments (learner, progress folder, device, timeout scale, no_save).
        events: where the progress file's warnings go.
        cat: the catalog.
        context: the error context of the command (its ``learner`` is set here), or None.
        someone_else_confined: code run for a learner other than the person running the tutor
            (``tutor fix --learner``) must run confined, unless ``--allow-unconfined``.

    Raises:
        UsageError: an unsafe learner name, an unreadable or read-only progress file, a folder that
            cannot be written, an unknown device.
    """
    # deferred: 'tutor list' and 'tutor show' load no store, runner or session
    from tutor.app.session import Session
    store, learner = (None, None) if args.no_save else store_and_learner(args, events.notice)
    if context is not None:
        context["learner"] = learner
    allow = not someone_else_confined or getattr(args, "allow_unconfined", False) or not someone_else(args)
    session = Session(cat, make_runner(cat, args.device, args.timeout_scale, allow_unconfined=allow), store, learner)
    if store is None:
        return session
    try:
        session.load()
        for warning in session.warnings:
            events.notice(warning)
        if session.progress.read_only:
            raise UsageError("the progress file is read-only for this tutor; use --no-save or upgrade tutor", context)
        store.ensure_writable()
    except ProgressError as exc:
        raise UsageError(str(exc), context) from None
    return session
