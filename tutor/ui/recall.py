"""What an exercise page had when it was left, kept while the app runs, so reopening it shows the same."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Recall:
    """What an exercise page had when it was left, so reopening it shows the same.

    Attributes:
        answer: the prediction in the answer box (a choice id, or the typed text).
        confidence: the confidence set, in percent, or None.
        hints: how many hints were revealed.
        result: the last run's full result, or None.
        note: explain-back text that could not be saved when the page was left (None: nothing unsaved);
            the page offers it again and saves it.
    """

    answer: str = ""
    confidence: int | None = None
    hints: int = 0
    result: object = None
    note: str | None = None


def recall_of(app, exercise_id: str) -> Recall:
    """The app's memory of this exercise's page (made empty on first use); it lasts while the app runs."""
    return app.recall.setdefault(exercise_id, Recall())
