"""What a check is given when it runs: the device, the seed, a progress hook.

Plain Python; the worker builds one per run. Checks read ``ctx.device`` (a
string such as ``"cpu"`` or ``"cuda"``) and call ``ctx.progress(f)`` with
``0 <= f <= 1`` during long runs so the tutor can draw a progress bar.
Every engine model a check needs comes from ``ctx.gpt(preset, **overrides)``,
so the sizes live in one place (``engine.config.PRESETS``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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

    def on_cpu(self) -> Context:
        """This context with the CPU as its device: for a check whose answer is the CPU's (an
        ordering of timings that, at the check's small sizes, a GPU's kernel launches would decide)."""
        return replace(self, device="cpu")

    def progress(self, fraction: float, message: str = "") -> None:
        """Report how far a long check has got (0 to 1)."""
        if self.on_progress is not None:
            self.on_progress(max(0.0, min(1.0, float(fraction))), message)

    def gpt(self, preset: str = "seed", **overrides):
        """A fresh engine GPT of a named size, on ``self.device``, in train mode.

        ``torch.manual_seed(self.seed)`` runs just before the model is built,
        so the same preset, overrides and seed always give the same weights.
        The configuration is ``model.config``.

        Args:
            preset: a key of ``engine.config.PRESETS``: "seed" (seed 004's
                4 layers, 4 heads, C = 128, block 64, V = 37), "small"
                (2 layers, 2 heads, C = 64, block 32, V = 37), "gpt2-small"
                or "llama-tiny" (the seed's sizes, Llama-style block).
            overrides: ``GPTConfig`` fields to change, e.g. ``n_layer=1``.

        Raises:
            KeyError, TypeError, ValueError: as ``engine.config.preset``.
        """
        import torch

        from engine.config import preset as config_for
        from engine.model import GPT

        config = config_for(preset, **overrides)
        torch.manual_seed(self.seed)
        return GPT(config).to(self.device)
