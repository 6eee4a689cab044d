"""Two backward passes at the same weights, the way a training loop does them
(seed 001, "Backward and update are different operations").

``backward()`` adds into ``.grad``; it never overwrites. A loop that computes
a fresh gradient each step must therefore clear the buffers first — the reset
is part of the algorithm, not tidying up.
"""

import torch
from torch.nn import functional as F


def two_gradients(logits: torch.nn.Parameter, target: torch.Tensor,
                  optimizer: torch.optim.Optimizer) -> tuple[torch.Tensor, torch.Tensor]:
    """Compute the cross-entropy gradient twice without changing the weights.

    Args:
        logits: (1, V) parameter holding the raw scores.
        target: (1,) class index.
        optimizer: the optimizer that owns ``logits``.

    Returns:
        ``(first, second)``: copies of ``logits.grad`` after each backward,
        both (1, V). With the reset in place they are equal.
    """
    optimizer.zero_grad(set_to_none=True)
    F.cross_entropy(logits, target).backward()
    first = logits.grad.clone()
    optimizer.zero_grad(set_to_none=True)  # the reset between the two passes
    F.cross_entropy(logits, target).backward()
    second = logits.grad.clone()
    return first, second
