"""One optimisation step, evaluation, and the overfit-one-batch check.

Seed 004, "Training: prove it is happening".
"""

from __future__ import annotations

import torch
import torch.nn as nn


def make_optimizer(model: nn.Module, lr: float = 1e-3,
                   weight_decay: float = 0.01) -> torch.optim.AdamW:
    """AdamW over the model's parameters, with the fused kernel where it exists.

    Seed 001, "Parts 3 and 4: inspect and train the bigram" (AdamW keeps
    running averages, so it is built once, outside the loop). The fused kernel updates every
    parameter in one pass per step instead of a chain of per-tensor ops; the
    arithmetic is AdamW's. On a 2-core CPU it takes the engine's default
    model from about 3.2 ms to 0.7 ms per step (``benchmarks/run.py``). Any
    parameter off the CPU and CUDA, or not floating point, falls back to
    the plain implementation.

    Args:
        lr: learning rate.
        weight_decay: decoupled weight decay (torch's default, 0.01).
    """
    params = list(model.parameters())
    fused = all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params)
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=fused or None)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer,
               x: torch.Tensor, y: torch.Tensor) -> float:
    """Forward with targets, backward, one optimizer step.

    Leaves the model's train/eval mode as the caller set it.

    Args:
        x, y: (B, T) int64 inputs and targets.

    Returns:
        The loss before the step, in nats per token.
    """
    _, loss = model(x, targets=y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Mean cross-entropy loss on (x, y) in eval mode, without gradients.

    The caller's train/eval mode is restored afterwards, even on error.

    Args:
        x, y: (B, T) int64 inputs and targets.

    Returns:
        The loss in nats per token.
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _, loss = model(x, targets=y)
        return loss.item()
    finally:
        model.train(was_training)


def overfit_batch(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                  steps: int, lr: float = 1e-3) -> list[float]:
    """Train on one fixed batch with AdamW; the loss should head toward zero.

    Seed 004, the CAPABILITY link of the learning chain. The model runs in
    train mode and its previous mode is restored afterwards.

    Returns:
        The loss (nats per token) before each of the ``steps`` updates.
    """
    optimizer = make_optimizer(model, lr=lr)
    was_training = model.training
    model.train()
    try:
        return [train_step(model, optimizer, x, y) for _ in range(steps)]
    finally:
        model.train(was_training)
