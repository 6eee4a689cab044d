"""Which column of an answers file is which field: the header as written, or as ``--columns`` says.

An LMS export names its columns its own way (``Email``, ``Question``,
``Response``) and often carries more than the tutor needs: a student number
called ``id``, a ``name`` beside a ``student``, a ``time`` that is the time
spent. Guessing there silently grades the wrong thing, so the rule is:

* a column named exactly as a field (any case; spaces and dashes read as
  underscores: ``Submitted At`` is ``submitted_at``) is that field;
* a few spellings that can mean only one field are read as it when the field
  has no column of its own: ``student`` (learner), ``exercise_id``
  (exercise), ``prediction`` and ``predict`` (answer), ``explain`` (note),
  ``submitted`` (submitted_at);
* a spelling that could mean something else — ``id``, ``name``, ``time`` —
  is never guessed: it is a usage error naming the column and the
  ``--columns`` mapping that settles it;
* two columns for one field are a usage error naming both;
* the learner's identity in the LMS is read when its column is there:
  ``sis_id`` (``SIS User ID``), ``student_id`` (``Student Number``, Moodle's
  ``ID number``) and ``section``;
* ``--columns learner=Email,exercise=Question,answer=Response`` names the
  columns of any fields outright (``FIELD=-`` says the file has none);
  every other field is still read by the rules above.

Pure: no file.
"""

from __future__ import annotations

from dataclasses import dataclass

from tutor.model.errors import UsageError

#: The fields of an answers row, in the gradebook's order.
FIELDS = ("learner", "exercise", "answer", "note", "submitted_at", "seed", "sis_id", "student_id", "section")
REQUIRED = ("learner", "exercise", "answer")
#: The fields that say who a learner is in the LMS, carried into the gradebook and results as given.
IDENTITY = ("sis_id", "student_id", "section")
#: Spellings that can only mean one field, read as it when the field has no exact column.
SYNONYMS = {"student": "learner", "exercise_id": "exercise", "prediction": "answer", "predict": "answer",
            "explain": "note", "submitted": "submitted_at", "sis_user_id": "sis_id", "student_number": "student_id",
            "id_number": "student_id"}
#: Spellings that may mean a field or something else: never guessed.
AMBIGUOUS = {"id": ("exercise", "a student number"), "name": ("learner", "an exercise's name"),
             "time": ("submitted_at", "the time spent")}


def normal(header: str) -> str:
    """A header as compared: trimmed, lower case, spaces and dashes as underscores."""
    return header.strip().lower().replace(" ", "_").replace("-", "_")


@dataclass(frozen=True)
class Mapping:
    """Which header column (by position) is each field; a field not in ``columns`` has none."""

    columns: dict

    def fields(self, cells: list) -> dict:
        """The fields of one row's cells."""
        return {f: cells[i] for f, i in self.columns.items() if i < len(cells)}


def parse_columns(text: str | None) -> dict:
    """``--columns learner=Email,exercise=Question`` as {field: header or None (``-``)}.

    Raises:
        UsageError: a part is not FIELD=COLUMN, or names no field.
    """
    if not text:
        return {}
    named: dict = {}
    for part in text.split(","):
        field, sep, column = part.partition("=")
        field = normal(field)
        if not sep or field not in FIELDS or (not column.strip()):
            raise UsageError(f"--columns takes FIELD=COLUMN pairs separated by commas, such as "
                             f"learner=Email,exercise=Question,answer=Response (fields: {', '.join(FIELDS)}); "
                             f"{part.strip()!r} is not one")
        if field in named:
            raise UsageError(f"--columns names the {field} column twice; name it once")
        named[field] = None if column.strip() == "-" else column.strip()
    return named


def resolve(header: list[str], named: dict | None = None, source: str = "the answers file") -> Mapping:
    """Map a header to the fields (module docstring).

    Args:
        header: the header's cells, in order (for JSON lines: every key seen).
        named: ``--columns`` as :func:`parse_columns` reads it.
        source: how the file is named in a sentence.

    Raises:
        UsageError: a column --columns names is not in the header; two columns
            are one field; a column is ambiguous; a required field has no column.
    """
    named = named or {}
    shown = ", ".join(h.strip() for h in header if h.strip())[:200] or "nothing"
    columns: dict = {}
    by_normal: dict = {}
    for i, h in enumerate(header):
        by_normal.setdefault(normal(h), []).append(i)
    for field, column in named.items():
        if column is None:
            continue
        exact = [i for i, h in enumerate(header) if h.strip() == column]
        loose = exact or by_normal.get(normal(column), [])
        if not loose:
            raise UsageError(f"--columns names the column {column!r} for {field}, but {source} has no such column "
                             f"(it has {shown})")
        if len(loose) > 1:
            raise UsageError(f"{source} has {len(loose)} columns called {column!r}; rename one so that "
                             f"--columns {field}={column} names one column")
        columns[field] = loose[0]
    taken = set(columns.values())
    claims: dict = {}
    for i, h in enumerate(header):
        if i in taken:
            continue
        n = normal(h)
        if n in FIELDS:
            claims.setdefault(n, []).append((0, i))
        elif n in SYNONYMS:
            claims.setdefault(SYNONYMS[n], []).append((1, i))
        elif n in AMBIGUOUS:
            claims.setdefault(AMBIGUOUS[n][0], []).append((2, i))
    for field, found in claims.items():
        if field in named:
            continue  # the instructor said which column that field is: the others are something else
        if len(found) > 1:
            both = " and ".join(repr(header[i].strip()) for _, i in found)
            raise UsageError(f"{source} has {len(found)} columns that may be the {field} ({both}); say which "
                             f"with --columns {field}={header[found[0][1]].strip()}")
        kind, i = found[0]
        if kind == 2:
            other = AMBIGUOUS[normal(header[i])][1]
            # every row needs a required field, so "=-" (no such column) would only stop the next run
            instead = (f"--columns {field}=COLUMN naming the column that holds it" if field in REQUIRED
                       else f"--columns {field}=-")
            raise UsageError(f"the column {header[i].strip()!r} of {source} may be the {field} or {other}, so it is "
                             f"not guessed; say which with --columns {field}={header[i].strip()} or {instead} "
                             f"(the header has {shown})")
        columns[field] = i
    missing = [f for f in REQUIRED if f not in columns]
    if missing:
        raise UsageError(f"{source} has no column {', '.join(missing)} in its header (it has {shown}); the header "
                         "needs learner, exercise and answer, or name the columns with --columns "
                         "learner=COLUMN,exercise=COLUMN,answer=COLUMN")
    return Mapping(columns)
