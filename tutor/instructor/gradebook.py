"""The gradebook: ``gradebook.csv`` for people and spreadsheets, ``rows.jsonl`` for programs.

Both are appended one graded row at a time and flushed, so a grading that is
killed loses at most the row in flight, and ``tutor grade --resume`` carries
on from the rows already there (a last line cut short by the kill is
dropped and written again).

``gradebook.csv`` is written by :mod:`csv` with every cell quoted (a CR, an
LF, a quote or a comma inside an answer stays inside its cell), and every
text cell that a spreadsheet would run as a formula — one that starts with
``=``, ``+``, ``-``, ``@``, a tab or a CR, unless it is only a number such as
``-0.25`` — starts with ``'`` (:func:`spreadsheet_safe`). ``rows.jsonl``
keeps each row's values as they are: reading a cell of the CSV gives
``spreadsheet_safe`` of the row's JSON value.

Pure except :class:`Writer` and :func:`read_rows`, which touch the two files.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Iterable

from tutor.store.files import _NUMBER  # noqa: F401  (a cell that is one number)
from tutor.store.files import spreadsheet_safe  # the one rule for a spreadsheet cell, every CSV

#: The gradebook's columns, in order; each is a key of a row's JSON (see :func:`cells`).
COLUMNS = ("line", "learner", "exercise", "mode", "answer", "status", "verdict", "score", "points", "prediction",
           "observed", "reason", "warnings", "same_as", "submitted_at", "seed", "device", "confined", "duration_s",
           "reused", "saved", "note_saved", "submission")
GRADEBOOK = "gradebook.csv"
ROWS = "rows.jsonl"

def cells(row: dict) -> list:
    """One row's gradebook cells, in :data:`COLUMNS` order, as text, made spreadsheet-safe."""
    out = []
    for column in COLUMNS:
        value = row.get(column)
        if column == "prediction":
            value = row.get("prediction_text")
        elif column == "observed":
            value = row.get("observed_text")
        elif column in ("warnings", "same_as"):
            value = " | ".join(row.get(column) or [])
        if value is None:
            text = ""
        elif isinstance(value, bool):
            text = "yes" if value else "no"
        elif column == "duration_s":
            text = f"{value:.3f}"
        elif isinstance(value, float):
            text = f"{value:g}"
        else:
            text = str(value)
        out.append(spreadsheet_safe(text))
    return out


def to_csv(rows: Iterable[dict]) -> str:
    """The whole gradebook as text (header and rows)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(cells(row))
    return out.getvalue()


def read_rows(folder: Path) -> list[dict]:
    """The rows already in ``folder``'s ``rows.jsonl``, in order; a last line cut short is left out."""
    path = Path(folder) / ROWS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break  # the line in flight when the grading stopped
        if isinstance(row, dict):
            rows.append(row)
    return rows


class Writer:
    """Appends graded rows to ``gradebook.csv`` and ``rows.jsonl`` in one folder, flushing each.

    Args:
        folder: the output folder (it exists and is writable).
        earlier: rows already graded (``--resume``): both files are rewritten with them first, so a line
            cut short by a kill is gone; without, both files start empty.

    Raises:
        OSError: a file cannot be written.
    """

    def __init__(self, folder: Path, earlier: list[dict] | None = None) -> None:
        # deferred: loaded when this step runs (the instructor's modules build on one another)
        from tutor.store.files import current_umask
        self.folder = Path(folder)
        self._csv = open(self.folder / GRADEBOOK, "w", encoding="utf-8", newline="")
        self._jsonl = open(self.folder / ROWS, "w", encoding="utf-8", newline="\n")
        for fh in (self._csv, self._jsonl):
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), 0o666 & ~current_umask())
        self._writer = csv.writer(self._csv, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        self._writer.writerow(COLUMNS)
        for row in earlier or []:
            self._write(row)
        self._flush()

    def append(self, row: dict) -> None:
        """Write one row to both files and flush them."""
        self._write(row)
        self._flush()

    def _write(self, row: dict) -> None:
        self._jsonl.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._writer.writerow(cells(row))

    def _flush(self) -> None:
        self._jsonl.flush()
        self._csv.flush()

    def close(self) -> None:
        for fh in (self._jsonl, self._csv):
            try:
                fh.close()
            except OSError:
                pass
