"""A range of numbers: the honest answer when a measurement is known only to lie between two values."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from tutor.model.answers.base import AnswerError, AnswerKind, KindError, close, read_number, register, show_number

#: "0.2 to 0.3", "0.2..0.3", "between 0.2 and 0.3", "[0.2, 0.3]": the two ends and what joins them.
_RANGE = re.compile(r"^(?:between\s+)?(?P<low>\S+?)\s*(?:\s(?:to|and)\s|\.\.|–|—)\s*(?P<high>\S+)$", re.IGNORECASE)


@register
@dataclass(frozen=True)
class Range(AnswerKind):
    """A prediction that the observed number lies between two ends, both included.

    The prediction is ``(low, high)`` with ``low <= high``, at most twice the
    exercise's ``tolerance`` wide: a number predicted within ``tolerance``
    commits to an interval that wide, and a range may not commit to less
    ("0 to 100" is no prediction). The observation is one number, as for
    :class:`~tutor.model.answers.kinds.Number`, and two observations compare
    as numbers do (within ``tolerance``).
    """

    name: ClassVar[str] = "range"
    words: ClassVar[str] = "a range"
    run_key_is_free: ClassVar[bool] = True
    read_as: ClassVar[str] = "a range"

    @classmethod
    def validate(cls, entry: dict) -> None:
        if not entry.get("tolerance", 0) > 0:
            raise KindError("key 'tolerance' must be positive for kind range: a range may be at most twice as wide")

    @property
    def widest(self) -> float:
        """The widest range this exercise takes: twice its tolerance."""
        return 2 * self.tolerance

    def format_hint(self) -> str:
        return (f"a range of numbers such as 0.2 to 0.3, low end first, at most {show_number(self.widest)} wide "
                "(both ends included)")

    def parse(self, text: str) -> tuple[float, float]:
        low, high = super().parse(text)
        if high - low > self.widest * (1 + 1e-9):
            raise AnswerError(f"the range {self.show_prediction((low, high))} is {show_number(high - low)} wide; "
                              f"expected {self.format_hint()}")
        return low, high

    def read(self, raw: str) -> tuple[float, float] | None:
        text = raw.strip()
        if text[:1] in "([" and text[-1:] in ")]":
            text = text[1:-1].strip()
            low, comma, high = text.partition(",")
            if comma:
                text = f"{low.strip()} to {high.strip()}"
        match = _RANGE.match(text)
        if match is None:
            return None
        low, high = read_number(match["low"]), read_number(match["high"])
        if low is None or high is None:
            return None
        if low > high:
            raise AnswerError(f"the range {raw[:60]!r} runs from high to low; write the low end first, "
                              f"e.g. {show_number(high)} to {show_number(low)}")
        return low, high

    def agrees(self, prediction: Any, observation: Any) -> bool:
        if isinstance(observation, bool) or not isinstance(observation, (int, float)) or math.isnan(observation):
            return False
        low, high = prediction
        return low <= observation <= high

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return not isinstance(a, bool) and isinstance(a, (int, float)) and close(a, b, self.tolerance)

    def show_prediction(self, value: Any) -> str:
        low, high = value
        return f"{show_number(low)} to {show_number(high)}"

    def show_observation(self, value: Any) -> str:
        return show_number(value)
