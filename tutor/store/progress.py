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
    confidence = 80            # optional: how sure the learner said they were, in percent (from the question's chance to 100)

An edit-mode attempt has ``mode`` ``fix``, ``break`` or ``hunt``,
the learner's unified ``diff`` and the measured ``verdict`` ("fixed", "not
fixed", "changed", "unchanged"). Files of format 1 (before edit mode) load
as they are, their attempts read as ``mode = "predict"``, and are written as
format 2 on the next save (:func:`migrate`). The learner's working copies
live beside the file, in ``work/<learner>/<exercise>/<mode>/`` (:meth:`ProgressStore.save_working_copy`).

An attempt may carry ``confidence`` (the learner's stated certainty, a whole
percent from the question's chance, a guess, to 100; absent when none was given) and ``before_reset = true`` (the
learner reset the exercise after it: it is kept, but the exercise shows as
fresh; the entry's ``reset_time`` says when). Both are optional: a file
without them reads as it always did. The entry's ``hints`` (optional) is how
many hints the learner has revealed since the last reset, saved as each is
revealed, so the next attempt records them even after a relaunch.

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

import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import platformdirs
import tomli_w

from tutor.model.attempts import Attempt, LearnerProgress, ProgressError, now
from tutor.store.files import write_bytes_atomically
from tutor.store.migration import FORMAT_VERSION, MAX_FILE_BYTES, Reading, as_progress, classify, read_bytes
from tutor.store.names import (LEGACY_NAME, display_name, file_stem, learner_key, name_of_stem, stem_of_key,
                               validate_learner)

#: The folder, inside the progress folder, that holds learners' working copies (edit mode).
WORK_FOLDER = "work"
#: The one lock file of a progress folder: every change to a file in it takes it (none beside each file).
FOLDER_LOCK = ".tutor.lock"
MAX_NOTE_CHARS = 20_000
#: Exercise ids and mode folders that may name a working copy's folders (kebab-case).
_WORK_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


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



def default_folder(explicit: str | os.PathLike | None = None) -> Path:
    """Where progress lives: the flag, ``TUTOR_PROGRESS_DIR``, the checkout's
    ``progress/`` when tutor runs from a checkout, else the user data folder."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("TUTOR_PROGRESS_DIR")
    if env:
        return Path(env).expanduser()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "progress").is_dir():
        return checkout / "progress"
    return Path(platformdirs.user_data_dir("tutor", appauthor=False)) / "progress"



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
        if canonical.exists() or not LEGACY_NAME.match(stem):
            return canonical
        key = learner_key(learner)
        typed = self.folder / f"{validate_learner(learner)}.toml"
        if LEGACY_NAME.match(typed.stem) and typed.stem != stem and typed.is_file():
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
            if key is None and LEGACY_NAME.match(path.stem):
                key, name = learner_key(path.stem), path.stem  # named by an earlier tutor
            if key is None:
                continue
            found.setdefault(key, []).append(LearnerFile(key, name, path))
        listed = []
        for key in sorted(found):
            # the canonical file first, else the first in name order
            files = sorted(found[key], key=lambda f: (f.path.stem != stem_of_key(key), f.path.name))
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
        reading = classify(read_bytes(path))
        if reading.problem is not None and not move_aside:
            raise DamagedProgressError(path, reading.problem)
        return as_progress(learner, reading.data, _settle(path, reading), read_only=reading.newer is not None)

    def review_file(self, file: LearnerFile) -> LearnerProgress:
        """One learner file of this folder (:meth:`learner_files`) as a review reads it; touches nothing.

        What ``tutor report`` counts: the learner is the name the file holds
        when that is the same learner, else the file's own; a file from a
        newer tutor comes back ``read_only``.

        Raises:
            DamagedProgressError: the file cannot be read as progress (not TOML,
                too large, malformed), or a newer tutor wrote it in a shape this one cannot read.
            ProgressError: the file cannot be read at all.
        """
        reading = classify(read_bytes(file.path))
        if reading.problem is None and reading.data is None and reading.newer is not None:
            raise DamagedProgressError(file.path, f"it was written by a newer tutor (format {reading.newer}) "
                                                  "in a shape this one cannot read")
        if reading.problem is not None:
            raise DamagedProgressError(file.path, reading.problem)
        return as_progress(file.name, reading.data, _settle(file.path, reading), read_only=reading.newer is not None)

    def record_attempt(self, learner: str, exercise_id: str, attempt: Attempt) -> LearnerProgress:
        """Append one attempt, under the lock, atomically; an attempt carrying a submission id the
        exercise holds already (the same graded answer saved twice) leaves the file as it was."""
        def change(data: dict) -> None:
            entry = data.setdefault("exercises", {}).setdefault(exercise_id, {})
            attempts = entry.setdefault("attempts", [])
            if attempt.submission and any(a.get("submission") == attempt.submission for a in attempts):
                return
            attempts.append(attempt.to_dict())
            entry.pop("draft", None)  # the prediction it kept has now been run
        return self._update(learner, change)

    def save_draft(self, learner: str, exercise_id: str, prediction: str, confidence: int | None) -> LearnerProgress:
        """Keep a prediction (or a confidence) the learner left unrun as they quit, to offer it again;
        an empty prediction without a confidence drops the draft kept (the learner cleared it).

        Raises:
            ProgressError: the file cannot be changed (as :meth:`save_note`).
        """
        if len(prediction) > MAX_NOTE_CHARS:
            raise ProgressError(f"the prediction is {len(prediction)} characters long; keep it under {MAX_NOTE_CHARS}")

        def change(data: dict) -> None:
            entry = data.setdefault("exercises", {}).setdefault(exercise_id, {})
            if not prediction and confidence is None:
                entry.pop("draft", None)
                return
            entry["draft"] = {"prediction": prediction.replace("\x00", ""), "time": now(),
                              **({"confidence": confidence} if confidence is not None else {})}
        return self._update(learner, change)

    def save_hints(self, learner: str, exercise_id: str, count: int) -> LearnerProgress:
        """Keep how many of the exercise's hints the learner has revealed (since the last reset).

        Raises:
            ProgressError: the file cannot be changed (as :meth:`save_note`).
        """
        def change(data: dict) -> None:
            entry = data.setdefault("exercises", {}).setdefault(exercise_id, {})
            entry["hints"] = max(0, int(count))
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
            entry.pop("hints", None)  # afresh: the hints are hidden again
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

    def working_copy_keys(self, learner: str, exercise_id: str) -> list[str]:
        """The mode folders (``fix``, ``hunt-3``...) that hold a working copy of this learner for one exercise.

        Sorted; [] when there is none, or the folder cannot be listed.

        Raises:
            ProgressError: the learner or exercise id is not a safe name.
        """
        exercise = self.working_copy_path(learner, exercise_id, "any", "x.py").parent.parent  # <exercise_id>/
        try:
            return sorted(entry.name for entry in exercise.iterdir() if entry.is_dir())
        except OSError:  # no working copy yet (no folder), or one that cannot be listed
            return []

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
            write_bytes_atomically(path, payload)
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
        import filelock  # deferred: only a change takes the folder's lock; reading (the first screen) does not
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(self.folder / FOLDER_LOCK), timeout=30):
                reading = classify(read_bytes(path))
                if reading.newer is not None:
                    raise ProgressError(_newer_warning(path, reading.newer))
                warnings = _settle(path, reading)
                data = reading.data or {}
                data["format_version"] = FORMAT_VERSION
                data["learner"] = display_name(data, learner)
                change(data)
                self._write_atomically(path, data)
        except filelock.Timeout:
            raise ProgressError(f"another tutor holds the lock on {path} for over 30 s; "
                                f"close it or delete {self.folder / FOLDER_LOCK}") from None
        except OSError as exc:
            raise ProgressError(f"cannot write progress to {path} ({exc.strerror or exc}); "
                                "choose a writable folder with --progress-dir") from None
        return as_progress(learner, data, warnings)

    def _write_atomically(self, path: Path, data: dict) -> None:
        # a diff or note of several lines reads as those lines ("""…"""), unless some string holds a
        # carriage return, which a multi-line TOML string would not give back
        payload = tomli_w.dumps(data, multiline_strings=not _holds_cr(data)).encode("utf-8")
        write_bytes_atomically(path, payload)


def _holds_cr(value) -> bool:
    """Whether any string in ``value`` (nested tables and arrays) holds a carriage return."""
    if isinstance(value, str):
        return "\r" in value
    if isinstance(value, dict):
        return any(_holds_cr(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_cr(v) for v in value)
    return False



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
