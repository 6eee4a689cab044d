"""A training loop in its four moves: reset, forward + loss, backward, step
(seed 001, "How it actually works" and Part 2 of its lab).

``backward()`` only fills ``.grad``; ``optimizer.step()`` is the one call that
changes the weights. The reset sets every gradient buffer to ``None`` (not
to zeros), so a parameter the next loss does not reach has no gradient at
all, and the optimizer leaves it alone.
"""

from typing import Callable

import torch


def optimizer_step(optimizer: torch.optim.Optimizer, compute_loss: Callable[[], torch.Tensor]) -> float:
    """One update: reset the gradients, compute the loss, backward, step.

    Args:
        optimizer: owns the parameters to train.
        compute_loss: runs the forward pass and returns a 0-dim loss tensor.

    Returns:
        The loss before the step (nats per token).
    """
    optimizer.zero_grad(set_to_none=True)
    loss = compute_loss()
    loss.backward()
    optimizer.step()
    return loss.item()


def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Mean loss of ``model(x, y)`` in eval mode, without recording a graph.

    The model's train/eval mode is restored afterwards.
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            _, loss = model(x, y)
        return loss.item()
    finally:
        model.train(was_training)


def train(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
          steps: int, on_step: Callable[[int], None] | None = None) -> list[float]:
    """Full-batch training on (x, y) for ``steps`` updates.

    Returns:
        ``steps + 1`` losses: evaluated before the first update and after each
        update (nats per token).
    """
    curve = [evaluate(model, x, y)]
    for step in range(steps):
        optimizer_step(optimizer, lambda: model(x, y)[1])
        curve.append(evaluate(model, x, y))
        if on_step is not None:
            on_step(step + 1)
    return curve
