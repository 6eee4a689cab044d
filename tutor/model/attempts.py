"""The attempt vocabulary, stated once: what one run leaves in a learner's progress, and what counts.

An :class:`Attempt` is one ``[[exercises.<id>.attempts]]`` table of a
progress file (:mod:`tutor.store.progress` reads and writes the files);
:class:`ExerciseProgress` and :class:`LearnerProgress` are a learner's
attempts and notes as the rest of the tutor reads them.

Every other module asks here what an attempt is:

* its **status**: ``pass`` or ``fail`` is *graded* (:data:`GRADED`: the
  prediction met an observation); a ``timeout`` is *recorded* too
  (:data:`RECORDED`), as a fact about the run, never as a wrong prediction;
  ``ok``, ``error`` and ``cancelled`` are outcomes to show, never attempts;
* its **mode** (:data:`MODES`): ``predict``, ``warmup`` (the prediction of
  an ungraded exercise, ``Exercise.graded`` false: run, shown and saved,
  never counted), or an edit mode (``fix``, ``break``, ``hunt``);
* whether it **is a prediction** that counts towards solving, calibration
  and review (:func:`is_prediction`: graded, and of mode ``predict``);
* its **confidence** (:data:`CONFIDENCE_RANGE`: from the question's chance to 100 %; :func:`confidence_of`);
* what it **came to**, as one word (:func:`verdict_of`).

Layers: no file is written here; imports neither torch, Textual nor Rich.
"""

from __future__ import annotations

import hashlib
import typing
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from typing import Callable, Sequence, TypeVar

from exercises import faults
from tutor.model import answers

#: The mode of a prediction, the classic run.
PREDICT = "predict"
#: The mode of a warm-up's prediction: an ungraded exercise's (``Exercise.graded`` false), saved but never counted.
WARMUP = "warmup"
#: The modes an attempt can have (``Attempt.mode``).
MODES = (PREDICT, "fix", "break", "hunt", WARMUP)
#: The modes of an answer to the exercise's question (a prediction, counted or not), as against an edit.
ANSWER_MODES = (PREDICT, WARMUP)
#: The status of a run whose prediction met its observation, and of one whose prediction did not.
PASS, FAIL = "pass", "fail"
#: The statuses of a graded attempt: the prediction met an observation.
GRADED = (PASS, FAIL)
#: The statuses that are recorded as attempts; every other one is only shown. A
#: ``timeout`` is recorded as what it is, never as a failed prediction.
RECORDED = GRADED + ("timeout",)
#: The confidences a progress file may hold, in whole percent: each question's scale starts at its chance
#: (``AnswerKind.chance``: 9 of 11 choices, 25 of 4, 50 for yes/no, 10 for a typed answer) and ends at 100
#: (certain); :func:`check_confidence` holds a new one to its question's.
CONFIDENCE_RANGE = (1, 100)
#: What a learner types (``--confidence guess``) or presses (``g``) to say an answer is a guess: it records
#: the question's chance as the confidence.
GUESS = "guess"


class ProgressError(Exception):
    """Progress that cannot be read or written; the message is one sentence."""


