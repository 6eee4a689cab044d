"""One gradient-descent step on three logits, small enough to do on paper
(seed 001, "The idea in plain words" and Part 1 of its lab).

Cross entropy with logits z and target k is ln(sum_j exp z_j) - z_k. Its
gradient with respect to z is softmax(z) - onehot(k): positive for every
wrong candidate, negative for the target. Plain SGD moves *against* the
gradient, so the target's logit rises and the others fall.
"""

import torch
from torch.nn import functional as F


def sgd_update(logits: torch.Tensor, target: torch.Tensor, lr: float):
    """Compute the loss and its gradient at ``logits``, then take one SGD step.

    Args:
        logits: (1, V) raw scores (not probabilities).
        target: (1,) the index of the correct candidate.
        lr: the learning rate.

    Returns:
        ``(loss, grad, updated)``: the loss before the step (a 0-dim tensor,
        nats), its gradient (1, V), and the logits after the step (1, V).
    """
    z = logits.detach().clone().requires_grad_(True)
    loss = F.cross_entropy(z, target)
    loss.backward()
    with torch.no_grad():
        updated = z - lr * z.grad  # step against the gradient: downhill
    return loss.detach(), z.grad.detach(), updated
