"""A running average over past positions, with its weights kept as a buffer
(seed 000 §3, "Containers are part of model structure").

The averaging matrix is model state but not something to learn: it must be
saved with the model and must follow it to another device or dtype, yet an
optimizer should never see it. ``register_buffer`` provides exactly those
services; a plain tensor attribute gets none of them.
"""

import torch
from torch import nn


class CausalAverage(nn.Module):
    """Replace each position by the mean of itself and every earlier position.

    (B, T, C) -> (B, T, C) for T <= block_size.

    Args:
        block_size: the longest sequence; the weights are (block_size, block_size).
    """

    def __init__(self, block_size: int = 4) -> None:
        super().__init__()
        weights = torch.tril(torch.ones(block_size, block_size))  # (T, T) lower triangle
        weights = weights / weights.sum(dim=1, keepdim=True)  # each row averages its past
        self.register_buffer("weights", weights)  # saved in state_dict, moved by .to()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T = x.size(1)
        return self.weights[:T, :T] @ x  # (T, T) @ (B, T, C) -> (B, T, C)
