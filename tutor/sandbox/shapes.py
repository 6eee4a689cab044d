"""The shape of what a side sends: each message type's fields, each with the test its value must pass.

The HMAC on a side's line (:func:`tutor.sandbox.protocol.verify`) proves
who sent it; :func:`shape_problem` proves it is a message a side sends, each
field of its type's shape, before anything reads it. A measurement's
``observed``, ``evidence`` and ``records`` are measured for depth without recursion
(:func:`nesting`), so a value nested past the interpreter's recursion limit
is refused, never raised on in the grader.
"""

from __future__ import annotations

from typing import Any

#: How deep a measurement's ``observed`` and ``evidence`` may nest (a check's nest a few levels).
MAX_DEPTH = 32


def _text(value) -> bool:
    return isinstance(value, str)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fraction(value) -> bool:
    return _number(value) and 0 <= value <= 1


def _texts(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _job(value) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def nesting(value) -> int:
    """How many lists and objects deep a JSON value nests (a number or a string: 0; ``[]``: 1; ``[[1]]``: 2),
    found without recursion, so a value nested past the interpreter's recursion limit is measured, not
    raised on."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, outside = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, (list, tuple)) else None
        if children is not None:
            deepest = max(deepest, outside + 1)
            stack.extend((child, outside + 1) for child in children)
    return deepest


def _shallow(value) -> bool:
    return nesting(value) <= MAX_DEPTH


#: Each message a side sends: its fields, each with the test its value must pass (a field left out
#: takes its default; a field the type lacks is ignored).
SIDE_SHAPES: dict[str, dict[str, Any]] = {
    "progress": {"fraction": _fraction, "message": _text, "job": _job, "side": _text},
    "attempted": {"what": _text},
    "unjoined": {"controller": lambda v: v in ("pids", "memory"), "why": _text},
    "measured": {"observed": _shallow, "evidence": lambda v: isinstance(v, list) and _shallow(v),
                 "records": lambda v: isinstance(v, list) and _shallow(v)},
    "raised": {"exception": _text, "message": _text, "where": _text, "frames": _texts},
}


def shape_problem(data: dict) -> str:
    """Why ``data`` (a decoded line from a side) is not a message a side sends, in its type's shape;
    "" when it is. Values nested past :data:`MAX_DEPTH` are refused here, before anything recurses on them."""
    kind = data.get("type")
    shape = SIDE_SHAPES.get(kind) if isinstance(kind, str) else None
    if shape is None:
        return f"a side sent a {str(kind)[:40]!r} message, which no side sends"
    for name, fits in shape.items():
        if name in data and not fits(data[name]):
            deep = name in ("observed", "evidence", "records") and nesting(data[name]) > MAX_DEPTH
            return (f"a {kind} message's {name} nests deeper than {MAX_DEPTH} levels" if deep
                    else f"a {kind} message's {name} is not of its shape")
    return ""
