"""The answers file of ``tutor grade``, read into rows that are checked but not run.

An instructor's answers come as CSV with a header row, or as JSON lines (one
object per line; one JSON array of objects reads too). Which column holds
which field is :mod:`tutor.instructor.columns`' rule. Each row becomes an
:class:`AnswerRow`: its learner turned into an identity, its exercise looked
up in the catalog, its answer read as the exercise's kind. A row that cannot
be graded keeps the one sentence saying why (``problem``); a time or seed
that does not read is a warning and the row is still graded. Only a file
that cannot be read as answers at all raises.

:func:`not_yet_graded` is what ``--resume`` still has to grade, given the
rows a killed grading left in its gradebook.

Layers: this module imports neither torch nor Textual.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from tutor.model import answers
from tutor.model.attempts import PREDICT, ProgressError
from tutor.model.errors import UsageError
from tutor.instructor import columns as lms
from tutor.instructor import json_items, wide
from tutor.store.names import learner_key, validate_learner

@dataclass
class AnswerRow:
    """One row of the answers file, read and checked but not run.

    Attributes:
        line: where the row starts in the file (1 is the first line; a CSV header is line 1), or
            for a JSON array the item's position (1 for the first).
        learner: the learner's name as the row spells it, tidied (None when unusable).
        key: the learner's identity (:func:`tutor.store.names.learner_key`), or None.
        exercise: the exercise id when it names one in the catalog, else the text given (or None).
        answer: the answer as text.
        note: the explain-back note, or None.
        submitted_at: when it was submitted, ISO 8601 in UTC, or None.
        seed: the check's seed.
        problem: why the row cannot be graded (one sentence), or None.
        warnings: what was wrong with the row but did not stop its grading (a time or seed that
            does not read), one sentence each.
        mode: ``predict``, or ``fix`` for a repair (``--fixes``).
        text: a fix's repaired file, as submitted.
        refused: a fix's file refused before it was read (a link, a second hard link), by name, else None.
        same_as: a fix's other learners who handed in the same text for this exercise, else empty.
        identity: what the LMS says of the learner (``sis_id``, ``student_id``, ``section``), as given.
    """

    line: int
    learner: str | None = None
    key: str | None = None
    exercise: str | None = None
    answer: str | None = None
    note: str | None = None
    submitted_at: str | None = None
    seed: int = 0
    problem: str | None = None
    warnings: list = field(default_factory=list)
    mode: str = PREDICT
    text: str | None = None
    refused: str | None = None
    same_as: list = field(default_factory=list)
    identity: dict = field(default_factory=dict)

    @property
    def submission(self) -> str:
        """The submission id: 16 hex digits of the SHA-256 of (learner, exercise, answer, submitted_at)."""
        who = self.key if self.key is not None else (self.learner or "")
        parts = [who, self.exercise or "", self.answer or "", self.submitted_at or "", self.mode]
        return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def iter_answers(path: str | os.PathLike, catalog, columns: dict | None = None, layout: str | None = None,
                 assignment=None, name: str | None = None) -> Iterator[AnswerRow]:
    """The rows of an answers file one at a time, each checked against ``catalog``
    and read from the file as it is taken: a class's export of any size is never held whole.

    Rows that cannot be graded keep their reason in ``problem``; only a file
    that cannot be read as answers at all raises.

    CSV rows stream from the file. JSON lines and a JSON array are read twice, an object at a time (once for
    the keys of every object, which together are the header, once for the rows), so an array that does not
    parse is refused before its first row. Standard input is read as a file too: a grading copies it
    once with :func:`stdin_copy` and passes the copy here.

    Args:
        columns: ``--columns`` as :func:`tutor.instructor.columns.parse_columns` reads it.
        layout: ``long`` (one row per answer), ``wide`` (one row per student: :mod:`tutor.instructor.wide`),
            or None: wide when the header is a Canvas or Moodle wide export, else long.
        assignment: maps a wide export's question columns to exercises (by id or title; by position).
        name: what messages call the file (default ``path``; a copy of standard input is called ``-``).

    Raises:
        UsageError: the file is missing, not UTF-8 (a CSV file raises where that shows), has no rows, is a
            JSON array that does not parse, or its header lacks a required column or has an ambiguous one.
    """
    shown = name or str(path)
    try:
        fh = open(path, encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise UsageError(f"there is no answers file {shown}; check the path given to --answers") from None
    except OSError as exc:
        raise UsageError(f"cannot read the answers file {shown} ({exc.strerror or exc})") from None
    checker, n, source = Checker(catalog), 0, f"the answers file {shown}"
    with fh:
        try:
            suffix = Path(str(path)).suffix.lower()
            as_json = suffix in (".jsonl", ".ndjson", ".json") or (suffix != ".csv" and json_items.first_char(fh) in ("{", "["))
            raw = _json_rows(fh, columns, source) if as_json else _csv_rows(fh, columns, source, layout, catalog,
                                                                            assignment)
            for line, fields in raw:
                n += 1
                yield checker(line, fields)
        except UnicodeDecodeError:
            again = "grade again with --resume" if n else "grade again"
            raise UsageError(f"the answers file {shown} is not UTF-8 text; save it as UTF-8, then {again}") from None
    if n == 0:
        raise UsageError(f"{shown} holds no answers; write one row per answer with the columns learner, exercise "
                         "and answer")


@contextmanager
def stdin_copy() -> Iterator[str]:
    """Standard input copied to a temporary file a MiB at a time (never held whole), so it can be read more
    than once; the file's path, removed when the block ends.

    Raises:
        UsageError: standard input cannot be read, or the copy cannot be written.
    """
    try:
        with tempfile.NamedTemporaryFile(prefix="tutor-answers-") as copy:
            shutil.copyfileobj(sys.stdin.buffer, copy, 1 << 20)
            copy.flush()
            yield copy.name
    except OSError as exc:
        raise UsageError(f"cannot copy the answers from standard input ({exc.strerror or exc}); give the file "
                         "to --answers by its path") from None


def _csv_rows(text, columns: dict | None, source: str, layout: str | None = None, catalog=None,
              assignment=None) -> Iterator[tuple[int, dict]]:
    """CSV rows as (line, {field: value}), the header mapped by :func:`tutor.instructor.columns.resolve`, or a
    wide export's rows each turned into one per answer (:mod:`tutor.instructor.wide`), one at a time: ``text``
    is the whole text, or an open file read as the rows are taken."""
    reader = csv.reader(io.StringIO(text, newline="") if isinstance(text, str) else text)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise UsageError(f"{source} is not CSV ({exc})") from None
    found = wide.detect(header) if layout != "long" else None
    if layout == "wide" and found is None:
        raise UsageError(f"{source} is not a wide export this tutor reads (Canvas's Student Analysis or Moodle's "
                         "Responses report, their header as the LMS writes it); without --layout wide it is read as "
                         "one row per answer")
    if found is not None:
        cells = ((reader.line_num, row) for row in reader if any(c.strip() for c in row))
        yield from wide.expand(header, cells, found, catalog, assignment, source)
        return
    mapping = lms.resolve(header, columns, source)
    line = reader.line_num + 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            yield line, {"_problem": f"line {line} is not CSV ({exc})"}
            line = reader.line_num + 1
            continue
        if any(c.strip() for c in cells):
            fields = mapping.fields(cells)
            if len(cells) > len(header):
                fields["_problem"] = f"line {line} has {len(cells)} cells but the header names {len(header)}"
            yield line, fields
        line = reader.line_num + 1


def _json_rows(fh, columns: dict | None, source: str) -> Iterator[tuple[int, dict]]:
    """JSON lines (or one JSON array) of an open text file as (line, {field: value}); a line that is no object
    is a problem row. The keys of every object together are the header (:func:`tutor.instructor.columns.resolve`):
    the file is read once for them, an object at a time, then again for the rows."""
    header: list[str] = []
    seen = set()
    for _, item in json_items.items(fh, source):
        if isinstance(item, dict):
            for k in item:
                if str(k) not in seen:
                    seen.add(str(k))
                    header.append(str(k))
    mapping = lms.resolve(header, columns, source) if header else None
    fh.seek(0)
    for n, item in json_items.items(fh, source):
        if isinstance(item, json_items.Bad):
            yield n, {"_problem": item.problem}
        elif not isinstance(item, dict) or mapping is None:
            yield n, {"_problem": f"line {n} is not a JSON object"}
        else:
            values = [_json_text(item.get(h)) for h in header]
            yield n, {f: v for f, v in mapping.fields(values).items() if v is not None}


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    return json.dumps(value)  # 0.25, -1, [2, 7]: written as a learner would type them


class Checker:
    """Reads each row's fields (learner names and exercise ids looked up once per spelling)."""

    def __init__(self, catalog) -> None:
        self.catalog = catalog
        self.learners: dict = {}
        self.exercises: dict = {}

    def learner(self, text: str):
        found = self.learners.get(text)
        if found is None:
            try:
                name = validate_learner(plain_name(text))
                found = (name, learner_key(name), None)
            except ProgressError as exc:
                found = (None, None, str(exc) if text else "the row names no learner")
            self.learners[text] = found
        return found

    def exercise(self, text: str):
        found = self.exercises.get(text)
        if found is None:
            try:
                found = (self.catalog.get(text.lower()), None)  # ids are lower case: HEAD-SPLIT is head-split
            except KeyError as exc:
                found = (None, exc.args[0])
            self.exercises[text] = found
        return found

    def __call__(self, line: int, fields: dict) -> AnswerRow:
        """A row with every field read, or its first problem named."""
        row = AnswerRow(line=line)
        given = {k: (v.strip() if k not in ("answer", "note") else v) for k, v in fields.items() if k != "_problem"}
        row.learner = given.get("learner") or None
        row.exercise = given.get("exercise") or None
        row.answer = given.get("answer")
        row.note = given.get("note") or None
        row.identity = {k: given[k] for k in lms.IDENTITY if given.get(k)}
        if fields.get("_problem"):
            row.problem = fields["_problem"]
            return row
        name, key, problem = self.learner(given.get("learner", ""))
        if problem is None:
            if name != " ".join(given.get("learner", "").split()):
                row.warnings.append(f"the learner name {given.get('learner', '')[:40]!r} is graded as {name!r} "
                                    "(a name keeps no quotes or invisible characters)")
            row.learner, row.key = name, key
        ex = None
        if problem is None:
            if not row.exercise:
                problem = "the row names no exercise"
            else:
                ex, problem = self.exercise(row.exercise)
        if problem is None and ex is not None:
            row.exercise = ex.id
            try:
                ex.parse_answer(row.answer if row.answer is not None else "")
            except answers.AnswerError as exc:
                problem = str(exc)
        if given.get("seed"):
            try:
                row.seed = int(given["seed"])
                if row.seed < 0:
                    raise ValueError
            except ValueError:
                row.seed = 0
                row.warnings.append(f"the seed {given['seed'][:20]!r} is not a whole number 0 or more; graded "
                                    "with seed 0")
        if given.get("submitted_at"):
            row.submitted_at, warning = _time(given["submitted_at"])
            if warning:
                row.warnings.append(warning)
        row.problem = problem
        return row


