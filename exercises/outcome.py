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
