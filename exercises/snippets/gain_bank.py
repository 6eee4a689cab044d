"""A bank of per-feature gains, one learned vector per stage (seed 000 §3,
"Containers are part of model structure").

Parameters held in a container are registered only if the container is one
``nn.Module`` knows: ``nn.ParameterList`` registers each entry, as
``gains.0``, ``gains.1``, ...; a plain Python list attached to the module
is just an attribute.
"""

import torch
from torch import nn


class GainBank(nn.Module):
    """x * g_0 * g_1 * ... for ``stages`` learned gain vectors of size C."""

    def __init__(self, n_embd: int, stages: int = 3) -> None:
        super().__init__()
        self.gains = nn.ParameterList([nn.Parameter(torch.ones(n_embd)) for _ in range(stages)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., C) -> (..., C)."""
        for gain in self.gains:
            x = x * gain
        return x
