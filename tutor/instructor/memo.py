"""Each distinct check once: a class's rows share their observations.

A hundred learners answering ten exercises ask for ten measurements, not a
hundred: what a check observes depends on the exercise, the seed, the
sides it runs (their faults and files), the engine's and the exercises'
source, the torch version and the device — never on the learner or the
answer. :class:`Observations` keeps one measured, ungraded
:class:`tutor.sandbox.runner.RunResult` per such key for the length of one grading,
and :func:`graded` grades each row's prediction against it exactly as
:func:`tutor.sandbox.runner.grade` would. A check that timed out or was cancelled is
not kept (the next row measures again); one whose subject raised is kept,
since it raises the same way every time.

Truth is still measured: nothing here is written to disk or outlives the
grading.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import replace
from functools import lru_cache
from importlib import metadata
from typing import Callable

from exercises.faults import source_root
from tutor.model.grading import graded_status, is_correct, read_prediction

#: Statuses of a measurement worth reusing (ok: it observed; error: the subject raised, reproducibly).
KEPT = ("ok", "error")


@lru_cache(maxsize=1)
def source_hashes() -> tuple[str, str]:
    """(engine hash, exercises hash): the first 12 hex digits of the SHA-256 of each package's ``*.py``."""
    root = source_root()
    out = []
    for package in ("engine", "exercises"):
        digest = hashlib.sha256()
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
        out.append(digest.hexdigest()[:12])
    return out[0], out[1]


@lru_cache(maxsize=1)
def torch_version() -> str:
    """The installed torch's version, read from its metadata (torch is not imported)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "?"


def sides_digest(sides) -> str:
    """A digest of the sides a check runs: names, faults and replaced files' contents."""
    digest = hashlib.sha256()
    for side in sides:
        digest.update(repr((side.name, side.fault)).encode())
        for path, text in side.files:
            digest.update(path.encode() + b"\0" + text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


def key(exercise_id: str, seed: int, sides, device: str) -> tuple:
    """The memo key of one measurement (module docstring)."""
    engine, exercises = source_hashes()
    return (exercise_id, seed, sides_digest(sides), engine, exercises, torch_version(), device)


class Observations:
    """Measured results by key; thread-safe, and one thread measures a key while the others wait for it.

    Attributes:
        measured: how many checks actually ran.
        reused: how many rows took a kept measurement.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict = {}
        self._running: dict = {}
        self.measured = 0
        self.reused = 0

    def get(self, k: tuple, measure: Callable[[], object]):
        """The kept result for ``k``, else ``measure()`` (kept when its status is in :data:`KEPT`).

        Returns:
            (result, reused): the ungraded result, and whether it was reused.
        """
        while True:
            with self._lock:
                if k in self._kept:
                    self.reused += 1
                    return self._kept[k], True
                waiting = self._running.get(k)
                if waiting is None:
                    self._running[k] = threading.Event()
                    break
            waiting.wait()
        try:
            result = measure()
            with self._lock:
                self.measured += 1
                if getattr(result, "status", None) in KEPT:
                    self._kept[k] = result
            return result, False
        finally:
            with self._lock:
                self._running.pop(k).set()


def graded(exercise, measured, prediction: str):
    """``measured`` (an ungraded RunResult) graded against ``prediction``, as :func:`tutor.sandbox.runner.grade` grades.

    Raises:
        tutor.model.answers.AnswerError: the prediction does not read as the exercise's kind.
    """
    parsed = read_prediction(exercise, prediction)
    result = replace(measured, prediction=prediction, prediction_text=parsed.text, evidence=dict(measured.evidence),
                     errors=dict(measured.errors), output=dict(measured.output),
                     observations=dict(measured.observations))
    if measured.status == "ok":
        result.correct = is_correct(exercise, parsed, measured.observed)
        result.status = graded_status(result.correct)
    return result
