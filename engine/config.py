"""Model configuration.

Seed 004, "The environment": n_layer=4, n_head=4, n_embd=128, block_size=64
and a 37-character vocabulary give a GPT of 804,224 parameters (tied).

The sizes the exercises build are named once, in ``PRESETS``, and read
through ``preset(name, **overrides)``; a check asks for a model with
``ctx.gpt(preset="small", n_layer=1)`` (``exercises/context.py``).

This module imports only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GPTConfig:
    """Hyperparameters of the GPT in ``engine.model``.

    Attributes:
        vocab_size: V, the number of token ids; ids live in [0, V).
        block_size: the longest sequence the model accepts, in tokens; also
            the number of rows in the position table.
        n_layer: number of transformer blocks.
        n_head: H, attention heads per block.
        n_embd: C, the width of the residual stream. Head size D = C // H.
        dropout: dropout probability used in training mode.
        tie_weights: share one [V, C] matrix between the token embedding and
            the lm_head (Seed 004, "Weight tying").
        bias: whether the MLP's two Linear layers carry a bias.

    Raises:
        ValueError: if n_embd is not divisible by n_head, or a size is not
            positive, or dropout is outside [0, 1).
    """

    vocab_size: int = 37
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    tie_weights: bool = True
    bias: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}.")
        if self.n_embd % self.n_head != 0:
            raise ValueError(
                f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head}) "
                "so that every head gets the same head size D = n_embd // n_head."
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}.")

    @property
    def head_size(self) -> int:
        """D, the width of one attention head: n_embd // n_head."""
        return self.n_embd // self.n_head


#: Named model sizes, declared once. Every check builds its GPT from one of
#: these (``ctx.gpt``), changing only what its experiment is about.
PRESETS: dict[str, dict[str, int]] = {
    # Seed 004, "The environment": the engine's own defaults, 804,224 parameters tied.
    "seed": dict(vocab_size=37, block_size=64, n_layer=4, n_head=4, n_embd=128),
    # Two thin blocks (about 0.1 M parameters): trains in seconds on one CPU core.
    "small": dict(vocab_size=37, block_size=32, n_layer=2, n_head=2, n_embd=64),
    # GPT-2-small's sizes (seed 004, "Parameter accounting"); build it on the meta device.
    "gpt2-small": dict(vocab_size=50257, block_size=1024, n_layer=12, n_head=12, n_embd=768),
}


def preset(name: str = "seed", **overrides) -> GPTConfig:
    """The ``GPTConfig`` named ``name`` in ``PRESETS``, with ``overrides`` applied.

    Args:
        name: a key of ``PRESETS`` ("seed", "small", "gpt2-small").
        overrides: any ``GPTConfig`` field, e.g. ``n_layer=1, dropout=0.2``.

    Raises:
        KeyError: if ``name`` is not a preset (the message lists them).
        TypeError: if an override is not a ``GPTConfig`` field.
        ValueError: if the resulting sizes are invalid (see ``GPTConfig``).
    """
    if name not in PRESETS:
        raise KeyError(f"there is no GPT preset {name!r}; the presets are {', '.join(PRESETS)}.")
    return GPTConfig(**{**PRESETS[name], **overrides})
