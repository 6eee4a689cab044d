"""Gradients of a float16 layer, with a loss scale (seed 000 §7, "Mixed
precision is another separate concern ... loss scaling is a distinct
mechanism, especially relevant to FP16 underflow").

float16 keeps 5 exponent bits: nothing smaller than about 6e-8 survives,
and a gradient is a product of small factors. Multiplying the loss by a
large constant before backward makes every gradient on the way back that
much larger; dividing the finished gradients in float32 undoes it.
"""

import torch

#: The factor the loss is multiplied by before backward (GradScaler's default start).
LOSS_SCALE = 2.0 ** 16


def float16_grads(weight: torch.Tensor, inputs: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    """The gradient of ``sum(upstream * (weight * inputs))`` with respect to ``weight``.

    Args:
        weight: (N,) float16 leaf with ``requires_grad``.
        inputs: (N,) float16 activations.
        upstream: (N,) float32, the gradient the rest of the network sends back.

    Returns:
        (N,) float32 gradient, unscaled.
    """
    out = weight * inputs  # (N,) float16 activations
    loss = (out.float() * upstream).sum()  # the loss itself in float32
    (loss * LOSS_SCALE).backward()
    return weight.grad.float() / LOSS_SCALE
