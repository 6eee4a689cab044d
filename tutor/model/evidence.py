"""Two sides' evidence compared row by row: the first table row or series point where they differ, in one sentence.

A side's evidence (``exercises.outcome``: tables of text cells, series of
numbers, notes) is what reached the pipe from it, so its shape is read
before any cell is: evidence of a shape no check writes is a difference,
named, never an exception. Pure: imports neither torch nor Textual.
"""

from __future__ import annotations

import math
import re
from typing import Any

from exercises.outcome import RECORD_RAISED, RECORD_RETURNED
from tutor.model.answers import same_values

#: The learner's side is called this in every run, result and JSON object.
YOURS = "yours"
#: A second run of the clean code in the same request: what of the clean code's outcome reproduces.
REPEAT = "repeat"


#: A check marks evidence it knows is not reproducible by saying so in its title (modules_containers:
#: "A fresh torch.empty(64, 128), unfilled (varies from run to run)"); such tables and series are never
#: compared. (Forked from one worker, the clean code's two runs may even see the same garbage.)
VARIES_MARK = "varies from run to run"
#: Evidence cells that read as numbers agree within this relative difference: float rounding of another,
#: equally correct, order of operations, and the small jitter of a memory reading that happened to agree
#: on the clean code's two runs (seq-sweep's "extra MiB": 24.1 on both, 24.0 on the reverse edit,
#: measured). A faked value is far further off ...
EVIDENCE_REL_TOL = 1e-2
#: ... or this absolute one (a difference that should be 0 but is rounding, e.g. 1e-7).
EVIDENCE_ABS_TOL = 1e-6


def first_difference(ours: list, theirs: list, ours_name: str = YOURS, theirs_name: str = "clean",
                     repeat: list | None = None, tolerance: float = 0.0, named_rows: bool = False) -> str | None:
    """The first evidence row where two sides differ, named in one sentence; None when they agree.

    Tables are paired by title and compared row by row, cell by cell;
    series by title, point by point; notes are commentary and never compared,
    nor is a table or series whose title says it varies (:data:`VARIES_MARK`).
    Cells that read as numbers agree within :data:`EVIDENCE_REL_TOL`,
    :data:`EVIDENCE_ABS_TOL` or ``tolerance``; others must be equal. A table
    or series on one side only is a difference, and so is evidence of a
    shape no check writes (:func:`_unreadable`).

    Args:
        ours, theirs: two sides' evidence lists (yours, clean).
        ours_name, theirs_name: how the sentence names them.
        repeat: a second run of the same code as ``theirs`` (the side
            ``repeat``), or None. Only a row or point that ``theirs`` and
            ``repeat`` give exactly alike is compared: what the same code
            does not reproduce exactly (a timing, a memory reading) is not
            held against ``ours``. (Measured: the same code in one request
            reproduces every other row exactly.)
        tolerance: the exercise's tolerance, for numeric cells.
        named_rows: every row's first cell is its name (a record's ``logits[0]``), so a row on one side
            only is named as inserted or left out, not compared with the row in its place.
    """
    for side, evidence in ((ours_name, ours), (theirs_name, theirs)):
        if not isinstance(evidence, list):
            return f"the evidence of the {side} side is not a list of tables, series and notes"
    repeat = repeat if isinstance(repeat, list) else None
    theirs_items = {_item_key(item): item for item in theirs if isinstance(item, dict)}
    repeat_items = {_item_key(item): item for item in (repeat or []) if isinstance(item, dict)}
    ours_keys = set()
    for item in ours:
        if not isinstance(item, dict) or item.get("type") == "note" or VARIES_MARK in str(item.get("title")):
            continue
        key = _item_key(item)
        ours_keys.add(key)
        other = theirs_items.get(key)
        kind, title = key
        if other is None:
            if repeat is not None and key in repeat_items:
                continue  # the clean code itself gave it on one run and not the other
            return f"{kind} {title!r} is on the {ours_name} side only"
        again = repeat_items.get(key)  # None without a repeat
        unreadable = _unreadable(item, ours_name) or _unreadable(other, theirs_name)
        if unreadable is not None:
            return unreadable
        if again is not None and _unreadable(again, REPEAT) is not None:
            again = None  # a repeat that cannot be read says nothing about what reproduces
        if kind == "table":
            rows, other_rows = item.get("rows", []), other.get("rows", [])
            again_rows = again.get("rows", []) if again is not None else None
            for n, (row, other_row) in enumerate(zip(rows, other_rows), start=1):
                if again_rows is not None and (n > len(again_rows) or other_row != again_rows[n - 1]):
                    continue  # this row of the clean code does not reproduce exactly: a timing, a reading
                if not _rows_agree(row, other_row, tolerance):
                    if named_rows and row and other_row and str(row[0]) != str(other_row[0]):
                        extra = _extra_rows(rows, other_rows, ours_name, theirs_name)
                        if extra:  # a row inserted or left out, not a row changed: name it
                            return f"table {title!r}: {extra.strip(' ()')}"
                    name = _row_name(row, other_row, item.get("columns", []))
                    label = f"row {n}" + (f" ({name})" if name else "")
                    return f"table {title!r}, {label}: " + _changed_cells(row, other_row, item.get("columns", []),
                                                                          ours_name, theirs_name, tolerance)
            if len(rows) != len(other_rows) and (again_rows is None or len(again_rows) == len(other_rows)):
                return (f"table {title!r} has {len(rows)} rows on the {ours_name} side and "
                        f"{len(other_rows)} on the {theirs_name} side"
                        + (_extra_rows(rows, other_rows, ours_name, theirs_name) if named_rows else ""))
        elif kind == "series":
            values, other_values = item.get("values", []), other.get("values", [])
            again_values = again.get("values", []) if again is not None else None
            for n, (v, w) in enumerate(zip(values, other_values), start=1):
                if again_values is not None and (n > len(again_values) or not same_values(w, again_values[n - 1])):
                    continue
                if not _numbers_agree(v, w, tolerance):
                    return f"series {title!r}, point {n}: {ours_name} {float(v):.6g} · {theirs_name} {float(w):.6g}"
            if len(values) != len(other_values) and (again_values is None or len(again_values) == len(other_values)):
                return f"series {title!r} has {len(values)} points on the {ours_name} side and {len(other_values)} " \
                       f"on the {theirs_name} side"
    for key in theirs_items:
        if key not in ours_keys and key[0] != "note" and (repeat is None or key in repeat_items) and \
                VARIES_MARK not in key[1]:
            return f"{key[0]} {key[1]!r} is on the {theirs_name} side only"
    return None


