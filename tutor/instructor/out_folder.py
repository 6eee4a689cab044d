"""The folder a grading writes (``--out``): one grader at a time, whole lines, and one tail for every grading.

A grading holds the folder's lock (``filelock``, ``.tutor-grade.lock``) from
before its first row to its last file; a second grader pointed at the same
folder (a mistyped ``--out`` in a ``parallel`` line or a Slurm array) is
refused in one sentence instead of mixing two classes in one gradebook. With
``--save`` the progress folder is held the same way for this shard
(:func:`progress_lock`): two graders of one shard never save into one folder
at once, while shards of one class, each with its own learners, may share it.

Rows are appended as they are graded (:class:`Rows`), each line of
``rows.jsonl`` and ``gradebook.csv`` whole or not at all: a write that fails
(a full disk) is cut back to the last whole row and raises
:class:`tutor.model.errors.CouldNotSave`, so ``--resume`` carries on from the
rows there. :func:`finish` is the one tail of ``grade --answers``,
``grade --fixes`` and ``grade merge``: which row counts, then the three files
written atomically, then the counts a summary gives.

Layers: imports neither torch nor Textual.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import filelock

from tutor.instructor import gradebook, tail
from tutor.model.errors import CouldNotSave, UsageError
from tutor.store.files import open_atomically

LOCK = ".tutor-grade.lock"
PROGRESS_LOCK = ".tutor-grading{shard}.lock"
RESULTS = "results.json"


def hold(out: Path) -> filelock.BaseFileLock:
    """Make ``out``, prove it writable and take its lock before any check runs; the lock, held.

    Raises:
        UsageError: it cannot be made or written, or another grader holds it.
    """
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".tutor-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"cannot write the gradebook to {out} ({exc.strerror or exc}); choose another --out") from None
    lock = filelock.FileLock(str(out / LOCK), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise UsageError(f"another grader is writing to {out} now; wait for it to finish, or give this "
                         "grading its own --out") from None
    return lock


def progress_lock(folder: Path, shard: str | None) -> filelock.BaseFileLock:
    """Take the progress folder's grading lock for this shard (``K/N``, or the whole class), held.

    Raises:
        UsageError: another grader of the same shard is saving into ``folder`` now.
    """
    name = PROGRESS_LOCK.format(shard=f"-{shard.replace('/', '-of-')}" if shard else "")
    lock = filelock.FileLock(str(Path(folder) / name), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise UsageError(f"another grader{' of shard ' + shard if shard else ''} is saving to {folder} now; wait "
                         "for it to finish, or save this grading to another --progress-dir") from None
    return lock


def _failed(out: Path, exc: OSError) -> CouldNotSave:
    return CouldNotSave(f"the gradebook in {out} could not be written ({exc.strerror or exc}); the rows graded so far "
                        "are kept whole: free space or fix the folder, then run the same command with --resume")


class Rows:
    """``gradebook.csv`` and ``rows.jsonl`` of one folder, appended a whole row at a time.

    Args:
        folder: the output folder (held: :func:`hold`).
        earlier: what the folder holds already (``--resume``: :func:`tutor.instructor.gradebook.graded_so_far`):
            ``rows.jsonl`` is kept up to its last whole row and ``gradebook.csv`` written again from it.

    Raises:
        CouldNotSave: a file cannot be written (from here and from :meth:`append`).
    """

    def __init__(self, folder: Path, earlier: gradebook.Earlier | None = None) -> None:
        self.folder = Path(folder)
        try:
            self._writer = gradebook.Writer(self.folder, earlier)
        except OSError as exc:
            raise _failed(self.folder, exc) from None

    def append(self, row: dict) -> None:
        """Write one row to both files, whole, or raise with both files as they were.

        Raises:
            CouldNotSave: the write failed (a full disk, a folder made read-only); nothing of the row stays.
        """
        try:
            self._writer.append(row)
        except OSError as exc:
            raise _failed(self.folder, exc) from None

    def close(self) -> None:
        self._writer.close()


@dataclass
class Written:
    """What :func:`finish` wrote and counted."""

    gradebook: Path
    results: Path
    rows_file: Path
    counts: dict = field(default_factory=dict)
    rows: int = 0
    learners: int = 0
    warnings: int = 0


def finish(out: Path, plan, titles: dict, source: str, now=None) -> Written:
    """The tail of every grading, over the rows in ``out``'s ``rows.jsonl`` (:mod:`tutor.instructor.tail`:
    read one line at a time, never held): mark which rows count, write ``gradebook.csv``, ``rows.jsonl``
    and ``results.json`` atomically (each whole or as it was), and count the statuses.

    Raises:
        CouldNotSave: a file cannot be written; the rows file keeps every whole row, for ``--resume``.
    """
    out = Path(out)
    paths = Written(out / gradebook.GRADEBOOK, out / RESULTS, out / gradebook.ROWS)
    try:
        with open(paths.rows_file, "ab+") as fh:  # made when no row was graded at all
            found = tail.scan(fh, plan)
            tail.write(out, fh, found, plan, titles, source, now)
    except OSError as exc:
        raise _failed(out, exc) from None
    paths.counts = dict(found.counts)
    paths.rows = len(found.offsets)
    paths.learners = len(found.learners)
    paths.warnings = found.warnings
    return paths


def write_rows(out: Path, rows) -> None:
    """``out``'s ``rows.jsonl`` made of ``rows`` (any iterable of row dicts), whole or as it was.

    Raises:
        CouldNotSave: it cannot be written.
    """
    try:
        with open_atomically(Path(out) / gradebook.ROWS) as fh:
            for r in rows:
                fh.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError as exc:
        raise _failed(Path(out), exc) from None