#: The LMS's own date forms (no offset: UTC): Canvas "2026-11-29 10:00:00 UTC", Moodle "29 November 2026  10:00 AM"
#: (also "Sunday, 29 November 2026, 10:00 AM"), read after runs of spaces are made one.
LMS_TIMES = ("%Y-%m-%d %H:%M:%S UTC", "%Y-%m-%d %H:%M UTC", "%d %B %Y %I:%M %p", "%A, %d %B %Y, %I:%M %p",
             "%d %B %Y, %I:%M %p", "%d %b %Y %I:%M %p")


#: Quotes an LMS puts around a nickname (Robert "Bob" Smith), and the spaces a name may hold besides " ".
QUOTES = {'"': None, "\u201c": None, "\u201d": None, "\u201e": None, "\u00ab": None, "\u00bb": None}


def plain_name(text: str) -> str:
    """A learner's name as an LMS writes it, made a name :func:`tutor.store.names.validate_learner` takes:
    invisible characters (a zero-width space, a byte-order mark, a soft hyphen) dropped, other spaces (a
    no-break space) made spaces, and a quoted nickname kept in parentheses (``Robert "Bob" Smith`` is
    ``Robert (Bob) Smith``). Anything else is left for the rule to refuse."""
    out = []
    for ch in text:
        kind = unicodedata.category(ch)
        if kind == "Cf":
            continue
        out.append(" " if kind == "Zs" else ch)
    tidy = "".join(out)
    if any(q in tidy for q in QUOTES):
        tidy = re.sub(r'["\u201c\u201e\u00ab]\s*([^"\u201c\u201d\u201e\u00ab\u00bb]+?)\s*["\u201d\u00bb]', r"(\1)", tidy)
        tidy = tidy.translate(str.maketrans(QUOTES))
    return tidy


