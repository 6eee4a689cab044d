"""Freezing a layer for fine-tuning (seed 000 §3, "A gradient is not proof that
the optimizer will update a tensor").

``requires_grad_(False)`` cuts the layer's parameters out of backward: their
``.grad`` stays None, and optimizers skip a parameter without a gradient,
weight decay included, so the optimizer may still hold them. ``eval()``
changes how layers such as dropout behave; it does not stop gradients.
"""

from torch import nn


def freeze(layer: nn.Module) -> None:
    """Stop ``layer``'s parameters from receiving gradients (and so from moving)."""
    layer.requires_grad_(False)  # backward leaves .grad as None
