"""The progress store: one TOML file per learner, never lost, never half-written.

``<folder>/<learner>.toml`` holds a format version and, per exercise, its
attempts (time, prediction, observed, correct, status, device, engine source
hash) and the explain-back note with the time it was written::

    format_version = 1
    learner = "ada"

    [exercises.head-split]
    note = "The reshape cuts the sequence into head-sized blocks ..."
    note_time = "2026-11-29T18:40:00+00:00"

    [[exercises.head-split.attempts]]
    time = "2026-11-29T18:39:12+00:00"
    prediction = "b"
    observed = "b"
    correct = true
    status = "pass"
    device = "cpu"
    engine_hash = "3f2a9c0d1b7e"
    mode = "predict"
    confidence = 80            # optional: how sure the learner said they were, in percent (50-100)

An edit-mode attempt (issue 12) has ``mode`` ``fix``, ``break`` or ``hunt``,
the learner's unified ``diff`` and the measured ``verdict`` ("fixed", "not
fixed", "changed", "unchanged"). Files of format 1 (before edit mode) load
as they are, their attempts read as ``mode = "predict"``, and are written as
format 2 on the next save (:func:`migrate`). The learner's working copies
live beside the file, in ``work/<learner>/<exercise>/<mode>/`` (:meth:`ProgressStore.save_working_copy`).

An attempt may carry ``confidence`` (the learner's stated certainty, 50-100
percent; absent when none was given) and ``before_reset = true`` (the
learner reset the exercise after it: it is kept, but the exercise shows as
fresh; the entry's ``reset_time`` says when). Both are optional: a file
without them reads as it always did.

Every change takes the folder's one file lock (``filelock``, ``.tutor.lock``: no
lock file is left beside each progress file), re-reads the file, applies the
change and writes the whole file to a temporary file that is then renamed over
the old one, so concurrent ``tutor run`` processes never lose an attempt and a
killed process leaves the old file or the new one. A file that cannot be read
as progress is never overwritten: when an attempt or note is saved (and when
``load`` is asked to, as the TUI does) it is moved aside with a timestamp and
the learner is told where it went; a review (``load(..., move_aside=False)``,
what ``tutor progress`` uses) leaves it in place and raises
``DamagedProgressError`` instead. A file from a newer tutor is left untouched
and refused.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import tempfile
import stat
import threading
import typing
import unicodedata
import urllib.parse
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

import tomli_w
from filelock import FileLock, Timeout

try:
    # tomli's compiled wheels read about twice as fast as the standard library's tomllib (the same
    # parser, interpreted): a class report reads a thousand files. tomllib where tomli is missing.
    import tomli as tomllib
except ModuleNotFoundError:
    import tomllib

FORMAT_VERSION = 2
#: Format versions this tutor reads and migrates on the next save (see :func:`migrate`).
OLDER_VERSIONS = (1,)
#: The folder, inside the progress folder, that holds learners' working copies (edit mode).
WORK_FOLDER = "work"
#: The one lock file of a progress folder: every change to a file in it takes it (none beside each file).
FOLDER_LOCK = ".tutor.lock"
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_NOTE_CHARS = 20_000
#: The learner name used when neither a flag, TUTOR_LEARNER nor a safe login name gives one.
FALLBACK_LEARNER = "learner"
#: The names earlier tutors allowed (ASCII, case kept in the file name); such files are still found.
_LEARNER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Exercise ids and mode folders that may name a working copy's folders (kebab-case).
_WORK_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
#: Longest learner name, in characters (after spaces are tidied).
MAX_LEARNER_CHARS = 64
#: Longest file-name stem a learner name may give, in bytes: a file system allows 255 per name, and the
#: stem also carries ".toml", ".lock", ".corrupt-<time>" (31) or a temporary file's 19 characters.
MAX_STEM_BYTES = 200
#: Characters a file name keeps as they are; every other character of a learner's key is written %XX.
_STEM_SAFE = "abcdefghijklmnopqrstuvwxyz0123456789._-"
#: Punctuation a learner name may hold beside letters, digits and single spaces (O'Brien, Ada-Mae, a.b_c).
_NAME_PUNCTUATION = "._-'\u2019@,()+"
#: Device names Windows reserves whatever the extension: such a stem has its first letter written %XX.
_RESERVED_STEMS = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


class ProgressError(Exception):
    """Progress that cannot be read or written; the message is one sentence."""


class DamagedProgressError(ProgressError):
    """A progress file that cannot be read as progress, left where it is.

    Attributes:
        path: the file.
        problem: why it cannot be used, as a clause ("it is not valid TOML (...)").
    """

    def __init__(self, path: Path, problem: str) -> None:
        self.path, self.problem = path, problem
        super().__init__(f"{path} cannot be read because {problem}; it was left as it is: fix it by hand, "
                         f"or the next saved attempt will move it aside as {path.name}.corrupt-<time> "
                         "and start a fresh file")


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
    mode: str = "predict"  # predict, or an edit mode: fix, break, hunt (tutor.edit.MODES)
    diff: str = ""  # edit modes: the learner's unified diff against the clean file (a hunt: against the mystery)
    verdict: str = ""  # edit modes: fixed / not fixed (fix, hunt), changed / unchanged (break)
    #: how sure the learner said they were, in percent (50-100), or None when they did not say
    confidence: int | None = None
    #: True once the learner reset the exercise after this attempt (kept, but no longer counted as current)
    before_reset: bool = False
    #: the graded submission's id (``tutor grade``: learner, exercise, answer, submitted_at), or ""
    submission: str = ""

    @classmethod
    def of(cls, result, confidence: int | None = None) -> "Attempt":
        """The attempt a graded run (a ``tutor.runner.RunResult``) leaves, timed now.

        The prediction is saved as it was read and graded, so ``6`` for a
        choice's key is saved as the choice's id; ``tutor run`` and the TUI
        both save through here.

        Args:
            result: the graded run.
            confidence: how sure the learner said they were, in percent
                (50-100; see :func:`check_confidence`), or None.
        """
        from exercises import answers
        return cls(time=now(), prediction=result.prediction_text or result.prediction or "",
                   observed=answers.show(result.kind, result.observed), correct=bool(result.correct),
                   status=result.status, device=result.device, engine_hash=engine_hash(), seed=result.seed,
                   confidence=confidence)

    @classmethod
    def of_edit(cls, result, mode: str, diff: str, verdict, prediction: str = "") -> "Attempt":
        """The attempt an edit-mode run leaves (fix, break or hunt), timed now.

        Args:
            result: the run's ``tutor.runner.RunResult``.
            mode: ``fix``, ``break`` or ``hunt``.
            diff: the learner's unified diff.
            verdict: the run's ``tutor.edit.Verdict``. ``correct`` is the fix
                (fix, hunt) or whether the prediction matched (break); a
                break predicted in free text is never ``correct``.
            prediction: a break's prediction as kept (canonical, or free text).
        """
        from exercises import answers
        observed = answers.show(result.kind, verdict.yours_observed) if verdict.yours_status == "ok" else \
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
        if self.mode == "predict":
            for key in ("diff", "verdict"):
                if not data[key]:
                    del data[key]
        return data


#: Optional attempt keys and the value that means "not given": written only when they differ from it.
_UNSET_KEYS = {"confidence": None, "before_reset": False, "submission": ""}


#: The confidences a learner may state, in percent: 50 (a coin toss between two answers) to 100 (certain).
CONFIDENCE_RANGE = (50, 100)


def check_confidence(value) -> int | None:
    """``value`` as a confidence in whole percent, or None for none given.

    Raises:
        ProgressError: a value that is not a whole number from 50 to 100.
    """
    if value is None:
        return None
    low, high = CONFIDENCE_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProgressError(f"the confidence {value!r} is not allowed; give a whole percent from {low} to {high} "
                            "(50 is a guess between two answers, 100 is certain)")
    return value


#: Attempt's keys: {name: (type, default or MISSING when every file must have it)}.
_ATTEMPT_FIELDS = {f.name: (typing.get_type_hints(Attempt)[f.name], f.default) for f in fields(Attempt)}


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

    @property
    def current(self) -> list[Attempt]:
        """The attempts since the last reset (all of them when there was none)."""
        return [a for a in self.attempts if not a.before_reset]

    @property
    def solved(self) -> bool:
        """Whether a prediction since the last reset matched the observation (edit-mode attempts
        are counted apart)."""
        return any(a.correct for a in self.current if a.mode == "predict")

    @property
    def latest(self) -> Attempt | None:
        """The attempt that counts (:func:`tutor.model.attempts.counting`: the latest time, the file's
        order at a tie), or None."""
        from tutor.model.attempts import counting
        return counting(self.attempts, lambda a: a.time)

    @property
    def predictions(self) -> list[Attempt]:
        """The attempts that were predictions (``mode = "predict"``), in order."""
        return [a for a in self.attempts if a.mode == "predict"]

    def edits(self, mode: str | None = None) -> list[Attempt]:
        """The edit-mode attempts (fix, break, hunt), or only those of ``mode``, in order."""
        return [a for a in self.attempts if a.mode != "predict" and (mode is None or a.mode == mode)]


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


def validate_learner(name: str) -> str:
    """Return ``name`` tidied (Unicode NFC, spaces trimmed and single) if it is a usable learner name.

    A name holds letters and digits of any script, single spaces, dots,
    dashes, underscores, apostrophes, and the ``@ , ( ) +`` an LMS export's
    names and e-mail addresses carry ("Zoë", "Ada Lovelace", "O'Brien",
    "李雷", "ada@uni.edu", "García, José (TA)"), 1-64 characters starting
    with a letter or digit. Two names that
    differ only by case are one learner (:func:`learner_key`); the progress
    file's name is derived from the key (:func:`file_stem`), never typed.

    Raises:
        ProgressError: the name is empty, too long (also for its file name),
            or holds a path separator, a control character (a tab, a newline)
            or other punctuation.
    """
    plain = isinstance(name, str) and not any(unicodedata.category(ch)[0] == "C" for ch in name)
    tidy = " ".join(unicodedata.normalize("NFC", name).split()) if plain else ""
    if not _usable_name(tidy):
        shown = repr(name)[:40]
        raise ProgressError(f"the learner name {shown} is not allowed; use 1-{MAX_LEARNER_CHARS} letters of any "
                            "script, digits, spaces, dots, dashes, underscores, apostrophes or @ , ( ) +, "
                            "starting with a letter or digit")
    if len(_stem_of_key(learner_key(tidy)).encode()) > MAX_STEM_BYTES:
        raise ProgressError(f"the learner name {repr(tidy)[:40]} is too long for a file name once written "
                            "safely; use a shorter name")
    return tidy


def _usable_name(tidy: str) -> bool:
    """Whether a tidied name has the allowed length and characters (see :func:`validate_learner`)."""
    if not 1 <= len(tidy) <= MAX_LEARNER_CHARS or not tidy[0].isalnum():
        return False
    for ch in tidy:
        category = unicodedata.category(ch)
        if not (category[0] in "LN" or category.startswith("M") or ch == " " or ch in _NAME_PUNCTUATION):
            return False
    return True


def learner_key(name: str) -> str:
    """A learner's identity: the tidied name case-folded (``"ADA"``, ``"Ada"`` and ``"ada"`` are one learner).

    ``name`` must be valid (:func:`validate_learner`).
    """
    return unicodedata.normalize("NFC", " ".join(unicodedata.normalize("NFC", name).split()).casefold())


def file_stem(name: str) -> str:
    """The progress file's name without ``.toml`` for a learner: the key, with every character other than
    ASCII lower-case letters, digits, ``.``, ``_`` and ``-`` written as ``%XX`` (its UTF-8 bytes).

    ``ada`` stays ``ada``; ``Ada Lovelace`` becomes ``ada%20lovelace`` and ``Zoë`` ``zo%C3%AB``: a name
    safe on every file system, the same for names that differ only by case, and read back by
    :func:`name_of_stem`.

    Raises:
        ProgressError: the name is not allowed (:func:`validate_learner`).
    """
    return _stem_of_key(learner_key(validate_learner(name)))


def _stem_of_key(key: str) -> str:
    stem = urllib.parse.quote(key, safe=_STEM_SAFE)
    if stem in _RESERVED_STEMS or stem.startswith(("con.", "prn.", "aux.", "nul.")):
        stem = f"%{ord(stem[0]):02X}{stem[1:]}"
    return stem


def name_of_stem(stem: str) -> str | None:
    """The learner key a progress file's stem stands for, or None when the stem is not one
    :func:`file_stem` writes (another file in the folder)."""
    try:
        key = urllib.parse.unquote(stem, errors="strict")
    except UnicodeDecodeError:
        return None
    tidy = " ".join(unicodedata.normalize("NFC", key).split())
    if not _usable_name(tidy) or _stem_of_key(learner_key(tidy)) != stem:
        return None
    return key


def default_learner() -> str:
    """``TUTOR_LEARNER``, else the login name when it is a safe name, else ``learner``.

    Raises:
        ProgressError: TUTOR_LEARNER is set to an unsafe name.
    """
    return default_learner_and_notice()[0]


def default_learner_and_notice() -> tuple[str, str | None]:
    """The default learner name, and a sentence to show when it is the fallback.

    The name is ``TUTOR_LEARNER``, else the login name when it is a safe
    learner name, else ``FALLBACK_LEARNER``; the sentence is None unless the
    fallback was taken, and then names it and how to choose a name.

    Raises:
        ProgressError: TUTOR_LEARNER is set to an unsafe name.
    """
    name = os.environ.get("TUTOR_LEARNER")
    if name:
        return validate_learner(name), None
    try:
        login = getpass.getuser()
    except Exception:
        login = ""
    try:
        return validate_learner(login), None
    except ProgressError:
        pass
    why = (f"your login name {login[:40]!r} is not a valid learner name" if login else
           "no login name was found")
    return FALLBACK_LEARNER, (f"{why}, so the learner name {FALLBACK_LEARNER!r} is used; "
                              "choose one with --learner NAME or TUTOR_LEARNER=NAME")


def default_folder(explicit: str | os.PathLike | None = None) -> Path:
    """Where progress lives: the flag, ``TUTOR_PROGRESS_DIR``, the checkout's
    ``progress/`` when tutor runs from a checkout, else the user data folder."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("TUTOR_PROGRESS_DIR")
    if env:
        return Path(env).expanduser()
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "progress").is_dir():
        return checkout / "progress"
    import platformdirs
    return Path(platformdirs.user_data_dir("tutor", appauthor=False)) / "progress"


