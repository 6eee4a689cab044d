"""Which seed a learner's next attempt runs with: the seed policy, pure.

Every exercise runs at the seed its values are pinned at (0) but one with
``seed_per_attempt`` (the capstone), whose n-th prediction that met an
observation meets mystery n, counted from ``Exercise.seed_for(0)`` — a
warm-up's ungraded bet counts here, as it met its mystery; edit-mode
attempts and timeouts do not. A mystery a hunt showed before any prediction
met it is skipped: it is no longer a mystery.
"""

from __future__ import annotations

from typing import Iterable

from tutor.model.attempts import ANSWER_MODES, GRADED, Attempt
from tutor.model.catalog import Exercise


def next_seed(exercise: Exercise, predictions: Iterable[Attempt], hunted: set[int]) -> int:
    """The seed of the next attempt at ``exercise``.

    Args:
        exercise: the exercise.
        predictions: the learner's current answers to it (any status; only those that met an
            observation count, a warm-up's included).
        hunted: the mysteries (seeds) a hunt has shown this learner.
    """
    counted = [a for a in predictions if a.status in GRADED and a.mode in ANSWER_MODES]
    if not exercise.seed_per_attempt:
        return exercise.seed_for(len(counted))
    spoiled = hunted - {a.seed for a in counted}
    seed, met = exercise.seed_for(0), 0
    while seed in spoiled or met < len(counted):
        met += seed not in spoiled
        seed += 1
    return seed
