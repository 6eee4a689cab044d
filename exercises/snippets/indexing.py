"""Advanced indexing: coordinates versus rectangles, reads versus writes
(seed 000 §1, "Indexing selects coordinates, not necessarily a rectangle").

Index tensors broadcast against each other and the result takes their
broadcast shape: two (3,) index lists name three coordinate pairs, while a
(3, 1) column of rows against (3,) columns names all nine combinations.
Reading ``w[rows, cols]`` returns a new tensor (a copy); assigning to
``w[rows, cols]`` writes into ``w`` itself.
"""

import torch


def submatrix(w: torch.Tensor, rows: torch.Tensor,
              cols: torch.Tensor) -> torch.Tensor:
    """The block of ``w`` at the given rows and columns.

    Args:
        w: (R, K) matrix.
        rows: (n,) row indices.
        cols: (m,) column indices.

    Returns:
        (n, m) with ``out[i, j] = w[rows[i], cols[j]]``.
    """
    return w[rows[:, None], cols]  # (n, 1) rows with (m,) cols: (n, m)


def ban_tokens(logits: torch.Tensor, rows: torch.Tensor,
               cols: torch.Tensor) -> None:
    """Forbid token ``cols[i]`` in row ``rows[i]``, in place, before sampling.

    Args:
        logits: (B, V) scores, modified in place.
        rows: (n,) batch rows.
        cols: (n,) token ids, paired with ``rows``.

    Returns:
        None; the banned entries of ``logits`` become ``-inf``.
    """
    logits[rows, cols] = float("-inf")  # indexed assignment: writes logits
