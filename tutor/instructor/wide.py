"""Wide LMS exports: one row per student, one column per question, turned into one row per answer.

Two layouts are read as their LMS writes them (``--layout wide``, or found
by their header):

* **Canvas, "Student Analysis"** (a quiz's Student Analysis report):
  ``name, id, sis_id, root_account, section, section_id, section_sis_id,
  submitted, attempt``, then for each question a column ``<question id>:
  <question text>`` followed by its points column (headed by the points,
  such as ``1.0``), then ``n correct, n incorrect, score``. The learner is
  ``name``; ``submitted`` reads as ``2026-11-29 10:00:00 UTC``.
* **Moodle, "Responses"** (a quiz's Responses report, downloaded as CSV):
  ``Last name`` (or ``Surname``), ``First name``, any identity columns
  (``ID number``, ``Email address``, ``Institution``, ``Department``),
  ``State, Started on, Completed, Time taken, Grade/<max>``, then
  ``Response 1``, ``Response 2``, … (and ``Right answer N`` when shown, which
  is never read). The learner is the e-mail address when there is one, else
  "First Last"; ``Completed`` reads as ``29 November 2026  10:00 AM``. The
  report's last line, ``Overall average``, is no learner's and is skipped.

Which exercise a question column is comes from the assignment, never a guess:
a Canvas question's text names an exercise of the assignment by id or by title
(``12345: head-split`` or ``12345: Splitting heads``, any case, alone or at the
start of the text); Moodle's ``Response N`` is the assignment's N-th exercise.
A column that names none is refused with one sentence saying which. An empty
answer cell is a question not answered: no row.

Identity the LMS gives (SIS ID, student ID, section) rides along on every row.

Pure: rows in, rows out.
"""

from __future__ import annotations

import re

from tutor.model.errors import UsageError

CANVAS_QUESTION = re.compile(r"^\s*(\d+)\s*:\s*(.*)$", re.S)
MOODLE_RESPONSE = re.compile(r"^\s*response\s+(\d+)\s*$", re.I)


def _n(text: str) -> str:
    return " ".join(text.strip().lower().split())


def detect(header: list[str]) -> str | None:
    """``canvas`` or ``moodle`` when the header is one of the two wide layouts, else None."""
    names = [_n(h) for h in header]
    if {"name", "sis_id", "submitted"} <= set(names) and any(CANVAS_QUESTION.match(h) for h in header):
        return "canvas"
    if any(MOODLE_RESPONSE.match(h) for h in header) and ("first name" in names) and \
            ("last name" in names or "surname" in names):
        return "moodle"
    return None


def _choices(assignment, catalog) -> list:
    if assignment is not None:
        return [catalog.get(a.id) for a in assignment.exercises]
    return list(catalog.exercises)


def _canvas_exercise(text: str, choices: list):
    said = _n(text)
    for ex in choices:
        if said in (ex.id, _n(ex.title)):
            return ex
    for ex in sorted(choices, key=lambda e: -len(e.title)):
        for name in (ex.id, _n(ex.title)):
            if said.startswith(name) and not said[len(name):len(name) + 1].isalnum():
                return ex
    return None


def expand(header: list[str], rows, layout: str, catalog, assignment, source: str):
    """Each (line, cells) of a wide export as (line, {field: value}) per answered question, lazily.

    Raises:
        UsageError: a question column names no exercise of the assignment, a Moodle export without an
            assignment, or a header that is neither layout.
    """
    choices = _choices(assignment, catalog)
    names = [_n(h) for h in header]
    questions: list[tuple[int, str]] = []  # (column, exercise id)
    if layout == "canvas":
        for i, h in enumerate(header):
            m = CANVAS_QUESTION.match(h)
            if m is None:
                continue
            ex = _canvas_exercise(m.group(2), choices)
            if ex is None:
                raise UsageError(f"the question column {h.strip()[:60]!r} of {source} names no exercise "
                                 f"{'of the assignment' if assignment is not None else 'of the catalog'}; start "
                                 "each question's text with its exercise id or title (such as '12345: head-split')")
            questions.append((i, ex.id))
        learner = [names.index("name")]
        when = names.index("submitted")
        ident = {"sis_id": "sis_id", "student_id": "id", "section": "section"}
    else:
        if assignment is None:
            raise UsageError(f"{source} is a Moodle Responses export, whose questions are numbered, not named; give "
                             "--assignment listing the quiz's exercises in its order")
        for i, h in enumerate(header):
            m = MOODLE_RESPONSE.match(h)
            if m is None:
                continue
            n = int(m.group(1))
            if not 1 <= n <= len(choices):
                raise UsageError(f"{source} has the column {h.strip()!r} but the assignment lists {len(choices)} "
                                 "exercise" + ("s" if len(choices) != 1 else "") + "; list one per question, in the "
                                 "quiz's order")
            questions.append((i, choices[n - 1].id))
        last = names.index("last name") if "last name" in names else names.index("surname")
        email = names.index("email address") if "email address" in names else None
        learner = [email] if email is not None else [names.index("first name"), last]
        when = names.index("completed") if "completed" in names else None
        ident = {"student_id": "id number", "section": "department"}
    where = {field: names.index(col) for field, col in ident.items() if col in names}
    for line, cells in rows:
        def cell(i):
            return cells[i].strip() if i is not None and i < len(cells) else ""
        who = " ".join(c for c in (cell(i) for i in learner) if c)
        if layout == "moodle" and (not who or _n(who).startswith("overall average")):
            continue
        base = {"learner": who, **{f: cell(i) for f, i in where.items() if cell(i)}}
        if when is not None and cell(when) and cell(when) != "-":
            base["submitted_at"] = cell(when)
        for i, ex_id in questions:
            answer = cells[i] if i < len(cells) else ""
            if not answer.strip() or answer.strip() == "-":
                continue  # not answered
            yield line, {**base, "exercise": ex_id, "answer": answer}