def engine_hash() -> str:
    """First 12 hex digits of the SHA-256 of the engine's source files."""
    from exercises.faults import source_root
    digest = hashlib.sha256()
    engine = source_root() / "engine"
    for path in sorted(engine.rglob("*.py")):
        digest.update(path.relative_to(engine).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class LearnerFile:
    """One learner's progress file in a folder, as :meth:`ProgressStore.learner_files` finds it.

    Attributes:
        key: the learner's identity (:func:`learner_key`).
        name: the name the file's stem spells (the key, or a file's own name from an earlier tutor).
        path: the file.
        shadowed: another file of the folder is the same learner and is the one used (a file
            ``Ada.toml`` from an earlier tutor beside ``ada.toml``).
    """

    key: str
    name: str
    path: Path
    shadowed: bool = False


class ProgressStore:
    """Reads and changes learners' progress files in one folder."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)

    def path(self, learner: str) -> Path:
        """The learner's progress file: ``<folder>/<file_stem(learner)>.toml``.

        A file an earlier tutor named after the name as typed (``Ada.toml``)
        is still this learner's file while no file of the new name exists.

        Raises:
            ProgressError: the name is not allowed (:func:`validate_learner`).
        """
        stem = file_stem(learner)
        canonical = self.folder / f"{stem}.toml"
        if canonical.exists() or not _LEARNER.match(stem):
            return canonical
        key = learner_key(learner)
        typed = self.folder / f"{validate_learner(learner)}.toml"
        if _LEARNER.match(typed.stem) and typed.stem != stem and typed.is_file():
            return typed  # the same spelling as before: no folder listing needed
        for other in self.learner_files():
            if other.key == key and not other.shadowed:
                return other.path
        return canonical

    def learners(self) -> list[str]:
        """The learners with a progress file in this folder, sorted, one name each (files kept aside,
        and files that are no learner's, are not counted)."""
        return [f.name for f in self.learner_files() if not f.shadowed]

    def learner_files(self) -> list[LearnerFile]:
        """Every learner's progress file in this folder, sorted by learner; none when the folder is missing.

        When two files are one learner (names that differ only by case, from
        an earlier tutor), both are listed: the one :meth:`path` uses first,
        the other ``shadowed``.
        """
        if not self.folder.is_dir():
            return []
        found: dict[str, list[LearnerFile]] = {}
        for path in self.folder.glob("*.toml"):
            key = name_of_stem(path.stem)
            name = key
            if key is None and _LEARNER.match(path.stem):
                key, name = learner_key(path.stem), path.stem  # named by an earlier tutor
            if key is None:
                continue
            found.setdefault(key, []).append(LearnerFile(key, name, path))
        listed = []
        for key in sorted(found):
            # the canonical file first, else the first in name order
            files = sorted(found[key], key=lambda f: (f.path.stem != _stem_of_key(key), f.path.name))
            listed.append(files[0])
            listed.extend(LearnerFile(f.key, f.name, f.path, shadowed=True) for f in files[1:])
        return listed

    def kept_aside(self) -> list[Path]:
        """Damaged progress files moved aside in this folder (``<name>.toml.corrupt-<time>``), sorted."""
        if not self.folder.is_dir():
            return []
        return sorted(self.folder.glob("*.toml.corrupt-*"))

    def ensure_writable(self) -> None:
        """Make sure attempts can be saved here, before any work is done.

        Raises:
            ProgressError: the folder cannot be created or written.
        """
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".tutor-write-test-", dir=self.folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise ProgressError(f"cannot write progress to {self.folder} ({exc.strerror or exc}); "
                                "choose a writable folder with --progress-dir, or pass --no-save") from None

    def load(self, learner: str, move_aside: bool = True) -> LearnerProgress:
        """Read a learner's progress; a missing file is empty progress.

        A damaged file is moved aside (see the module docstring) and reported
        in ``warnings``, or, with ``move_aside=False``, left where it is and
        raised; a file from a newer tutor comes back ``read_only``.

        Raises:
            DamagedProgressError: with ``move_aside=False``, the file cannot be
                read as progress (it is not TOML, too large, or malformed).
            ProgressError: the name is unsafe, the folder or file cannot be
                read, or a damaged file cannot be moved aside.
        """
        path = self.path(learner)
        reading = classify(_read_bytes(path))
        if reading.problem is not None and not move_aside:
            raise DamagedProgressError(path, reading.problem)
        return _progress(learner, reading.data, _settle(path, reading), read_only=reading.newer is not None)

    def record_attempt(self, learner: str, exercise_id: str, attempt: Attempt) -> LearnerProgress:
        """Append one attempt, under the lock, atomically; an attempt carrying a submission id the
        exercise holds already (the same graded answer saved twice) leaves the file as it was."""
        def change(data: dict) -> None:
            entry = data.setdefault("exercises", {}).setdefault(exercise_id, {})
            attempts = entry.setdefault("attempts", [])
            if attempt.submission and any(a.get("submission") == attempt.submission for a in attempts):
                return
            attempts.append(attempt.to_dict())
        return self._update(learner, change)

    def reset(self, learner: str, exercise_id: str) -> LearnerProgress:
        """Start an exercise afresh: every attempt so far is kept, marked ``before_reset``.

        The entry's ``reset_time`` records when; the note is kept as it is.
        """
        def change(data: dict) -> None:
            entry = data.setdefault("exercises", {}).setdefault(exercise_id, {})
            for attempt in entry.get("attempts", []):
                attempt["before_reset"] = True
            entry["reset_time"] = now()
        return self._update(learner, change)

    def save_note(self, learner: str, exercise_id: str, text: str) -> LearnerProgress:
        """Store the explain-back note (replacing the previous one)."""
        if len(text) > MAX_NOTE_CHARS:
            raise ProgressError(f"the note is {len(text)} characters long; keep it under {MAX_NOTE_CHARS}")
        text = text.replace("\x00", "")

        def change(data: dict) -> None:
            entry = data.setdefault("exercises", {}).setdefault(exercise_id, {})
            entry["note"] = text
            entry["note_time"] = now()
        return self._update(learner, change)

    # --- working copies (edit mode) -----------------------------------------

    def working_copy_path(self, learner: str, exercise_id: str, key: str, subject: str) -> Path:
        """Where a learner's working copy of ``subject`` lives for one exercise and mode.

        ``<folder>/work/<learner>/<exercise_id>/<key>/<file name>``, e.g.
        ``progress/work/ada/head-split/fix/model.py``: inside the progress
        folder, never inside ``engine/`` or ``exercises/``; the file keeps its
        name so an editor highlights it as Python.

        Args:
            learner: a valid learner name.
            exercise_id: the exercise's id (kebab-case).
            key: the mode's folder (``fix``, ``break``, ``hunt-3``).
            subject: the subject file, relative to the source root (``engine/model.py``).

        Raises:
            ProgressError: the learner, exercise id or key is not a safe name.
        """
        for what, name in (("exercise id", exercise_id), ("edit mode", key)):
            if not isinstance(name, str) or not _WORK_NAME.match(name):
                raise ProgressError(f"the {what} {str(name)[:40]!r} cannot name a working copy folder")
        filename = Path(subject).name
        if not _WORK_NAME.match(filename.replace(".", "-").replace("_", "-").lower()):
            raise ProgressError(f"the subject file {subject!r} cannot name a working copy")
        # the learner's folder is named as their progress file is (file_stem): case-insensitive and safe for any script
        return self.folder / WORK_FOLDER / file_stem(validate_learner(learner)) / exercise_id / key / filename

    def load_working_copy(self, learner: str, exercise_id: str, key: str, subject: str) -> str | None:
        """The learner's working copy as last saved, or None when there is none.

        Raises:
            ProgressError: the copy exists but cannot be read as UTF-8 text.
        """
        path = self.working_copy_path(learner, exercise_id, key, subject)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ProgressError(f"your working copy {path} cannot be read ({exc}); open it in an editor "
                                "and save it as UTF-8 text") from None

    def save_working_copy(self, learner: str, exercise_id: str, key: str, subject: str, text: str) -> Path:
        """Write the learner's working copy atomically (temp file, fsync, rename); return its path.

        A process killed at any moment (SIGKILL included) leaves the previous
        copy or the new one, never a half-written file.

        Raises:
            ProgressError: the text is larger than MAX_FILE_BYTES, or the folder is not writable.
        """
        path = self.working_copy_path(learner, exercise_id, key, subject)
        payload = text.encode("utf-8", "surrogatepass")
        if len(payload) > MAX_FILE_BYTES:
            raise ProgressError(f"the working copy is {len(payload):,} bytes; keep it under "
                                f"{MAX_FILE_BYTES // (1024 * 1024)} MiB")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_bytes_atomically(path, payload)
        except OSError as exc:
            raise ProgressError(f"cannot save your working copy to {path} ({exc.strerror or exc}); "
                                "choose a writable folder with --progress-dir") from None
        return path

    def discard_working_copy(self, learner: str, exercise_id: str, key: str, subject: str) -> Path | None:
        """Start afresh: the working copy is kept as ``<file>.previous`` (replacing an older one); return that.

        Returns None when there was no copy.

        Raises:
            ProgressError: the copy could not be moved.
        """
        path = self.working_copy_path(learner, exercise_id, key, subject)
        if not path.exists():
            return None
        previous = path.with_name(path.name + ".previous")
        try:
            os.replace(path, previous)
        except OSError as exc:
            raise ProgressError(f"cannot set your working copy {path} aside ({exc.strerror or exc})") from None
        return previous

    # --- internals -----------------------------------------------------------

    def _update(self, learner: str, change) -> LearnerProgress:
        path = self.path(learner)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.folder / FOLDER_LOCK), timeout=30):
                reading = classify(_read_bytes(path))
                if reading.newer is not None:
                    raise ProgressError(_newer_warning(path, reading.newer))
                warnings = _settle(path, reading)
                data = reading.data or {}
                data["format_version"] = FORMAT_VERSION
                data["learner"] = _display_name(data, learner)
                change(data)
                self._write_atomically(path, data)
        except Timeout:
            raise ProgressError(f"another tutor holds the lock on {path} for over 30 s; "
                                f"close it or delete {self.folder / FOLDER_LOCK}") from None
        except OSError as exc:
            raise ProgressError(f"cannot write progress to {path} ({exc.strerror or exc}); "
                                "choose a writable folder with --progress-dir") from None
        return _progress(learner, data, warnings)

    def _write_atomically(self, path: Path, data: dict) -> None:
        payload = tomli_w.dumps(data).encode("utf-8")
        _write_bytes_atomically(path, payload)


