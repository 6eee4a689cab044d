"""The next-token loss: cross entropy on raw logits (seed 001, "Turn scores
into a penalty").

``F.cross_entropy`` applies log-softmax itself. It wants raw scores of shape
(N, V) and integer targets of shape (N,); giving it probabilities makes it
apply a second softmax to numbers that already sum to one.
"""

import torch
from torch.nn import functional as F


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross entropy over all B * T positions, in nats.

    Args:
        logits: (B, T, V) raw scores.
        targets: (B, T) integer ids in [0, V).

    Returns:
        A 0-dim tensor.
    """
    B, T, V = logits.shape
    flat = logits.reshape(B * T, V)  # (B*T, V) raw scores
    return F.cross_entropy(flat, targets.reshape(B * T))
