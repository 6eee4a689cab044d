"""What became of a run's save, as the exercise page says it: saved, or not saved and why.

A graded run that was not saved is said in a notification; a warm-up's
verdict line says it as well (``a warm-up: not saved (why), never graded``),
so the page never claims a bet was kept when the store refused it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kept:
    """Whether a run's attempt was saved.

    Attributes:
        saved: the attempt is in the progress file.
        why: why it is not (one sentence, the store's), else "".
    """

    saved: bool = True
    why: str = ""


def kept_of(outcome) -> Kept:
    """What the save of ``outcome`` (a :class:`tutor.app.outcome.Outcome`) did."""
    if outcome.saved_to is not None:
        return Kept()
    return Kept(False, outcome.save_error or "")


def save_notice(outcome) -> str | None:
    """The notification a failed save gives, or None: the attempt not saved (and why), or saved
    without its note (the store's own sentence says so)."""
    if not outcome.save_error:
        return None
    if outcome.saved_to is not None:  # the attempt is kept; only its note failed
        return outcome.save_error[:1].upper() + outcome.save_error[1:]
    return f"The attempt was not saved: {outcome.save_error}"
