"""Predictions: parse what a learner typed, and compare it with an observation.

Each prediction kind accepts a few spellings (lenient in form) but only one
meaning (strict in meaning). An answer that cannot be read raises
:class:`AnswerError` whose message states the expected format, so the CLI can
print it as one sentence and exit 2.

Canonical values (what checks return as ``observed``):

========  ==========================================  =====================
kind      learner may type                            canonical value
========  ==========================================  =====================
choice    a choice id, e.g. ``b``                     ``"b"``
shape     ``(2, 7)``, ``2,7``, ``2x7``, ``[2, 7]``    ``[2, 7]``
number    ``2``, ``0.908918``, ``804,224``, ``1/3``   ``float``
bool      yes / no / true / false / y / n             ``True`` / ``False``
error     an exception class name, or ``none``        ``"RuntimeError"``
list      ``[0, 3, 1]``, ``0 3 1``, ``yes, no``       ``[0.0, 3.0, 1.0]``
text      anything non-empty                          the text
========  ==========================================  =====================
"""

from __future__ import annotations

import math
import re
from typing import Any

KINDS = ("choice", "shape", "number", "bool", "error", "list", "text")

_TRUE = {"yes", "y", "true", "t", "1"}
_FALSE = {"no", "n", "false", "f", "0"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# How Python's exception classes are named: SomethingError, ...Exception,
# ...Warning, and the few that end otherwise (KeyboardInterrupt, SystemExit,
# StopIteration, GeneratorExit).
_EXCEPTION_NAME = re.compile(r"(Error|Exception|Warning|Interrupt|Exit|Iteration)$", re.IGNORECASE)
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$")
MAX_ANSWER_CHARS = 2000


class AnswerError(ValueError):
    """An answer that cannot be read as the exercise's kind."""


#: Each kind as a learner reads it (lists, tables, messages); ``bool`` and
#: ``error`` are the catalog's names, never shown.
KIND_WORDS = {"choice": "a choice", "shape": "a shape", "number": "a number", "bool": "yes/no",
              "error": "an exception name", "list": "a list", "text": "text"}
#: How "cannot read ... as ___" names a kind.
_READ_AS = {"bool": "yes/no", "error": "an exception name"}


def kind_words(kind: str) -> str:
    """The kind of answer, in the learner's words: ``yes/no`` for bool, ``an exception name`` for error."""
    return KIND_WORDS.get(kind, kind)


def answer_format(kind: str, choices: list[tuple[str, str]] | None = None, length: int | None = None,
                  items: str | list[str] | tuple[str, ...] | None = None) -> str:
    """Describe, in one phrase, how to type an answer of ``kind``.

    For a list, ``length`` and ``items`` (see :func:`item_kinds`) make the
    phrase exact; its examples are generic, never the exercise's answer.
    """
    if kind == "list" and (length or items):
        return _list_format(length, items)
    if kind == "choice":
        ids = [cid for cid, _ in (choices or [])]
        keys = choice_keys(kind, ids)
        if keys == [cid.lower() for cid in ids]:
            return f"one choice id ({', '.join(ids)})"
        # the keys shown in the TUI are answers too: name each beside its id
        return "one choice id or its key (" + ", ".join(
            f"{cid} = {key}" if key else cid for cid, key in zip(ids, keys)) + ")"
    return {
        "shape": "a shape such as (2, 7), 2x7, (7,) or () for a scalar",
        "number": "a number such as 7, 0.25, 1,024 or 1/4",
        "bool": "yes or no",
        "error": "an exception class name as Python prints it (SomethingError), or none if nothing is raised",
        "list": "a list of items separated by commas or spaces",
        "text": "any non-empty text",
    }[kind]


#: Keys the exercise screen uses for actions (explain, hint, progress, quit,
#: run), never given to a choice.
ACTION_KEYS = frozenset("ehpqr")
#: Keys for choices numbered by position: the first ten get 1…9, 0.
NUMBER_KEYS = tuple("1234567890")


def choice_keys(kind: str, ids: list[str]) -> list[str | None]:
    """The key that picks each choice, in order (None: no key; use the list).

    * ``bool``: ``y`` and ``n``.
    * single-letter ids (``a``, ``b``…) that are no action key: the id itself.
    * otherwise the first ten choices get ``1`` … ``9``, ``0``; any later
      choice gets the first letter of its id when that letter is free (not
      an action key, not taken), else no key.

    ``parse`` accepts a choice's key as well as its id, so the key shown in
    the TUI also works for ``tutor run --predict``.
    """
    if kind == "bool":
        return ["y", "n"]
    if ids and all(len(cid) == 1 and cid.lower() not in ACTION_KEYS for cid in ids):
        return [cid.lower() for cid in ids]
    keys: list[str | None] = list(NUMBER_KEYS[:len(ids)])
    for cid in ids[len(NUMBER_KEYS):]:
        letter = cid[:1].lower()
        free = letter.isalpha() and letter not in ACTION_KEYS and letter not in keys
        keys.append(letter if free else None)
    return keys


def parse(kind: str, text: str, choices: list[tuple[str, str]] | None = None, length: int | None = None,
          items: str | list[str] | None = None) -> Any:
    """Read a learner's answer as ``kind``.

    Args:
        kind: one of :data:`KINDS`.
        text: what the learner typed.
        choices: ``(id, text)`` pairs, required for ``kind == "choice"``.
        length: for ``kind == "list"``, the number of items the answer must have.
        items: for ``kind == "list"``, what each item must be (see
            :func:`item_kinds`); None accepts any readable item.

    Returns:
        The canonical value (see the module table).

    Raises:
        AnswerError: the text does not read as ``kind``; the message names the
            expected format.
    """
    if kind not in KINDS:
        raise AnswerError(f"unknown answer kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not isinstance(text, str):
        raise AnswerError(f"the answer must be text; expected {answer_format(kind, choices, length, items)}")
    raw = text.strip()
    if not raw:
        raise AnswerError(f"the answer is empty; expected {answer_format(kind, choices, length, items)}")
    if len(raw) > MAX_ANSWER_CHARS or "\x00" in raw:
        raise AnswerError("the answer is too long or holds a NUL byte; "
                          f"expected {answer_format(kind, choices, length, items)}")
    if kind == "list" and items is not None and not isinstance(items, str) and not length:
        length = len(items)  # one item kind per position fixes the count
    if kind != "text" and raw.endswith(".") and len(raw) > 1:
        raw = raw[:-1].rstrip()  # a sentence's full stop ("saved, moved.") is not part of the answer
    reader = {"choice": _choice, "shape": _shape, "number": _number, "bool": _bool,
              "error": _error, "list": _list, "text": lambda s, c: s}[kind]
    value = reader(raw, choices)
    expected = answer_format(kind, choices, length, items)
    if value is None:
        if kind == "list" and sum(raw.count(b) for b in "([") > 1:
            raise AnswerError(f"cannot read {raw[:60]!r}: write the items as one flat list "
                              f"without inner brackets, row by row; expected {expected}")
        raise AnswerError(f"cannot read {raw[:60]!r} as {_READ_AS.get(kind, kind)}; expected {expected}")
    if kind == "list" and length and len(value) != length:
        count = "1 item" if len(value) == 1 else f"{len(value)} items"
        raise AnswerError(f"the answer has {count}; expected {expected}")
    if kind == "list" and items:
        value = _typed_items(value, _list_parts(raw), item_kinds(items, len(value)), expected)
    return value


def item_kinds(items: str | list[str], length: int) -> list[str]:
    """One item kind per position of a list answer.

    ``items`` is one kind for every item, or a list with one kind per
    position. An item kind is ``number``, ``bool`` (yes/no), ``error`` (an
    exception name or none), or a set of words written ``"both|saved|neither"``.

    Raises:
        ValueError: a per-position list whose length is not ``length``.
    """
    kinds = [items] * length if isinstance(items, str) else list(items)
    if len(kinds) != length:
        raise ValueError(f"{len(kinds)} item kinds for a list of {length} items")
    return kinds


def _item_phrase(kind: str) -> str:
    if "|" in kind:
        return "one of " + ", ".join(kind.split("|"))
    return {"number": "a number", "bool": "yes or no", "error": "an exception name or none"}[kind]


def _list_format(length: int | None, items: str | list[str] | None) -> str:
    per_position = items is not None and not isinstance(items, str)  # a list or tuple: one kind per item
    n = length or (len(items) if per_position else None)
    count = f"{n} " if n else ""
    if items is None:
        return f"a list of {count}items separated by commas or spaces"
    if per_position and len(set(items)) > 1:
        return f"a list of {count}items, in order: " + "; ".join(_item_phrase(k) for k in items)
    kind = items if isinstance(items, str) else items[0]
    if "|" in kind:
        return f"a list of {count}words, each one of {', '.join(kind.split('|'))}"
    example = {"number": "1, 2", "bool": "yes, no", "error": "none, TypeError"}[kind]
    if n is None or n > 2:
        example += ", …"
    plural = {"number": "numbers", "bool": "yes/no answers", "error": "exception names or none"}[kind]
    return f"a list of {count}{plural} separated by commas or spaces, e.g. {example}"


def _typed_items(values: list, typed_as: list[str], kinds: list[str], expected: str) -> list:
    """Check (and canonicalise) each read item against its item kind.

    ``typed_as`` holds the items as the learner wrote them, for the message.
    """
    typed = []
    for position, (value, raw, kind) in enumerate(zip(values, typed_as, kinds), start=1):
        item = _typed_item(value, kind)
        if item is None:
            raise AnswerError(f"item {position} ({raw}) should be {_item_phrase(kind)}; expected {expected}")
        typed.append(item)
    return typed


def _typed_item(value: Any, kind: str) -> Any:
    if kind == "number":
        return value if isinstance(value, float) else None
    if kind == "bool":
        if isinstance(value, bool):
            return value
        return {1.0: True, 0.0: False}.get(value) if isinstance(value, float) else None
    if kind == "error":
        if value is False:  # "no" reads as a yes/no item; here it means no error
            return "none"
        return _error(value, None) if isinstance(value, str) else None
    words = kind.split("|")
    return value.lower() if isinstance(value, str) and value.lower() in words else None


def matches(kind: str, predicted: Any, observed: Any, tolerance: float = 0.0) -> bool:
    """Whether a parsed prediction agrees with an observed canonical value."""
    if kind == "number":
        return _close(predicted, observed, tolerance)
    if kind == "list":
        if not isinstance(observed, list) or len(predicted) != len(observed):
            return False
        return all(_item_equal(p, o, tolerance) for p, o in zip(predicted, observed))
    if kind == "shape":
        return list(predicted) == list(observed) if isinstance(observed, (list, tuple)) else False
    if kind == "error":
        return isinstance(observed, str) and predicted.lower() == observed.lower()
    if kind == "text":
        return isinstance(observed, str) and predicted.strip().lower() == observed.strip().lower()
    return predicted == observed


def show(kind: str, value: Any) -> str:
    """A canonical value as a learner would write it."""
    if kind == "shape" and isinstance(value, (list, tuple)):
        inner = ", ".join(str(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind == "bool" and isinstance(value, bool):
        return "yes" if value else "no"
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.6g}" if isinstance(value, float) else str(value)
    if kind == "list" and isinstance(value, list):
        return "[" + ", ".join(show("bool", v) if isinstance(v, bool) else
                               (f"{v:g}" if isinstance(v, float) else str(v)) for v in value) + "]"
    return str(value)


# --- readers: each returns the canonical value or None -----------------------

def _choice(raw: str, choices):
    wanted = raw.lower().rstrip(").")
    ids = [cid for cid, _ in choices or []]
    for cid in ids:
        if wanted == cid.lower():
            return cid
    for cid, key in zip(ids, choice_keys("choice", ids)):  # the key shown beside a choice
        if key is not None and wanted == key:
            return cid
    if wanted in NUMBER_KEYS[:len(ids)]:  # a position, 1 for the first choice, whatever the keys
        return ids[NUMBER_KEYS.index(wanted)]
    return None


def _unwrap(raw: str):
    """Strip one pair of matching brackets; None if brackets are unbalanced."""
    text = raw.strip()
    if text.lower().startswith("torch.size(") and text.endswith(")"):
        text = text[len("torch.size("):-1].strip()
    pairs = {"(": ")", "[": "]"}
    if text[:1] in pairs:
        if text[-1:] != pairs[text[0]]:
            return None
        text = text[1:-1].strip()
    if any(b in text for b in "()[]"):
        return None
    return text


def _shape(raw: str, _choices):
    inner = _unwrap(raw)
    if inner is None:
        return None
    if not inner:
        return []
    parts = re.split(r"\s*(?:,|x|×|\*)\s*|\s+", inner.lower())
    if len(parts) > 1 and parts[-1] == "" and inner.rstrip().endswith(","):
        parts = parts[:-1]  # "(5,)": the trailing comma of a one-axis shape
    if not parts or not all(p.isdecimal() for p in parts):
        return None
    return [int(p) for p in parts]


def _number(raw: str, _choices):
    s = raw.replace("_", "").replace(" ", "")
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    if "/" in s:
        num, _, den = s.partition("/")
        a, b = _float(num), _float(den)
        if a is None or b is None or b == 0:
            return None
        return a / b
    return _float(s)


def _float(s: str):
    try:
        value = float(s)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _bool(raw: str, _choices):
    word = raw.lower().rstrip(".!")
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    return None


def _error(raw: str, _choices):
    word = raw.strip().rstrip(":")
    if word.lower() in {"none", "no error", "nothing", "no"}:
        return "none"
    if not _IDENT.match(word):
        return None
    name = word.rsplit(".", 1)[-1]
    return name if _EXCEPTION_NAME.search(name) else None


_ITEM_SEPARATOR = re.compile(r"\s*[,;]\s*|\s+")


def _list_parts(raw: str) -> list[str]:
    """The items of a list answer as typed (brackets off, split on commas, semicolons, spaces)."""
    inner = _unwrap(raw)
    return _ITEM_SEPARATOR.split(inner) if inner else []


def _list(raw: str, _choices):
    inner = _unwrap(raw)
    if inner is None:
        return None
    if not inner:
        return []
    parts = _ITEM_SEPARATOR.split(inner)
    if any(part == "" for part in parts):
        return None  # an empty item, e.g. "1,,2" or a stray comma
    items = []
    for part in parts:
        word = part.lower().rstrip(".!")
        number = _number(part, None)
        if word in (_TRUE | _FALSE) - {"1", "0"}:
            items.append(word in _TRUE)
        elif number is not None:
            items.append(number)
        elif re.match(r"^[A-Za-z_][\w.\-]*$", part):
            items.append(part)
        else:
            return None
    return items


def _close(p: Any, o: Any, tolerance: float) -> bool:
    if isinstance(o, bool) or not isinstance(o, (int, float)):
        return False
    if math.isnan(o):
        return False
    return abs(float(p) - float(o)) <= max(tolerance, 1e-12 * max(1.0, abs(o)))


def _item_equal(p: Any, o: Any, tolerance: float) -> bool:
    if isinstance(p, bool) or isinstance(o, bool):
        return p is o if isinstance(p, bool) and isinstance(o, bool) else False
    if isinstance(p, (int, float)) and isinstance(o, (int, float)):
        return _close(p, o, tolerance)
    return str(p).lower() == str(o).lower()
