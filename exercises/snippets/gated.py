"""A gated activation written from built-in operations (seed 000 §5, "Why does
gradcheck use numerical differences?").

``gated(x) = x * sigmoid(x)`` (SiLU) has no custom backward: autograd
derives its gradient from ``mul`` and ``sigmoid``. ``torch.autograd.gradcheck``
checks such an ordinary composite just as it checks a hand-written
``backward``: the analytical route from the built-in operations, against
finite differences of the forward.
"""

import torch


def gated(x: torch.Tensor) -> torch.Tensor:
    """x * sigmoid(x), elementwise; any shape in, the same shape out."""
    gate = torch.sigmoid(x)  # how much of x passes, in (0, 1)
    return x * gate
