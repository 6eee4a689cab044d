"""The progress file's format: its versions, how its bytes are read and classified, how an older one migrates,
and how a well-formed document reads as a learner's progress."""

from __future__ import annotations

from dataclasses import MISSING, dataclass
from pathlib import Path

from tutor.model.attempts import ATTEMPT_FIELDS, PREDICT, Attempt, ExerciseProgress, LearnerProgress, ProgressError
from tutor.store.names import display_name

try:
    # tomli's compiled wheels read about twice as fast as the standard library's tomllib (the same
    # parser, interpreted): a class report reads a thousand files. tomllib where tomli is missing.
    import tomli as tomllib
except ModuleNotFoundError:
    import tomllib

FORMAT_VERSION = 2
#: Format versions this tutor reads and migrates on the next save (see :func:`migrate`).
OLDER_VERSIONS = (1,)
MAX_FILE_BYTES = 8 * 1024 * 1024


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
        return Reading(data=data if shape_problem(data) is None else None, newer=version)
    if whole and version in OLDER_VERSIONS:
        problem = shape_problem(data)
        return Reading(data=None if problem else migrate(data), problem=problem)
    if not whole or version != FORMAT_VERSION:
        return Reading(problem=f"its format_version is {version!r}, not {FORMAT_VERSION}")
    problem = shape_problem(data)
    return Reading(data=None if problem else data, problem=problem)


def migrate(data: dict) -> dict:
    """A well-formed progress document of an older format (:data:`OLDER_VERSIONS`) in this format.

    Format 1 -> 2 (edit mode): every attempt was a prediction, so
    each gains ``mode = "predict"``; nothing else changes. The result is
    written on the next save; a file is never rewritten just for being read.
    """
    data = dict(data)
    if data.get("format_version") == 1:
        for entry in data.get("exercises", {}).values():
            for attempt in entry.get("attempts", []):
                attempt.setdefault("mode", PREDICT)
        data["format_version"] = 2
    return data


def read_bytes(path: Path) -> bytes | None:
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


def shape_problem(data: dict) -> str | None:
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
            for key, (kind, default) in ATTEMPT_FIELDS.items():
                if key not in attempt and default is not MISSING:
                    continue  # an older file: the attempt reads as the default
                value = attempt.get(key)
                if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                    missing = "" if default is not MISSING else "missing or "
                    return f"an attempt of {ex_id!r} has a {missing}wrongly typed {key!r}"
    return None


def as_progress(learner: str, data: dict | None, warnings: list[str], read_only: bool = False) -> LearnerProgress:
    """A well-formed progress document (see :func:`shape_problem`) as a LearnerProgress.

    Its ``learner`` is the name the file holds when that is the same learner
    (``Ada`` for a file written as Ada and read as ``ada``), else ``learner``.
    """
    progress = LearnerProgress(learner=display_name(data or {}, learner), warnings=warnings, read_only=read_only)
    for ex_id, entry in (data or {}).get("exercises", {}).items():
        attempts = [Attempt(**{k: a[k] for k in ATTEMPT_FIELDS if k in a}) for a in entry.get("attempts", [])]
        progress.exercises[ex_id] = ExerciseProgress(attempts=attempts, note=entry.get("note", ""),
                                                     note_time=entry.get("note_time", ""),
                                                     reset_time=entry.get("reset_time", ""),
                                                     draft=_draft(entry.get("draft")),
                                                     hints=_count(entry.get("hints")))
    return progress


def _count(value) -> int:
    """A saved count (hints revealed), 0 when there is none or it is not one (never an error)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _draft(value) -> dict:
    """A saved draft as {"prediction": text, "confidence": percent or None}; {} when there is none or
    it is not one (a draft is a convenience: a damaged one is dropped, never an error)."""
    if not isinstance(value, dict) or not isinstance(value.get("prediction"), str):
        return {}
    confidence = value.get("confidence")
    return {"prediction": value["prediction"],
            "confidence": confidence if isinstance(confidence, int) and not isinstance(confidence, bool) else None}

