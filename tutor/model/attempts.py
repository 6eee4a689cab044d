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
    if len(stamp) == 25 and stamp.endswith("+00:00") and stamp[10] == "T":
        return (1, stamp[:19])  # the form tutor writes (UTC, seconds): compared as it is, nothing to parse
    text = stamp.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return (1, text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    utc = when.astimezone(timezone.utc)
    return (1, utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{utc.microsecond:06d}" if utc.microsecond else ""))


def in_time_order(items: Sequence[T], time_of: Callable[[T], str | None]) -> list[T]:
    """``items`` in the order the rule above gives (a stable sort: the given order breaks ties)."""
    keys = [time_key(time_of(item)) for item in items]
    if all(a <= b for a, b in zip(keys, keys[1:])):
        return list(items)  # already in time order, as a progress file's attempts nearly always are
    order = sorted(range(len(items)), key=keys.__getitem__)  # sorted() is stable: ties keep the given order
    return [items[i] for i in order]


def counting(items: Sequence[T], time_of: Callable[[T], str | None]) -> T | None:
    """The attempt that counts: the latest submitted, the later given at a tie; None for no attempts."""
    ordered = in_time_order(items, time_of)
    return ordered[-1] if ordered else None
