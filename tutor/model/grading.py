"""The one rule that grades a learner's prediction against an observation.

A run's result (:func:`tutor.sandbox.result.grade`), a class's graded row
(:func:`tutor.instructor.memo.graded`) and a break's verdict
(:func:`tutor.model.verdict.observe_break`) all grade here: the prediction
is read as the exercise's kind, written back the canonical way, and
*correct* when the kind says it agrees with the observation
(:meth:`tutor.model.answers.AnswerKind.agrees`); a graded run is then
``pass`` or ``fail`` (:data:`tutor.model.attempts.GRADED`). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tutor.model.attempts import FAIL, PASS
from tutor.model.catalog import Exercise


@dataclass(frozen=True)
class Prediction:
    """A prediction read as its exercise's kind.

    Attributes:
        value: the parsed value (the kind's canonical form).
        text: the value written the canonical way (``capability`` for the key ``6``): what progress keeps.
    """

    value: Any
    text: str


def read_prediction(exercise: Exercise, typed: str) -> Prediction:
    """What the learner typed, read as the exercise's kind.

    Raises:
        tutor.model.answers.AnswerError: it does not read as the kind; the sentence names the format.
    """
    value = exercise.kind.parse(typed)
    return Prediction(value, exercise.kind.show_prediction(value))


def is_correct(exercise: Exercise, prediction: Prediction, observation: Any) -> bool:
    """Whether the prediction agrees with what the check observed (within the exercise's tolerance)."""
    return exercise.kind.agrees(prediction.value, observation)


def graded_status(correct: bool) -> str:
    """The status of a run whose observation graded a prediction: ``pass`` when correct, else ``fail``."""
    return PASS if correct else FAIL
