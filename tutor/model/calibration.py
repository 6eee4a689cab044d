"""Calibration: how often a learner is right at each confidence they state.

With a prediction the learner may say how sure they are: from the
question's chance (a blind guess: 1/k of k choices, 50 % for yes/no, 10 %
for a typed answer) to 100 % (certain), saved as the attempt's
``confidence``. Every graded prediction that carries one counts — those
made before a reset too, since they were predictions all the same.

* **Per bucket** (10, 20, … 100 %; a confidence of 75 falls in the 70
  bucket, a guess among 11 choices, 9 %, in the 10 one): how many predictions, how many were right, and the rate. A
  well-calibrated learner is right about as often as they said: 8 of 10 at
  80 %. Right less often is over-confident, more often under-confident.
* **Brier score**: the mean of ``(p - o)²`` over those predictions, with
  ``p`` the stated confidence as a probability and ``o`` 1 for right, 0 for
  wrong. 0 is perfect; always saying 50 % scores 0.25; being sure and
  wrong every time scores 1.

Pure: reads :class:`tutor.model.attempts.LearnerProgress`, imports neither torch
nor Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tutor.model.attempts import confidence_of, is_prediction

def is_guess(attempt, chance: int) -> bool:
    """Whether an attempt was recorded as a guess: its confidence is the question's chance (``chance``,
    ``AnswerKind.chance``), as the ``g`` key and ``--confidence guess`` record it."""
    return attempt.confidence is not None and attempt.confidence == chance


#: The bucket floors, in percent: 10-19 is the 10 bucket (and below 10, a guess among more than ten
#: choices), …, 100 is its own.
BUCKETS = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
#: Within this many percentage points of the bucket's confidence (this many included), a bucket reads as
#: "about right": 7 of 10 right at 80 % is about right, 6 of 10 over-confident.
CALIBRATED_WITHIN = 10
#: A bucket with fewer predictions than this reads as "too few to tell".
FEWEST_TO_TELL = 3


@dataclass
class Bucket:
    """Predictions stated at one confidence level.

    Attributes:
        confidence: the bucket's floor, in percent (50, 60, … 100).
        count: predictions in it.
        right: how many of them matched the observation.
    """

    confidence: int
    count: int = 0
    right: int = 0

    @property
    def rate(self) -> float | None:
        """The fraction right (0-1), or None for an empty bucket."""
        return self.right / self.count if self.count else None

    @property
    def verdict(self) -> str:
        """``about right``, ``over-confident``, ``under-confident``, ``too few to tell``, or "" when empty."""
        if not self.count:
            return ""
        if self.count < FEWEST_TO_TELL:
            return "too few to tell"
        # the gap between the rate (in percent) and the bucket's confidence, times count: whole numbers, so
        # a rate exactly CALIBRATED_WITHIN points off (7 of 10 at 80 %) is decided without rounding
        gap = 100 * self.right - self.confidence * self.count
        if abs(gap) <= CALIBRATED_WITHIN * self.count:
            return "about right"
        return "over-confident" if gap < 0 else "under-confident"

    def to_dict(self) -> dict:
        return {"confidence": self.confidence, "count": self.count, "right": self.right, "rate": self.rate,
                "verdict": self.verdict}


@dataclass
class Calibration:
    """Calibration over a group of predictions.

    Attributes:
        buckets: one per :data:`BUCKETS` entry, in order (empty ones too).
        count: predictions with a confidence.
        right: how many of them were right.
        brier: the Brier score (0 perfect, 1 worst), or None with no predictions.
        unrated: graded predictions made without a confidence.
    """

    buckets: list[Bucket] = field(default_factory=lambda: [Bucket(c) for c in BUCKETS])
    count: int = 0
    right: int = 0
    brier: float | None = None
    unrated: int = 0

    def to_dict(self) -> dict:
        return {"count": self.count, "right": self.right, "brier": self.brier, "unrated": self.unrated,
                "buckets": [b.to_dict() for b in self.buckets if b.count]}


def bucket_of(confidence: int) -> int:
    """The bucket a confidence falls in: its tens, 10-100 (``75`` -> ``70``, ``9`` -> ``10``)."""
    return max(BUCKETS[0], min(BUCKETS[-1], confidence // 10 * 10))


def calibrate(attempts) -> Calibration:
    """Calibration of these attempts (only graded predictions count; see the module docstring)."""
    result = Calibration()
    squared = 0.0
    by_floor = {b.confidence: b for b in result.buckets}
    for attempt in attempts:
        if not is_prediction(attempt):
            continue
        confidence = confidence_of(attempt)
        if confidence is None:
            result.unrated += 1
            continue
        right = bool(attempt.correct)
        bucket = by_floor[bucket_of(confidence)]
        bucket.count += 1
        bucket.right += right
        result.count += 1
        result.right += right
        squared += (confidence / 100 - (1.0 if right else 0.0)) ** 2
    if result.count:
        result.brier = squared / result.count
    return result


def calibration_by_set(catalog, progress) -> tuple[Calibration, dict[str, Calibration]]:
    """Calibration over every attempt, and per set id (catalog order; sets with no attempts included).

    Attempts of exercises the catalog no longer has count in the overall figure only.
    """
    per_set: dict[str, Calibration] = {}
    for exercise_set in catalog.sets:
        per_set[exercise_set.id] = calibrate(a for e in exercise_set.exercises for a in progress.of(e.id).attempts)
    overall = calibrate(a for entry in progress.exercises.values() for a in entry.attempts)
    return overall, per_set


@dataclass
class Day:
    """One calendar day (UTC) of graded predictions.

    Attributes:
        date: ``YYYY-MM-DD``.
        count: predictions that day.
        right: how many matched.
        so_far: the fraction right over every prediction up to and including that day.
    """

    date: str
    count: int
    right: int
    so_far: float

    @property
    def rate(self) -> float:
        return self.right / self.count if self.count else 0.0


def accuracy_by_day(progress) -> list[Day]:
    """Accuracy over time: each day with graded predictions, oldest first (every attempt the file keeps)."""
    days: dict[str, list[int]] = {}
    for entry in progress.exercises.values():
        for attempt in entry.attempts:
            if is_prediction(attempt) and len(attempt.time) >= 10:
                tally = days.setdefault(attempt.time[:10], [0, 0])
                tally[0] += 1
                tally[1] += bool(attempt.correct)
    out, count, right = [], 0, 0
    for date in sorted(days):
        n, r = days[date]
        count, right = count + n, right + r
        out.append(Day(date, n, r, right / count))
    return out