def _time(text: str) -> tuple[str | None, str | None]:
    """``submitted_at`` in the progress file's form (UTC, seconds), or the sentence why it does not read."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        when = None
        squeezed = " ".join(text.split())
        for form in LMS_TIMES:
            try:
                when = datetime.strptime(squeezed, form)
                break
            except ValueError:
                continue
        if when is None:
            return None, (f"submitted_at {text[:40]!r} is not a date and time such as 2026-11-29T10:00:00+00:00; "
                          "graded without a time")
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).isoformat(timespec="seconds"), None


def not_yet_graded(rows: list[AnswerRow], held: dict[str, int]) -> list[AnswerRow]:
    """The rows ``--resume`` still has to grade: each submission as often as the file has it, less the
    times the gradebook holds it already (``held``: submission id -> rows graded, as
    :func:`tutor.instructor.gradebook.graded_so_far` counts them)."""
    return list(still_to_grade(rows, held))


def still_to_grade(rows, held: dict[str, int]) -> Iterator[AnswerRow]:
    """:func:`not_yet_graded`, one row at a time as ``rows`` gives them (``held`` is not changed)."""
    left = dict(held)
    for row in rows:
        sid = row.submission
        if left.get(sid, 0) > 0:
            left[sid] -= 1
            continue
        yield row
