"""A list answer: a flat list of items, each read as the exercise's ``answer_items`` say."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from tutor.model.answers.base import (FALSE_WORDS, TRUE_WORDS, AnswerError, AnswerKind, KindError, close, read_error,
                                      read_number, register, show_number, unwrap)


@register
@dataclass(frozen=True)
class List(AnswerKind):
    """A flat list of items, each a number, yes/no, an exception name or a word (``answer_items``).

    Attributes:
        length: the number of items the answer must have, or None.
        items: what each item must be: one item kind for all, a tuple with
            one per position, or None for any readable item
            (:func:`item_kinds`).
    """

    length: int | None = None
    items: str | tuple[str, ...] | None = None

    name: ClassVar[str] = "list"
    words: ClassVar[str] = "a list"
    own_keys: ClassVar[dict] = {"answer_length": "key 'answer_length' is for kind list only and must be at least 1",
                                "answer_items": "key 'answer_items' is for kind list only and cannot be empty"}

    @classmethod
    def configured(cls, *, choices=(), length=None, items=None, tolerance: float = 0.0) -> "List":
        items = tuple(items) if isinstance(items, (list, tuple)) else items
        if items is not None and not isinstance(items, str) and not length:
            length = len(items)  # one item kind per position fixes the count
        return cls(tolerance=float(tolerance), length=length, items=items)

    @classmethod
    def validate(cls, entry: dict) -> None:
        if "answer_length" in entry and entry["answer_length"] < 1:
            raise KindError("key 'answer_length' is for kind list only and must be at least 1")
        if "answer_items" not in entry:
            return
        items = entry["answer_items"]
        kinds = [items] if isinstance(items, str) else items
        if not kinds:
            raise KindError("key 'answer_items' is for kind list only and cannot be empty")
        for kind in kinds:
            if not isinstance(kind, str) or not (kind in ("number", "bool", "error") or "|" in kind):
                raise KindError(f"answer_items entry {kind!r} must be number, bool, error "
                                "or words written like 'both|saved|neither'")
        if isinstance(items, list) and "answer_length" in entry and entry["answer_length"] != len(items):
            raise KindError(f"answer_items lists {len(items)} kinds but answer_length is {entry['answer_length']}")

    def format_hint(self) -> str:
        if self.length or self.items:
            return _list_format(self.length, self.items)
        return "a list of items separated by commas or spaces"

    def parse(self, text: str) -> list:
        value = super().parse(text)
        expected = self.format_hint()
        if self.length and len(value) != self.length:
            count = "1 item" if len(value) == 1 else f"{len(value)} items"
            raise AnswerError(f"the answer has {count}; expected {expected}")
        if self.items:
            raw = text.strip()
            raw = raw[:-1].rstrip() if raw.endswith(".") and len(raw) > 1 else raw
            value = _typed_items(value, _list_parts(raw), item_kinds(self.items, len(value)), expected)
        return value

    def read(self, raw: str) -> list | None:
        value = _read_list(raw)
        if value is None and sum(raw.count(b) for b in "([") > 1:
            raise AnswerError(f"cannot read {raw[:60]!r}: write the items as one flat list "
                              f"without inner brackets, row by row; expected {self.format_hint()}")
        return value

    def agrees(self, prediction: Any, observation: Any) -> bool:
        if not isinstance(observation, list) or len(prediction) != len(observation):
            return False
        return all(_item_equal(p, o, self.tolerance) for p, o in zip(prediction, observation))

    def show_observation(self, value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(("yes" if v else "no") if isinstance(v, bool) else
                                   show_number(v, self.tolerance) for v in value) + "]"
        return str(value)


def _item_equal(p: Any, o: Any, tolerance: float) -> bool:
    if isinstance(p, bool) or isinstance(o, bool):
        return p is o if isinstance(p, bool) and isinstance(o, bool) else False
    if isinstance(p, (int, float)) and isinstance(o, (int, float)):
        return close(p, o, tolerance)
    return str(p).lower() == str(o).lower()


def item_kinds(items: str | list[str] | tuple[str, ...], length: int) -> list[str]:
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


def _list_format(length: int | None, items: str | tuple[str, ...] | None) -> str:
    per_position = items is not None and not isinstance(items, str)  # a tuple: one kind per item
    n = length or (len(items) if per_position else None)
    count = f"{n} " if n else ""
    if items is None:
        return f"a list of {count}items separated by commas or spaces"
    if per_position and len(set(items)) > 1:
        return f"a list of {count}items, in order: " + "; ".join(_item_phrase(k) for k in items)
    kind = items if isinstance(items, str) else items[0]
    if "|" in kind:
        if n == 1:
            return f"a list of 1 word, one of {', '.join(kind.split('|'))}"
        return f"a list of {count}words, each one of {', '.join(kind.split('|'))}"
    example = {"number": "1, 2", "bool": "yes, no", "error": "none, TypeError"}[kind]
    if n == 1:  # one item: no separator to explain, and an example of one
        single = {"number": "number", "bool": "yes/no answer", "error": "exception name or none"}[kind]
        return f"a list of 1 {single}, e.g. {example.split(', ')[0]}"
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
        return read_error(value) if isinstance(value, str) else None
    words = kind.split("|")
    return value.lower() if isinstance(value, str) and value.lower() in words else None


_ITEM_SEPARATOR = re.compile(r"\s*[,;]\s*|\s+")


def _list_parts(raw: str) -> list[str]:
    """The items of a list answer as typed (brackets off, split on commas, semicolons, spaces)."""
    inner = unwrap(raw)
    return _ITEM_SEPARATOR.split(inner) if inner else []


def _read_list(raw: str) -> list | None:
    inner = unwrap(raw)
    if inner is None:
        return None
    if not inner:
        return []
    parts = _ITEM_SEPARATOR.split(inner)
    if any(part == "" for part in parts):
        return None  # an empty item, e.g. "1,,2" or a stray comma
    items: list = []
    for part in parts:
        word = part.lower().rstrip(".!")
        number = read_number(part)
        if word in (TRUE_WORDS | FALSE_WORDS) - {"1", "0"}:
            items.append(word in TRUE_WORDS)
        elif number is not None:
            items.append(number)
        elif re.match(r"^[A-Za-z_][\w.\-]*$", part):
            items.append(part)
        else:
            return None
    return items
