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


def central_difference(logits: torch.Tensor, target: torch.Tensor, index: int, eps: float = 1e-6) -> float:
    """The slope of the cross entropy along one logit, from two nearby losses.

    (loss(z + eps·e_i) - loss(z - eps·e_i)) / (2·eps), the numerical route
    seed 001's Part 1 checks the analytic gradient with. The two losses
    differ by only about 2·eps·|slope|, so they are computed in float64,
    whatever dtype the logits come in: the subtraction keeps the digits it
    needs.

    Args:
        logits: (1, V) raw scores of any float dtype.
        target: (1,) the index of the correct candidate.
        index: which logit to move.
        eps: the half-width of the step.

    Returns:
        The estimated derivative d loss / d z[index], a Python float.
    """
    z = logits.detach().to(torch.float64)  # the difference of two close losses needs float64's digits
    bump = torch.zeros_like(z)
    bump[0, index] = eps
    up, down = F.cross_entropy(z + bump, target), F.cross_entropy(z - bump, target)
    return ((up - down) / (2 * eps)).item()
