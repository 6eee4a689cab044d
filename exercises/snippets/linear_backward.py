"""The backward pass of a linear layer over a batch of sequences, by hand
(seed 000 §5: "for broadcasted batches, the backward calculation must also
sum contributions over dimensions that were broadcast").

In y = x @ weight.T + bias the bias, shape (K,), is added at every batch
element and every position: it is broadcast over B and T. Each of those
uses contributes to its gradient, so the upstream gradient is summed over
the broadcast axes, and the result has the operand's own shape.
"""

import torch


def linear_backward(x: torch.Tensor, weight: torch.Tensor,
                    G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of L through y = x @ weight.T + bias.

    Args:
        x: (B, T, C) input.
        weight: (K, C).
        G: (B, T, K), dL/dy.

    Returns:
        (dx, dweight, dbias) with shapes (B, T, C), (K, C), (K,).
    """
    dx = G @ weight  # (B, T, K) @ (K, C) -> (B, T, C)
    dweight = G.flatten(0, 1).T @ x.flatten(0, 1)  # (K, B*T) @ (B*T, C) -> (K, C)
    dbias = G.sum(dim=(0, 1))  # bias was broadcast over B and T: sum over both
    return dx, dweight, dbias
