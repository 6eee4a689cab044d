"""A custom autograd function with a hand-written backward (seed 000 §5,
"Why does gradcheck use numerical differences?").

Once ``backward`` is written by hand it *is* the derivative autograd uses;
asking autograd again would repeat any mistake in it. ``gradcheck``
compares it with finite differences of ``forward``, which do not trust the
supplied rule.
"""

import torch


class Cube(torch.autograd.Function):
    """y = x³ elementwise, any shape; backward multiplies by dy/dx = 3x²."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x ** 2  # chain rule with d(x^3)/dx = 3x^2


def cube(x: torch.Tensor) -> torch.Tensor:
    """x³ through :class:`Cube` (same shape as x)."""
    return Cube.apply(x)
