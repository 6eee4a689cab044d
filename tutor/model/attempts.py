"""Which attempt counts: one rule for every view of a learner's work.

A learner may answer one exercise several times, and the rows of an LMS
export or the attempts of a progress file need not be in time order. Every
view — ``results.json`` and the gradebook of ``tutor grade``, ``tutor
progress`` and ``tutor report`` — orders attempts the same way:

* by when they were submitted (ISO 8601; any offset is compared in UTC);
* an attempt without a time sorts before every timed one (an answers row
  with no ``submitted_at`` beside rows that have one is the oldest; a
  progress file's attempts always carry their time);
* at a tie, the order they were given in (the file's order) decides.

The attempt that counts is the last in that order; "first try" is the first.
Pure: no file, no clock.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")


def time_key(stamp: str | None) -> tuple[int, str]:
    """A sort key for a submission time: ``(1, UTC ISO text)`` for a time, ``(0, "")`` for none (before
    every timed attempt). A time that does not read as ISO 8601 is compared as its text."""
    if not stamp:
        return (0, "")
    text = stamp.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return (1, text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (1, when.astimezone(timezone.utc).isoformat(timespec="microseconds"))


def in_time_order(items: Sequence[T], time_of: Callable[[T], str | None]) -> list[T]:
    """``items`` in the order the rule above gives (a stable sort: the given order breaks ties)."""
    return [item for _, item in sorted(enumerate(items), key=lambda pair: (time_key(time_of(pair[1])), pair[0]))]


def counting(items: Sequence[T], time_of: Callable[[T], str | None]) -> T | None:
    """The attempt that counts: the latest submitted, the later given at a tie; None for no attempts."""
    ordered = in_time_order(items, time_of)
    return ordered[-1] if ordered else None
