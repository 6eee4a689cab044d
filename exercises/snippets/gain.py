"""A linear layer with a learned per-output gain (seed 000 §3, "A gradient
is not proof that the optimizer will update a tensor").

Three separate questions decide whether a tensor learns: is there a
differentiable path from the loss to it, is it registered on the module, and
does the optimizer hold that exact object? Wrapping the gain in
``nn.Parameter`` is what registers it, so that ``model.parameters()`` — and
an optimizer built from it — can find it.
"""

import torch
from torch import nn


class GainLinear(nn.Module):
    """``y = (x @ W.T + b) * gain``: (N, C_in) -> (N, C_out).

    Args:
        c_in: input features.
        c_out: output features; ``gain`` has shape (c_out,) and starts at 1.
    """

    def __init__(self, c_in: int = 4, c_out: int = 3) -> None:
        super().__init__()
        self.proj = nn.Linear(c_in, c_out)
        self.gain = nn.Parameter(torch.ones(c_out))  # registered: model.parameters() yields it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.gain  # (N, c_out)
