"""What an exercise page had when it was left, kept while the app runs, so reopening it shows the same."""

from __future__ import annotations

from dataclasses import dataclass

from tutor.ui.saving import Kept


@dataclass
class Recall:
    """What an exercise page had when it was left, so reopening it shows the same.

    Attributes:
        answer: the prediction in the answer box (a choice id, or the typed text).
        confidence: the confidence set, in percent, or None.
        hints: how many hints were revealed.
        result: the last run's full result, or None.
        kept: what the save of that run did (saved, or not and why).
        note: explain-back text that could not be saved when the page was left (None: nothing unsaved);
            the page offers it again and saves it.
        ran: the (answer, confidence) the page last ran and recorded, or the saved answer it opened with;
            None when neither. An answer or confidence that differs from it was left unrun.
        opened: whether the page was opened in this run of the app (a draft from the progress file is
            offered only on the first opening: one the learner then cleared stays cleared).
    """

    answer: str = ""
    confidence: int | None = None
    hints: int = 0
    result: object = None
    kept: Kept = Kept()
    note: str | None = None
    ran: tuple[str, int | None] | None = None
    opened: bool = False

    def draft(self) -> dict:
        """The answer and confidence left unrun on the page, as a progress file's draft
        ({"prediction": text, "confidence": percent or None}); {} when nothing is left unrun."""
        if not self.opened or not (self.answer.strip() or self.confidence is not None):
            return {}
        if (self.answer, self.confidence) == self.ran:
            return {}
        return {"prediction": self.answer, "confidence": self.confidence}


def recall_of(app, exercise_id: str) -> Recall:
    """The app's memory of this exercise's page (made empty on first use); it lasts while the app runs."""
    return app.recall.setdefault(exercise_id, Recall())
