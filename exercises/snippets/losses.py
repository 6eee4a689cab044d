"""A regression loss written the careful way (seed 000 §1, "Shape is part of
the algorithm").

A model that predicts one number per example usually hands back a column,
shape (N, 1), while the targets are a vector, shape (N,). Subtracting the two
directly broadcasts to (N, N): every prediction is compared with every
target. Naming the axis that goes away keeps the comparison one-to-one.
"""

import torch


def squared_errors(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-example squared error.

    Args:
        predictions: (N, 1) — one prediction per example, as a column.
        targets: (N,) — one target per example.

    Returns:
        (N,) squared differences, prediction i against target i.
    """
    predictions = predictions.squeeze(-1)  # (N, 1) -> (N,): drop only the named axis
    return (predictions - targets) ** 2


def mse_loss(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the N examples (a scalar)."""
    return squared_errors(predictions, targets).mean()
