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

Both files hold text a person may print to a terminal (``cat``, ``less -r``),
and a row's values come from a hand-in (a file name, a side's error): every
character a terminal acts on instead of showing — an escape sequence's ESC,
the other control characters but a cell's line ends and tabs, the
bidirectional overrides — is written as its escape (``\\x1b``), and a name
that is not UTF-8 keeps its bytes as ``\\xff`` (:func:`escaped`). Both files
are UTF-8 text whatever a row held.

``--resume`` keeps of the rows already there only what it needs
(:func:`graded_so_far`: how often each submission id is graded, how many
rows, where the last whole row ends), never the rows themselves: the
gradebook is written again from ``rows.jsonl`` a row at a time.

Pure except :class:`Writer`, :func:`graded_so_far` and :func:`read_rows`, which touch the two files.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from tutor.model.attempts import GRADED, WARMUP
from tutor.store.files import spreadsheet_safe  # the one rule for a spreadsheet cell, every CSV

#: The gradebook's columns, in order; each is a key of a row's JSON (see :func:`cells`).
COLUMNS = ("line", "learner", "sis_id", "student_id", "section", "exercise", "mode", "answer", "status", "verdict", "counts", "score", "points",
           "prediction", "observed", "reason", "warnings", "same_as", "submitted_at", "seed", "device", "confined",
           "duration_s", "reused", "saved", "note_saved", "submission")
GRADEBOOK = "gradebook.csv"
ROWS = "rows.jsonl"

#: What a terminal acts on instead of showing: C0 and C1 controls, DEL, the bidirectional marks, overrides and
#: isolates; and the lone surrogates a name that is not UTF-8 decodes to (``os.fsdecode``).
_ACTED_ON = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: What a cell keeps of them: line ends and tabs (an answer's or a diff's lines), which CSV quoting holds.
CELL_KEEPS = "\n\r\t"


def escaped(text: str, keep: str = "") -> str:
    """``text`` with every character a terminal acts on written as its escape (``\\x1b``, ``\\u202e``), but
    those in ``keep``; a byte of a name that is not UTF-8 (a lone surrogate) as the byte (``\\xff``)."""
    def one(match: re.Match) -> str:
        ch = match.group()
        if ch in keep:
            return ch
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the byte code - 0xDC00
            return f"\\x{code - 0xDC00:02x}"
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return _ACTED_ON.sub(one, text)


