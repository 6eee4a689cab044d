"""What every answer kind shares: the base class, the registry by name, and the readers of numbers, yes/no,
exception names and brackets that several kinds use (see the package's docstring)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

MAX_ANSWER_CHARS = 2000

TRUE_WORDS = {"yes", "y", "true", "t", "1"}
FALSE_WORDS = {"no", "n", "false", "f", "0"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# How Python's exception classes are named: SomethingError, ...Exception,
# ...Warning, and the few that end otherwise (KeyboardInterrupt, SystemExit,
# StopIteration, GeneratorExit).
_EXCEPTION_NAME = re.compile(r"(Error|Exception|Warning|Interrupt|Exit|Iteration)$", re.IGNORECASE)
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$")

#: Keys the exercise screen uses for actions (explain, hint, progress, quit,
#: run), never given to a choice.
ACTION_KEYS = frozenset("ehpqr")
#: Keys for choices numbered by position: the first ten get 1…9, 0.
NUMBER_KEYS = tuple("1234567890")
#: The lowest confidence, in whole percent, a learner may state for a typed answer (a number, a shape,
#: a list, a name): it has no count of possible answers to make a chance of, so its scale starts here.
TYPED_CHANCE = 10


class AnswerError(ValueError):
    """An answer that cannot be read as the exercise's kind."""


class KindError(ValueError):
    """A set file's entry whose answer keys do not fit its kind; the message names the key and the fix."""


#: Every kind by the name a set file gives it, in the order the docs list them.
KINDS: dict[str, type["AnswerKind"]] = {}


def register(cls: type["AnswerKind"]) -> type["AnswerKind"]:
    """Register an answer kind under its ``name`` (a class decorator)."""
    KINDS[cls.name] = cls
    return cls


def kind_class(name: str) -> type["AnswerKind"]:
    """The class of the kind called ``name``.

    Raises:
        KindError: no kind has that name (the sentence lists the kinds).
    """
    if name not in KINDS:
        raise KindError(f"key 'kind' must be one of {', '.join(KINDS)}")
    return KINDS[name]


def make(name: str, *, choices=(), length: int | None = None, items=None, tolerance: float = 0.0) -> "AnswerKind":
    """The kind called ``name``, configured with an exercise's answer keys (those it does not read are ignored).

    Raises:
        KindError: no kind has that name.
    """
    return kind_class(name).configured(choices=tuple(choices), length=length, items=items, tolerance=tolerance)


def show_observed(name: str, value: Any) -> str:
    """An observation of the kind called ``name`` as a learner would write it (a run's result keeps the name only).

    Raises:
        KindError: no kind has that name.
    """
    return kind_class(name)().show_observation(value)


def validate(entry: dict) -> None:
    """Check a set file's ``[[exercise]]`` entry's ``kind`` and the keys its kind reads.

    A key that only another kind reads (``answer_length`` for a number) is
    rejected with that kind's sentence for it.

    Raises:
        KindError: one sentence naming the key and the fix.
    """
    kind = kind_class(entry["kind"])
    for other in KINDS.values():
        for key, sentence in other.own_keys.items():
            if key in entry and key not in kind.own_keys:
                raise KindError(sentence)
    kind.validate(entry)


