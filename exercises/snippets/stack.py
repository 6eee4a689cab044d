"""A stack of layers applied in order (seed 000 §3, "Containers are part of
model structure").

``nn.Sequential`` registers its children *and* defines their forward: calling
it runs them in order. ``nn.ModuleList`` registers children but has no
forward of its own; the owning module's forward must loop over them.
"""

import torch
from torch import nn


class Stack(nn.Module):
    """``layers`` Linear(C, C) + ReLU pairs, applied in order."""

    def __init__(self, n_embd: int, layers: int = 3) -> None:
        super().__init__()
        parts = []
        for _ in range(layers):
            parts += [nn.Linear(n_embd, n_embd), nn.ReLU()]
        self.layers = nn.Sequential(*parts)  # registered and callable in order

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., C) -> (..., C)."""
        return self.layers(x)