def _write_bytes_atomically(path: Path, payload: bytes) -> None:
    """Write ``payload`` to a temporary file beside ``path``, fsync it, rename it over ``path``.

    The one atomic writer of progress files and working copies: the file keeps its own mode, or
    gets 0666 less the umask when new (:func:`_mode_for`).

    Raises:
        OSError: the folder is not writable (the temporary file is removed).
    """
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # mkstemp makes 0600; the file gets the mode the umask asks for
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _display_name(data: dict, learner: str) -> str:
    """The name a progress file shows: the one it holds when that is the same learner, else ``learner``."""
    held = data.get("learner")
    if isinstance(held, str):
        try:
            if learner_key(validate_learner(held)) == learner_key(learner):
                return held
        except ProgressError:
            pass
    return learner


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux), else read
    and restored at once under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    """The permission bits a progress file is written with: the file's own when it exists (a
    group-readable file stays so), else 0666 less the umask, as any new file would get."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~current_umask()


@dataclass(frozen=True)
class Reading:
    """What a progress file holds, as this tutor reads it (see :func:`classify`).

    Attributes:
        data: the document to show, or None (no file, or nothing this tutor can show).
        problem: why the file cannot be used, as a clause ("it is not valid
            TOML (...)"), or None when it can.
        newer: the file's format version when a newer tutor wrote it (the
            file is then read-only), else None.
    """

    data: dict | None = None
    problem: str | None = None
    newer: int | None = None


def classify(raw: bytes | None) -> Reading:
    """Read a progress file's bytes (None: there is no file); touches no file.

    A file is damaged (``problem`` set) when it is larger than
    MAX_FILE_BYTES, is not UTF-8 TOML, has another format_version than this
    tutor's (and not a newer one, nor an older one it migrates), or is not
    shaped like progress. An older format's document comes back migrated
    (:func:`migrate`).
    """
    if raw is None:
        return Reading()
    if len(raw) > MAX_FILE_BYTES:
        return Reading(problem=f"it is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        # newlines translated as a text-mode read does, so a file's CR or CRLF line ends read alike
        # a UTF-8 byte-order mark (an editor on Windows saved it) is read, not taken for damage
        data = tomllib.loads(raw.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Reading(problem=f"it is not valid TOML ({str(exc).splitlines()[0][:80]})")
    version = data.get("format_version")
    whole = type(version) is int  # not a bool (true == 1) or a float (1.0 == 1)
    if whole and version > FORMAT_VERSION:
        # shown read-only, and its contents only where this tutor can read them
        return Reading(data=data if _shape_problem(data) is None else None, newer=version)
    if whole and version in OLDER_VERSIONS:
        problem = _shape_problem(data)
        return Reading(data=None if problem else migrate(data), problem=problem)
    if not whole or version != FORMAT_VERSION:
        return Reading(problem=f"its format_version is {version!r}, not {FORMAT_VERSION}")
    problem = _shape_problem(data)
    return Reading(data=None if problem else data, problem=problem)


def migrate(data: dict) -> dict:
    """A well-formed progress document of an older format (:data:`OLDER_VERSIONS`) in this format.

    Format 1 -> 2 (edit mode, issue 12): every attempt was a prediction, so
    each gains ``mode = "predict"``; nothing else changes. The result is
    written on the next save; a file is never rewritten just for being read.
    """
    data = dict(data)
    if data.get("format_version") == 1:
        for entry in data.get("exercises", {}).values():
            for attempt in entry.get("attempts", []):
                attempt.setdefault("mode", "predict")
        data["format_version"] = 2
    return data


def _read_bytes(path: Path) -> bytes | None:
    """The file's bytes (at most MAX_FILE_BYTES + 1 of them, enough to tell it is too large), or None if
    there is no file.

    Raises:
        ProgressError: the file exists but cannot be read.
    """
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ProgressError(f"cannot read {path} ({exc.strerror or exc}); "
                            "check its permissions or choose another --progress-dir") from None


def _settle(path: Path, reading: Reading) -> list[str]:
    """Act on a reading: move a damaged file aside; return the sentences the learner is told.

    Raises:
        ProgressError: a damaged file could not be moved aside.
    """
    if reading.problem is not None:
        return [_move_aside(path, reading.problem)]
    if reading.newer is not None:
        return [_newer_warning(path, reading.newer)]
    return []


def _move_aside(path: Path, problem: str) -> str:
    """Rename a damaged file to ``<name>.corrupt-<time>``; return the sentence that says so.

    Raises:
        ProgressError: the file could not be renamed.
    """
    aside = path.with_name(f"{path.name}.corrupt-{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}")
    try:
        os.replace(path, aside)
    except OSError as exc:
        raise ProgressError(f"{path} cannot be used because {problem}, and it could not be moved aside "
                            f"({exc.strerror or exc}); move it yourself") from None
    return (f"{path.name} could not be used because {problem}; it was kept as {aside} "
            "and a fresh progress file was started")


def _newer_warning(path: Path, version: int) -> str:
    return (f"{path} was written by a newer tutor (format {version}, this one knows {FORMAT_VERSION}); "
            "it is shown read-only and will not be changed — upgrade tutor to record new attempts")


def _progress(learner: str, data: dict | None, warnings: list[str], read_only: bool = False) -> LearnerProgress:
    """A well-formed progress document (see :func:`_shape_problem`) as a LearnerProgress.

    Its ``learner`` is the name the file holds when that is the same learner
    (``Ada`` for a file written as Ada and read as ``ada``), else ``learner``.
    """
    progress = LearnerProgress(learner=_display_name(data or {}, learner), warnings=warnings, read_only=read_only)
    for ex_id, entry in (data or {}).get("exercises", {}).items():
        attempts = [Attempt(**{k: a[k] for k in _ATTEMPT_FIELDS if k in a}) for a in entry.get("attempts", [])]
        progress.exercises[ex_id] = ExerciseProgress(attempts=attempts, note=entry.get("note", ""),
                                                     note_time=entry.get("note_time", ""),
                                                     reset_time=entry.get("reset_time", ""))
    return progress


def _shape_problem(data: dict) -> str | None:
    """Why ``data`` is not a well-formed progress document, or None."""
    exercises = data.get("exercises", {})
    if not isinstance(exercises, dict):
        return "its exercises entry is not a table"
    for ex_id, entry in exercises.items():
        if not isinstance(entry, dict):
            return f"the entry for {ex_id!r} is not a table"
        for key in ("note", "note_time", "reset_time"):
            if key in entry and not isinstance(entry[key], str):
                return f"the {key} of {ex_id!r} is not text"
        attempts = entry.get("attempts", [])
        if not isinstance(attempts, list):
            return f"the attempts of {ex_id!r} are not a list"
        for attempt in attempts:
            if not isinstance(attempt, dict):
                return f"an attempt of {ex_id!r} is not a table"
            for key, (kind, default) in _ATTEMPT_FIELDS.items():
                if key not in attempt and default is not MISSING:
                    continue  # an older file: the attempt reads as the default
                value = attempt.get(key)
                if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                    missing = "" if default is not MISSING else "missing or "
                    return f"an attempt of {ex_id!r} has a {missing}wrongly typed {key!r}"
    return None
