"""``gather`` with its backward written by hand (seed 000 §1, "gather becomes
simple when written as an equation").

Along dimension 1 of a 2-D input: ``out[i][j] = values[i][index[i][j]]``.
Only the column changes; the row comes from the output position. Backward
sends each upstream gradient to the entry it was read from, and an entry
read twice must receive both contributions.
"""

import torch


class Gather(torch.autograd.Function):
    """``values.gather(1, index)`` for 2-D ``values``, backward by hand."""

    @staticmethod
    def forward(ctx, values: torch.Tensor,
                index: torch.Tensor) -> torch.Tensor:
        """values: (R, K); index: (R, m) int64. Returns (R, m)."""
        ctx.save_for_backward(index)
        ctx.values_shape = values.shape
        return values.gather(1, index)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        """grad_out: (R, m). Returns (R, K) for values and None for index."""
        (index,) = ctx.saved_tensors
        grad_values = grad_out.new_zeros(ctx.values_shape)
        grad_values.scatter_add_(1, index, grad_out)  # repeats add up
        return grad_values, None


def gather(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``out[i][j] = values[i][index[i][j]]``; differentiable in values."""
    return Gather.apply(values, index)
