"""How a use case refuses: bad input, or a check that cannot run at all, each told in one sentence.

The command line's replies (:mod:`tutor.cli.replies`) give these their exit
codes — :class:`UsageError` 2, :class:`CouldNotRun` 3, :class:`CouldNotSave` 4 — and their JSON error
objects; the instructor's tools raise them without knowing the command line.

Imports nothing of the tutor: a leaf.
"""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user: one sentence naming the problem and the fix (exit 2 on the command line).

    Attributes:
        context: what the input was about, added to the JSON error object
            (``{"id": ..., "learner": ..., "prediction": ...}`` for an answer
            that does not read), so a refused answer is never mistaken for
            one never given.
    """

    def __init__(self, sentence: str, context: dict | None = None) -> None:
        super().__init__(sentence)
        self.context = dict(context or {})


class CouldNotRun(Exception):
    """The check could not be run at all (e.g. the worker did not start): one sentence (exit 3)."""

    def __init__(self, sentence: str, context: dict | None = None) -> None:
        super().__init__(sentence)
        self.context = dict(context or {})


class CouldNotSave(Exception):
    """What was done could not be written in full (a full disk, a folder made read-only): one sentence
    naming what was kept and how to go on (exit 4)."""

    def __init__(self, sentence: str, context: dict | None = None) -> None:
        super().__init__(sentence)
        self.context = dict(context or {})
