"""Reading a matrix column by column (seed 000 §2, "A new tensor object does
not necessarily mean new storage").

``x.T`` swaps the strides and moves nothing, so its elements are not laid out
in the order a flat column-major read needs. ``reshape`` returns a view when
the strides allow one and copies otherwise; ``view`` never copies and raises
when no view exists.
"""

import torch


def column_major(x: torch.Tensor) -> torch.Tensor:
    """The entries of a 2-D tensor, column after column.

    Args:
        x: (R, K).

    Returns:
        (R * K,): ``x[0, 0], x[1, 0], ..., x[R-1, 0], x[0, 1], ...``. A copy
        whenever ``x.T`` cannot be flattened in place.
    """
    return x.T.reshape(-1)  # a view if the strides allow, else a copy
