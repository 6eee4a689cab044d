"""Preparing a GPT for fine-tuning: a fresh output head, then the optimizer
(seed 004, "Training: prove it is happening", the OWNERSHIP link; seed 000
§3 on optimizer identity).

An optimizer holds references to parameter *objects*, taken when it is
built. Replacing a submodule afterwards gives the model new parameters the
optimizer has never heard of: they receive gradients and never move. So
the optimizer is built last, after the model has its final shape.
"""

import torch
import torch.nn as nn

LEARNING_RATE = 3e-3


def build_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    """AdamW over every parameter the model has now, no weight decay."""
    return torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.0)


def with_fresh_head(model: nn.Module) -> torch.optim.Optimizer:
    """Give ``model`` its own untied (V, C) output head, then build its optimizer.

    Args:
        model: a GPT with ``config.n_embd``, ``config.vocab_size`` and ``lm_head``.

    Returns:
        The optimizer to train ``model`` with.
    """
    C, V = model.config.n_embd, model.config.vocab_size
    model.config.tie_weights = False  # the config says what the model now is: an untied head
    model.lm_head = nn.Linear(C, V, bias=False)  # a new Parameter, (V, C)
    nn.init.normal_(model.lm_head.weight, mean=0.0, std=0.02)
    optimizer = build_optimizer(model)  # built last: it sees the new head
    return optimizer
