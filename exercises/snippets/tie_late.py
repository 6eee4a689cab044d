"""Tying an untied GPT's output head to its token table, then building the optimizer
(seed 004, "The model: embeddings and positions": tying after the optimizer
is built leaves it holding a parameter the model no longer has).

``lm_head.weight = wte.weight`` puts one Parameter object in both roles; the
head's own matrix is dropped from the model. An optimizer built before that
line still holds the dropped matrix.
"""

import torch
import torch.nn as nn

LEARNING_RATE = 3e-3


def build_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    """AdamW over every parameter the model has now, no weight decay."""
    return torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.0)


def tie_and_build(model: nn.Module) -> torch.optim.Optimizer:
    """Tie ``model.lm_head`` to ``model.wte`` (one (V, C) Parameter), then build its optimizer.

    Args:
        model: an untied GPT (``tie_weights=False``) with ``wte`` and ``lm_head``.

    Returns:
        The optimizer to train ``model`` with.
    """
    model.lm_head.weight = model.wte.weight  # one Parameter, two roles
    optimizer = build_optimizer(model)  # built after the tie: it sees the model as it will train
    return optimizer
