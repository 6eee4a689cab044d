"""Messages that thread workers post back to the UI thread.

``post_message`` is thread-safe, so a worker running a check (or starting
the runner's worker process) reports through these and never touches widgets
itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # a run's outcome is only named here
    from tutor.app.outcome import Outcome


class RunProgress(Message):
    """One progress report from a running check.

    Args:
        side: the side's name (``"clean"``, ``"faulted"``, ...).
        progress: fraction of that side done, 0..1.
        message: what the check is doing, in a few words.
    """

    def __init__(self, side: str, progress: float, message: str) -> None:
        super().__init__()
        self.side = side
        self.progress = progress
        self.message = message


class RunFinished(Message):
    """A check finished with a result (any status, including error and cancelled), already recorded.

    Args:
        outcome: the session's outcome: the result, and whether the attempt was saved.
    """

    def __init__(self, outcome: Outcome) -> None:
        super().__init__()
        self.outcome = outcome
        self.result = outcome.result


class RunCrashed(Message):
    """The check could not be started at all (no worker, no device).

    Args:
        reason: one sentence naming the problem and the fix.
    """

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class WarmUpFinished(Message):
    """The runner's worker process is up (or could not start).

    Args:
        info: the worker's hello (torch version, CUDA), or None on failure.
        error: one sentence when it could not start, else None.
    """

    def __init__(self, info: dict | None, error: str | None) -> None:
        super().__init__()
        self.info = info
        self.error = error


# --- edit mode (tutor.ui.screens.fix) ---

class EditFinished(Message):
    """The verdict of an edit-mode run is in (posted from the run's thread)."""

    def __init__(self, outcome, seconds: float) -> None:
        super().__init__()
        self.outcome = outcome
        self.seconds = seconds

    # ``outcome`` is a tutor.app.outcome.EditOutcome


class EditInstrumentsFinished(Message):
    """The engine's instruments ran after the verdict (posted from the run's thread)."""

    def __init__(self, outcome) -> None:
        super().__init__()
        self.outcome = outcome


class EditCrashed(Message):
    """The run could not start at all (no worker, no device)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class EditProgressed(Message):
    """A side's progress report."""

    def __init__(self, side: str, fraction: float, message: str) -> None:
        super().__init__()
        self.side = side
        self.fraction = fraction
        self.message = message
