"""Finding exercises: ids read without regard to case, close matches suggested, and the home filter.

Used by the command line (``tutor show CACHE-OFFSET``), the TUI's ``/``
filter and its command palette. Pure: imports neither torch nor Textual.
"""

from __future__ import annotations

import difflib
import re


class UnknownExercise(KeyError):
    """No exercise has this id; ``args[0]`` is one sentence with close matches or where to look."""


def suggestions(catalog, text: str, n: int = 3) -> list[str]:
    """Up to ``n`` exercise ids close to ``text`` (ignoring case), best first."""
    ids = [e.id for e in catalog.exercises]
    wanted = text.strip().casefold()
    close = difflib.get_close_matches(wanted, ids, n=n, cutoff=0.5)
    # an id that contains what was typed ("offset" -> cache-offset) is close too
    containing = [i for i in ids if wanted and wanted in i and i not in close]
    return (close + containing)[:n]


def resolve(catalog, text: str):
    """The exercise whose id is ``text``, ignoring case and surrounding spaces.

    Raises:
        UnknownExercise: no id matches; the sentence names up to three close ids.
    """
    wanted = text.strip().casefold()
    for exercise in catalog.exercises:
        if exercise.id.casefold() == wanted:
            return exercise
    close = suggestions(catalog, text)
    hint = f"did you mean {', '.join(close)}?" if close else "run 'tutor list' to see every id."
    raise UnknownExercise(f"there is no exercise {text.strip()!r}; {hint}")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]+", text.casefold()))


def _names(exercise, exercise_set) -> str:
    return " ".join((exercise.id, exercise.title, exercise_set.id, exercise_set.title)).casefold()


def named(exercise, exercise_set, query: str) -> bool:
    """Whether every word of ``query`` is in the id, title or set alone (not only in the prompt):
    such an exercise is what the learner most likely looks for, so the cursor lands on it first."""
    names = _names(exercise, exercise_set)
    return all(word in names for word in query.casefold().split())


def matches(exercise, exercise_set, query: str) -> bool:
    """Whether ``query`` finds this exercise (the home screen's ``/`` filter).

    Every word of the query must appear, ignoring case, in the id, the
    title, the set's id or title, or the prompt; the id, title and set
    match on any part of a word (``cache`` finds ``cache-offset``), the
    prompt on the start of a word (``mask`` finds "masked", ``ask`` does not).
    """
    words = query.casefold().split()
    if not words:
        return True
    names = _names(exercise, exercise_set)
    prompt = _words(exercise.prompt)
    return all(word in names or any(p.startswith(word) for p in prompt) for word in words)
