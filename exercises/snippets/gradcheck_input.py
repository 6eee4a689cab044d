"""An input for gradcheck made of copies of one value (seed 000 §5: the API
notes warn about overlapping-memory inputs).

gradcheck estimates each partial derivative by nudging one input entry and
re-running the function. That needs every entry to own its memory:
``x.expand(n)`` makes n entries that are one number in memory (stride 0),
so a nudge of one is a nudge of all. ``clone`` gives each its own.
"""

import torch


def repeated(x: torch.Tensor, n: int) -> torch.Tensor:
    """(n,) float64 leaf holding n independent copies of the scalar ``x``, requiring grad."""
    return x.detach().expand(n).clone().requires_grad_(True)  # n entries, n places in memory
