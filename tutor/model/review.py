"""What to do next: where to continue, which exercise follows, what is due for review.

Everything here is worked out from the attempts the progress file already
keeps, so there is no extra state to save or to go stale:

* **Continue** (:func:`continue_point`): the first exercise due for review,
  when one is; else the exercise the learner last attempted, if it is
  still unsolved; otherwise the first untried exercise after it in catalog
  order (wrapping to the start).
* **Next** (:func:`next_after`): after a result, the first untried exercise
  after this one, in the same way.
* **Review** (:func:`review_states`, :func:`due`): Leitner boxes. An
  exercise answered wrongly — or rightly but with a stated confidence under
  :data:`SURE` — goes into box 1 and comes back a day later. Answered rightly
  (and surely) once it is due, it moves up a box: box 2 comes back after 3
  days, box 3 after 7; right again once due, it leaves the boxes. A wrong
  or unsure answer at any time puts it back in box 1. Right answers given
  before the exercise is due (say, straight after seeing the observation)
  move nothing. A due exercise is asked again as a recall: its page opens
  blank and shows the last answer only after the new run
  (:func:`due_state`, :func:`seen_ago`).

Only graded predictions since the exercise's last reset count (a reset
exercise is fresh). Times are the attempts' own (UTC, ISO 8601).
Pure: imports neither torch nor Textual.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Sequence

from tutor.model.attempts import is_prediction

#: Days until an exercise in box 1, 2, 3 comes back.
INTERVALS_DAYS = (1, 3, 7)
#: A right answer stated with less confidence than this (percent) still goes to review.
SURE = 70


@dataclass(frozen=True)
class Continue:
    """Where the learner picks up.

    Attributes:
        exercise_id: the exercise to put the cursor on.
        reason: a few words for the header ("left unsolved", "next after head-split", "start here").
    """

    exercise_id: str
    reason: str


@dataclass(frozen=True)
class ReviewState:
    """One exercise in the Leitner boxes.

    Attributes:
        exercise_id: the exercise.
        box: 1, 2 or 3.
        due: when it comes back (UTC).
        last: the time of its last graded prediction (UTC).
    """

    exercise_id: str
    box: int
    due: datetime
    last: datetime

    def to_dict(self) -> dict:
        return {"id": self.exercise_id, "box": self.box, "due": self.due.isoformat(timespec="seconds"),
                "last_attempt": self.last.isoformat(timespec="seconds"),
                "interval_days": INTERVALS_DAYS[self.box - 1]}


def when(stamp: str) -> datetime | None:
    """An attempt's saved time as an aware datetime (UTC assumed when it has no offset), or None."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def graded(entry) -> list:
    """The graded predictions of one exercise's progress since its last reset, oldest first."""
    attempts = [a for a in entry.current if is_prediction(a) and when(a.time) is not None]
    return sorted(attempts, key=lambda a: when(a.time))


def _untried(entry) -> bool:
    return not entry.current


def _first_untried_after(catalog, progress, index: int) -> str | None:
    order = catalog.exercises
    for step in range(1, len(order) + 1):
        candidate = order[(index + step) % len(order)]
        if _untried(progress.of(candidate.id)):
            return candidate.id
    return None


def _done(exercise, progress) -> bool:
    """Whether the path may move past ``exercise``: solved, or a warm-up (ungraded) whose bet is made."""
    entry = progress.of(exercise.id)
    return entry.solved or (not exercise.graded and bool(entry.current))


def continue_point(catalog, progress, due_now: Sequence[ReviewState] = ()) -> Continue:
    """Where to put the cursor at launch (module docstring); ``due_now``: the exercises due for review
    (:func:`due`), soonest first, the first of which comes before anything else."""
    if due_now:
        return Continue(due_now[0].exercise_id, "due for review")
    order = catalog.exercises
    latest: tuple[datetime, int] | None = None
    for index, exercise in enumerate(order):
        for attempt in progress.of(exercise.id).current:
            moment = when(attempt.time)
            if moment is not None and (latest is None or moment >= latest[0]):
                latest = (moment, index)
    if latest is None:
        return Continue(order[0].id, "start here")
    last = order[latest[1]]
    if not _done(last, progress):
        return Continue(last.id, "left unsolved")
    following = _first_untried_after(catalog, progress, latest[1])
    if following is not None:
        return Continue(following, f"next after {last.id}")
    unsolved = next((e.id for e in order if not _done(e, progress)), None)
    if unsolved is not None:
        return Continue(unsolved, "not solved yet")
    return Continue(last.id, "every exercise solved")


def next_after(catalog, progress, exercise_id: str) -> str | None:
    """The exercise ``n`` opens after a result on ``exercise_id``: the first untried one after it,
    else simply the one after it in catalog order; None after the last exercise when all are tried."""
    order = [e.id for e in catalog.exercises]
    index = order.index(exercise_id)
    following = _first_untried_after(catalog, progress, index)
    if following is not None and following != exercise_id:
        return following
    return order[index + 1] if index + 1 < len(order) else None


def review_state(exercise_id: str, entry) -> ReviewState | None:
    """Where one exercise stands in the Leitner boxes, or None when it is in none."""
    box, due_at, last = 0, None, None
    for attempt in graded(entry):
        moment = when(attempt.time)
        last = moment
        unsure = attempt.confidence is not None and attempt.confidence < SURE
        if not attempt.correct or unsure:
            box, due_at = 1, moment + timedelta(days=INTERVALS_DAYS[0])
        elif box and moment >= due_at:
            box += 1
            if box > len(INTERVALS_DAYS):
                box, due_at = 0, None
            else:
                due_at = moment + timedelta(days=INTERVALS_DAYS[box - 1])
    if not box:
        return None
    return ReviewState(exercise_id, box, due_at, last)


def review_states(catalog, progress) -> list[ReviewState]:
    """Every catalog exercise in a Leitner box, soonest due first."""
    states = [review_state(e.id, progress.of(e.id)) for e in catalog.exercises]
    return sorted((s for s in states if s is not None), key=lambda s: s.due)


def due(catalog, progress, now: datetime | None = None) -> list[ReviewState]:
    """The exercises due for review at ``now`` (default: the current time), soonest first."""
    now = now or datetime.now(timezone.utc)
    return [s for s in review_states(catalog, progress) if s.due <= now]


def due_state(exercise_id: str, entry, now: datetime | None = None) -> ReviewState | None:
    """This exercise's place in the boxes when it is due for review at ``now`` (default: the current
    time), else None."""
    state = review_state(exercise_id, entry)
    now = now or datetime.now(timezone.utc)
    return state if state is not None and state.due <= now else None


def seen_ago(moment: datetime, now: datetime | None = None) -> str:
    """How long ago ``moment`` was, in whole days: ``today``, ``1 day ago``, ``9 days ago``."""
    days = ((now or datetime.now(timezone.utc)) - moment).days
    if days <= 0:
        return "today"
    return f"{days} day{'s' if days != 1 else ''} ago"
