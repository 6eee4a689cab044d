"""Unfreezing a module in the middle of fine-tuning (seed 000 §3: adding,
replacing or rebuilding parameter groups "requires thinking about existing
optimizer state").

The optimizer already holds the trainable parameters and, for AdamW, their
running averages and step counts. The newly trainable parameters join as a
new group (``add_param_group``), so the ones already training keep their
state; a freshly built optimizer would hold every parameter, and forget it.
"""

import torch
import torch.nn as nn


def unfreeze(module: nn.Module, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """Make ``module``'s parameters trainable and return the optimizer to use from now on.

    Args:
        module: a frozen part of the model (its parameters have requires_grad False).
        optimizer: the optimizer training the rest.

    Returns:
        The optimizer that steps every trainable parameter.
    """
    params = list(module.parameters())
    for p in params:
        p.requires_grad_(True)
    optimizer.add_param_group({"params": params})  # a new group; the others keep their state
    return optimizer
