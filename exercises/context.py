"""What a check is given when it runs: the device, the seed, a progress hook.

Plain Python; the worker builds one per run. Checks read ``ctx.device`` (a
string such as ``"cpu"`` or ``"cuda"``) and call ``ctx.progress(f)`` with
``0 <= f <= 1`` during long runs so the tutor can draw a progress bar.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Context:
    """The run's settings.

    Attributes:
        device: torch device string, already resolved (``cpu`` or ``cuda``).
        seed: the seed the worker set before calling the check; checks that
            build generators of their own start from it.
    """

    device: str = "cpu"
    seed: int = 0
    on_progress: Callable[[float, str], None] | None = field(default=None, repr=False)

    def progress(self, fraction: float, message: str = "") -> None:
        """Report how far a long check has got (0 to 1)."""
        if self.on_progress is not None:
            self.on_progress(max(0.0, min(1.0, float(fraction))), message)