@dataclass
class Attempt:
    """One graded run as the progress file keeps it: an ``[[exercises.<id>.attempts]]`` table.

    Each field is a key of that table with the field's type; a field with a
    default may be missing from older files and reads as the default.
    """

    time: str
    prediction: str
    observed: str
    correct: bool
    status: str
    device: str
    engine_hash: str
    seed: int = 0  # the check's seed (the capstone's mystery); 0 for every other exercise
    mode: str = PREDICT  # predict, warmup, or an edit mode: fix, break, hunt (:data:`MODES`)
    diff: str = ""  # edit modes: the learner's unified diff against the clean file (a hunt: against the mystery)
    verdict: str = ""  # edit modes: fixed / not fixed (fix, hunt), changed / unchanged (break)
    #: how sure the learner said they were, in percent (the question's chance, a guess, to 100), or None
    confidence: int | None = None
    #: True once the learner reset the exercise after this attempt (kept, but no longer counted as current)
    before_reset: bool = False
    #: the graded submission's id (``tutor grade``: learner, exercise, answer, submitted_at), or ""
    submission: str = ""
    #: how many of the exercise's hints the learner had revealed when they made this prediction
    hints: int = 0

    @classmethod
    def of(cls, result, confidence: int | None = None, *, time: str | None = None,
           submission: str = "", hints: int = 0, mode: str = PREDICT) -> "Attempt":
        """The attempt a recorded run (a ``tutor.sandbox.runner.RunResult``) leaves.

        The prediction is saved as it was read and graded, so ``6`` for a
        choice's key is saved as the choice's id; ``tutor run``, the TUI and
        ``tutor grade --save`` all save through here. A run that is not
        graded (a ``timeout``) observed nothing and graded nothing: its
        ``observed`` is empty and ``correct`` false.

        Args:
            result: the run, of a status in :data:`RECORDED`.
            confidence: how sure the learner said they were, in percent
                (the question's chance to 100; see :func:`check_confidence`), or None.
            time: when (ISO 8601, as :func:`now` writes it); None is now, "" untimed (older than every time).
            submission: the graded submission's id, or "".
            hints: the hints revealed before the prediction was made (0 for none).
            mode: :data:`PREDICT`, or :data:`WARMUP` for an ungraded exercise's prediction.
        """
        graded = result.status in GRADED
        return cls(time=now() if time is None else time, prediction=result.prediction_text or result.prediction or "",
                   observed=answers.show_observed(result.kind, result.observed) if graded else "",
                   correct=graded and bool(result.correct), status=result.status, device=result.device,
                   engine_hash=engine_hash(), seed=result.seed, confidence=confidence, submission=submission,
                   hints=hints, mode=mode)

    @classmethod
    def of_edit(cls, result, mode: str, diff: str, verdict, prediction: str = "") -> "Attempt":
        """The attempt an edit-mode run leaves (fix, break or hunt), timed now.

        Args:
            result: the run's ``tutor.sandbox.runner.RunResult``.
            mode: ``fix``, ``break`` or ``hunt``.
            diff: the learner's unified diff.
            verdict: the run's ``tutor.model.verdict.Verdict``. ``correct`` is the fix
                (fix, hunt) or whether the prediction matched (break); a
                break predicted in free text is never ``correct``.
            prediction: a break's prediction as kept (canonical, or free text).
        """
        observed = answers.show_observed(result.kind, verdict.yours_observed) if verdict.yours_status == "ok" else \
            verdict.yours_status
        correct = bool(verdict.fixed) if mode != "break" else bool(verdict.prediction_correct)
        return cls(time=now(), prediction=prediction, observed=observed,
                   correct=correct, status=verdict.yours_status, device=result.device, engine_hash=engine_hash(),
                   seed=result.seed, mode=mode, diff=diff, verdict=verdict.status)

    def to_dict(self) -> dict:
        """The attempt as its TOML table: an optional key at its unset value is left out
        (:data:`_UNSET_KEYS`), and a prediction leaves out the edit-mode fields it does not use,
        so a file without confidences, resets or edits reads as it always did."""
        data = {key: value for key, value in asdict(self).items()
                if not (key in _UNSET_KEYS and value == _UNSET_KEYS[key])}
        if self.mode in ANSWER_MODES:
            for key in ("diff", "verdict"):
                if not data[key]:
                    del data[key]
        return data


#: Optional attempt keys and the value that means "not given": written only when they differ from it.
_UNSET_KEYS = {"confidence": None, "before_reset": False, "submission": "", "hints": 0}


def check_confidence(value, chance: int) -> int | None:
    """``value`` as a confidence in whole percent for a question whose blind guess is right ``chance`` % of
    the time (``AnswerKind.chance``), or None for none given. :data:`GUESS` is that chance.

    Raises:
        ProgressError: a value that is not :data:`GUESS` nor a whole number from ``chance`` to 100.
    """
    if value is None:
        return None
    if value == GUESS:
        return chance
    high = CONFIDENCE_RANGE[1]
    if isinstance(value, bool) or not isinstance(value, int) or not chance <= value <= high:
        raise ProgressError(f"the confidence {value!r} is not allowed for this question; give a whole percent from "
                            f"{chance} (a blind guess's chance, or '{GUESS}') to {high} (certain)")
    return value


def is_prediction(attempt: Attempt) -> bool:
    """Whether an attempt is a graded prediction: a pass or a fail of mode ``predict``.

    A timeout, a warm-up (:data:`WARMUP`) and every edit-mode attempt are
    not: they count towards no solving, calibration, review or class report.
    """
    return attempt.status in GRADED and attempt.mode == PREDICT


def confidence_of(attempt: Attempt) -> int | None:
    """The attempt's stated confidence in percent when it is one a learner may state
    (:data:`CONFIDENCE_RANGE`), else None (none given, or a hand-edited value out of range)."""
    value = attempt.confidence
    low, high = CONFIDENCE_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return None
    return value


def verdict_of(attempt: Attempt) -> str:
    """What an attempt came to, in one word: a prediction's status (``pass``, ``fail``, ``timeout``),
    an edit-mode attempt's verdict (``fixed``, ``not fixed``, ``changed``, ``unchanged``)."""
    if attempt.mode in ANSWER_MODES:
        return attempt.status
    return attempt.verdict or attempt.status


#: Attempt's keys: {name: (type, default or MISSING when every file must have it)}.
ATTEMPT_FIELDS = {f.name: (typing.get_type_hints(Attempt)[f.name], f.default) for f in fields(Attempt)}


