"""What a run came to, as data: the result, and whether (and where) its attempt was saved.

A run (:mod:`tutor.app.run`) makes an :class:`Outcome`; the learner's record
(:mod:`tutor.app.learner`) fills in what the save did. Both faces draw one.
This module is data only: it loads no run machinery, so the learner's record,
which the first screen loads, can name it at the top.

Layers: imports neither Textual nor torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # named in annotations only: a result, a task and a verdict are made elsewhere
    from tutor.app.tasks import Task
    from tutor.model.verdict import Verdict
    from tutor.sandbox.runner import RunResult


@dataclass
class Outcome:
    """What one run came to.

    Attributes:
        result: the graded result (any status).
        saved_to: the progress file the attempt was recorded in, or None
            when it was not recorded.
        save_error: why an attempt that should have been recorded was not
            (one sentence), else None; also why its note was not saved when
            the attempt was (``saved_to`` then names the file).
        note_saved: whether the note given with the attempt was saved.
        warnings: sentences about the progress file from the save (a
            damaged file moved aside).
    """

    result: RunResult
    saved_to: Path | None = None
    save_error: str | None = None
    note_saved: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass
class EditOutcome(Outcome):
    """What one edit-mode run came to (:meth:`Session.start_edit`).

    Attributes:
        task: what the learner edited (mode, file, exercise).
        text: the learner's file as it ran.
        diff: the learner's unified diff (:meth:`tutor.app.tasks.Task.diff`).
        verdict: the measured verdict (:func:`tutor.model.verdict.judge` or
            :func:`tutor.model.verdict.observe_break`).
        prediction: a break's prediction as kept (canonical or free text), else None.
        instruments: the engine instruments' run on the same sides, when
            asked for and the file is part of the engine, else None.
    """

    task: "Task | None" = None
    text: str = ""
    diff: str = ""
    verdict: "Verdict | None" = None
    prediction: str | None = None
    instruments: RunResult | None = None