def escaped_row(value):
    """A row (or any JSON value) with every text in it :func:`escaped`, keeping a cell's line ends and tabs."""
    if isinstance(value, str):
        return escaped(value, CELL_KEEPS)
    if isinstance(value, dict):
        return {escaped(str(k)): escaped_row(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escaped_row(v) for v in value]
    return value

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
    return list(iter_rows(folder))


def iter_rows(folder: Path) -> Iterator[dict]:
    """:func:`read_rows` one row at a time, the file read as they are taken (none when there is no file)."""
    try:
        fh = open(Path(folder) / ROWS, "rb")
    except FileNotFoundError:
        return
    with fh:
        for _, row in rows_with_offsets(fh):
            yield row


@dataclass
class Earlier:
    """What ``--resume`` keeps of the rows a grading left in its folder (:func:`graded_so_far`).

    Attributes:
        held: submission id -> how many of its rows are graded already.
        rows: how many whole rows there are.
        end: bytes of ``rows.jsonl`` up to the end of its last whole row (a line cut short after it is dropped).
        newline: whether that last whole row ends with its newline (a kill between a row and its newline).
    """

    held: dict = field(default_factory=dict)
    rows: int = 0
    end: int = 0
    newline: bool = True


#: The verdict of a row whose check could not run for the machine's sake (its worker died, or the clean side
#: did not measure): ``--resume`` grades such a row again (:func:`graded_so_far` does not count it).
COULD_NOT_RUN = "could not run"


#: How a warm-up's row is told and counted (its mode is ``warmup``): a bet its check judged, scored by nothing,
#: so never among the passes and fails.
WARM_UP = "warm-up"


def tally_of(row: dict) -> str:
    """What a row is counted as in a grading's summary and said as on its line: its status, but
    :data:`WARM_UP` for a warm-up's answer that its check judged (a pass or a fail that scores nothing)."""
    status = row.get("status")
    return WARM_UP if row.get("mode") == WARMUP and status in GRADED else status


def an_attempt(row: dict) -> bool:
    """Whether ``row`` is one of the learner's attempts at its exercise: a hand-in or an answer for an assigned
    exercise that its check judged or refused. A row the machine :data:`could not run <COULD_NOT_RUN>` is not:
    it is graded again, and only the learner's own attempts are counted."""
    return row.get("status") != "not_assigned" and row.get("verdict") != COULD_NOT_RUN


def graded_so_far(folder: Path) -> Earlier:
    """What ``folder``'s ``rows.jsonl`` already holds, read a line at a time; memory grows with the number of
    distinct submissions (one id and one count each), never with the size of the rows. A row whose check
    :data:`could not run <COULD_NOT_RUN>` is not held: ``--resume`` grades it again, and the new row counts.

    Raises:
        OSError: the file exists but cannot be read.
    """
    found = Earlier()
    try:
        fh = open(Path(folder) / ROWS, "rb")
    except FileNotFoundError:
        return found
    with fh:
        for offset, row, raw in _whole_lines(fh):
            if row is not None and row.get("verdict") != COULD_NOT_RUN:  # a row whose worker died is graded again
                sid = row.get("submission", "")
                found.held[sid] = found.held.get(sid, 0) + 1
                found.rows += 1
            found.end, found.newline = offset + len(raw), raw.endswith(b"\n")
    return found


def rows_with_offsets(fh) -> Iterator[tuple[int, dict]]:
    """(offset, row) for each whole row of an open ``rows.jsonl`` (binary), from its start: a line that is
    not JSON (the one in flight when a grading stopped) ends it; a line that is JSON but no row is passed
    over."""
    for offset, row, _ in _whole_lines(fh):
        if row is not None:
            yield offset, row


def _whole_lines(fh) -> Iterator[tuple[int, dict | None, bytes]]:
    """(offset, row or None for JSON that is no row, the line's bytes) for each line up to the first that is
    not JSON."""
    fh.seek(0)
    offset = 0
    for raw in fh:
        try:
            row = json.loads(raw)
        except ValueError:
            return
        yield offset, row if isinstance(row, dict) else None, raw
        offset += len(raw)


def header_line() -> bytes:
    """The gradebook's header line, as :class:`Writer` and the tail write it."""
    out = io.StringIO(newline="")
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerow(COLUMNS)
    return out.getvalue().encode("utf-8")


def row_line(row: dict) -> bytes:
    """One row's gradebook line (:func:`cells`), quoted, as bytes."""
    out = io.StringIO(newline="")
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerow(cells(row))
    return out.getvalue().encode("utf-8")


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (a short write goes on where it stopped).

    Raises:
        OSError: the write failed (a full disk: ENOSPC).
    """
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Writer:
    """Appends graded rows to ``gradebook.csv`` and ``rows.jsonl`` in one folder, each row whole or not at all.

    Each row is written to each file with unbuffered writes; when one fails, both files are cut back to
    the end of the last whole row before the error is raised, so a reader (and ``--resume``) never meets
    half a row.

    Args:
        folder: the output folder (it exists and is writable).
        earlier: what ``rows.jsonl`` holds already (``--resume``: :func:`graded_so_far`): it is kept up to
            its last whole row (a line cut short by a kill is gone) and ``gradebook.csv`` is written again
            from it, a row at a time; without, both files start empty.

    Raises:
        OSError: a file cannot be written (from here and from :meth:`append`).
    """

    def __init__(self, folder: Path, earlier: Earlier | None = None) -> None:
        self.folder = Path(folder)
        self._fds: list[int] = []
        self._sizes = [0, 0]
        keep = earlier is not None and earlier.end > 0
        self._fds.append(os.open(self.folder / ROWS, os.O_WRONLY | os.O_CREAT | (0 if keep else os.O_TRUNC), 0o666))
        self._fds.append(os.open(self.folder / GRADEBOOK, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666))
        if keep:
            os.ftruncate(self._fds[0], earlier.end)
            self._sizes[0] = earlier.end
            os.lseek(self._fds[0], earlier.end, os.SEEK_SET)
        self._write(b"" if not keep or earlier.newline else b"\n", header_line())
        if keep:
            with open(self.folder / ROWS, "rb") as fh:
                for _, row in rows_with_offsets(fh):
                    self._write(b"", row_line(row))

    def append(self, row: dict) -> None:
        """Write one row (:func:`escaped_row`) to both files, whole; on failure both files are as they were, and
        the error is raised."""
        row = escaped_row(row)
        self._write(_json_line(row), row_line(row))

    def _write(self, jsonl: bytes, book: bytes) -> None:
        try:
            for n, data in enumerate((jsonl, book)):
                write_all(self._fds[n], data)
        except OSError:
            for fd, size in zip(self._fds, self._sizes):
                try:
                    os.ftruncate(fd, size)
                    os.lseek(fd, size, os.SEEK_SET)
                except OSError:
                    pass  # the error raised below says what went wrong
            raise
        self._sizes = [self._sizes[0] + len(jsonl), self._sizes[1] + len(book)]

    def close(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []


def _json_line(row: dict) -> bytes:
    return (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