@dataclass
class ExerciseProgress:
    """One exercise's attempts (every one the file keeps) and explain-back note.

    Attributes:
        reset_time: when the learner last reset the exercise ("" if never):
            the attempts before it are kept, marked ``before_reset``, and the
            exercise shows as fresh.
    """

    attempts: list[Attempt] = field(default_factory=list)
    note: str = ""
    note_time: str = ""
    reset_time: str = ""
    #: a prediction left unrun when the learner quit ({"prediction": text, "confidence": percent}), else empty
    draft: dict = field(default_factory=dict)
    #: how many of the exercise's hints the learner has revealed since the last reset
    hints: int = 0

    @property
    def current(self) -> list[Attempt]:
        """The attempts since the last reset (all of them when there was none)."""
        return [a for a in self.attempts if not a.before_reset]

    @property
    def solved(self) -> bool:
        """Whether a prediction since the last reset matched the observation (edit-mode attempts
        are counted apart)."""
        return any(a.correct for a in self.current if is_prediction(a))

    @property
    def latest(self) -> Attempt | None:
        """The attempt that counts (:func:`counting`: the latest time, the file's order at a tie), or None."""
        return counting(self.attempts, lambda a: a.time)

    @property
    def predictions(self) -> list[Attempt]:
        """The answers to the exercise's question, of mode ``predict`` or ``warmup`` (timeouts included), in order."""
        return [a for a in self.attempts if a.mode in ANSWER_MODES]

    def edits(self, mode: str | None = None) -> list[Attempt]:
        """The edit-mode attempts (fix, break, hunt), or only those of ``mode``, in order."""
        return [a for a in self.attempts if a.mode not in ANSWER_MODES and (mode is None or a.mode == mode)]


@dataclass
class LearnerProgress:
    learner: str
    exercises: dict[str, ExerciseProgress] = field(default_factory=dict)
    #: sentences for the learner about what happened while loading
    warnings: list[str] = field(default_factory=list)
    read_only: bool = False

    def of(self, exercise_id: str) -> ExerciseProgress:
        return self.exercises.get(exercise_id, ExerciseProgress())

    def to_dict(self) -> dict:
        return {"learner": self.learner, "exercises": {
            ex_id: {"attempts": [a.to_dict() for a in p.attempts], "note": p.note, "note_time": p.note_time,
                    "solved": p.solved, **({"reset_time": p.reset_time} if p.reset_time else {})}
            for ex_id, p in sorted(self.exercises.items())}}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def show_time(stamp: str) -> str:
    """A saved time (``now()``'s ISO form) as people read it: ``2026-11-29 10:01:00Z``."""
    return stamp.replace("T", " ").replace("+00:00", "Z")


def engine_hash() -> str:
    """First 12 hex digits of the SHA-256 of the engine's source files."""
    digest = hashlib.sha256()
    engine = faults.source_root() / "engine"
    for path in sorted(engine.rglob("*.py")):
        digest.update(path.relative_to(engine).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# --- which attempt counts ---------------------------------------------------------------------
# Which attempt counts: one rule for every view of a learner's work.
#
# A learner may answer one exercise several times, and the rows of an LMS
# export or the attempts of a progress file need not be in time order. Every
# view — ``results.json`` and the gradebook of ``tutor grade``, ``tutor
# progress`` and ``tutor report`` — orders attempts the same way:
#
# * by when they were submitted (ISO 8601; any offset is compared in UTC);
# * an attempt without a time sorts before every timed one (an answers row
#   with no ``submitted_at`` beside rows that have one is the oldest; a
#   progress file's attempts always carry their time);
# * at a tie, the order they were given in (the file's order) decides.
#
# The attempt that counts is the last in that order; "first try" is the first.
# Pure: no file, no clock.

T = TypeVar("T")


def time_key(stamp: str | None) -> tuple[int, str]:
    """A sort key for a submission time: ``(1, UTC ISO text)`` for a time, ``(0, "")`` for none (before
    every timed attempt). A time that does not read as ISO 8601 is compared as its text."""
    if not stamp:
        return (0, "")
    if len(stamp) == 25 and stamp.endswith("+00:00") and stamp[10] == "T":
        return (1, stamp[:19])  # the form tutor writes (UTC, seconds): compared as it is, nothing to parse
    text = stamp.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return (1, text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    utc = when.astimezone(timezone.utc)
    return (1, utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{utc.microsecond:06d}" if utc.microsecond else ""))


def in_time_order(items: Sequence[T], time_of: Callable[[T], str | None]) -> list[T]:
    """``items`` in the order the rule above gives (a stable sort: the given order breaks ties)."""
    keys = [time_key(time_of(item)) for item in items]
    if all(a <= b for a, b in zip(keys, keys[1:])):
        return list(items)  # already in time order, as a progress file's attempts nearly always are
    order = sorted(range(len(items)), key=keys.__getitem__)  # sorted() is stable: ties keep the given order
    return [items[i] for i in order]


def counting(items: Sequence[T], time_of: Callable[[T], str | None]) -> T | None:
    """The attempt that counts: the latest submitted, the later given at a tie; None for no attempts."""
    ordered = in_time_order(items, time_of)
    return ordered[-1] if ordered else None
