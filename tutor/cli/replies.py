"""What a command hands back, and how it fails: what every command shares.

A command takes the parsed arguments and an :class:`Events` sink and returns
a :class:`Reply`: ``data``, the one JSON object ``--json`` prints, the exit
``code``, and the domain objects the Rich view draws from. Bad input raises
:class:`UsageError` (exit 2); a check that cannot run at all raises
:class:`CouldNotRun` (exit 3); a result that could not be written raises :class:`CouldNotSave` (exit 4).

Exit codes (``tutor run``): 0 the prediction matched, 1 it did not, 2 a usage
or input error, 3 the check itself could not run (the subject raised,
crashed or timed out, or the check worker would not start), 4 the attempt
could not be saved (``run``, ``fix``, ``break`` and ``grade --save`` alike).
``tutor doctor`` adds 5: a learner's runs work here, but grading would refuse
to run (code under check cannot be confined).

The two errors are :mod:`tutor.model.errors`' (the instructor's tools raise
them too), named here beside their exit codes. Imports nothing else of the
tutor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# re-exported beside their exit codes: the commands raise and catch them as the command line's errors
from tutor.model.errors import CouldNotRun, CouldNotSave, UsageError  # noqa: F401

EXIT_MATCH, EXIT_MISMATCH, EXIT_USAGE, EXIT_CHECK = 0, 1, 2, 3
#: The work was done but what it produced could not be saved (a full disk, a read-only progress file).
EXIT_SAVE = 4
#: ``tutor doctor``: a learner's runs work here, but code under check runs unconfined, so grading would refuse.
EXIT_UNCONFINED = 5


class Events(Protocol):
    """Where a command reports while it works (the chosen output)."""

    def notice(self, sentence: str) -> None:
        """One sentence for the learner, on stderr, now."""

    def checked(self, exercise, result, ok: bool) -> None:
        """``tutor check`` finished one exercise."""


@dataclass
class Reply:
    """What a command hands back.

    Attributes:
        data: the one JSON object ``--json`` prints.
        code: the exit status.
    """

    data: dict
    code: int = 0


@dataclass
class ListReply(Reply):
    sets: tuple = ()


@dataclass
class ShowReply(Reply):
    exercise: Any = None
    fault: Any = None
    patch: str = ""


@dataclass
class ShowSetReply(Reply):
    """``tutor show SET``: one set, its primer and its exercises in order."""

    exercise_set: Any = None


@dataclass
class RunReply(Reply):
    exercise: Any = None
    result: Any = None
    saved_to: str | None = None


@dataclass
class EditReply(Reply):
    """``tutor fix`` / ``tutor break``: the exercise and the session's :class:`tutor.app.session.EditOutcome`."""

    exercise: Any = None
    outcome: Any = None
    saved_to: str | None = None
    working_copy: str | None = None


@dataclass
class CheckReply(Reply):
    """``faults``: rows of exercises with a fault; ``shown``: those whose fault showed;
    ``unfaulted``/``ran``: the same for exercises without a fault; ``wall_s``: the
    whole check's wall time, seconds, with ``jobs`` workers; ``timeouts``: rows that
    ran out of time; ``show_wall``: ``-j`` was given, so the Rich view prints the wall
    time (the JSON always has it)."""

    faults: int = 0
    shown: int = 0
    unfaulted: int = 0
    ran: int = 0
    wall_s: float = 0.0
    jobs: int = 1
    timeouts: int = 0
    show_wall: bool = False


@dataclass
class ProgressReply(Reply):
    learner: str = ""
    store: Any = None
    progress: Any = None
    seeded: set = field(default_factory=set)
    catalog: Any = None  # None when the catalog cannot be read (the review still works)
    calibration: Any = None  # (overall, {set id: Calibration}) when there is a catalog


@dataclass
class ReviewReply(Reply):
    learner: str = ""
    catalog: Any = None
    due: list = field(default_factory=list)
    later: list = field(default_factory=list)


@dataclass
class EveryoneReply(Reply):
    folder: Path | None = None
    total: int | None = None
    ungraded: int = 0  # of the total, the warm-ups: tried, never scored
    rows: list = field(default_factory=list)
    kept_aside: list = field(default_factory=list)


@dataclass
class VersionReply(Reply):
    pass


@dataclass
class GradeReply(Reply):
    """``tutor grade``: the graded rows (:class:`tutor.instructor.grade.RowResult`) and where the files went."""

    rows: list = field(default_factory=list)
    summary: Any = None


@dataclass
class GradescopeReply(Reply):
    """``tutor gradescope``: the results.json written (``data["result"]``) and where it went."""

    path: Any = None


@dataclass
class DoctorReply(Reply):
    """``tutor doctor``: what this machine gives the tutor; ``data`` holds every finding (the view draws it)."""


@dataclass
class ReportReply(Reply):
    """``tutor report``: the class report (:class:`tutor.instructor.report.ClassReport`); ``csv`` when asked for."""

    report: Any = None
    csv: bool = False
