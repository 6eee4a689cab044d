"""Keys laid out for the attention scores q @ kᵀ (seed 000 §4, "Read a
transformer as a sequence of shape contracts").

Per head, the scores are a (T, D) @ (D, T) product, so the keys' last two
axes must swap: (B, H, T, D) -> (B, H, D, T). ``transpose(-2, -1)`` names
exactly those two axes. ``.T`` is the matrix transpose only for a 2-D
tensor; on more axes it reverses all of them.
"""

import math

import torch


def keys_for_scores(k: torch.Tensor) -> torch.Tensor:
    """(B, H, T, D) keys -> (B, H, D, T), ready to multiply the queries."""
    return k.transpose(-2, -1)  # swap T and D inside every (batch, head)


def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """(B, H, T, D) queries and keys -> (B, H, T, T) scaled scores."""
    return q @ keys_for_scores(k) / math.sqrt(q.shape[-1])