@dataclass(frozen=True)
class AnswerKind:
    """One answer kind, configured for one exercise.

    Attributes:
        tolerance: how far a number may be from the observation and still
            agree (the exercise's ``tolerance``; kinds without numbers ignore it).
    """

    tolerance: float = 0.0

    #: The name a set file gives the kind (``kind = "number"``).
    name: ClassVar[str] = ""
    #: The kind in a learner's words (``tutor list``, the home screen).
    words: ClassVar[str] = ""
    #: How "cannot read … as ___" names the kind.
    read_as: ClassVar[str] = ""
    #: The set-file keys only this kind reads, each with the sentence that rejects it in an entry of another kind.
    own_keys: ClassVar[dict] = {}
    #: Whether the answer is free text, so a break's prediction is never read as an exception's name.
    free_text: ClassVar[bool] = False
    #: Whether no answer of this kind holds the letter r (numbers, ranges of numbers), so r typed in its
    #: answer box runs the check, as it does from the page, instead of typing a letter no answer has.
    run_key_is_free: ClassVar[bool] = False

    @classmethod
    def configured(cls, *, choices=(), length=None, items=None, tolerance: float = 0.0) -> "AnswerKind":
        """This kind with an exercise's answer keys (the base kind reads only ``tolerance``)."""
        return cls(tolerance=float(tolerance))

    @classmethod
    def validate(cls, entry: dict) -> None:
        """Check the keys of ``entry`` this kind reads.

        Raises:
            KindError: one sentence naming the key and the fix.
        """

    # --- what the learner is told -------------------------------------------

    def format_hint(self) -> str:
        """How to type an answer of this kind, in one phrase."""
        raise NotImplementedError

    @property
    def summary(self) -> str:
        """The kind of answer, in a learner's words, for a list of exercises ("one of 4 choices", "a number")."""
        return self.words

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        """``(id, text)`` pairs the answer is picked from; empty when it is typed."""
        return ()

    @property
    def picking(self) -> tuple[str, str] | None:
        """For a picked answer, (what is picked, how the keys pick it) in a learner's words; None when typed."""
        return None

    def keys(self) -> list[str | None]:
        """The key that picks each of :attr:`options`, in order (None: no key)."""
        return []

    @property
    def chance(self) -> int:
        """A blind guess's chance of being right, in whole percent: where the learner's confidence scale
        starts, and what "a guess" records (1/k for k choices, 50 for yes/no, :data:`TYPED_CHANCE` for a
        typed answer)."""
        return TYPED_CHANCE

    def choice_text(self, value: Any) -> str | None:
        """The text of the option ``value`` names, for a kind with written choices; else None."""
        return None

    # --- reading --------------------------------------------------------------

    def parse(self, text: str) -> Any:
        """Read a learner's answer.

        Returns:
            The canonical value (see the module table).

        Raises:
            AnswerError: the text does not read as this kind; the message
                names the expected format.
        """
        expected = self.format_hint()
        if not isinstance(text, str):
            raise AnswerError(f"the answer must be text; expected {expected}")
        raw = text.strip()
        if not raw:
            raise AnswerError(f"the answer is empty; expected {expected}")
        if len(raw) > MAX_ANSWER_CHARS or "\x00" in raw:
            raise AnswerError(f"the answer is too long or holds a NUL byte; expected {expected}")
        if not self.free_text and raw.endswith(".") and len(raw) > 1:
            raw = raw[:-1].rstrip()  # a sentence's full stop ("saved, moved.") is not part of the answer
        value = self.read(raw)
        if value is None:
            raise AnswerError(f"cannot read {raw[:60]!r} as {self.read_as or self.name}; expected {expected}")
        return value

    def read(self, raw: str) -> Any:
        """The canonical value of ``raw`` (stripped, non-empty), or None when it does not read as this kind."""
        raise NotImplementedError

    # --- comparing --------------------------------------------------------------

    def agrees(self, prediction: Any, observation: Any) -> bool:
        """Whether a parsed prediction agrees with an observation (within :attr:`tolerance` where numbers)."""
        return prediction == observation

    def same(self, a: Any, b: Any) -> bool:
        """Whether two observations agree (two sides of one run), within :attr:`tolerance`; NaN is the same as NaN."""
        if same_values(a, b):
            return True
        try:
            return self.agrees(a, b)
        except (TypeError, ValueError, AttributeError):
            return False

    # --- showing ----------------------------------------------------------------

    def show_prediction(self, value: Any) -> str:
        """A parsed prediction written the canonical way (what progress keeps)."""
        return self.show_observation(value)

    def show_observation(self, value: Any) -> str:
        """An observation as a learner would write it."""
        return str(value)


def same_values(a: Any, b: Any) -> bool:
    """Equal values, NaN counted equal to NaN (lists compared item by item)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    return a == b


def close(p: Any, o: Any, tolerance: float) -> bool:
    """Whether the number ``p`` is within ``tolerance`` of the observed number ``o`` (never of NaN or a bool)."""
    if isinstance(o, bool) or not isinstance(o, (int, float)):
        return False
    if math.isnan(o):
        return False
    return abs(float(p) - float(o)) <= max(tolerance, 1e-12 * max(1.0, abs(o)))


def read_number(raw: str) -> float | None:
    """A number as typed (``7``, ``0.25``, ``1,024``, ``1_024``, ``1/4``), or None; never inf or NaN."""
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


def _float(s: str) -> float | None:
    try:
        value = float(s)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_bool(raw: str) -> bool | None:
    word = raw.lower().rstrip(".!")
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def read_error(raw: str) -> str | None:
    """An exception's class name (``torch.OutOfMemoryError`` reads ``OutOfMemoryError``), ``none``, or None."""
    word = raw.strip().rstrip(":")
    if word.lower() in {"none", "no error", "nothing", "no"}:
        return "none"
    if not _IDENT.match(word):
        return None
    name = word.rsplit(".", 1)[-1]
    return name if _EXCEPTION_NAME.search(name) else None


def unwrap(raw: str) -> str | None:
    """Strip one pair of matching brackets (and ``torch.Size(…)``); None if brackets are unbalanced or nested."""
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


#: A whole float at least this large is shown in Python's own (exponent) form: its digits past the
#: 17th are the float's rounding, not a measured count.
_WHOLE_DIGITS_LIMIT = 1e17


def show_number(value: Any, tolerance: float = 0.0) -> str:
    """A number as measured or typed, exactly: a whole number in all its digits (``1068417``, never
    ``1.06842e+06``), zero as ``0`` (never ``-0``), and any other float to the decimals its tolerance
    can tell apart (one more than the tolerance's own), or to the 12 significant digits that grading
    tells apart when the tolerance is 0 (:func:`close`).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"  # -0.0 too: the sign of a zero is not a measured difference
    if value.is_integer() and abs(value) < _WHOLE_DIGITS_LIMIT:
        return str(int(value))
    if tolerance > 0:
        decimals = max(0, math.ceil(-math.log10(tolerance))) + 1
        text = f"{value:.{decimals}f}".rstrip("0").rstrip(".")
        if text not in ("0", "-0"):
            return text
    return f"{value:.12g}"