def first_record_difference(ours: list, theirs: list, ours_name: str = YOURS, theirs_name: str = "clean",
                            repeat: list | None = None, tolerance: float = 0.0) -> str | None:
    """The first difference in the whole output of the code under test, as two sides recorded it; None when
    none. Records (``tutor.sandbox.record``: the first calls of a snippet module's functions, each return
    value and written argument a table titled ``ban_tokens, call 1: logits after the call``) are compared as
    :func:`first_difference` compares evidence — a record that the clean code does not reproduce on its
    ``repeat`` run is skipped, one on a side only is a difference, and so are records of a shape no recorder
    writes (records that are not a list among them: never a pass) — and the sentence names the record
    itself, each row by what it shows: ``the output of ban_tokens, call 1: logits after the call, logits[0]:
    col 4: yours -inf · clean 0``; a call that returned on one side and raised on the other is said so."""
    ours = ours if ours is not None else []
    theirs = theirs if theirs is not None else []
    difference = first_difference(ours, theirs, ours_name, theirs_name, repeat, tolerance, named_rows=True)
    if difference is None:
        return None
    if not isinstance(ours, list):
        return f"the records of the {ours_name} side are not a list of tables"
    for item in [*theirs, *ours] if isinstance(theirs, list) else ours:
        title = _item_key(item)[1] if isinstance(item, dict) else None
        prefix = f"table {title!r}"
        if title is None or not difference.startswith(prefix):
            continue
        outcome = _outcome_difference(title, ours, theirs, ours_name, theirs_name)
        if outcome is not None:
            return outcome
        # a record's rows are named by what they show (logits[0], self.weight): their number says nothing
        rest = _NUMBERED_ROW.sub(r", \1:", difference[len(prefix):], count=1)
        return f"the output of {title}{rest}"
    return f"the output of the code under test differs: {difference}"


#: ", row 2 (logits[0]):" in a difference sentence, the row's name kept.
_NUMBERED_ROW = re.compile(r"^, row \d+ \((.*?)\):")


def _outcome_difference(title: str, ours: list, theirs: list, ours_name: str, theirs_name: str) -> str | None:
    """When one side's call returned where the other's raised (records titled ``f, call 1: the value
    returned`` and ``f, call 1: what it raised``): that, in one sentence; else None."""
    call = next((title[:-len(end) - 2] for end in (RECORD_RETURNED, RECORD_RAISED) if title.endswith(f": {end}")),
                None)
    if call is None:
        return None
    said = {ours_name: _outcome(call, ours), theirs_name: _outcome(call, theirs)}
    if None in said.values() or said[ours_name] == said[theirs_name]:
        return None
    return f"the output of {call}: {ours_name} {said[ours_name]} where {theirs_name} {said[theirs_name]}"


def _outcome(call: str, records: Any) -> str | None:
    """How ``call`` ended in one side's records: "returned a value", "raised ValueError", or None."""
    for item in records if isinstance(records, list) else []:
        title = _item_key(item)[1] if isinstance(item, dict) else None
        if title == f"{call}: {RECORD_RAISED}":
            first = (item.get("rows") or [[]])[0]
            return f"raised {first[-1] if isinstance(first, list) and first else 'an exception'}"
        if title == f"{call}: {RECORD_RETURNED}":
            return "returned a value"
    return None


