"""A hinge loss and the margins its gradient test uses (seed 000 §5, "Why does
gradcheck use numerical differences?").

``hinge(m) = max(0, 1 - m)`` is the margin loss of a linear classifier:
zero once an example is classified with margin at least 1. Its derivative is
-1 below m = 1 and 0 above; at m = 1 exactly it has none. A gradient test
compares autograd with finite differences, which straddle such a point, so
its inputs are chosen away from it.
"""

import torch


def hinge(margins: torch.Tensor) -> torch.Tensor:
    """(N,) margins -> (N,) losses, relu(1 - m)."""
    return torch.relu(1.0 - margins)


def test_margins() -> torch.Tensor:
    """(4,) float64 margins for gradcheck, each at least 0.3 away from the kink at 1."""
    return torch.tensor([-0.5, 0.3, 1.7, 2.4], dtype=torch.float64)
