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


def open_page(recall: Recall, draft: dict, said: list, review) -> tuple[bool, int | None]:
    """Set what an exercise page opens with on ``recall``, and say what the page offers beside it.

    The first opening in this run of the app offers a draft the progress file kept (``draft``: left
    unrun when the learner quit). Otherwise a page reopened after a relaunch shows the last saved answer
    (``said``: the answers, oldest first), unless it is due for review (``review`` not None: asked as a
    recall, so it opens blank). Where the page holds what was last run and recorded, it opens for a new
    attempt: the answer stays (r runs it again) but how sure is said afresh, so the confidence starts
    empty and the last run's is returned to show beside it, never carried silently into the next attempt;
    it is read from the last saved answer (that run's), so every later opening shows it too.

    Returns:
        (whether a kept draft is offered, the last run's confidence to show, or None).
    """
    first_opening, recall.opened = not recall.opened, True
    if first_opening and draft:
        recall.answer, recall.confidence = draft["prediction"], draft.get("confidence")
        return True, None
    if not recall.answer and said and review is None:  # reopened after a relaunch
        recall.answer, recall.confidence = said[-1].prediction, said[-1].confidence
        recall.ran = (recall.answer, recall.confidence)  # saved, so not a draft
    if recall.ran is None or (recall.answer, recall.confidence) != recall.ran:
        return False, None  # nothing run yet, or a change left unrun: kept as it was left
    recall.confidence, recall.ran = None, (recall.answer, None)  # a new attempt: nothing unrun yet
    return False, said[-1].confidence if said else None


def recall_of(app, exercise_id: str) -> Recall:
    """The app's memory of this exercise's page (made empty on first use); it lasts while the app runs."""
    return app.recall.setdefault(exercise_id, Recall())
