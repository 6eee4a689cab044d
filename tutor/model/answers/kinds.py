"""The kinds of a single answer: a choice, a shape, a number, yes/no, an exception name, text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from tutor.model.answers.base import (ACTION_KEYS, NUMBER_KEYS, AnswerKind, KindError, close, read_bool, read_error,
                                      read_number, register, show_number, unwrap)


@register
@dataclass(frozen=True)
class Choice(AnswerKind):
    """One of the exercise's written choices, by id, by the key shown beside it, or by position."""

    choices: tuple[tuple[str, str], ...] = ()

    name: ClassVar[str] = "choice"
    words: ClassVar[str] = "a choice"
    read_as: ClassVar[str] = "choice"

    @classmethod
    def configured(cls, *, choices=(), length=None, items=None, tolerance: float = 0.0) -> "Choice":
        return cls(tolerance=float(tolerance), choices=tuple(tuple(c) for c in choices))

    @classmethod
    def validate(cls, entry: dict) -> None:
        if len(entry.get("choices", [])) < 2:
            raise KindError("key 'choices' needs at least two choices for kind choice")

    def format_hint(self) -> str:
        ids = [cid for cid, _ in self.choices]
        keys = self.keys()
        if keys == [cid.lower() for cid in ids]:
            return f"one choice id ({', '.join(ids)})"
        # the keys shown in the TUI are answers too: name each beside its id
        return "one choice id or its key (" + ", ".join(
            f"{cid} = {key}" if key else cid for cid, key in zip(ids, keys)) + ")"

    @property
    def summary(self) -> str:
        return f"one of {len(self.choices)} choices"

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        return self.choices

    @property
    def picking(self) -> tuple[str, str]:
        return "pick one choice", "press the key shown beside it"

    @property
    def chance(self) -> int:
        return max(1, round(100 / len(self.choices))) if self.choices else super().chance

    def keys(self) -> list[str | None]:
        """The key that picks each choice, in order (None: no key; use the list).

        * single-letter ids (``a``, ``b``…) that are no action key: the id itself;
        * otherwise the first ten choices get ``1`` … ``9``, ``0``; any later
          choice gets the first letter of its id when that letter is free (not
          an action key, not taken), else no key.

        :meth:`parse` accepts a choice's key as well as its id, so the key
        shown in the TUI also works for ``tutor run --predict``.
        """
        ids = [cid for cid, _ in self.choices]
        if ids and all(len(cid) == 1 and cid.lower() not in ACTION_KEYS for cid in ids):
            return [cid.lower() for cid in ids]
        keys: list[str | None] = list(NUMBER_KEYS[:len(ids)])
        for cid in ids[len(NUMBER_KEYS):]:
            letter = cid[:1].lower()
            free = letter.isalpha() and letter not in ACTION_KEYS and letter not in keys
            keys.append(letter if free else None)
        return keys

    def choice_text(self, value: Any) -> str | None:
        return dict(self.choices).get(value) if isinstance(value, str) else None

    def read(self, raw: str) -> str | None:
        wanted = raw.lower().rstrip(").")
        ids = [cid for cid, _ in self.choices]
        for cid in ids:
            if wanted == cid.lower():
                return cid
        for cid, key in zip(ids, self.keys()):  # the key shown beside a choice
            if key is not None and wanted == key:
                return cid
        if wanted in NUMBER_KEYS[:len(ids)]:  # a position, 1 for the first choice, whatever the keys
            return ids[NUMBER_KEYS.index(wanted)]
        return None


@register
@dataclass(frozen=True)
class Shape(AnswerKind):
    """A tensor's shape: ``(2, 7)``, ``2x7``, ``(7,)``, ``()`` for a scalar."""

    name: ClassVar[str] = "shape"
    words: ClassVar[str] = "a shape"

    def format_hint(self) -> str:
        return "a shape such as (2, 7), 2x7, (7,) or () for a scalar"

    def read(self, raw: str) -> list[int] | None:
        inner = unwrap(raw)
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

    def agrees(self, prediction: Any, observation: Any) -> bool:
        return list(prediction) == list(observation) if isinstance(observation, (list, tuple)) else False

    def show_observation(self, value: Any) -> str:
        if isinstance(value, (list, tuple)):
            inner = ", ".join(str(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return str(value)


@register
@dataclass(frozen=True)
class Number(AnswerKind):
    """A number, agreeing with the observation within the exercise's tolerance."""

    name: ClassVar[str] = "number"
    words: ClassVar[str] = "a number"
    run_key_is_free: ClassVar[bool] = True

    def format_hint(self) -> str:
        return "a number such as 7, 0.25, 1,024 or 1/4"

    def read(self, raw: str) -> float | None:
        return read_number(raw)

    def agrees(self, prediction: Any, observation: Any) -> bool:
        return close(prediction, observation, self.tolerance)

    def show_observation(self, value: Any) -> str:
        return show_number(value, self.tolerance)


@register
@dataclass(frozen=True)
class Bool(AnswerKind):
    """Yes or no."""

    name: ClassVar[str] = "bool"
    words: ClassVar[str] = "yes/no"
    read_as: ClassVar[str] = "yes/no"

    def format_hint(self) -> str:
        return "yes or no"

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        return (("yes", "yes"), ("no", "no"))

    @property
    def picking(self) -> tuple[str, str]:
        return "yes or no", "press y or n"

    @property
    def chance(self) -> int:
        return 50

    def keys(self) -> list[str | None]:
        return ["y", "n"]

    def read(self, raw: str) -> bool | None:
        return read_bool(raw)

    def show_observation(self, value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        return str(value)


@register
@dataclass(frozen=True)
class ErrorName(AnswerKind):
    """The class name of the exception the code raises, or ``none``."""

    name: ClassVar[str] = "error"
    words: ClassVar[str] = "an exception name"
    read_as: ClassVar[str] = "an exception name"

    def format_hint(self) -> str:
        return "an exception class name as Python prints it (SomethingError), or none if nothing is raised"

    def read(self, raw: str) -> str | None:
        return read_error(raw)

    def agrees(self, prediction: Any, observation: Any) -> bool:
        return isinstance(observation, str) and prediction.lower() == observation.lower()


@register
@dataclass(frozen=True)
class Text(AnswerKind):
    """Any non-empty text, compared without case or surrounding space."""

    name: ClassVar[str] = "text"
    words: ClassVar[str] = "text"
    free_text: ClassVar[bool] = True

    def format_hint(self) -> str:
        return "any non-empty text"

    def read(self, raw: str) -> str:
        return raw

    def agrees(self, prediction: Any, observation: Any) -> bool:
        return isinstance(observation, str) and prediction.strip().lower() == observation.strip().lower()
