"""A parameter added after the optimizer was built (seed 000 §3, "Optimizers
remember objects, not attribute names").

The optimizer copies its list of parameters when it is constructed.
Registering a new Parameter on the model later puts it in
``model.parameters()`` and on the autograd graph, but not in the
optimizer: ``add_param_group`` hands it over explicitly.
"""

import torch
import torch.nn as nn


class Scorer(nn.Module):
    """A linear score (B, C) -> (B, 1), times an optional learned gain added later."""

    def __init__(self, C: int) -> None:
        super().__init__()
        self.proj = nn.Linear(C, 1)
        self.register_parameter("gain", None)  # no gain yet

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)  # (B, 1)
        return y if self.gain is None else y * self.gain


def add_gain(model: Scorer, optimizer: torch.optim.Optimizer) -> None:
    """Give ``model`` a learned gain (one number, starting at 1) and let ``optimizer`` train it."""
    model.gain = nn.Parameter(torch.ones(1))  # registered: model.parameters() now lists it
    optimizer.add_param_group({"params": [model.gain]})  # and the optimizer holds it too
