"""Keeping an independent copy of a tensor that is still training (seed 000
§2, "Copying and detaching are independent operations").

``clone()`` makes new storage but stays on the autograd graph; ``detach()``
leaves the graph but shares storage. A snapshot that neither receives
gradients nor changes when the original is updated in place needs both.
"""

import torch


def snapshot(t: torch.Tensor) -> torch.Tensor:
    """An independent, gradient-free copy of ``t``.

    Args:
        t: any tensor, typically a parameter that requires grad.

    Returns:
        A tensor with the same shape and values, its own storage, and no
        ``grad_fn``: later in-place updates of ``t`` do not reach it, and it
        does not connect to ``t``'s autograd graph.
    """
    return t.detach().clone()  # off the graph, then into new storage
