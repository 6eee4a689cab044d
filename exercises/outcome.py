"""What a check hands back: one measurement and the evidence behind it.

A check function measures the subject *as it is now* — the clean source or a
faulted private copy — and returns a :class:`Measurement`. The runner calls it
once on each side and pairs the two; the check never knows which side it is
on. Everything here is plain Python and JSON-able, so the worker can send it
across a pipe and the tutor can show it without importing torch.

Evidence comes in three shapes, built with :func:`table`, :func:`series` and
:func:`note`:

* a table — a title, column names and rows of short values;
* a series — a title and a list of numbers (a loss curve, for example);
* a note — one sentence of context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Measurement:
    """One run of a check on one side (clean or faulted).

    Attributes:
        observed: the value the learner's prediction is compared with, in the
            canonical form of the exercise's kind (``tutor.model.answers``,
            which grades in the tutor's process; nothing here imports it).
        evidence: tables, series and notes that show why ``observed`` is what
            it is.
    """

    observed: Any
    evidence: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"observed": jsonable(self.observed), "evidence": jsonable(self.evidence)}


def first_line(exc: BaseException, with_type: bool = True, limit: int | None = None) -> str:
    """An exception as the first line of its traceback: ``"RuntimeError: view size is ..."``.

    A KeyError's str() wraps its message in quotes; the message is taken
    bare. ``with_type=False`` leaves the class name off; ``limit`` keeps the
    line within that many characters, a longer one cut after a whole word
    and ended with "…", so a cut message never reads as a complete one.
    """
    bare = isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str)
    text = (exc.args[0] if bare else str(exc)).strip()
    line = (text.splitlines() or [""])[0]
    if with_type:
        line = f"{type(exc).__name__}: {line}"
    if not limit or len(line) <= limit:
        return line
    cut = line[:limit - 1]
    if " " in cut[limit // 2:]:  # end on a whole word when one ends in the second half
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def table(title: str, columns: list[str], rows: list[list[Any]]) -> dict:
    """A small table of evidence; every cell is shown as text."""
    return {"type": "table", "title": title, "columns": list(columns),
            "rows": [[fmt(cell) for cell in row] for row in rows]}


#: How a whole-output record of one call (``tutor.sandbox.record``) titles the value it returned and the
#: exception it raised: "ban_tokens, call 1: the value returned". The verdict reads the two apart by them.
RECORD_RETURNED = "the value returned"
RECORD_RAISED = "what it raised"

#: Up to this many entries an output is recorded entry by entry (:func:`whole_output`); a larger one as one
#: row per slice along its first axis.
WHOLE_OUTPUT_ENTRIES = 64


def whole_output(title: str, output: Any, name: str, column: str = "col") -> dict:
    """The whole output of the code under test (a tensor, or what ``.tolist()`` gives) as one table.

    A fix is judged on everything its function hands back, not only on the
    quantity graded: the verdict compares every evidence table of the
    learner's side with the clean side's, row by row, so a repair that also
    changes what it was not asked to (one more token banned, entries
    scrambled into the right shape) differs here, and the first difference
    names the row and column. Up to :data:`WHOLE_OUTPUT_ENTRIES` entries,
    one row per index of every axis but the last (``name[0, 1]``) and one
    column per entry of the last (``column 0``, ``column 1``, …); a larger
    output, one row per slice along its first axis: its shape, smallest and
    largest entry, and its position-weighted sum Σ (i + 1)·x_i over the
    slice's entries in order, so entries moved to other places change it,
    not only entries changed. Plain Python: reads ``output.tolist()``.
    """
    values = output.detach().cpu().tolist() if hasattr(output, "detach") else \
        output.tolist() if hasattr(output, "tolist") else output
    if not isinstance(values, list):  # a scalar
        return table(title, ["output", "value"], [[name, values]])
    shape = _shape(values)
    flat = _flat(values)
    if len(flat) <= WHOLE_OUTPUT_ENTRIES and len(shape) >= 1:
        if len(shape) == 1:
            return table(title, ["output", *(f"{column} {c}" for c in range(shape[0]))], [[name, *values]])
        rows = [[f"{name}[{', '.join(str(i) for i in index)}]", *last] for index, last in _lasts(values, ())]
        return table(title, ["row", *(f"{column} {c}" for c in range(shape[-1]))], rows)
    slices = [(f"{name}[{i}]", part) for i, part in enumerate(values)] if len(shape) >= 2 else [(name, values)]
    rows = []
    for label, part in slices:
        entries = [float(x) for x in _flat(part)]
        weighted = sum((i + 1) * x for i, x in enumerate(entries))
        rows.append([label, tuple(_shape(part)), min(entries, default=float("nan")),
                     max(entries, default=float("nan")), weighted])
    return table(title, ["slice", "shape", "smallest", "largest", "position-weighted sum"], rows)


def _shape(values: Any) -> list[int]:
    """The shape of nested lists (as ``tolist()`` gives them)."""
    shape = []
    while isinstance(values, list):
        shape.append(len(values))
        values = values[0] if values else None
    return shape


def _flat(values: Any) -> list:
    """Every entry of nested lists, in order."""
    if not isinstance(values, list):
        return [values]
    return [x for part in values for x in _flat(part)]


def _lasts(values: list, index: tuple):
    """(index, the list along the last axis) for every index of the axes before it, in order."""
    if values and isinstance(values[0], list):
        for i, part in enumerate(values):
            yield from _lasts(part, index + (i,))
    else:
        yield index, values


def series(title: str, values: list[float], label: str = "") -> dict:
    """A list of numbers in order (a loss curve), drawn as a sparkline."""
    return {"type": "series", "title": title, "label": label,
            "values": [float(v) for v in values]}


def note(text: str) -> dict:
    """One sentence of context for the learner."""
    return {"type": "note", "text": text}


def fmt(value: Any) -> str:
    """Format one cell: floats to 6 significant digits, tuples as shapes."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.3e}"
        return f"{value:.6g}"
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def jsonable(value: Any) -> Any:
    """Turn tuples, numpy and torch scalars into JSON-friendly Python values."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, float):
        return value
    if hasattr(value, "tolist"):          # torch / numpy scalars and arrays
        return jsonable(value.tolist())
    if hasattr(value, "item"):
        return value.item()
    return str(value)
