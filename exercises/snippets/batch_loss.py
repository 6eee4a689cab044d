"""The loss of a batch of N next-token predictions (seed 001, "Derive the
gradient rather than trusting a slogan").

The loss is the *mean* over the N rows, so the gradient of each row's
logits is (softmax - onehot) / N: the learning rate keeps its meaning when
the batch grows. A sum instead makes every gradient N times larger.
"""

import torch
from torch.nn import functional as F


def batch_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(N, V) logits and (N,) int64 targets -> 0-dim mean cross entropy, nats."""
    return F.cross_entropy(logits, targets)  # reduction="mean": divided by N