#: What a table's cell may be: text as ``exercises.outcome.fmt`` writes it, or a plain value.
_CELL_TYPES = (str, int, float, bool, type(None))


def _unreadable(item: dict, side: str) -> str | None:
    """A sentence naming an evidence item whose shape no check writes — a table that is not rows of plain
    cells, a series that is not a list of numbers (``exercises.outcome``) — else None. A side's evidence is
    whatever reached the pipe, so its shape is read before any cell is."""
    kind, title = _item_key(item)
    if kind == "table":
        rows, columns = item.get("rows", []), item.get("columns", [])
        if not (isinstance(rows, list) and isinstance(columns, list)
                and all(isinstance(row, list) and all(isinstance(c, _CELL_TYPES) for c in row) for row in rows)):
            return f"table {title!r} on the {side} side is not rows of plain cells, as a check writes them"
    elif kind == "series":
        values = item.get("values", [])
        if not (isinstance(values, list) and all(isinstance(v, (int, float)) for v in values)):
            return f"series {title!r} on the {side} side is not a list of numbers, as a check writes them"
    return None


#: A number with a unit after it, as checks write a reading: "2,816 KiB", "0.41 ms", "3 rows".
_WITH_UNIT = re.compile(r"^(.*?\d)\s+([A-Za-zµ]{1,5})$")


def _reading(cell: Any) -> tuple[float | None, str]:
    """A cell as (the float it reads as, its unit): ("0.25", "") , (2816.0, "KiB") from "2,816 KiB"; (None, "")
    for a cell that is not a number ("1.2e-07", "804,224" and "12.5%" are)."""
    if isinstance(cell, bool):
        return None, ""
    if isinstance(cell, (int, float)):
        return float(cell), ""
    text, unit = str(cell).strip(), ""
    found = _WITH_UNIT.match(text)
    if found:
        text, unit = found.groups()
    try:
        return float(text.rstrip("%").replace(",", "")), unit
    except ValueError:
        return None, ""


def _number(cell: Any) -> float | None:
    """A cell as a float when it reads as one ("0.25", "1.2e-07", "804,224", "12.5%", "2,816 KiB"), else None."""
    return _reading(cell)[0]


def _numbers_agree(a: Any, b: Any, tolerance: float) -> bool:
    (x, x_unit), (y, y_unit) = _reading(a), _reading(b)
    if x is None or y is None or x_unit != y_unit:
        return same_values(a, b) or str(a) == str(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= max(tolerance, EVIDENCE_ABS_TOL, EVIDENCE_REL_TOL * max(abs(x), abs(y)))


def _rows_agree(row: list, other: list, tolerance: float) -> bool:
    return len(row) == len(other) and all(_numbers_agree(a, b, tolerance) for a, b in zip(row, other))


def _item_key(item: dict) -> tuple[str, str]:
    """An evidence item's kind and title, which pair it across sides (notes are never paired)."""
    return str(item.get("type", "?")), str(item.get("title", ""))


def _extra_rows(rows: list, other: list, ours_name: str, theirs_name: str) -> str:
    """The first row named on one side only (by its first cell), as a clause: " (self.steps on the yours
    side only)"; "" when every row's name is on both sides."""
    names = {side: [str(r[0]) for r in table if r] for side, table in ((ours_name, rows), (theirs_name, other))}
    for side, that in ((ours_name, theirs_name), (theirs_name, ours_name)):
        there = set(names[that])
        only = next((n for n in names[side] if n not in there), None)
        if only is not None:
            return f" ({only} on the {side} side only)"
    return ""


def _row_name(row: list, other: list, columns: list) -> str:
    """What identifies a row that differs, from its leading cells, those both sides agree on before the
    first that differs: the first of them that is text (a label: "first head", "logits[0]"), else up to
    two numbers with their columns ("row 0, token 3"); "" when the first cell already differs, or the
    columns do not fit the row to name a bare number. Never a cell of one side only: the value that
    differs is named after the label, not as it."""
    leading = []
    for a, b in zip(row, other):
        if str(a) != str(b):
            break
        leading.append(a)
    text = next((str(a) for a in leading if _number(a) is None and str(a).strip()), None)
    if text is not None:
        return text
    if len(columns) != len(row):
        return ""  # a bare number names nothing without its column
    return ", ".join(f"{name} {a}" for name, a in list(zip(columns, leading))[:2])


def _changed_cells(row: list, other: list, columns: list, ours_name: str, theirs_name: str,
                   tolerance: float) -> str:
    """The cells two rows of one table differ in: ``column: yours A · clean B``, joined by "; "."""
    if len(row) != len(other):
        return f"{ours_name} {', '.join(map(str, row))} · {theirs_name} {', '.join(map(str, other))}"
    names = list(columns) if len(columns) == len(row) else [f"cell {i}" for i, _ in enumerate(row, start=1)]
    return "; ".join(f"{name}: {ours_name} {a} · {theirs_name} {b}"
                     for name, a, b in zip(names, row, other) if not _numbers_agree(a, b, tolerance))
